"""Command line: python -m recon.main --config=configs/X.py [--workdir=DIR] [--config.f=v].

A thin absl app: parse, validate, hand over to the experiment. Invalid input
exits with status 2 and one line on stderr, before any compute.
"""
from __future__ import annotations

import os
import sys
import time

from absl import app, flags, logging
from ml_collections import config_flags

from recon import config as config_lib

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
  from recon import experiment, sweep  # pylint: disable=import-outside-toplevel
  try:
    config_lib.validate(config)
    workdir = _WORKDIR.value or default_workdir(config.get('name', 'run'))
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


def run():
  _check_config_path(sys.argv)
  logging.set_verbosity(logging.INFO)
  app.run(main)


if __name__ == '__main__':
  run()
