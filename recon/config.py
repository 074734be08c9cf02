"""One validator for every config: types, ranges and allowed names, before compute.

A config is in sections (`data`, `victim`, `attack`, `run`, plus `seed`, `name`,
`sweep`) and starts from configs/base.py, the one place every default lives.
Each field is checked against `SCHEMA` by its dotted path (`data.n`,
`attack.escalate.window`): a missing field, a field the schema does not know
(a typo: the closest paths are named) and an invalid value are errors.
Errors are `ConfigError`s whose one-line message names the full path, the
value and what is accepted.
"""
from __future__ import annotations

import difflib
import os
from typing import Any, Callable, Dict, Optional, Sequence

import ml_collections

from recon import (certificate, cut, data, features, optimize, precision, pursuit, registry,
                   sign_quotient, splitting)
from recon.io import flatten
from recon.spec import Spec
from recon.errors import ReconError
# The built-in victims, objectives and data sets register themselves where they are defined
# (recon/registry.py); importing their modules here makes every built-in name known.
from recon.models import foreign, homogeneous, networks, privacy, random_features, train  # noqa: F401
from recon.objectives import kkt, projection, projection_streamed, unified  # noqa: F401

DTYPES = ('float32', 'float64')
SUBSPACE_MODES = ('none', 'known', 'estimated')
DICT_FIELDS = ('victim.module_kwargs',)  # a dict of free keys (a user module's arguments)
DICT_KINDS = (dict, ml_collections.ConfigDict)


class ConfigError(ReconError, ValueError):
  """An invalid config field; the message is one line naming field and accepted values."""


def _positive_int():
  return Spec(int, low=1)


STEPS_MAX = 2 ** 31 - 1  # step counters are int32 on the device
SEED_MAX = 2 ** 32 - 1  # jax.random.PRNGKey keeps a seed's low 32 bits: larger ones would wrap



# The sections of a config (configs/base.py holds every default): a Spec per field, a dict
# per sub-section. Dotted paths (`data.n`, `attack.escalate.window`) are the interface.
SCHEMA: Dict[str, Any] = {
    'name': Spec(str),
    'seed': Spec(int, low=0, high=SEED_MAX),
    # None: the victim's / objective's pipeline (recon.routes); a registered name runs that one
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
        knows_init=Spec(bool),
        init_in_span=Spec(bool),
        knows_n=Spec(bool),
        # Subspace-aware reconstruction (recon/subspace.py, recon/pipelines/subspace.py).
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
        # Rescue steps: recon/restarts.py, refine.py, escalate.py, pursuit.py, swap.py, cut.py, polish.py,
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
    'leak_width': dict(  # pipeline 'leak_width' (recon/pipelines/leak_width.py)
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
        # jax_default_matmul_precision of every compiled program (recon/precision.py).
        matmul_precision=Spec(str, choices=lambda: precision.MATMUL_PRECISIONS),
        distributed=Spec(bool),  # jax.distributed.initialize() at start-up (recon/distributed.py)
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

# Sweep axes (`config.sweep.<path> = (values, ...)`, see recon/sweep.py), by the path of the
# field they sweep. Vectorised axes share one compiled program (widths padded to the largest
# p, lr/momentum in the optimiser state, seeds as a batch of keys); static axes change shapes
# or code and loop outside, one compiled group per value.
SWEEP_VECTORISED = ('victim.p', 'victim.p_over_dn', 'seed', 'attack.lr', 'attack.momentum')
SWEEP_STATIC = ('victim.activation', 'victim.width', 'attack.n_candidates', 'run.dtype', 'data.n', 'data.d',
                'data.label_noise', 'attack.optimizer', 'attack.jitter', 'attack.tol',
                'attack.max_steps')
SWEEP_ONLY: Dict[str, Spec] = {'victim.p_over_dn': Spec(float, low=0.0, low_open=True)}


def get_path(config: Any, path: str) -> Any:
  """The value at a dotted path ('attack.escalate.window')."""
  for name in path.split('.'):
    config = config[name]
  return config


def set_path(config: Any, path: str, value: Any) -> None:
  """Sets the value at a dotted path (the sections must exist)."""
  *parents, leaf = path.split('.')
  for name in parents:
    config = config[name]
  config[leaf] = value


def sweep_axes(sweep: Any) -> Dict[str, tuple]:
  """{field path: values} of the swept axes of `config.sweep` (the leaves that are not None)."""
  if sweep is None:
    return {}
  return {path: values for path, values in flatten(sweep).items() if values is not None}


def validate_sweep(sweep: Any) -> None:
  """Raises ConfigError for an unknown axis, an empty axis or an invalid axis value."""
  accepted = ', '.join(SWEEP_VECTORISED + SWEEP_STATIC)
  if not hasattr(sweep, 'items'):
    raise ConfigError(f'config.sweep: invalid value {sweep!r}; accepted: sections of axes '
                      f'(tuples of values) named from {accepted}')
  axes = sweep_axes(sweep)
  for name, values in axes.items():
    if name not in SWEEP_VECTORISED + SWEEP_STATIC:
      raise ConfigError(f'config.sweep.{name}: unknown sweep axis'
                        f'{near_names(name, SWEEP_VECTORISED + SWEEP_STATIC)}; accepted axes: '
                        f'{accepted}')
    if not isinstance(values, (tuple, list)) or isinstance(values, str):
      raise ConfigError(f'config.sweep.{name}: invalid value {values!r}; accepted: a '
                        'non-empty tuple of values')
    if not values:
      raise ConfigError(f'config.sweep.{name}: empty axis; accepted: a non-empty tuple of '
                        'values')
    spec = SWEEP_ONLY.get(name) or FIELDS[name]
    for value in values:
      if not spec.check(value):
        raise ConfigError(f'config.sweep.{name}: invalid value {value!r}; accepted: '
                          f'{spec.accepted()}')
  if 'victim.p' in axes and 'victim.p_over_dn' in axes:
    raise ConfigError('config.sweep.victim.p_over_dn: both victim.p and victim.p_over_dn are '
                      'swept; accepted: one of the two width axes')


def validate(config: Any) -> None:
  """Raises ConfigError on the first invalid, missing or unknown field, section by section.

  A config starts from configs/base.py, so every field of SCHEMA must be there; a field
  SCHEMA does not know is a typo (the closest paths are named).
  """
  if not hasattr(config, 'items') or any(
      name in config and not hasattr(config[name], 'items') for name in SECTIONS):
    raise ConfigError('config: not in sections; accepted: a config that starts from '
                      'configs/base.py (fields data.*, victim.*, attack.*, run.*, seed, name)')
  fields = flatten({k: v for k, v in config.items() if k != 'sweep'}, leaves=DICT_FIELDS)
  for path, spec in FIELDS.items():
    if path not in fields:
      raise ConfigError(f'config.{path}: missing; accepted: a config that starts from '
                        'configs/base.py (which defines every field)')
    if not spec.check(fields[path]):
      raise ConfigError(
          f'config.{path}: invalid value {fields[path]!r}; accepted: {spec.accepted()}')
  for path in fields:
    if path not in FIELDS:
      raise ConfigError(f'config.{path}: unknown field{near_names(path, FIELDS)}; accepted: '
                        'a field configs/base.py defines')
  check_float32_range(fields)
  for path in ('data.n', 'data.d'):
    if fields[path] is None and fields['data.name'] != 'file':
      raise ConfigError(f"config.{path}: None is accepted only with data.name 'file' (the "
                        "file's size); accepted: int >= 1")
  check_defences(fields)
  if fields['run.resume'] is True and fields['run.overwrite'] is True:  # before the lock
    raise ConfigError('run.resume, run.overwrite: both True; accepted: at most one of them')
  if fields['pipeline'] is not None and sweep_axes(config.get('sweep')):
    raise ConfigError(f'config.sweep: axes set with pipeline {fields["pipeline"]!r} (it runs its '
                      'own shadow sweep, leak_width.*); accepted: no sweep axes, or pipeline None')
  if config.get('sweep') is not None:
    validate_sweep(config['sweep'])
    if fields['victim.release_noise'] > 0 and sweep_axes(config['sweep']):
      raise ConfigError('config.sweep: a vectorised sweep releases theta* as fitted; accepted: '
                        'no sweep axes with victim.release_noise > 0 (scripts/defences.py)')


def near_names(name: str, names, n: int = 3) -> str:
  """' (did you mean a, b?)' with the closest of `names` (dotted paths), or ''.

  Closest first among the fields of the same section, then by last name across sections
  (so a name from before the sections, 'n', finds 'data.n'), then by the whole path.
  """
  names = sorted(names)
  parent, _, leaf = name.rpartition('.')
  siblings = [p.rpartition('.')[2] for p in names if p.rpartition('.')[0] == parent]
  close = [f'{parent}.{m}' if parent else m
           for m in difflib.get_close_matches(leaf, siblings, n=n, cutoff=0.6)]
  by_leaf: Dict[str, list] = {}
  for path in names:
    by_leaf.setdefault(path.rpartition('.')[2], []).append(path)
  for match in difflib.get_close_matches(leaf, sorted(by_leaf), n=n,
                                         cutoff=0.75 if close else 0.6):
    close += [p for p in by_leaf[match] if p not in close]
  close = close or difflib.get_close_matches(name, names, n=n, cutoff=0.6)
  return f' (did you mean {", ".join(close[:n])}?)' if close else ''




def trained_networks() -> tuple:
  """The registered victims recon trains by GD (the networks pipeline's own architectures):
  what victim.train.dp applies to."""
  return tuple(n for n, v in registry.items('victim')
               if v.pipeline == 'networks' and v.architecture is not None)


def check_defences(fields: Dict[str, Any]) -> None:
  """The defences (victim.train.dp, victim.release_noise) apply to the victims they name,
  trained here (no victim.checkpoint, not the subspace pipeline); DP needs one noise source;
  the adaptive attack against weight decay (attack.init_in_span) needs a network's W_L(0)."""
  model, noise = fields['victim.name'], fields['victim.release_noise']
  dp_on = fields['victim.train.dp.mode'] == 'on'
  if dp_on and model not in trained_networks():
    raise ConfigError(f"config.victim.train.dp.mode: 'on' for victim.name {model!r}; accepted: "
                      f"'on' with victim.name in {', '.join(trained_networks())}, else 'off'")
  released = ('random_features',) + trained_networks()  # victim.release_noise applies to
  if noise > 0 and model not in released:
    raise ConfigError(f'config.victim.release_noise: {noise!r} for victim.name {model!r}; '
                      f'accepted: 0, or > 0 with victim.name in {", ".join(released)}')
  subspace = (fields['attack.objective'] == 'unified' or fields['attack.subspace'] != 'none'
              or fields['attack.alpha_mode'] != 'closed_form')
  for why, field in ((subspace, 'attack.objective'), (fields['victim.checkpoint'],
                                                       'victim.checkpoint')):
    if (dp_on or noise > 0) and why:
      raise ConfigError(f'config.{field}: the defences apply when recon trains the victim (not '
                        "a saved one, not the subspace pipeline); accepted: victim.train.dp.mode "
                        "'off' and victim.release_noise 0 there")
  given = [f for f in ('noise_multiplier', 'target_epsilon')
           if fields[f'victim.train.dp.{f}'] is not None]
  if dp_on and len(given) != 1:
    raise ConfigError(f"config.victim.train.dp: {' and '.join(given) or 'neither'} of "
                      "noise_multiplier, target_epsilon given with mode 'on'; accepted: one")
  networks = tuple(n for n, v in registry.items('victim') if v.pipeline == 'networks')
  if fields['attack.init_in_span'] and not (fields['attack.knows_init'] and model in networks):
    raise ConfigError(f'config.attack.init_in_span: True for victim.name {model!r} with '
                      f"attack.knows_init {fields['attack.knows_init']}; accepted: False, or True "
                      f"with attack.knows_init=True and victim.name in {', '.join(networks)}")
  batch = fields['victim.train.dp.batch_size']
  if dp_on and batch is not None and batch > fields['data.n']:
    raise ConfigError(f'config.victim.train.dp.batch_size: {batch} > data.n; accepted: None '
                      '(n) or an int in 1..n')


FLOAT32_MAX = 3.4028234663852886e38


def check_float32_range(fields: Dict[str, Any]) -> None:
  """A float field beyond float32's range in a float32 run would be inf on the device."""
  if fields.get('run.dtype') != 'float32':
    return
  for name, value in fields.items():
    if (isinstance(value, float) and name in FIELDS and float in _kinds(FIELDS[name])
        and abs(value) > FLOAT32_MAX):
      raise ConfigError(f'config.{name}: invalid value {value!r} (inf in float32); accepted: '
                        f'finite {FIELDS[name].accepted()}, <= {FLOAT32_MAX:.4g} with run.dtype '
                        "'float32' (or run.dtype 'float64')")


def _kinds(spec: Spec) -> tuple:
  return spec.kind if isinstance(spec.kind, tuple) else (spec.kind,)


# Fields holding a path; `resolve_paths` makes them absolute against the working directory.
PATH_FIELDS = ('victim.checkpoint', 'victim.init_checkpoint', 'data.dir', 'data.path')


def resolve_paths(config: Any) -> None:
  """Makes every path field of `config` (in place) absolute, once, against the cwd (and
  expands '~'), so that later code never depends on the working directory."""
  for path in PATH_FIELDS:
    value = get_path(config, path)
    if isinstance(value, str) and value:
      set_path(config, path, os.path.abspath(os.path.expanduser(value)))
