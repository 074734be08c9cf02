"""One validator for every config: types, ranges and allowed names, before compute.

A config is in sections (`data`, `victim`, `attack`, `run`, plus `seed`, `name`,
`sweep`) and starts from configs/base.py, which holds every default (the rescue steps' and
sample splitting's sections from their one definition, recon/config/sections.py).
Each field is checked against `config_schema.SCHEMA` by its dotted path (`data.n`,
`attack.escalate.window`): a missing field, a field the schema does not know
(a typo: the closest paths are named) and an invalid value are errors.
Errors are `ConfigError`s whose one-line message names the full path, the
value and what is accepted.
"""
from __future__ import annotations

import difflib
import os
from typing import Any, Dict, Optional

from recon import registry
from recon.config import routes
from recon.config.schema import (DICT_FIELDS, FIELDS, SECTIONS, SWEEP_ONLY, SWEEP_STATIC,
                                 SWEEP_VECTORISED)
from recon.config.spec import Spec, flatten
from recon.errors import ReconError


class ConfigError(ReconError, ValueError):
  """An invalid config field; the message is one line naming field and accepted values."""


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


def validate(config: Any) -> Dict[str, tuple]:
  """Raises ConfigError on the first invalid, missing or unknown field, section by section;
  returns the swept axes (`sweep_axes`; {} for a single run).

  A config starts from configs/base.py, so every field of SCHEMA must be there; a field
  SCHEMA does not know is a typo (the closest paths are named).
  """
  if not hasattr(config, 'items') or any(
      name in config and not hasattr(config[name], 'items') for name in SECTIONS):
    raise ConfigError('config: not in sections; accepted: a config that starts from '
                      'configs/base.py (fields data.*, victim.*, attack.*, run.*, seed, name)')
  fields = flatten({k: v for k, v in config.items() if k != 'sweep'}, leaves=DICT_FIELDS)
  for path in fields:  # first: a value where a section is (attack.subspace) leaves its fields out
    if path not in FIELDS:
      raise ConfigError(f'config.{path}: unknown field{near_names(path, FIELDS)}; accepted: '
                        'a field configs/base.py defines')
  for path, spec in FIELDS.items():
    if path not in fields:
      raise ConfigError(f'config.{path}: missing; accepted: a config that starts from '
                        'configs/base.py (which defines every field)')
    if not spec.check(fields[path]):
      raise ConfigError(
          f'config.{path}: invalid value {fields[path]!r}; accepted: {spec.accepted()}')
  check_float32_range(fields)
  for path in ('data.n', 'data.d'):
    if fields[path] is None and not registry.capability('dataset', fields['data.name'],
                                                         'own_sizes'):
      own = [n for n in registry.known_names('dataset')
             if registry.capability('dataset', n, 'own_sizes')]
      raise ConfigError(f"config.{path}: None is accepted only with data.name "
                        f"{' or '.join(map(repr, own))} (its rows' own size); accepted: int >= 1")
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
  return sweep_axes(config.get('sweep'))


def read(config: Any) -> Dict[str, tuple]:
  """The config read once, before anything runs: validated (`validate`), its paths made
  absolute (`resolve_paths`, in place); returns its swept axes ({} for a single run)."""
  axes = validate(config)
  resolve_paths(config)
  return axes


def near_names(name: str, names, n: int = 3) -> str:
  """' (did you mean a, b?)' with the closest of `names` (dotted paths), or ''.

  First a sub-section's own fields where the name is that sub-section, in its definition's
  order ('attack.subspace' finds 'attack.subspace.mode'); then the same field in a sub-section,
  those under the same section first ('attack.prior' finds 'attack.kkt.prior',
  'attack.kkt_target' 'attack.kkt.target', 'attack.subspace_dim' 'attack.subspace.dim'); then
  the closest among the fields of the same section, then by last name across sections (so a
  name from before the sections, 'n', finds 'data.n'), then by the whole path.
  """
  names = sorted(names)
  parent, _, leaf = name.rpartition('.')
  tails = ('.' + leaf,) + (('.' + leaf.replace('_', '.', 1),) if '_' in leaf else ())
  inside = [p for p in FIELDS if p.startswith(name + '.') and p in names]
  moved = inside + sorted((p for p in names if p.endswith(tails) and p != name
                           and p not in inside),
                          key=lambda p: (not p.startswith(parent + '.'), p))
  siblings = [p.rpartition('.')[2] for p in names if p.rpartition('.')[0] == parent]
  close = moved + [f'{parent}.{m}' if parent else m
                   for m in difflib.get_close_matches(leaf, siblings, n=n, cutoff=0.6)
                   if (f'{parent}.{m}' if parent else m) not in moved]
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
               if v.pipeline == routes.NETWORKS and v.architecture is not None)


def knows_init(setting: Optional[bool], initial_given: bool) -> bool:
  """Whether the attacker uses the initial parameters W(0): `attack.knows_init` when set (True
  or False), else (None) exactly when they are given (`initial_given`: a model recon trains,
  a recon checkpoint with its initial parameters, or victim.init_checkpoint)."""
  return bool(initial_given) if setting is None else bool(setting)


def check_defences(fields: Dict[str, Any]) -> None:
  """The defences (victim.train.dp, victim.release_noise) apply to the victims they name,
  trained here (no victim.checkpoint, not the subspace pipeline); DP needs one noise source;
  the adaptive attack against weight decay (attack.init_in_span) needs a network's W_L(0).
  The registry's entries are read only where a defence is on (a config without one imports no
  model code)."""
  model, noise = fields['victim.name'], fields['victim.release_noise']
  dp_on = fields['victim.train.dp.mode'] == 'on'
  if dp_on and model not in trained_networks():
    raise ConfigError(f"config.victim.train.dp.mode: 'on' for victim.name {model!r}; accepted: "
                      f"'on' with victim.name in {', '.join(trained_networks())}, else 'off'")
  released = (('random_features',) + trained_networks()) if noise > 0 else ()  # noise applies to
  if noise > 0 and model not in released:
    raise ConfigError(f'config.victim.release_noise: {noise!r} for victim.name {model!r}; '
                      f'accepted: 0, or > 0 with victim.name in {", ".join(released)}')
  subspace = (dp_on or noise > 0) and (
      registry.lookup('objective', fields['attack.objective']).pipeline == routes.SUBSPACE
      or fields['attack.subspace.mode'] != 'none'
      or fields['attack.subspace.alpha_mode'] != 'closed_form')
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
  networks = (tuple(n for n, v in registry.items('victim') if v.pipeline == routes.NETWORKS)
              if fields['attack.init_in_span'] else ())
  if fields['attack.init_in_span'] and (fields['attack.knows_init'] is False
                                       or model not in networks):
    raise ConfigError(f'config.attack.init_in_span: True for victim.name {model!r} with '
                      f"attack.knows_init {fields['attack.knows_init']}; accepted: False, or True "
                      f"with attack.knows_init True or None (known when given) and victim.name "
                      f"in {', '.join(networks)}")
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
