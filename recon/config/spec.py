"""What a config field accepts: a type, optional bounds or names, and whether None is allowed.

`Spec.check(value)` is the validator's test of one field; `Spec.accepted()` the phrase its
one-line error ends with (recon/config/validate.py holds the schema of Specs).
"""
from __future__ import annotations

import dataclasses
import math
from typing import Any, Callable, Optional, Sequence


@dataclasses.dataclass(frozen=True)
class Spec:
  """What a field accepts: a type, optional bounds or names, and `None` if optional."""
  kind: type | tuple
  low: Optional[float] = None  # inclusive lower bound
  low_open: bool = False  # True: strictly greater than `low`
  high: Optional[float] = None  # inclusive upper bound
  choices: Optional[Callable[[], Sequence[str]] | Sequence[str]] = None
  optional: bool = False
  each: bool = False  # True: a tuple / list of distinct names, each one of `choices`

  def accepted(self) -> str:
    if self.choices is not None:
      names = self.choices() if callable(self.choices) else self.choices
      text = 'one of ' + ', '.join(repr(c) for c in names)
      if self.each:
        text = 'a tuple of distinct names, each ' + text + ' (or ())'
    else:
      kinds = self.kind if isinstance(self.kind, tuple) else (self.kind,)
      text = ' or '.join(k.__name__ for k in kinds)
      if self.low is not None:
        text += f' {">" if self.low_open else ">="} {self.low:g}'
      if self.high is not None:
        text += f' and <= {self.high if isinstance(self.high, int) else format(self.high, "g")}'
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
      if self.each:
        return (not isinstance(value, str) and len(set(value)) == len(value)
                and all(isinstance(v, str) and v in names for v in value))
      return value in names
    if isinstance(value, (int, float)) and not isinstance(value, bool):
      if not math.isfinite(value):  # NaN, inf (an int is always finite)
        return False
      if self.low is not None and (value <= self.low if self.low_open else value < self.low):
        return False
      if self.high is not None and value > self.high:
        return False
    return True


def flatten(config: Any, prefix: str = '', leaves: tuple = ()) -> dict:
  """{dotted path: value} of a nested ConfigDict or dict (sections are walked, not values;
  the paths in `leaves` are values even when they hold a dict)."""
  out = {}
  for name, value in config.items():
    if hasattr(value, 'items') and prefix + name not in leaves:
      out.update(flatten(value, f'{prefix}{name}.', leaves))
    else:
      out[prefix + name] = value
  return out
