"""The command line's flags: --config=FILE, --config.SECTION.FIELD=VALUE, --workdir.

absl parsing whose every error is one line on stderr and exit status 2 (an unknown field
names the closest paths of the config file given), and the import root that lets a config
file in a `configs/` folder load from any working directory.
"""
from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
from typing import Optional

from absl import flags

from recon.config import validate as config_lib
from recon import errors
from recon.errors import say_error
from recon.config.spec import flatten


def fail(message: str) -> None:
  """One line on stderr, exit status 2."""
  say_error(message)
  sys.exit(errors.EXIT_REFUSED)


def _config_path(argv) -> Optional[str]:
  """The file of --config=FILE[:args] in argv (None if absent)."""
  for i, arg in enumerate(argv):
    path = None
    if arg.startswith('--config='):
      path = arg.split('=', 1)[1]
    elif arg == '--config' and i + 1 < len(argv):
      path = argv[i + 1]
    if path is not None:
      return path.split(':', 1)[0]
  return None


def _check_config_path(argv) -> None:
  """A missing config file gets one line, not the flags library's traceback."""
  path = _config_path(argv)
  if path is not None and not os.path.isfile(path):
    fail(f'--config: no such config file {path!r}; accepted: a path to a file in configs/')


def config_import_root(path: str) -> Optional[str]:
  """The folder that makes `import configs.X` work for the config file `path`: the parent of
  its `configs/` folder (None for a file outside a folder named configs)."""
  folder = os.path.dirname(os.path.abspath(path))
  if os.path.basename(folder) != 'configs':
    return None
  return os.path.dirname(folder)


def add_config_import_root(path: Optional[str]) -> None:
  """Puts the config file's import root first on sys.path, so that shipped configs (which
  `from configs import base`) load from any working directory."""
  root = config_import_root(path) if path else None
  if root is not None and root not in sys.path:
    sys.path.insert(0, root)


def _config_overrides(argv):
  """(dotted path, value) of every --config.PATH=VALUE argument."""
  out = []
  for arg in argv:
    m = re.match(r'--config\.([^=]+)=(.*)$', arg)
    if m:
      out.append((m.group(1), m.group(2)))
  return out


def config_file_fields(path: Optional[str]) -> Optional[list]:
  """The dotted field paths the config file defines (None when it cannot be loaded)."""
  if not path:
    return None
  file, _, arg = path.partition(':')
  try:
    add_config_import_root(file)
    spec = importlib.util.spec_from_file_location('_recon_config_probe', file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    config = module.get_config(arg) if arg else module.get_config()
    return sorted(flatten(config))
  except Exception:  # pylint: disable=broad-except
    return None


def _deferred(argv):
  """The overrides the flags library cannot parse, applied after it: an optional field's
  'None', and a dict field (victim.module_kwargs) as a JSON object or one key of it
  (--config.victim.module_kwargs.width=800, the value read as JSON, else as a string).
  Returns (the other arguments, [(dotted field, key or None, value)]) in argv's order."""
  rest, later, last = [], [], {}
  for arg in argv:
    m = re.match(r'--config\.([^=]+)=(.*)$', arg, re.S)
    field, value = (m.group(1), m.group(2)) if m else (None, None)
    spec = config_lib.FIELDS.get(field)
    parent, _, key = (field or '').rpartition('.')
    if value == 'None' and spec is not None and spec.optional:
      later.append((field, None, None))
    elif field in config_lib.DICT_FIELDS:
      try:
        obj = json.loads(value)
      except ValueError as e:
        fail(f'config.{field}: invalid JSON {value!r} ({e}); accepted: a JSON object such as '
             '\'{"width": 800}\'')
      if not isinstance(obj, dict):
        fail(f'config.{field}: invalid value {value!r}; accepted: a JSON object such as '
             '\'{"width": 800}\'')
      later.append((field, None, obj))
    elif parent in config_lib.DICT_FIELDS and key:
      try:
        obj = json.loads(value)
      except ValueError:
        obj = value
      later.append((parent, key, obj))
    else:
      rest.append(arg)
    if field is not None:
      last[field] = len(later) if rest[-1:] != [arg] else 'flag'
  # An optional field's 'None' followed by a value: the value is the last word.
  later = [item for i, item in enumerate(later)
           if not (item[1] is None and item[2] is None and last.get(item[0]) == 'flag')]
  return rest, later


def _parse_flags(argv):
  """absl flag parsing whose errors are one line on stderr and exit status 2.

  An override of an unknown field names the closest paths of THIS config file (or of
  configs/base.py's fields when the file cannot be loaded); one with a value of the wrong
  type is reported like a validator error (path, value, accepted).
  """
  argv, later = _deferred(argv)
  saved_argv, sys.argv = sys.argv, argv  # ml_collections reads the overrides from sys.argv
  try:  # the last override of a field wins; the deferred ones are applied below, in order
    rest = flags.FLAGS(argv)
  except Exception as e:  # pylint: disable=broad-except
    message = str(e).splitlines()[0] if str(e) else type(e).__name__
    own = config_file_fields(_config_path(argv))
    known = own if own is not None else list(config_lib.FIELDS)
    overrides = _config_overrides(argv)
    # The override the parser stopped at first (a field given twice: the value it names).
    named = [(f, v) for f, v in overrides if f'--config.{f}={v}' in message]
    for field, value in named + overrides:
      if field not in known:
        near = [k for k in known if k.startswith('sweep.') == field.startswith('sweep.')]
        fail(f'config.{field}: unknown field{config_lib.near_names(field, near)}; '
              'accepted: a field configs/base.py defines')
      spec = config_lib.FIELDS.get(field)
      if spec is not None and f'--config.{field}=' in message:
        fail(f'config.{field}: invalid value {value!r}; accepted: {spec.accepted()}')
    fail(message)
  finally:
    sys.argv = saved_argv
  config = flags.FLAGS['config'].value if 'config' in flags.FLAGS else None
  for field, key, value in later:
    if config is None:
      break
    if key is None:
      config_lib.set_path(config, field, value)
    else:
      old = config_lib.get_path(config, field)
      config_lib.set_path(config, field, dict(old.to_dict() if hasattr(old, 'to_dict')
                                              else old or {}, **{key: value}))
  return rest
