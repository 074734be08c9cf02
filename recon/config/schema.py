"""Every config field's type, range and accepted names: the schema `recon.config.validate` validates by.

A config is in sections (`data`, `victim`, `attack`, `run`, plus `seed`, `name`, `sweep`);
`SCHEMA` holds a `Spec` per field and a dict per (sub-)section, mirroring configs/base.py (the
one place every default lives), and `FIELDS` the same flattened by dotted path ('data.n',
'attack.escalate.window', 'seed'). Names a field accepts (victims, objectives, data sets,
rescue steps, ...) are read from where they are defined (`recon.registry` and each module's
tuple of choices), so a name registered there is accepted here. `SWEEP_*` name the fields a
`config.sweep` may vary, vectorised or one compiled group per value (recon/sweep/grid.py).
"""
from __future__ import annotations

from typing import Any, Dict

import ml_collections

from recon import data, registry
from recon.certify import certificate
from recon.attack.rescue import cut, pursuit
from recon.models import features
from recon.models import min_norm as precision
from recon.attack import sign_quotient, splitting
from recon.attack import optimiser as optimize
from recon.config.spec import Spec
# The built-in victims, objectives and data sets register themselves where they are defined
# (recon/registry.py); importing their modules here makes every built-in name known.
from recon.models import (foreign, homogeneous, networks, privacy, random_features, train)  # noqa: F401
from recon.objectives import kkt, projection, projection_streamed, unified  # noqa: F401

DTYPES = ('float32', 'float64')
SUBSPACE_MODES = ('none', 'known', 'estimated')
DICT_FIELDS = ('victim.module_kwargs',)  # a dict of free keys (a user module's arguments)
DICT_KINDS = (dict, ml_collections.ConfigDict)


def _positive_int():
  return Spec(int, low=1)


STEPS_MAX = 2 ** 31 - 1  # step counters are int32 on the device
SEED_MAX = 2 ** 32 - 1  # jax.random.PRNGKey keeps a seed's low 32 bits: larger ones would wrap



# The sections of a config (configs/base.py holds every default): a Spec per field, a dict
# per sub-section. Dotted paths (`data.n`, `attack.escalate.window`) are the interface.
SCHEMA: Dict[str, Any] = {
    'name': Spec(str),
    'seed': Spec(int, low=0, high=SEED_MAX),
    # None: the victim's / objective's pipeline (recon.config.routes); a registered name runs that one
    'pipeline': Spec(str, optional=True, choices=lambda: registry.names('pipeline')),
    'data': dict(
        name=Spec(str, choices=lambda: registry.names('dataset')),
        dir=Spec(str, optional=True),
        path=Spec(str, optional=True),  # data.name 'file' (recon/data/auditor.py)
        n=Spec(int, low=1, optional=True),  # None: the file's length (data.name 'file' only)
        d=Spec(int, low=1, optional=True),  # None: the file's row size (data.name 'file' only)
        classes=Spec((tuple, list), optional=True),  # checked against the data set by data.load
        num_classes=_positive_int(),  # the KKT attacks check >= 2
        image_size=Spec(int, low=1, optional=True),
        image_shape=Spec((tuple, list), optional=True),
        grayscale=Spec(bool),
        preprocess=Spec(str, choices=lambda: data.PREPROCESS),
        label_noise=Spec(float, low=0.0),
        planted_dim=Spec(int, low=1, optional=True),  # synthetic_subspace: its dimension k
        binary_rule=Spec(str, choices=('classes', 'parity')),
    ),
    'victim': dict(
        name=Spec(str, choices=lambda: registry.names('victim')),
        p=_positive_int(),
        width=_positive_int(),
        depth=_positive_int(),
        activation=Spec(str, choices=lambda: sorted(features.ACTIVATIONS)),
        act_alpha=Spec(float, low=0.0, low_open=True),
        init_scale=Spec(float, low=0.0, low_open=True),
        first_init_scale=Spec(float, low=0.0, low_open=True),
        num_heads=_positive_int(),
        patch_size=_positive_int(),
        pool=Spec(str, choices=networks.POOLS),
        head_init=Spec(str, choices=tuple(networks.HEAD_INITS)),
        # Memory-lean / sharded random features (recon/objectives/projection_streamed.py).
        feature_mode=Spec(str, choices=lambda: features.FEATURE_MODES),
        feature_memory_budget_mb=Spec(float, low=0.0, low_open=True),
        feature_chunk=_positive_int(),
        feature_residual=Spec(str, choices=lambda: ('auto',) + projection_streamed.RESIDUAL_MODES),
        feature_shards=_positive_int(),
        weight_rng=Spec(str, choices=lambda: features.WEIGHT_RNGS),
        checkpoint=Spec(str, optional=True),
        # A model saved outside recon (recon/models/foreign.py; docs/audit.md).
        format=Spec(str, choices=lambda: foreign.FORMATS),
        init_checkpoint=Spec(str, optional=True),
        layer=Spec(str, optional=True),  # the attacked parameter collection; None: the last
        module=Spec(str, optional=True),  # victim 'flax_module': 'package.module:ClassName'
        module_kwargs=Spec(DICT_KINDS, optional=True),  # its constructor arguments (JSON values)
        train=dict(
            loss=Spec(str, choices=train.LOSSES),
            lr=Spec(float, low=0.0, low_open=True, optional=True),
            momentum=Spec(float, low=0.0, high=0.999999),
            max_steps=Spec(int, low=1, high=STEPS_MAX),
            tol=Spec(float, low=0.0),
            weight_decay=Spec(float, low=0.0),
            stationary_steps=_positive_int(),
            polish=Spec(bool),
            dp=dict(
                mode=Spec(str, choices=('off', 'on')),
                clip=Spec(float, low=0.0, low_open=True),
                noise_multiplier=Spec(float, low=0.0, optional=True),
                target_epsilon=Spec(float, low=0.0, low_open=True, optional=True),
                batch_size=Spec(int, low=1, optional=True),
                delta=Spec(float, low=0.0, low_open=True, high=1.0),
                accountant=Spec(str, choices=privacy.ACCOUNTANTS),
            ),
        ),
        release_noise=Spec(float, low=0.0),
    ),
    'attack': dict(
        objective=Spec(str, choices=lambda: registry.names('objective')),
        n_candidates=Spec(int, low=1, optional=True),
        optimizer=Spec(str, choices=lambda: optimize.OPTIMIZERS),
        lr=Spec(float, low=0.0, low_open=True),
        momentum=Spec(float, low=0.0, high=0.999999),
        schedule=Spec(str, choices=lambda: optimize.SCHEDULES),
        decay_steps=Spec(int, low=1, high=STEPS_MAX, optional=True),
        final_ratio=Spec(float, low=0.0, high=1.0),
        max_steps=Spec(int, low=1, high=STEPS_MAX),
        tol=Spec(float, low=0.0),
        jitter=Spec(float, low=0.0),
        refine=Spec(int, low=0, high=100),
        sign_quotient=Spec(str, choices=lambda: sign_quotient.MODES),
        lbfgs_memory=_positive_int(),
        lbfgs_linesearch_steps=_positive_int(),
        jacobian_at=Spec(str, choices=('trained', 'init_and_trained', 'midpoint')),
        knows_init=Spec(bool, optional=True),  # None: known when given (recon.config.validate.knows_init)
        init_in_span=Spec(bool),
        knows_n=Spec(bool),
        # Subspace-aware reconstruction (recon/attack/data_subspace.py, recon/pipelines/subspace.py).
        subspace=Spec(str, choices=SUBSPACE_MODES),
        subspace_dim=Spec(int, low=1, optional=True),  # None: automatic (largest gap)
        subspace_noise_floor=Spec(float, low=0.0, low_open=True, high=1.0),
        gradient_at=Spec(str, choices=lambda: unified.GRADIENT_AT),
        alpha_mode=Spec(str, choices=lambda: unified.ALPHA_MODES),
        # KKT reconstruction (recon/pipelines/kkt.py; docs/kkt.md); None: the victim's.
        activation=Spec(str, choices=lambda: sorted(features.ACTIVATIONS), optional=True),
        act_alpha=Spec(float, low=0.0, low_open=True, optional=True),
        kkt_target=Spec(str, choices=('theta', 'delta', 'planted')),
        kkt_layers=Spec(str),  # 'all' or comma-separated layer names (recon.objectives.kkt)
        candidate_subspace=Spec(str, choices=('none', 'first_layer')),
        candidate_subspace_rank=Spec(int, low=1, optional=True),
        candidate_init_scale=Spec(float, low=0.0, low_open=True),
        lambda_min=Spec(float, low=0.0),
        lambda_constraint=Spec(str, choices=kkt.LAMBDA_CONSTRAINTS),
        lambda_weight=Spec(float, low=0.0),
        lambda_init=Spec(str, choices=('lstsq', 'uniform')),
        lambda_solve=Spec(str, choices=('optimize', 'eliminate')),  # eliminate: variable projection
        prior=Spec(str, choices=kkt.PRIORS),
        prior_bound=Spec(float, low=0.0, low_open=True),
        prior_weight=Spec(float, low=0.0),
        residual_weights=Spec(str, choices=('none', 'gradient_rms')),
        # Rescue steps: recon/attack/restarts.py, refine.py, escalate.py, pursuit.py, swap.py, cut.py, polish.py,
        # splitting.py.
        certify_jacobian=Spec(str, choices=lambda: certificate.METHODS + ('off',)),
        restarts=_positive_int(),
        rescue=Spec((tuple, list), choices=lambda: registry.names('rescue'), each=True),
        reseed=dict(every=_positive_int(), proposals=_positive_int(),
                    threshold=Spec(float, low=0.0, low_open=True, high=1.0)),
        escalate=dict(
            every=_positive_int(), window=_positive_int(), trial_steps=_positive_int(),
            restart_after=Spec(int, low=0),  # 0: never restart the whole set
            restart_steps=_positive_int(),
            accept_ratio=Spec(float, low=0.0, low_open=True, high=1.0),
            weak_ratio=Spec(float, low=0.0),
            max_weak_share=Spec(float, low=0.0, high=1.0),
            pursuit=Spec(str, choices=('auto', 'off')),
            pursuit_starts=Spec(int, low=8), pursuit_steps=_positive_int()),
        pursue=dict(every=_positive_int(), start=Spec(int, low=0), starts=Spec(int, low=8),
                    steps=_positive_int(), dead_ratio=Spec(float, low=0.0, low_open=True, high=1.0),
                    lr=Spec(float, low=0.0), stop=Spec(int, low=0),
                    start_points=Spec(str, choices=pursuit.START_POINTS)),
        swap=dict(start=Spec(int, low=0), steps=_positive_int(), patience=_positive_int(),
                  lr=Spec(float, low=0.0, low_open=True), starts=Spec(int, low=8),
                  search_steps=_positive_int(), start_points=Spec(str, choices=pursuit.START_POINTS)),
        cut=dict(at=Spec(int, low=0), state=Spec(str, choices=cut.STATES)),
        polish=dict(tol=Spec(float, low=0.0, low_open=True), starts=Spec(int, low=2),
                    row_steps=_positive_int(), lm_iters=Spec(int, low=0),
                    max_free_share=Spec(float, low=0.0, high=1.0), sign_sweeps=Spec(int, low=0)),
        split=dict(
            mode=Spec(str, choices=splitting.MODES),
            every=_positive_int(),
            plateau_window=_positive_int(),
            plateau_tol=Spec(float, low=0.0),
            budget=Spec(int, low=0),
            max_per_round=_positive_int(),
            eig_tol=Spec(float, low=0.0),
            eig_method=Spec(str, choices=splitting.EIG_METHODS),
            dense_max_dim=_positive_int(),
            lanczos_steps=_positive_int(),
            eps_min=Spec(float, low=0.0, low_open=True),
            eps_max=Spec(float, low=0.0, low_open=True),
            eps_grid=_positive_int(),
            merge_tol=Spec(float, low=0.0),
            require_decrease=Spec(bool),
        ),
    ),
    'leak_width': dict(  # pipeline 'leak_width' (recon/audit/leak_width.py)
        shadow_n=Spec((tuple, list)),  # ints >= 2, checked by the pipeline
        ratios=Spec((tuple, list)),  # floats > 0
        shadow_seeds=Spec((tuple, list)),  # ints >= 0
        dim=Spec(str, choices=('auto', 'd', 'pca')),
        variance=Spec(float, low=0.0, low_open=True, high=1.0),
        bootstrap=_positive_int(),
        model=Spec(str, choices=('trend', 'constant')),
    ),
    'run': dict(
        dtype=Spec(str, choices=DTYPES),
        # jax_default_matmul_precision of every compiled program (recon/models/min_norm.py).
        matmul_precision=Spec(str, choices=lambda: precision.MATMUL_PRECISIONS),
        distributed=Spec(bool),  # jax.distributed.initialize() at start-up (recon/runtime/distributed.py)
        chunk_steps=_positive_int(),
        log_every_seconds=Spec(float, low=0.0),
        overwrite=Spec(bool),
        resume=Spec(bool),
        checkpoint_every_seconds=Spec(float, low=0.0),  # 0: off
        checkpoint_every_steps=Spec(int, low=0),  # 0: off
        checkpoint_keep=_positive_int(),
        sweep_memory_budget_gb=Spec(float, low=0.0, low_open=True),
        recovered_threshold=Spec(float, low=0.0, low_open=True),
        ssim_threshold=Spec(float, low=0.0, low_open=True, high=1.0),
        ssim_filter_size=Spec(int, low=1, optional=True),
    ),
}
SECTIONS = tuple(k for k, v in SCHEMA.items() if isinstance(v, dict))


def _flatten_schema(schema: Dict[str, Any], prefix: str = '') -> Dict[str, Spec]:
  out = {}
  for name, spec in schema.items():
    if isinstance(spec, dict):
      out.update(_flatten_schema(spec, f'{prefix}{name}.'))
    else:
      out[prefix + name] = spec
  return out


# Every field by its dotted path ('data.n', 'attack.escalate.window', 'seed').
FIELDS: Dict[str, Spec] = _flatten_schema(SCHEMA)

# Sweep axes (`config.sweep.<path> = (values, ...)`, see recon/sweep/grid.py), by the path of the
# field they sweep. Vectorised axes share one compiled program (widths padded to the largest
# p, lr/momentum in the optimiser state, seeds as a batch of keys); static axes change shapes
# or code and loop outside, one compiled group per value.
SWEEP_VECTORISED = ('victim.p', 'victim.p_over_dn', 'seed', 'attack.lr', 'attack.momentum')
SWEEP_STATIC = ('victim.activation', 'victim.width', 'attack.n_candidates', 'run.dtype', 'data.n', 'data.d',
                'data.label_noise', 'attack.optimizer', 'attack.jitter', 'attack.tol',
                'attack.max_steps')
SWEEP_ONLY: Dict[str, Spec] = {'victim.p_over_dn': Spec(float, low=0.0, low_open=True)}
