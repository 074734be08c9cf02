"""One run from a config: validate, check the workdir, lock it, run, settle, exit status.

The composition root below the command line (recon/main.py) and the Python API
(recon/api.py): `execute(config, workdir)` validates the whole config once, resolves its
paths, refuses bad input before compute, runs the sweep or the registered pipeline
(`recon.pipelines.run`) and returns the exit status (recon/errors.py, docs/reliability.md,
"Exit status and failures"):

  0    finished
  2    refused input (config field, path, workdir, data, saved model, memory estimate);
       before compute nothing is written and a workdir the run created is removed;
       after compute started, WORKDIR/summary.json says `status: failed` and `reason`
  3    stopped on non-finite values; the outputs hold the last finite state
  130  interrupted (Ctrl-C); the running chunk ends and a checkpoint is written first
  143  terminated (SIGTERM), handled as Ctrl-C (recon/runtime/signals.py)
  1    an unexpected internal error (traceback in WORKDIR/traceback.txt or a temp file)

Every failure is one line, given to `say` (default: 'error: ...' on stderr).
"""
from __future__ import annotations

import contextlib
import os
import re
import shutil
import sys
import tempfile
import time
import traceback
from typing import Any, Callable, Dict, Optional

import ml_collections
from absl import logging

from recon.config import sections
from recon.config import validate as config_lib
from recon import errors
from recon.errors import ReconError, say_error
from recon.runtime import failures, io, ownership, runs, signals, workdir_lock


NAME_PATTERN = re.compile(r'[A-Za-z0-9][A-Za-z0-9._+=-]{0,127}')


def check_config_object(config: Any) -> None:
  """One line unless `config` is a ConfigDict (what get_config() must return) whose `name`
  is a file-name-safe word (the default workdir results/runs/<name>-<time> stays there)."""
  if not isinstance(config, ml_collections.ConfigDict):
    got = 'None' if config is None else type(config).__name__
    raise ReconError(f'--config: get_config() must return a ConfigDict, got {got}; accepted: '
                     'a config file whose get_config() starts from configs/base.py')
  name = config.name if 'name' in config else None  # a missing name: config.validate
  if isinstance(name, str) and not NAME_PATTERN.fullmatch(name):
    raise ReconError(f'config.name: invalid value {name!r}; accepted: a file name of letters, '
                     "digits and . _ + = - (not starting with '.', at most 128 characters)")


def default_workdir(name: str) -> str:
  return os.path.join('results', 'runs', f'{name}-{time.strftime("%Y%m%d-%H%M%S")}')



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


def drop_stale_traceback(workdir: str) -> None:
  """A run that finished removes WORKDIR/traceback.txt, the record of an earlier attempt that
  failed there (its summary.json is replaced too): a finished workdir holds no stale error."""
  try:
    os.remove(os.path.join(workdir, 'traceback.txt'))
  except OSError:  # none there (or a read-only disk: the run's outputs are what count)
    pass


def outcome_line(summary: Dict[str, Any]) -> str:
  """The last log line of a run: how the optimiser stopped, separately from how much of the
  training set was reconstructed (a converged run may have recovered nothing)."""
  m = summary.get('metrics') or {}
  if 'p_star' in m and m['p_star'] is None:  # leak_width with one outcome: a bound
    return f'leak width: {m.get("statement")}'
  if 'p_star' in m:  # pipeline leak_width: a prediction, no attack
    return (f'leak width: p* = {m["p_star"]:.4g}; margin p / p* = {m["margin"]:.3g}, predicted '
            f'recovery {m["predicted_recovery"]:.2f}')
  status = m.get('status')
  stopped = {'converged': 'converged (loss <= tol)', 'max_steps': 'stopped at max_steps',
             'nonfinite': 'stopped on a non-finite loss',
             'stalled': 'stalled (escalation could not lower the loss: attack.escalate.give_up_after)'
             }.get(status, str(status))
  line = f'optimizer: {stopped} after {m.get("steps")} steps, loss {m.get("final_loss", 0):.3e}'
  rung = m.get('polish') or {}
  if rung.get('kept'):
    line += (f'; precision rung: float64 loss {rung["loss_after"]:.1e}, '
             f'{len(rung["rows_replaced"])} row(s) replaced')
  if m.get('ground_truth') and 'frac_recovered' in m:
    k = int(round(m['frac_recovered'] * m.get('n', 0)))
    upto = [w for w, on in (('sign', m.get('sign_invariant')), ('norm', m.get('scale_invariant')))
            if on]
    line += (f'; reconstructed: {k} of {m.get("n")} training samples within '
             f'recovered_threshold{" up to " + " and ".join(upto) if upto else ""} '
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


def check_backend() -> None:
  """JAX's backends start here, before anything is written: a platform that cannot start
  (JAX_PLATFORMS=tpu on a machine without one) is one line, exit 2, not an internal error
  from the middle of a run."""
  import jax  # pylint: disable=import-outside-toplevel
  try:
    jax.devices()
  except RuntimeError as e:
    first = str(e).splitlines()[0][:240] if str(e) else type(e).__name__
    raise errors.ExperimentError(
        f"JAX_PLATFORMS={os.environ.get('JAX_PLATFORMS', '')!r}: {first}; accepted: a platform "
        'this machine has (e.g. JAX_PLATFORMS=cpu), or JAX_PLATFORMS unset') from None


def execute(config: Any, workdir: Optional[str] = None,
            say: Callable[[str], None] = say_error) -> int:
  """Validates, checks paths, workdir and memory, runs; returns the exit status.

  Every failure prints one 'error: ...' line on stderr. See the module docstring for the
  exit statuses and what each leaves in the workdir.
  """
  from recon import data, pipelines  # pylint: disable=import-outside-toplevel
  from recon.pipelines import victims
  from recon.runtime import checkpoint
  from recon.sweep import grid as sweep
  from recon.sweep import store as sweep_store
  try:
    check_config_object(config)  # get_config() returned a ConfigDict; a safe name
    with config.unlocked() if hasattr(config, 'unlocked') else contextlib.nullcontext():
      axes = config_lib.read(config)  # validated, paths absolute
      # data.name 'file': data.n / data.d None take the file's sizes (before the memory check).
      data.resolve_file(config.data, config.victim, config.pipeline)
    workdir = os.path.abspath(os.path.expanduser(
        workdir or default_workdir(config.name)))
    runs.check_workdir(workdir)
    check_backend()
    swept = bool(axes)  # single runs: pipelines.run
    if not swept:
      # The run's config, resolved once, here (a saved model's fields adopted, the file's sizes,
      # attack.n_candidates filled) and read into its frozen spec: what runs below reads it,
      # adds no field to it. A sweep resolves each of its points (recon/sweep/grid.py).
      config = victims.resolve(config, validated=True)
      config.lock()
      spec = sections.RunSpec.from_config(config)  # the builders' typed sections
    from recon.models import min_norm as precision  # pylint: disable=import-outside-toplevel
    precision.apply_matmul_precision(config.run.matmul_precision)  # sweeps too
  except errors.ReconError as e:
    say(str(e))
    return e.exit_code
  existed = os.path.exists(workdir)
  before = _files_under(workdir)
  try:
    # recon's manifest first: a folder holding what recon did not write is refused here
    # (recon/runtime/ownership.py), before the lock file is created in it.
    created = ownership.take(workdir)
  except errors.ReconError as e:
    say(str(e))
    return e.exit_code
  try:
    lock = workdir_lock.acquire(workdir)  # one run per workdir (recon/runtime/workdir_lock.py)
  except errors.ReconError as e:
    ownership.release(workdir, created)
    if not existed and not _files_under(workdir):
      shutil.rmtree(workdir, ignore_errors=True)
    say(str(e))
    return e.exit_code
  previous = signals.install(checkpoint.on_sigint)  # SIGINT and SIGTERM
  stopped_line = sweep_store.interrupted_line if swept else checkpoint.interrupted_line
  signals.set_stop_line(lambda: stopped_line(workdir),
                        checkpoint.graceful_stop_pending)
  try:
    try:
      if swept:
        sweep.run(config, workdir)
        drop_stale_traceback(workdir)
        return errors.EXIT_OK
      summary = pipelines.run(spec, workdir)
    finally:
      runs.finish_replace(workdir)  # an overwrite's old outputs: deleted, or back when unused
  except errors.Interrupted as e:
    settle_workdir(workdir, existed, before, None)
    signals.say_once(str(e))
    return e.exit_code
  except KeyboardInterrupt:
    settle_workdir(workdir, existed, before, None)
    signals.say_once(stopped_line(workdir))
    return signals.exit_code()
  except errors.ReconError as e:
    settle_workdir(workdir, existed, before, str(e), config)
    say(str(e))
    return e.exit_code
  except Exception as e:  # pylint: disable=broad-except
    disk = failures.disk_error(e, workdir)  # full / read-only disk: one line (recon/runtime/failures.py)
    if disk is not None:
      settle_workdir(workdir, existed, before, disk, config)
      say(disk)
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
    say(f'internal error: {reason} (traceback in {where})')
    return errors.EXIT_INTERNAL
  finally:
    checkpoint.reset_interrupt()
    signals.restore(previous)
    signals.set_stop_line(None)
    lock.release()
    ownership.release(workdir, created)  # a manifest alone is not left in a user's folder
  logging.info('%s', outcome_line(summary))
  if (summary.get('metrics') or {}).get('status') == 'nonfinite':
    say(f'the loss or its gradient became non-finite at step {summary["metrics"].get("steps")}; '
         f'the outputs in {workdir} hold the last finite state')
    return errors.EXIT_NONFINITE
  drop_stale_traceback(workdir)
  return errors.EXIT_OK
