"""One validator for every config: types, ranges and allowed names, before compute.

Each field of a config is checked against `SCHEMA` (a field a config does not
have is not checked; a field the schema does not know is an error, so typos in
config files are caught). Errors are `ConfigError`s whose one-line message names
the field, the value and what is accepted.
"""
from __future__ import annotations

import dataclasses
import difflib
import math
import os
from typing import Any, Callable, Dict, Optional, Sequence

from recon import data, features, optimize, precision, splitting
from recon.errors import ReconError
from recon.models import networks, train
from recon.objectives import kkt, projection_streamed, unified

DTYPES = ('float32', 'float64')
MODELS = ('random_features', 'random_features_gd', 'two_layer', 'resnet', 'vit',
          'homogeneous_mlp')
# Models trained by GD and attacked through their last layer's parameter-Jacobian.
NETWORK_MODELS = ('random_features_gd', 'two_layer', 'resnet', 'vit')
SUBSPACE_MODES = ('none', 'known', 'estimated')
# Reconstruction objectives (`objective` field; random_features supports 'projection' only).
OBJECTIVES = ('projection', 'kkt_binary', 'kkt_multiclass', 'kkt_general')


class ConfigError(ReconError, ValueError):
  """An invalid config field; the message is one line naming field and accepted values."""


@dataclasses.dataclass(frozen=True)
class Spec:
  """What a field accepts: a type, optional bounds or names, and `None` if optional."""
  kind: type | tuple
  low: Optional[float] = None  # inclusive lower bound
  low_open: bool = False  # True: strictly greater than `low`
  high: Optional[float] = None  # inclusive upper bound
  choices: Optional[Callable[[], Sequence[str]] | Sequence[str]] = None
  optional: bool = False

  def accepted(self) -> str:
    if self.choices is not None:
      names = self.choices() if callable(self.choices) else self.choices
      text = 'one of ' + ', '.join(repr(c) for c in names)
    else:
      kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,)
      text = ' or '.join(k.__name__ for k in kinds)
      if self.low is not None:
        text += f' {">" if self.low_open else ">="} {self.low:g}'
      if self.high is not None:
        text += f' and <= {self.high:g}'
    return text + (' (or None)' if self.optional else '')

  def check(self, value: Any) -> bool:
    if value is None:
      return self.optional
    kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,)
    if isinstance(value, bool) and bool not in kinds:
      return False
    if float in kinds and isinstance(value, int) and not isinstance(value, bool):
      value = float(value)
    if not isinstance(value, kinds):
      return False
    if self.choices is not None:
      names = self.choices() if callable(self.choices) else self.choices
      return value in names
    if isinstance(value, (int, float)) and not isinstance(value, bool):
      if not math.isfinite(value):  # NaN, inf (an int is always finite)
        return False
      if self.low is not None and (value <= self.low if self.low_open else value < self.low):
        return False
      if self.high is not None and value > self.high:
        return False
    return True


def _positive_int():
  return Spec(int, low=1)


SCHEMA: Dict[str, Spec] = {
    'name': Spec(str),
    'model': Spec(str, choices=lambda: MODELS),
    'dataset': Spec(str, choices=lambda: data.DATASETS),
    'data_dir': Spec(str, optional=True),
    'classes': Spec((tuple, list), optional=True),  # checked against the data set by data.load
    'image_size': Spec(int, low=1, optional=True),
    'grayscale': Spec(bool),
    'preprocess': Spec(str, choices=lambda: data.PREPROCESS),
    'n': _positive_int(),
    'd': _positive_int(),
    'p': _positive_int(),
    'n_candidates': Spec(int, low=1, optional=True),
    'activation': Spec(str, choices=lambda: sorted(features.ACTIVATIONS)),
    'label_noise': Spec(float, low=0.0),
    'seed': Spec(int, low=0),
    'optimizer': Spec(str, choices=lambda: optimize.OPTIMIZERS),
    'lr': Spec(float, low=0.0, low_open=True),
    'momentum': Spec(float, low=0.0, high=0.999999),
    'lr_schedule': Spec(str, choices=lambda: optimize.SCHEDULES),
    'lr_decay_steps': Spec(int, low=1, optional=True),
    'lr_final_ratio': Spec(float, low=0.0, high=1.0),
    'max_steps': _positive_int(),
    'tol': Spec(float, low=0.0),
    'dtype': Spec(str, choices=DTYPES),
    # jax_default_matmul_precision of every compiled program (recon/precision.py; docs/performance.md, "Precision").
    'matmul_precision': Spec(str, choices=lambda: precision.MATMUL_PRECISIONS),
    # jax.distributed.initialize() at start-up (recon/distributed.py).
    'distributed': Spec(bool),
    'jitter': Spec(float, low=0.0),
    'chunk_steps': _positive_int(),
    'log_every_seconds': Spec(float, low=0.0),
    'recovered_threshold': Spec(float, low=0.0, low_open=True),
    'ssim_threshold': Spec(float, low=0.0, low_open=True, high=1.0),
    'ssim_filter_size': Spec(int, low=1, optional=True),
    'overwrite': Spec(bool),
    # Reliability (docs/reliability.md): checkpoints, resume, saved models.
    'resume': Spec(bool),
    'checkpoint_every_seconds': Spec(float, low=0.0),  # 0: off
    'checkpoint_every_steps': Spec(int, low=0),  # 0: off
    'checkpoint_keep': _positive_int(),
    'model_checkpoint': Spec(str, optional=True),
    # Networks trained by GD (recon/pipelines/networks.py; docs/networks.md).
    'width': _positive_int(),
    'depth': _positive_int(),
    'num_classes': _positive_int(),
    'loss': Spec(str, choices=train.LOSSES),
    'train_lr': Spec(float, low=0.0, low_open=True, optional=True),
    'train_momentum': Spec(float, low=0.0, high=0.999999),
    'train_max_steps': _positive_int(),
    'train_tol': Spec(float, low=0.0),
    'last_layer': Spec(str),
    'image_shape': Spec((tuple, list), optional=True),
    'patch_size': _positive_int(),
    'num_heads': _positive_int(),
    'pool': Spec(str, choices=networks.POOLS),
    'head_init': Spec(str, choices=tuple(networks.HEAD_INITS)),
    'jacobian_at': Spec(str, choices=('trained', 'init_and_trained', 'midpoint')),
    'attacker_knows_init': Spec(bool),
    'attacker_knows_n': Spec(bool),
    # Memory-lean / sharded random features (recon/objectives/projection_streamed.py).
    'feature_mode': Spec(str, choices=lambda: features.FEATURE_MODES),
    'feature_memory_budget_mb': Spec(float, low=0.0, low_open=True),
    'feature_chunk': _positive_int(),
    'feature_residual': Spec(str, choices=lambda: ('auto',) + projection_streamed.RESIDUAL_MODES),
    'feature_shards': _positive_int(),
    'weight_rng': Spec(str, choices=lambda: features.WEIGHT_RNGS),
    # Blind re-seeding of collapsed candidates (recon/refine.py); 0 = off.
    'reseed_every': Spec(int, low=0),
    'reseed_threshold': Spec(float, low=0.0, low_open=True, high=1.0),
    'reseed_proposals': _positive_int(),
    # Escalation on a loss plateau (recon/escalate.py): 'auto' = on for one candidate set.
    'escalate': Spec(str, choices=('auto', 'off')),
    'escalate_every': _positive_int(),
    'escalate_window': _positive_int(),
    'escalate_trial_steps': _positive_int(),
    'escalate_restart_after': Spec(int, low=0),  # 0: never restart the whole set
    'escalate_restart_steps': _positive_int(),
    'escalate_accept_ratio': Spec(float, low=0.0, low_open=True, high=1.0),
    # The precision rung (recon/polish.py): float64 re-search of the rows an uncertified
    # run leaves free, then Gauss-Newton; 'auto' = on where the certificate is computed.
    'polish': Spec(str, choices=('auto', 'off')),
    'polish_tol': Spec(float, low=0.0, low_open=True),
    'polish_starts': Spec(int, low=2),
    'polish_row_steps': _positive_int(),
    'polish_lm_iters': Spec(int, low=0),
    'polish_max_free_share': Spec(float, low=0.0, high=1.0),
    'polish_sign_sweeps': Spec(int, low=0),
    # Restarts chosen by the blind loss (recon/restarts.py); 1 = one candidate set.
    'n_restarts': _positive_int(),
    # Subspace-aware reconstruction (recon/subspace.py, recon/pipelines/subspace.py; docs/subspace.md).
    'planted_dim': Spec(int, low=1, optional=True),  # dataset synthetic_subspace: its dimension k
    'subspace': Spec(str, choices=SUBSPACE_MODES),
    'subspace_dim': Spec(int, low=1, optional=True),  # None: automatic (largest gap)
    'subspace_noise_floor': Spec(float, low=0.0, low_open=True, high=1.0),
    'gradient_at': Spec(str, choices=lambda: unified.GRADIENT_AT),
    'alpha_mode': Spec(str, choices=lambda: unified.ALPHA_MODES),
    'weight_decay': Spec(float, low=0.0),
    'sweep_memory_budget_gb': Spec(float, low=0.0, low_open=True),
    # KKT reconstruction and homogeneous MLP victims (recon/pipelines/kkt.py; docs/kkt.md).
    'objective': Spec(str, choices=OBJECTIVES),
    'n_classes': Spec(int, low=2),
    'act_alpha': Spec(float, low=0.0, low_open=True),
    # The attacker's activation / its backward alpha (KKT pipeline; None: the victim's).
    'attack_activation': Spec(str, choices=lambda: sorted(features.ACTIVATIONS), optional=True),
    'attack_alpha': Spec(float, low=0.0, low_open=True, optional=True),
    'binary_rule': Spec(str, choices=('classes', 'parity')),
    'init_scale': Spec(float, low=0.0, low_open=True),
    'first_init_scale': Spec(float, low=0.0, low_open=True),
    'train_steps': _positive_int(),  # homogeneous_mlp: fixed number of GD steps
    'train_polish': Spec(bool),
    'kkt_target': Spec(str, choices=('theta', 'delta', 'planted')),
    'kkt_layers': Spec(str),  # 'all' or comma-separated layer names (recon.objectives.kkt)
    'candidate_subspace': Spec(str, choices=('none', 'first_layer')),
    'candidate_subspace_rank': Spec(int, low=1, optional=True),
    'lambda_min': Spec(float, low=0.0),
    'lambda_constraint': Spec(str, choices=kkt.LAMBDA_CONSTRAINTS),
    'lambda_weight': Spec(float, low=0.0),
    'lambda_init': Spec(str, choices=('lstsq', 'uniform')),
    'prior': Spec(str, choices=kkt.PRIORS),
    'prior_bound': Spec(float, low=0.0, low_open=True),
    'prior_weight': Spec(float, low=0.0),
    'candidate_init_scale': Spec(float, low=0.0, low_open=True),
    'lambda_solve': Spec(str, choices=('optimize', 'eliminate')),  # eliminate: variable projection
    'residual_weights': Spec(str, choices=('none', 'gradient_rms')),
    'train_weight_decay': Spec(float, low=0.0),  # > 0: exact stationary point by L-BFGS
    'train_stationary_steps': _positive_int(),
    # L-BFGS (optimizer 'lbfgs', recon/optimize.py).
    'lbfgs_memory': _positive_int(),
    'lbfgs_linesearch_steps': _positive_int(),
    # Sample splitting (recon/splitting.py) for any objective.
    'split': Spec(str, choices=splitting.MODES),
    'split_every': _positive_int(),
    'split_plateau_window': _positive_int(),
    'split_plateau_tol': Spec(float, low=0.0),
    'split_budget': Spec(int, low=0),
    'split_max_per_round': _positive_int(),
    'split_eig_tol': Spec(float, low=0.0),
    'split_eig_method': Spec(str, choices=splitting.EIG_METHODS),
    'split_dense_max_dim': _positive_int(),
    'split_lanczos_steps': _positive_int(),
    'split_eps_min': Spec(float, low=0.0, low_open=True),
    'split_eps_max': Spec(float, low=0.0, low_open=True),
    'split_eps_grid': _positive_int(),
    'split_merge_tol': Spec(float, low=0.0),
    'split_require_decrease': Spec(bool),
}

# Sweep axes (`config.sweep.AXIS = (values, ...)`, see recon/sweep.py). Vectorised axes
# share one compiled program (widths padded to the largest p, lr/momentum in the
# optimiser state, seeds as a batch of keys); static axes change shapes or code and
# loop outside, one compiled group per value.
SWEEP_VECTORISED = ('p', 'p_over_dn', 'seed', 'lr', 'momentum')
SWEEP_STATIC = ('activation', 'n_candidates', 'dtype', 'n', 'd', 'label_noise', 'optimizer',
                'jitter', 'tol', 'max_steps')
SWEEP_ONLY: Dict[str, Spec] = {'p_over_dn': Spec(float, low=0.0, low_open=True)}


def validate_sweep(sweep: Any) -> None:
  """Raises ConfigError for an unknown axis, an empty axis or an invalid axis value."""
  accepted = ', '.join(SWEEP_VECTORISED + SWEEP_STATIC)
  if not hasattr(sweep, 'items'):
    raise ConfigError(f'config.sweep: invalid value {sweep!r}; accepted: a ConfigDict of '
                      f'axes (tuples of values) named from {accepted}')
  axes = dict(sweep.items())
  for name, values in axes.items():
    if name not in SWEEP_VECTORISED + SWEEP_STATIC:
      raise ConfigError(f'config.sweep.{name}: unknown sweep axis; accepted axes: {accepted}')
    if not isinstance(values, (tuple, list)) or isinstance(values, str):
      raise ConfigError(f'config.sweep.{name}: invalid value {values!r}; accepted: a '
                        'non-empty tuple of values')
    if not values:
      raise ConfigError(f'config.sweep.{name}: empty axis; accepted: a non-empty tuple of '
                        'values')
    spec = SWEEP_ONLY.get(name) or SCHEMA[name]
    for value in values:
      if not spec.check(value):
        raise ConfigError(f'config.sweep.{name}: invalid value {value!r}; accepted: '
                          f'{spec.accepted()}')
  if 'p' in axes and 'p_over_dn' in axes:
    raise ConfigError('config.sweep.p_over_dn: both p and p_over_dn are swept; accepted: '
                      'one of the two width axes')


def validate(config: Any, schema: Dict[str, Spec] = SCHEMA) -> None:
  """Raises ConfigError on the first invalid field (in schema order, then unknown ones)."""
  fields = dict(config.items())
  for name, spec in schema.items():
    if name in fields and not spec.check(fields[name]):
      raise ConfigError(
          f'config.{name}: invalid value {fields[name]!r}; accepted: {spec.accepted()}')
  for name in fields:
    if name not in schema and name != 'sweep':
      raise ConfigError(f'config.{name}: unknown field{near_names(name, schema)}; accepted: '
                        'a field this config defines and recon/config.py knows')
  check_float32_range(fields)
  if fields.get('sweep'):
    validate_sweep(fields['sweep'])


def near_names(name: str, names, n: int = 3) -> str:
  """' (did you mean a, b?)' with the closest of `names` (difflib), or ''."""
  close = difflib.get_close_matches(name, sorted(names), n=n, cutoff=0.6)
  return f' (did you mean {", ".join(close)}?)' if close else ''


FLOAT32_MAX = 3.4028234663852886e38


def check_float32_range(fields: Dict[str, Any]) -> None:
  """A float field beyond float32's range in a float32 run would be inf on the device."""
  if fields.get('dtype', 'float32') != 'float32':
    return
  for name, value in fields.items():
    if (isinstance(value, float) and name in SCHEMA and float in _kinds(SCHEMA[name])
        and abs(value) > FLOAT32_MAX):
      raise ConfigError(f'config.{name}: invalid value {value!r} (inf in float32); accepted: '
                        f'finite {SCHEMA[name].accepted()}, <= {FLOAT32_MAX:.4g} with dtype '
                        "'float32' (or dtype 'float64')")


def _kinds(spec: Spec) -> tuple:
  return spec.kind if isinstance(spec.kind, tuple) else (spec.kind,)


# Fields holding a path; `resolve_paths` makes them absolute against the working directory.
PATH_FIELDS = ('model_checkpoint', 'data_dir')


def resolve_paths(config: Any) -> None:
  """Makes every path field of `config` (in place) absolute, once, against the cwd (and
  expands '~'), so that later code never depends on the working directory."""
  for name in PATH_FIELDS:
    value = config.get(name) if hasattr(config, 'get') else None
    if isinstance(value, str) and value:
      config[name] = os.path.abspath(os.path.expanduser(value))
