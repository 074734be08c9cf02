"""Command line: python -m recon.main --config=configs/X.py [--workdir=DIR] [--config.a.b=v].

A thin absl app: flags (recon/config/cli_flags.py) -> `recon.execution.execute` -> exit status. Every
failure is one line on stderr ('error: ...'), and the exit status says which
(recon/errors.py, docs/reliability.md, "Exit status and failures"):

  0    finished
  2    refused input (config field, path, workdir, data, saved model, memory estimate);
       before compute nothing is written and a workdir the run created is removed;
       after compute started, WORKDIR/summary.json says `status: failed` and `reason`
  3    stopped on non-finite values; the outputs hold the last finite state
  130  interrupted (Ctrl-C); the running chunk ends and a checkpoint is written first
  143  terminated (SIGTERM), handled as Ctrl-C (recon/runtime/signals.py)
  1    an unexpected internal error (traceback in WORKDIR/traceback.txt or a temp file)

Paths (--config=, --workdir=, victim.checkpoint, data.dir) may be relative: they are
resolved once against the working directory. A config file in a `configs/` folder
loads from any working directory (its `from configs import base` finds that folder).
"""
from __future__ import annotations

if __name__ == '__main__':  # Ctrl-C / SIGTERM during the imports below: one line, exit 130 / 143
  from recon.runtime import signals as _signals
  _signals.guard_startup()

import os
import sys
from typing import Any

from absl import app, flags, logging
from ml_collections import config_flags

from recon.runtime import compile_cache, distributed, failures, host, log_filters, signals
from recon.config.cli_flags import (_check_config_path, _config_path, _parse_flags,
                                    add_config_import_root, fail as _fail)
from recon.execution import default_workdir, execute

_CONFIG = config_flags.DEFINE_config_file('config', None, 'Path to a config file (configs/*.py).',
                                          lock_config=True)
_WORKDIR = flags.DEFINE_string('workdir', None,
                               'Output folder; default results/runs/<name>-<timestamp>.')


def main(argv):
  if len(argv) > 1:
    _fail(f'unexpected arguments {argv[1:]}; use --config.SECTION.FIELD=VALUE')
  config = _CONFIG.value
  if config is None and _config_path(sys.argv) is None:
    _fail('--config: missing; accepted: a path to a config file such as configs/rf_synthetic.py')
  try:
    host.keep_buffers_mapped()  # reuse XLA's large CPU buffers across steps (recon/runtime/host.py)
  except ValueError as e:
    _fail(str(e))
  try:  # several processes / hosts: before any JAX computation (recon/runtime/distributed.py)
    multi = distributed.initialize(_distributed_flag(config))
  except ValueError as e:
    _fail(str(e))
  compile_cache.enable()  # reuse compiled programs across processes (recon/runtime/compile_cache.py)
  signals.start_watchdog()  # a second Ctrl-C / SIGTERM stops within seconds (recon/runtime/signals.py)
  failures.quiet_unraisable()  # tensorstore's reports of writes a full disk abandoned
  workdir = _WORKDIR.value
  if multi:  # process i > 0 writes WORKDIR.process<i>
    workdir = distributed.process_workdir(os.path.abspath(os.path.expanduser(
        workdir or default_workdir(config.name))))
  failures.end_process(execute(config, workdir))  # a failed run: no shutdown noise


def _distributed_flag(config: Any) -> bool:
  """config.run.distributed, read before validation (an invalid config is refused later,
  by `execute`, in one line: until then it runs as one process)."""
  try:
    return config.run.distributed is True
  except (AttributeError, KeyError):
    return False


def run():
  _check_config_path(sys.argv)
  add_config_import_root(_config_path(sys.argv))
  logging.set_verbosity(logging.INFO)
  # INFO lines plain on the console ('step ... loss ...'); --showprefixforinfo brings absl's
  # 'I1204 22:13:24.84 ... file.py:12]' prefix back (scripts that time a run's phases use it).
  flags.FLAGS.set_default('showprefixforinfo', False)
  logging.get_absl_handler().addFilter(log_filters.RunLogFilter())  # orbax, TPU probe noise
  app.run(main, flags_parser=_parse_flags)


if __name__ == '__main__':
  run()
