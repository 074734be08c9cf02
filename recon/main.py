"""Command line: python -m recon.main --config=configs/X.py [--workdir=DIR] [--config.f=v].

A thin absl app: parse, validate, hand over to the experiment. Invalid input
exits with status 2 and one line on stderr, before any compute.
"""
from __future__ import annotations

import os
import re
import sys
import time

from absl import app, flags, logging
from ml_collections import config_flags

from recon import config as config_lib
from recon import compile_cache, host

_CONFIG = config_flags.DEFINE_config_file('config', None, 'Path to a config file (configs/*.py).',
                                          lock_config=True)
_WORKDIR = flags.DEFINE_string('workdir', None,
                               'Output folder; default results/runs/<name>-<timestamp>.')


def default_workdir(name: str) -> str:
  return os.path.join('results', 'runs', f'{name}-{time.strftime("%Y%m%d-%H%M%S")}')


def _fail(message: str) -> None:
  print(f'error: {message}', file=sys.stderr)
  sys.exit(2)


def main(argv):
  if len(argv) > 1:
    _fail(f'unexpected arguments {argv[1:]}; use --config.FIELD=VALUE')
  config = _CONFIG.value
  if config is None:
    _fail('--config: missing; accepted: a path to a config file such as configs/rf_synthetic.py')
  try:
    host.keep_buffers_mapped()  # reuse XLA's large CPU buffers across steps (recon/host.py)
  except ValueError as e:
    _fail(str(e))
  compile_cache.enable()  # reuse compiled programs across processes (recon/compile_cache.py)
  from recon import experiment, sweep  # pylint: disable=import-outside-toplevel
  try:
    config_lib.validate(config)
    workdir = _WORKDIR.value or default_workdir(config.get('name', 'run'))
    from recon import precision  # pylint: disable=import-outside-toplevel
    precision.apply_matmul_precision(config.get('matmul_precision'))  # sweeps too (issue #17)
    if config.get('sweep'):
      sweep.run(config, workdir)
    else:
      experiment.run(config, workdir)
  except (config_lib.ConfigError, experiment.ExperimentError) as e:
    _fail(str(e))


def _check_config_path(argv) -> None:
  """A missing config file gets one line, not the flags library's traceback."""
  for i, arg in enumerate(argv):
    path = None
    if arg.startswith('--config='):
      path = arg.split('=', 1)[1]
    elif arg == '--config' and i + 1 < len(argv):
      path = argv[i + 1]
    if path is not None:
      path = path.split(':', 1)[0]
      if not os.path.isfile(path):
        _fail(f'--config: no such config file {path!r}; accepted: a path to a file in configs/')


def _config_overrides(argv):
  """(field, value) of every --config.FIELD=VALUE argument."""
  out = []
  for arg in argv:
    m = re.match(r'--config\.([^=]+)=(.*)$', arg)
    if m:
      out.append((m.group(1), m.group(2)))
  return out


def _parse_flags(argv):
  """absl flag parsing whose errors are one line on stderr and exit status 2.

  An override of an unknown field or with a value of the wrong type is reported
  like a validator error (field, value, accepted values).
  """
  try:
    return flags.FLAGS(argv)
  except Exception as e:  # pylint: disable=broad-except
    message = str(e).splitlines()[0] if str(e) else type(e).__name__
    for field, value in _config_overrides(argv):
      spec = config_lib.SCHEMA.get(field)
      if spec is None:
        _fail(f'config.{field}: unknown field; accepted fields: '
              f'{", ".join(sorted(config_lib.SCHEMA))}')
      if f'--config.{field}=' in message:
        _fail(f'config.{field}: invalid value {value!r}; accepted: {spec.accepted()}')
    full = str(e)
    for field, _ in _config_overrides(argv):
      # ml_collections reports a field the file does not define as a KeyError whose text is
      # a quoted repr ("'n_classes'\nDid you mean ..."), so look for the bare name.
      if re.search(r"(?<![\w.])" + re.escape(field) + r"(?!\w)", full):
        hint = re.search(r'Did you mean "([^"]+)"', full)
        _fail(f'config.{field}: not a field of this config file; accepted: the fields it '
              'defines' + (f' (did you mean {hint.group(1)}?)' if hint else
                           ' (add the field to the config file to override it)'))
    _fail(message)


class _DropOrbaxInfo:
  """Keeps orbax's per-save INFO lines out of the run log (warnings still pass)."""

  def filter(self, record) -> bool:
    return record.levelno > 20 or 'orbax' not in record.pathname


def run():
  _check_config_path(sys.argv)
  logging.set_verbosity(logging.INFO)
  logging.get_absl_handler().addFilter(_DropOrbaxInfo())
  app.run(main, flags_parser=_parse_flags)


if __name__ == '__main__':
  run()
