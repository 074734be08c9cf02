"""Command line: python -m recon.main --config=configs/X.py [--workdir=DIR] [--config.a.b=v].

A thin absl app: parse, validate, hand over to the sweep or the pipeline registry
(`recon.pipelines.run`) through `execute`. Every
failure is one line on stderr ('error: ...'), and the exit status says which
(recon/errors.py, docs/reliability.md, "Exit status and failures"):

  0    finished
  2    refused input (config field, path, workdir, data, saved model, memory estimate);
       before compute nothing is written and a workdir the run created is removed;
       after compute started, WORKDIR/summary.json says `status: failed` and `reason`
  3    stopped on non-finite values; the outputs hold the last finite state
  130  interrupted (Ctrl-C); the running chunk ends and a checkpoint is written first
  143  terminated (SIGTERM), handled as Ctrl-C (recon/signals.py)
  1    an unexpected internal error (traceback in WORKDIR/traceback.txt or a temp file)

Paths (--config=, --workdir=, victim.checkpoint, data.dir) may be relative: they are
resolved once against the working directory. A config file in a `configs/` folder
loads from any working directory (its `from configs import base` finds that folder).
"""
from __future__ import annotations

if __name__ == '__main__':  # Ctrl-C / SIGTERM during the imports below: one line, exit 130 / 143
  from recon import signals as _signals
  _signals.guard_startup()

import importlib.util
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
from typing import Any, Dict, Optional

from absl import app, flags, logging
from ml_collections import config_flags

from recon import config as config_lib
from recon import (compile_cache, distributed, errors, failures, host, io, log_filters, runs,
                   signals, workdir_lock)

_CONFIG = config_flags.DEFINE_config_file('config', None, 'Path to a config file (configs/*.py).',
                                          lock_config=True)
_WORKDIR = flags.DEFINE_string('workdir', None,
                               'Output folder; default results/runs/<name>-<timestamp>.')


def default_workdir(name: str) -> str:
  return os.path.join('results', 'runs', f'{name}-{time.strftime("%Y%m%d-%H%M%S")}')


def _say(message: str) -> None:
  print(f'error: {message}', file=sys.stderr)
  sys.stderr.flush()


def _fail(message: str) -> None:
  _say(message)
  sys.exit(errors.EXIT_REFUSED)


def main(argv):
  if len(argv) > 1:
    _fail(f'unexpected arguments {argv[1:]}; use --config.SECTION.FIELD=VALUE')
  config = _CONFIG.value
  if config is None and _config_path(sys.argv) is None:
    _fail('--config: missing; accepted: a path to a config file such as configs/rf_synthetic.py')
  try:
    host.keep_buffers_mapped()  # reuse XLA's large CPU buffers across steps (recon/host.py)
  except ValueError as e:
    _fail(str(e))
  try:  # several processes / hosts: before any JAX computation (recon/distributed.py)
    multi = distributed.initialize(_distributed_flag(config))
  except ValueError as e:
    _fail(str(e))
  compile_cache.enable()  # reuse compiled programs across processes (recon/compile_cache.py)
  signals.start_watchdog()  # a second Ctrl-C / SIGTERM stops within seconds (recon/signals.py)
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


check_workdir = runs.check_workdir  # (recon/runs.py)


def _files_under(folder: str) -> Dict[str, Any]:
  """{relative path: (size, mtime_ns)} of every output file under folder ({} if absent; the
  lock and an overwrite's set-aside outputs are not outputs)."""
  out = {}
  for root, dirs, names in os.walk(folder):
    if root == folder:
      dirs[:] = [d for d in dirs if d not in runs.KEEP]
      names = [n for n in names if n not in runs.KEEP]
    for name in names:
      path = os.path.join(root, name)
      try:
        st = os.stat(path)
      except OSError:
        continue
      out[os.path.relpath(path, folder)] = (st.st_size, st.st_mtime_ns)
  return out


def settle_workdir(workdir: str, existed: bool, before: Dict[str, Any], reason: Optional[str],
                   config: Any = None) -> str:
  """After a run stopped on an error: 'removed' (a workdir this run created holds no file:
  refused before compute), 'untouched' (nothing written), or 'marked' (compute had started:
  summary.json gets status failed and the reason; `reason` None: leave no marker)."""
  if not os.path.isdir(workdir):
    return 'untouched'
  after = _files_under(workdir)
  if not existed and not after:
    shutil.rmtree(workdir, ignore_errors=True)
    return 'removed'
  if after == before or reason is None:
    return 'untouched'
  summary = {'status': 'failed', 'reason': reason,
             'config': config.to_dict() if hasattr(config, 'to_dict') else config,
             'failed_at': time.strftime('%Y-%m-%dT%H:%M:%S')}
  try:
    io.write_json(os.path.join(workdir, 'summary.json'), summary)
  except OSError:  # a full or read-only disk: the error line says so
    return 'untouched'
  return 'marked'


def outcome_line(summary: Dict[str, Any]) -> str:
  """The last log line of a run: how the optimiser stopped, separately from how much of the
  training set was reconstructed (a converged run may have recovered nothing)."""
  m = summary.get('metrics') or {}
  status = m.get('status')
  stopped = {'converged': 'converged (loss <= tol)', 'max_steps': 'stopped at max_steps',
             'nonfinite': 'stopped on a non-finite loss'}.get(status, str(status))
  line = f'optimizer: {stopped} after {m.get("steps")} steps, loss {m.get("final_loss", 0):.3e}'
  rung = m.get('polish') or {}
  if rung.get('kept'):
    line += (f'; precision rung: float64 loss {rung["loss_after"]:.1e}, '
             f'{len(rung["rows_replaced"])} row(s) replaced')
  if m.get('ground_truth') and 'frac_recovered' in m:
    k = int(round(m['frac_recovered'] * m.get('n', 0)))
    line += (f'; reconstructed: {k} of {m.get("n")} training samples within '
             f'recovered_threshold{" up to sign" if m.get("sign_invariant") else ""} '
             f'(frac_recovered {m["frac_recovered"]:.2f})')
  elif m.get('ground_truth') is False:
    line += '; reconstructed: unknown (no ground truth)'
  if m.get('certified'):
    line += (f'; certified up to {m.get("certified_up_to")} (blind evidence: the whole set '
             'was found)')
  elif m.get('candidates_certified'):
    line += ('; the candidates are certified, not the whole set (n unknown or not matched; '
             'see the certificate)')
  elif 'certified' in m:
    line += '; not certified'
  return line


def execute(config: Any, workdir: Optional[str] = None) -> int:
  """Validates, checks paths, workdir and memory, runs; returns the exit status.

  Every failure prints one 'error: ...' line on stderr. See the module docstring for the
  exit statuses and what each leaves in the workdir.
  """
  from recon import checkpoint, data, pipelines, sweep  # pylint: disable=import-outside-toplevel
  try:
    runs.check_config_object(config)  # get_config() returned a ConfigDict; a safe name
    config_lib.validate(config)
    with config.unlocked() if hasattr(config, 'unlocked') else _nullcontext():
      config_lib.resolve_paths(config)
      # data.name 'file': data.n / data.d None take the file's sizes (before the memory check).
      data.resolve_file(config.data, trains_victim=not config.victim.checkpoint)
    workdir = os.path.abspath(os.path.expanduser(
        workdir or default_workdir(config.name)))
    check_workdir(workdir)
    swept = bool(config_lib.sweep_axes(config.get('sweep')))  # single runs: pipelines.run
    from recon import precision  # pylint: disable=import-outside-toplevel
    precision.apply_matmul_precision(config.run.matmul_precision)  # sweeps too
  except errors.ReconError as e:
    _say(str(e))
    return e.exit_code
  existed = os.path.exists(workdir)
  before = _files_under(workdir)
  try:
    lock = workdir_lock.acquire(workdir)  # one run per workdir (recon/workdir_lock.py)
  except errors.ReconError as e:
    _say(str(e))
    return e.exit_code
  previous = signals.install(checkpoint.on_sigint)  # SIGINT and SIGTERM
  signals.set_stop_line(lambda: checkpoint.interrupted_line(workdir),
                        checkpoint.graceful_stop_pending)
  try:
    try:
      if swept:
        sweep.run(config, workdir)
        return errors.EXIT_OK
      summary = pipelines.run(config, workdir)
    finally:
      runs.finish_replace(workdir)  # an overwrite's old outputs: deleted, or back when unused
  except errors.Interrupted as e:
    settle_workdir(workdir, existed, before, None)
    signals.say_once(str(e))
    return e.exit_code
  except KeyboardInterrupt:
    settle_workdir(workdir, existed, before, None)
    signals.say_once(checkpoint.interrupted_line(workdir))
    return signals.exit_code()
  except errors.ReconError as e:
    settle_workdir(workdir, existed, before, str(e), config)
    _say(str(e))
    return e.exit_code
  except Exception as e:  # pylint: disable=broad-except
    disk = failures.disk_error(e, workdir)  # full / read-only disk: one line (recon/failures.py)
    if disk is not None:
      settle_workdir(workdir, existed, before, disk, config)
      _say(disk)
      return errors.EXIT_REFUSED
    first = (str(e).strip().splitlines() or [''])[0][:300]
    reason = f'{type(e).__name__}: {first}'
    if 'RESOURCE_EXHAUSTED' in str(e) or isinstance(e, MemoryError):
      reason = (f'out of memory ({reason}); accepted: a smaller attack.n_candidates / victim.p / '
                'data.n')
    state = settle_workdir(workdir, existed, before, reason, config)
    if state == 'marked':
      where = os.path.join(workdir, 'traceback.txt')
    else:  # a workdir the run did not write to stays as it was
      fd, where = tempfile.mkstemp(prefix='recon-traceback-', suffix='.txt')
      os.close(fd)
    io.write_text(where, traceback.format_exc())
    _say(f'internal error: {reason} (traceback in {where})')
    return errors.EXIT_INTERNAL
  finally:
    checkpoint.reset_interrupt()
    signals.restore(previous)
    signals.set_stop_line(None)
    lock.release()
  logging.info('%s', outcome_line(summary))
  if (summary.get('metrics') or {}).get('status') == 'nonfinite':
    _say(f'the loss or its gradient became non-finite at step {summary["metrics"].get("steps")}; '
         f'the outputs in {workdir} hold the last finite state')
    return errors.EXIT_NONFINITE
  return errors.EXIT_OK


class _nullcontext:  # pylint: disable=invalid-name
  def __enter__(self):
    return None

  def __exit__(self, *exc):
    return False


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
    _fail(f'--config: no such config file {path!r}; accepted: a path to a file in configs/')


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
    return sorted(io.flatten(config))
  except Exception:  # pylint: disable=broad-except
    return None


def _parse_flags(argv):
  """absl flag parsing whose errors are one line on stderr and exit status 2.

  An override of an unknown field names the closest paths of THIS config file (or of
  configs/base.py's fields when the file cannot be loaded); one with a value of the wrong
  type is reported like a validator error (path, value, accepted).
  """
  try:
    return flags.FLAGS(argv)
  except Exception as e:  # pylint: disable=broad-except
    message = str(e).splitlines()[0] if str(e) else type(e).__name__
    own = config_file_fields(_config_path(argv))
    known = own if own is not None else list(config_lib.FIELDS)
    for field, value in _config_overrides(argv):
      if field not in known:
        near = [k for k in known if k.startswith('sweep.') == field.startswith('sweep.')]
        _fail(f'config.{field}: unknown field{config_lib.near_names(field, near)}; '
              'accepted: a field configs/base.py defines')
      spec = config_lib.FIELDS.get(field)
      if spec is not None and f'--config.{field}=' in message:
        _fail(f'config.{field}: invalid value {value!r}; accepted: {spec.accepted()}')
    _fail(message)


def run():
  _check_config_path(sys.argv)
  add_config_import_root(_config_path(sys.argv))
  logging.set_verbosity(logging.INFO)
  logging.get_absl_handler().addFilter(log_filters.RunLogFilter())  # orbax, TPU probe noise
  app.run(main, flags_parser=_parse_flags)


if __name__ == '__main__':
  run()
