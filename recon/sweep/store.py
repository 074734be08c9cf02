"""A sweep's finished groups on disk, so that a killed sweep resumes where it stopped.

After each compiled group, `recon.sweep.grid.run` saves WORKDIR/groups/<g>.json (the group's
records and timings, with the sweep's config) and WORKDIR/groups/<g>.npz (its x_true /
x_hat arrays), each atomically (`recon.runtime.io`). With `run.resume=True` a sweep reloads
every saved group whose config equals the current one (`recon.runtime.checkpoint.config_differences`:
the same result-changing fields) and runs the others only; the final sweep.json / .csv /
.npz are the same as an unbroken sweep's (apart from timings). A resume that finds no saved
group says so in one log line and starts at group 1. A sweep config that differs from the
saved groups' is refused in one line, as a single run's resume is.

The group that is running is saved too (`Partial`): every `run.checkpoint_every_seconds`
(0: never), after a chunk, WORKDIR/groups/<g>.partial.npz holds the batched descent state
(`optimize.ReconState`'s leaves: candidates, optimiser moments, steps, statuses) and
<g>.partial.json the rescue steps' state (`rescue.Chain.state_dict`: escalation's keys, plateau
traces and counters), the seconds spent so far and a token that pairs the two files (a kill
between the two writes leaves a pair that does not match: ignored, with a warning). A resumed
sweep restores the group at that chunk and continues it; the chunks do not depend on where a
descent started, so the group ends as the unbroken one does. The group's `seconds` (wall) and
`cpu_seconds` (the process's CPU time, all threads) count every segment. Once the group is
finished its partial files are removed. When the descent ends the state is saved once more
(whatever the time since the last save), so that a sweep stopped during what runs after the
descent (the certificate and the precision rung, point by point; minutes at n = 100) resumes
there, at the descent's last step, instead of descending again; those records themselves are
not saved one by one.
"""
from __future__ import annotations

import csv
import io as _io
import os
import shutil
import time
from typing import Any, Dict, List, Optional, Sequence

import jax
import numpy as np
from absl import logging

from recon.runtime import checkpoint, input_hashes, io
from recon.errors import ExperimentError

FOLDER = 'groups'


def folder(workdir: str) -> str:
  return os.path.join(workdir, FOLDER)


def saved(workdir: str) -> bool:
  return os.path.isdir(folder(workdir)) and any(
      e.endswith('.json') for e in os.listdir(folder(workdir)))


def prepare(workdir: str, run: Any) -> None:
  """The workdir rules of a sweep's saved groups (the run section's): overwrite drops them, a
  fresh start on a workdir that holds them is refused (resume continues them)."""
  if run.overwrite:
    shutil.rmtree(folder(workdir), ignore_errors=True)
  elif not run.resume and saved(workdir):
    raise ExperimentError(
        f'workdir: {workdir} holds an unfinished sweep ({folder(workdir)}); pass '
        '--config.run.resume=True to continue it, choose another --workdir or pass '
        '--config.run.overwrite=True to replace it')


def save(workdir: str, index: int, record: Dict[str, Any], records, info: Dict[str, Any],
         arrays: Dict[str, np.ndarray]) -> None:
  """Group `index` as finished (`record`: the sweep's config as a dict)."""
  base = os.path.join(folder(workdir), str(index))
  io.write_npz(base + '.npz', **arrays)
  io.write_json(base + '.json', {'config': record, 'records': records, 'info': info,
                                 'inputs': input_hashes.current(record)})


def csv_text(records: Sequence[Dict[str, Any]]) -> str:
  """sweep.csv: one row per record, the union of their fields as columns."""
  columns: List[str] = []
  for r in records:
    columns += [k for k in r if k not in columns]
  buf = _io.StringIO()
  writer = csv.DictWriter(buf, fieldnames=columns, lineterminator='\n')
  writer.writeheader()
  for r in records:
    writer.writerow({k: r.get(k, '') for k in columns})
  return buf.getvalue()


def load(workdir: str, index: int, record: Dict[str, Any]) -> Optional[Dict[str, Any]]:
  """Group `index` as saved ({'records', 'info', 'arrays'}), or None when it is not (`record`:
  the sweep's config as a dict, which the saved group's must equal)."""
  base = os.path.join(folder(workdir), str(index))
  if not (os.path.isfile(base + '.json') and os.path.isfile(base + '.npz')):
    return None
  try:
    stored = io.read_json(base + '.json')
    with np.load(base + '.npz') as f:
      arrays = {k: f[k] for k in f.files}
  except (OSError, ValueError) as e:  # unreadable (a kill mid-write is atomic; a bad disk)
    logging.warning('sweep: group %d in %s is unreadable (%s); running it again', index + 1,
                    folder(workdir), e)
    return None
  diff = checkpoint.config_differences(stored.get('config') or {}, record)
  if diff:
    raise ExperimentError(
        f'run.resume: the sweep config differs from the saved groups in {folder(workdir)} in '
        f'{", ".join(diff)}; restore those values, or choose another --workdir')
  input_hashes.check(stored.get('inputs'), record)  # the same model and data files
  return {'records': stored['records'], 'info': stored['info'], 'arrays': arrays}


def interrupted_line(workdir: str) -> str:
  """The one line of a sweep stopped by a signal: whether its saved groups let it resume."""
  if os.path.isdir(folder(workdir)) and any(
      e.endswith('.json') for e in os.listdir(folder(workdir))):
    return (f'interrupted; the finished and running groups are saved in {folder(workdir)}; '
            'continue with --config.run.resume=True and the same --workdir')
  return 'interrupted before the sweep saved its first group; nothing to resume from'


def say_resume(workdir: str, found: int, total: int) -> None:
  if found:
    logging.info('sweep: resuming %s: %d of %d group(s) already finished', workdir, found,
                 total)
  else:
    logging.info('sweep: run.resume found no finished group in %s, starting at group 1',
                 folder(workdir))


class Partial:
  """The running group `index`'s descent state on disk (module docstring): `restore` once
  before the descent, `after_chunk` after each chunk, `done` when the group is finished."""

  def __init__(self, workdir: str, index: int, record: Dict[str, Any], run: Any):
    """`record`: the sweep's config as a dict; `run`: its run section (resume, the
    checkpoints' period)."""
    self.base = os.path.join(folder(workdir), f'{index}.partial')
    self.index, self.record, self.resume = index, record, run.resume
    self.inputs = input_hashes.current(record)
    self.every = float(run.checkpoint_every_seconds)
    self.prior_seconds = 0.0  # wall seconds of earlier segments of this group
    self.prior_cpu: Optional[float] = 0.0  # their CPU seconds (None: not recorded)
    self.t0 = self.last = time.time()
    self.cpu0 = time.process_time()

  def seconds(self) -> float:
    """Wall seconds of the group so far, over every segment."""
    return self.prior_seconds + time.time() - self.t0

  def cpu_seconds(self) -> Optional[float]:
    """The process's CPU seconds (all threads) since the group started, over every segment: on
    a shared machine the cost that wall time does not show."""
    return None if self.prior_cpu is None else self.prior_cpu + time.process_time() - self.cpu0

  def after_chunk(self, state: Any, rescue: Any, force: bool = False) -> None:
    """Saves the running state when `run.checkpoint_every_seconds` have passed since the last
    save, or with `force` (the descent's end) whenever saving is on (every > 0)."""
    if self.every <= 0 or (not force and time.time() - self.last < self.every):
      return
    self.last = time.time()
    token = time.time_ns()
    leaves = [np.asarray(v) for v in jax.device_get(jax.tree.leaves(state))]
    io.write_npz(self.base + '.npz', token=np.asarray(token),
                 **{f'leaf_{i}': v for i, v in enumerate(leaves)})
    io.write_json(self.base + '.json', {
        'config': self.record, 'inputs': self.inputs, 'token': token,
        'seconds': self.seconds(),
        'cpu_seconds': self.cpu_seconds(),
        'step': int(np.max(np.asarray(jax.device_get(state.step)))),
        'rescue': rescue.state_dict() if rescue is not None else {}})

  def restore(self, state: Any, rescue: Any) -> Any:
    """`state` (the fresh group's, which gives the tree, shapes and shardings) replaced by the
    saved one, and the rescue steps' state restored; `state` itself when nothing usable is
    saved. A saved group of another config is refused as `load` refuses it."""
    if not self.resume or not (os.path.isfile(self.base + '.json')
                               and os.path.isfile(self.base + '.npz')):
      return state
    try:
      meta = io.read_json(self.base + '.json')
      with np.load(self.base + '.npz') as f:
        saved = {k: f[k] for k in f.files}
    except (OSError, ValueError) as e:
      logging.warning('sweep: the running state of group %d is unreadable (%s); starting it '
                      'again', self.index + 1, e)
      return state
    diff = checkpoint.config_differences(meta.get('config') or {}, self.record)
    if diff:
      raise ExperimentError(
          f'run.resume: the sweep config differs from the saved groups in '
          f'{os.path.dirname(self.base)} in {", ".join(diff)}; restore those values, or choose '
          'another --workdir')
    input_hashes.check(meta.get('inputs'), self.record)
    like, tree = jax.tree.flatten(state)
    if (int(saved.get('token', -1)) != meta.get('token') or len(saved) != len(like) + 1
        or any(saved[f'leaf_{i}'].shape != np.shape(v) for i, v in enumerate(like))):
      logging.warning('sweep: the running state of group %d does not match its record (a kill '
                      'between its two writes?); starting the group again', self.index + 1)
      return state
    leaves = [jax.device_put(saved[f'leaf_{i}'].astype(v.dtype), v.sharding)
              for i, v in enumerate(like)]
    state = jax.tree.unflatten(tree, leaves)
    if rescue is not None:
      rescue.load_state_dict(meta.get('rescue') or {})
      state = rescue.resumed(state, False)
    self.prior_seconds = float(meta['seconds'])
    self.prior_cpu = meta.get('cpu_seconds')
    logging.info('sweep: group %d resumed at step %d (%.0f s spent before)', self.index + 1,
                 meta['step'], self.prior_seconds)
    return state

  def done(self) -> None:
    for ext in ('.npz', '.json'):
      if os.path.exists(self.base + ext):
        os.remove(self.base + ext)
