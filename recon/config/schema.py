"""Every config field's type, range and accepted names: the schema `recon.config.validate` validates by.

A config is in sections (`data`, `victim`, `attack`, `run`, plus `seed`, `name`, `sweep`);
`SCHEMA` holds a `Spec` per field and a dict per (sub-)section, mirroring configs/base.py (the
one place every default lives), and `FIELDS` the same flattened by dotted path ('data.n',
'attack.escalate.window', 'seed'). Names a field accepts (victims, objectives, data sets,
rescue steps, ...) come from the registry's name lists (`recon.registry.names`), the other
names from recon/config/choices.py, and the sections of the rescue steps and sample splitting
from their one definition (recon/config/sections.py): validating a config imports no model
code. `SWEEP_*` name the fields a
`config.sweep` may vary, vectorised or one compiled group per value (recon/sweep/grid.py).
"""
from __future__ import annotations

from typing import Any, Dict

import ml_collections

from recon import registry
from recon.config import choices, sections
from recon.config.spec import Spec

DICT_FIELDS = ('victim.module_kwargs',)  # a dict of free keys (a user module's arguments)
DICT_KINDS = (dict, ml_collections.ConfigDict)


def _positive_int():
  return Spec(int, low=1)


STEPS_MAX = sections.STEPS_MAX
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
        preprocess=Spec(str, choices=choices.PREPROCESS),
        label_noise=Spec(float, low=0.0),
        planted_dim=Spec(int, low=1, optional=True),  # synthetic_subspace: its dimension k
        binary_rule=Spec(str, choices=choices.BINARY_RULES),
    ),
    'victim': dict(
        name=Spec(str, choices=lambda: registry.names('victim')),
        p=_positive_int(),
        width=_positive_int(),
        depth=_positive_int(),
        activation=Spec(str, choices=choices.ACTIVATIONS),
        act_alpha=Spec(float, low=0.0, low_open=True),
        init_scale=Spec(float, low=0.0, low_open=True),
        first_init_scale=Spec(float, low=0.0, low_open=True),
        num_heads=_positive_int(),
        patch_size=_positive_int(),
        pool=Spec(str, choices=choices.POOLS),
        head_init=Spec(str, choices=choices.HEAD_INITS),
        # Memory-lean / sharded random features (recon/objectives/projection_streamed.py).
        feature_mode=Spec(str, choices=choices.FEATURE_MODES),
        feature_memory_budget_mb=Spec(float, low=0.0, low_open=True),
        feature_chunk=_positive_int(),
        feature_residual=Spec(str, choices=('auto',) + choices.RESIDUAL_MODES),
        feature_shards=_positive_int(),
        weight_rng=Spec(str, choices=choices.WEIGHT_RNGS),
        checkpoint=Spec(str, optional=True),
        # A model saved outside recon (recon/models/foreign.py; docs/audit.md).
        format=Spec(str, choices=choices.FORMATS),
        init_checkpoint=Spec(str, optional=True),
        layer=Spec(str, optional=True),  # the attacked parameter collection; None: the last
        module=Spec(str, optional=True),  # victim 'flax_module': 'package.module:ClassName'
        module_kwargs=Spec(DICT_KINDS, optional=True),  # its constructor arguments (JSON values)
        train=sections.Train.specs(),  # with its sub-section dp
        release_noise=Spec(float, low=0.0),
    ),
    'attack': dict(
        objective=Spec(str, choices=lambda: registry.names('objective')),
        n_candidates=Spec(int, low=1, optional=True),
        optimizer=Spec(str, choices=choices.OPTIMIZERS),
        lr=Spec(float, low=0.0, low_open=True),
        momentum=Spec(float, low=0.0, high=0.999999),
        schedule=Spec(str, choices=choices.SCHEDULES),
        decay_steps=Spec(int, low=1, high=STEPS_MAX, optional=True),
        final_ratio=Spec(float, low=0.0, high=1.0),
        max_steps=Spec(int, low=1, high=STEPS_MAX),
        tol=Spec(float, low=0.0),
        jitter=Spec(float, low=0.0),
        refine=Spec(int, low=0, high=100),
        sign_quotient=Spec(str, choices=choices.SIGN_QUOTIENT),
        lbfgs_memory=_positive_int(),
        lbfgs_linesearch_steps=_positive_int(),
        jacobian_at=Spec(str, choices=choices.JACOBIAN_AT),
        knows_init=Spec(bool, optional=True),  # None: known when given (recon.config.validate.knows_init)
        init_in_span=Spec(bool),
        knows_n=Spec(bool),
        # Subspace-aware reconstruction (recon/attack/data_subspace.py, recon/pipelines/subspace.py).
        subspace=Spec(str, choices=choices.SUBSPACE_MODES),
        subspace_dim=Spec(int, low=1, optional=True),  # None: automatic (largest gap)
        subspace_noise_floor=Spec(float, low=0.0, low_open=True, high=1.0),
        gradient_at=Spec(str, choices=choices.GRADIENT_AT),
        alpha_mode=Spec(str, choices=choices.ALPHA_MODES),
        # KKT reconstruction (recon/pipelines/kkt.py; docs/kkt.md); None: the victim's.
        activation=Spec(str, choices=choices.ACTIVATIONS, optional=True),
        act_alpha=Spec(float, low=0.0, low_open=True, optional=True),
        kkt_target=Spec(str, choices=choices.KKT_TARGETS),
        kkt_layers=Spec(str),  # 'all' or comma-separated layer names (recon.objectives.kkt)
        candidate_subspace=Spec(str, choices=choices.CANDIDATE_SUBSPACES),
        candidate_subspace_rank=Spec(int, low=1, optional=True),
        candidate_init_scale=Spec(float, low=0.0, low_open=True),
        lambda_min=Spec(float, low=0.0),
        lambda_constraint=Spec(str, choices=choices.LAMBDA_CONSTRAINTS),
        lambda_weight=Spec(float, low=0.0),
        lambda_init=Spec(str, choices=choices.LAMBDA_INITS),
        lambda_solve=Spec(str, choices=choices.LAMBDA_SOLVES),  # eliminate: variable projection
        prior=Spec(str, choices=choices.PRIORS),
        prior_bound=Spec(float, low=0.0, low_open=True),
        prior_weight=Spec(float, low=0.0),
        residual_weights=Spec(str, choices=choices.RESIDUAL_WEIGHTS),
        certify_jacobian=Spec(str, choices=choices.JACOBIAN_METHODS + ('off',)),
        restarts=_positive_int(),
        rescue=Spec((tuple, list), choices=lambda: registry.names('rescue'), each=True),
        # The rescue steps' and sample splitting's sections: their one definition.
        **{path.split('.')[1]: cls.specs() for path, cls in sections.SECTIONS.items()
           if path.startswith('attack.')},
    ),
    'leak_width': sections.LeakWidth.specs(),  # pipeline 'leak_width' (recon/audit/leak_width.py)
    'run': sections.Run.specs(),
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
