"""One validator for every config: types, ranges and allowed names, before compute.

Each field of a config is checked against `SCHEMA` (a field a config does not
have is not checked; a field the schema does not know is an error, so typos in
config files are caught). Errors are `ConfigError`s whose one-line message names
the field, the value and what is accepted.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Optional, Sequence

from recon import data, features, optimize
from recon.objectives import unified

DTYPES = ('float32', 'float64')
MODELS = ('random_features', 'two_layer')
SUBSPACE_MODES = ('none', 'known', 'estimated')
TWO_LAYER_LOSSES = ('mse', 'logistic')


class ConfigError(ValueError):
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
      if value != value:  # NaN
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
    'max_steps': _positive_int(),
    'tol': Spec(float, low=0.0),
    'dtype': Spec(str, choices=DTYPES),
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
    # Subspace-aware reconstruction (recon/subspace.py, docs/subspace.md).
    'planted_dim': Spec(int, low=1, optional=True),  # dataset synthetic_subspace: its dimension k
    'subspace': Spec(str, choices=SUBSPACE_MODES),
    'subspace_dim': Spec(int, low=1, optional=True),  # None: automatic (largest gap)
    'subspace_noise_floor': Spec(float, low=0.0, low_open=True, high=1.0),
    'gradient_at': Spec(str, choices=lambda: unified.GRADIENT_AT),
    'alpha_mode': Spec(str, choices=lambda: unified.ALPHA_MODES),
    # Two-layer network (model two_layer), trained by full-batch GD.
    'width': _positive_int(),
    'train_loss': Spec(str, choices=TWO_LAYER_LOSSES),
    'train_lr': Spec(float, low=0.0, low_open=True),
    'train_steps': _positive_int(),
    'train_tol': Spec(float, low=0.0),
    'weight_decay': Spec(float, low=0.0),
}


def validate(config: Any, schema: Dict[str, Spec] = SCHEMA) -> None:
  """Raises ConfigError on the first invalid field (in schema order, then unknown ones)."""
  fields = dict(config.items())
  for name, spec in schema.items():
    if name in fields and not spec.check(fields[name]):
      raise ConfigError(
          f'config.{name}: invalid value {fields[name]!r}; accepted: {spec.accepted()}')
  for name in fields:
    if name not in schema and name != 'sweep':
      raise ConfigError(f'config.{name}: unknown field; accepted fields: '
                        f'{", ".join(sorted(schema))}')
