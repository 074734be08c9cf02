"""Checkpoints of a reconstruction run (orbax), resume, and the config-compatibility rule.

A checkpoint (WORKDIR/checkpoints/<step>/) holds the full `optimize.ReconState`
(candidates, optimiser state, step, loss, status) and the run's PRNG keys as an
orbax pytree, plus JSON metadata: the resolved config and the loss history so
far. The trained model lives next to it in WORKDIR/model/ (`recon.models.saved`).
orbax writes each step to a temporary folder and renames it when complete, so
a run killed at any moment leaves the previous checkpoints intact.

Resuming continues the step loop from the newest READABLE checkpoint (one that
cannot be read, e.g. a file truncated by a full disk, is moved to
WORKDIR/checkpoints.unreadable/<step> with one log line naming it); the step
body does not depend on where chunks start, so a resumed run ends bit-for-bit
where an unbroken one does (on the same device and software).

SIGINT (Ctrl-C) or SIGTERM while a checkpointer is active (`on_sigint`, installed by
recon.main for both, recon/runtime/signals.py) asks for a checkpoint at the end of the running
chunk, then raises `errors.Interrupted` (exit status 128 + the signal's number); a second
signal stops at once, except while a checkpoint is being written: that save completes
first, so the second signal never leaves a half-written checkpoint or a wrong message.
"""
from __future__ import annotations

import json
import os
import shutil
import time
import weakref
from typing import Any, Dict, List, Optional, Sequence, Tuple

import jax
import numpy as np
import orbax.checkpoint as ocp
from absl import logging

from recon.config.spec import flatten
from recon.runtime import input_hashes, io, signals
from recon.errors import ExperimentError, Interrupted

# Fields that may differ between a checkpointed run and its resumption because they do
# not change the final candidates or metrics. attack.max_steps may only grow.
RESUMABLE_FIELDS = ('name', 'run.log_every_seconds', 'run.chunk_steps',
                    'run.checkpoint_every_seconds', 'run.checkpoint_every_steps',
                    'run.checkpoint_keep', 'run.resume', 'run.overwrite')
GROWABLE_FIELDS = ('attack.max_steps',)
# Fields a run resolves from its inputs when they are None (attack.knows_init None: known
# exactly when W(0) is given); the checkpoint holds the resolved value, and the inputs that
# decide it are compared themselves (paths above, contents by recon.runtime.input_hashes).
RESOLVED_FIELDS = ('attack.knows_init',)

DEFAULTS = {'checkpoint_every_seconds': 60.0, 'checkpoint_every_steps': 0, 'checkpoint_keep': 2}


def checkpoint_dir(workdir: str) -> str:
  return os.path.join(os.path.abspath(workdir), 'checkpoints')


def saved_steps(workdir: str) -> List[int]:
  """Steps of the completed checkpoints in workdir (orbax's unfinished temp folders skipped)."""
  folder = checkpoint_dir(workdir)
  if not os.path.isdir(folder):
    return []
  return sorted(int(e) for e in os.listdir(folder)
                if e.isdigit() and os.path.isdir(os.path.join(folder, e)))


def unreadable_dir(workdir: str) -> str:
  return os.path.join(os.path.abspath(workdir), 'checkpoints.unreadable')


def config_differences(saved: Dict[str, Any], current: Dict[str, Any]) -> List[str]:
  """Fields whose change would change the result: 'field (saved -> current)' per field.

  Both sides are compared as JSON values (the saved one went through JSON): a tuple
  equals the list it reads back as, numpy scalars their Python values.
  """
  out = []
  saved = flatten(io.normalized(saved or {}))
  current = flatten(io.normalized(current or {}))
  for name in sorted(set(saved) | set(current)):
    if name in RESUMABLE_FIELDS:
      continue
    old, new = saved.get(name), current.get(name)
    if name in GROWABLE_FIELDS and old is not None and new is not None and new >= old:
      continue
    if name in RESOLVED_FIELDS and new is None:
      continue
    if old != new:
      out.append(f'{name} ({old!r} -> {new!r})')
  return out


def _manager(workdir: str, keep: int) -> ocp.CheckpointManager:
  io.claim(checkpoint_dir(workdir))
  return ocp.CheckpointManager(
      checkpoint_dir(workdir),
      options=ocp.CheckpointManagerOptions(max_to_keep=keep, create=True,
                                           enable_async_checkpointing=False,
                                           cleanup_tmp_directories=True))


def _read_meta(workdir: str, step: int) -> Dict[str, Any]:
  meta = os.path.join(checkpoint_dir(workdir), str(step), 'meta')
  plain = os.path.join(meta, 'metadata')  # orbax's JSON item file: read without starting JAX
  if os.path.isfile(plain):
    with open(plain, encoding='utf-8') as f:
      return json.load(f)
  return ocp.Checkpointer(ocp.JsonCheckpointHandler()).restore(meta)


def _read_meta_config(workdir: str, step: int) -> Dict[str, Any]:
  return _read_meta(workdir, step)['config']


def read_inputs(workdir: str) -> Optional[Dict[str, Any]]:
  """The input-file record (recon.runtime.input_hashes) of the newest readable checkpoint; None when
  there is none (no checkpoint, or one written by an older recon)."""
  for step in reversed(saved_steps(workdir)):
    try:
      meta = _read_meta(workdir, step)
    except Exception:  # pylint: disable=broad-except  (unreadable: try the older one)
      continue
    return meta.get('inputs') if isinstance(meta, dict) else None
  return None


def read_config(workdir: str) -> Optional[Dict[str, Any]]:
  """The config stored with the newest checkpoint of workdir whose config is readable (None
  if there is no checkpoint); a one-line ExperimentError if none is readable."""
  steps = saved_steps(workdir)
  if not steps:
    return None
  for step in reversed(steps):
    try:
      config = _read_meta_config(workdir, step)
    except Exception:  # pylint: disable=broad-except  (unreadable: try the older one)
      continue
    if isinstance(config, dict):
      return config
  raise ExperimentError(
      f'run.resume: none of the checkpoints {steps} in {checkpoint_dir(workdir)} is readable; '
      'accepted: run.overwrite=True (start afresh) or another --workdir')


# SIGINT handling: a checkpointer that is running asks for a save at the end of its chunk.
_ACTIVE: 'weakref.WeakSet[RunCheckpointer]' = weakref.WeakSet()
_INTERRUPT = {'requested': False, 'saving': False}


def on_sigint(signum=None, frame=None) -> None:  # pylint: disable=unused-argument
  """SIGINT / SIGTERM handler: with a running checkpointer, the first signal asks it to save
  and stop at the end of the chunk; otherwise (or a second signal) KeyboardInterrupt at once,
  unless a checkpoint is being written (it completes, then the run stops)."""
  signals.note(signum)
  if _ACTIVE and not _INTERRUPT['requested']:
    _INTERRUPT['requested'] = True
    logging.warning('interrupt: writing a checkpoint at the end of this chunk, then stopping '
                    '(Ctrl-C again to stop at once)')
    return
  if _INTERRUPT['saving']:
    _INTERRUPT['requested'] = True
    return
  raise KeyboardInterrupt


def graceful_stop_pending() -> bool:
  """True while a requested checkpoint is still to be written (the watchdog waits for it)."""
  return bool(_ACTIVE) and _INTERRUPT['requested']


def interrupted_line(workdir: str) -> str:
  """The one line of a run stopped by a signal outside a checkpoint: where to resume from."""
  steps = saved_steps(workdir)
  if steps:
    return (f'interrupted; the newest checkpoint is step {steps[-1]} in '
            f'{checkpoint_dir(workdir)}; continue with --config.run.resume=True and the same '
            '--workdir')
  return 'interrupted before the first checkpoint of this run; nothing to resume from'


def reset_interrupt() -> None:
  _INTERRUPT['requested'] = False


class RunCheckpointer:
  """Saves the state after a chunk every `every_steps` steps or `every_seconds` seconds.

  A trigger set to 0 is off; a run that has stopped is always saved, so a killed
  run never redoes work after its last chunk. Keeps the latest `keep` checkpoints.
  """

  def __init__(self, workdir: str, record: Dict[str, Any], keys: Optional[Dict[str, Any]] = None,
               every_seconds: float = DEFAULTS['checkpoint_every_seconds'],
               every_steps: int = DEFAULTS['checkpoint_every_steps'],
               keep: int = DEFAULTS['checkpoint_keep']):
    self._workdir = workdir
    self._config = record
    self._inputs = input_hashes.current(record or {})  # checked when the run resumes
    self._keys = {k: np.asarray(jax.random.key_data(v) if jax.dtypes.issubdtype(
        getattr(v, 'dtype', None), jax.dtypes.prng_key) else v) for k, v in (keys or {}).items()}
    self._every_seconds = every_seconds
    self._every_steps = every_steps
    self._manager = _manager(workdir, keep)
    self._last_time = time.monotonic()
    self._last_step = 0
    self.saves = 0
    self.restored_aux: Dict[str, Any] = {}  # the `aux` saved with the restored checkpoint
    _ACTIVE.add(self)
    if ((record or {}).get('run') or {}).get('resume') and not saved_steps(workdir):
      logging.info('run.resume: no checkpoint in %s, starting at step 0', checkpoint_dir(workdir))

  def _set_aside(self, step: int, error: BaseException) -> None:
    """Moves the unreadable checkpoint `step` out of the manager's folder (one log line)."""
    src = os.path.join(checkpoint_dir(self._workdir), str(step))
    dst_root = unreadable_dir(self._workdir)
    io.claim(dst_root)
    os.makedirs(dst_root, exist_ok=True)
    dst, k = os.path.join(dst_root, str(step)), 1
    while os.path.exists(dst):
      dst, k = os.path.join(dst_root, f'{step}.{k}'), k + 1
    shutil.move(src, dst)
    first = (str(error).splitlines() or [''])[0][:160]
    logging.warning('run.resume: skipped the unreadable checkpoint %s (%s: %s); moved to %s',
                    src, type(error).__name__, first, dst)
    self._manager.reload()

  def restore(self, template: Any) -> Tuple[Any, List[Tuple[int, float]], int]:
    """(state, history, step) of the newest readable checkpoint, `template` giving the tree
    (or `template(aux) -> tree` of the checkpoint's saved `aux`, when the layout depends on it).

    Unreadable newer checkpoints are set aside (`_set_aside`); a one-line
    ExperimentError when none is readable.
    """
    steps = sorted(self._manager.all_steps(), reverse=True)
    for step in steps:
      try:
        return self._restore_step(step, template)
      except ExperimentError:
        raise
      except Exception as e:  # pylint: disable=broad-except
        self._set_aside(step, e)
    raise ExperimentError(
        f'run.resume: none of the checkpoints {sorted(steps)} in {checkpoint_dir(self._workdir)} '
        f'is readable (moved to {unreadable_dir(self._workdir)}); accepted: run.overwrite=True '
        '(start afresh) or another --workdir')

  def _restore_step(self, step: int, template: Any) -> Tuple[Any, List[Tuple[int, float]], int]:
    if callable(template):
      meta = self._manager.restore(step, args=ocp.args.Composite(meta=ocp.args.JsonRestore()))
      template = template(dict(meta.meta.get('aux') or {}))
    try:
      restored = self._manager.restore(step, args=ocp.args.Composite(
          state=ocp.args.StandardRestore({'state': template, 'keys': self._keys}),
          meta=ocp.args.JsonRestore()))
    except ValueError as e:
      if 'tree structures do not match' not in str(e):
        raise
      raise ExperimentError(
          f'run.resume: the checkpoint at step {step} in {self._workdir}/checkpoints holds a state '
          f'of another '
          'layout (written by another recon version, or with another optimizer / '
          'attack.schedule); accepted: resume with the version and config that wrote it, or start '
          'afresh with run.overwrite=True') from None
    history = list(zip(restored.meta['history']['step'], restored.meta['history']['loss']))
    self._last_step = step
    self.restored_aux = dict(restored.meta.get('aux') or {})
    return restored.state['state'], [(int(s), float(l)) for s, l in history], step

  def __call__(self, state: Any, history: Sequence[Tuple[int, float]], stopped: bool,
               aux: Optional[Dict[str, Any]] = None) -> bool:
    """Saves if a trigger fired or the run has stopped; returns whether it saved.

    `aux` (JSON values) is host-side state that must resume with the run (e.g. the
    re-seeder's key and counters); `restore` puts it in `restored_aux`.
    """
    step = int(np.max(jax.device_get(state.step)))  # a batch (restarts): its furthest run
    now = time.monotonic()
    interrupted = _INTERRUPT['requested']
    due = stopped or interrupted or (
        (self._every_steps > 0 and step - self._last_step >= self._every_steps) or
        (self._every_seconds > 0 and now - self._last_time >= self._every_seconds))
    if interrupted:
      self._save(step, state, history, aux, now)
      self.close()
      reset_interrupt()
      stop = Interrupted(f'interrupted at step {step}; checkpoint written to '
                         f'{checkpoint_dir(self._workdir)}/{step}; continue with '
                         '--config.run.resume=True and the same --workdir')
      stop.exit_code = signals.exit_code()  # 130 (SIGINT) or 143 (SIGTERM)
      raise stop
    if not due or step in self._manager.all_steps():
      return False
    self._save(step, state, history, aux, now)
    return True

  def _save(self, step: int, state: Any, history: Sequence[Tuple[int, float]],
            aux: Optional[Dict[str, Any]], now: float) -> None:
    if step in self._manager.all_steps():
      return
    meta = {'config': self._config, 'inputs': self._inputs, 'step': step,
            'history': {'step': [int(h[0]) for h in history],
                        'loss': [float(h[1]) for h in history]}}
    if aux:
      meta['aux'] = aux
    _INTERRUPT['saving'] = True  # a signal now waits for the save (`on_sigint`)
    try:
      self._manager.save(step, args=ocp.args.Composite(
          state=ocp.args.StandardSave({'state': state, 'keys': self._keys}),
          meta=ocp.args.JsonSave(meta)))
    finally:
      _INTERRUPT['saving'] = False
    self._last_time, self._last_step = now, step
    self.saves += 1

  def close(self) -> None:
    _ACTIVE.discard(self)
    self._manager.wait_until_finished()
    self._manager.close()
