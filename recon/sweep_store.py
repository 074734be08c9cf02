"""A sweep's finished groups on disk, so that a killed sweep resumes where it stopped.

After each compiled group, `recon.sweep.run` saves WORKDIR/groups/<g>.json (the group's
records and timings, with the sweep's config) and WORKDIR/groups/<g>.npz (its x_true /
x_hat arrays), each atomically (`recon.io`). With `run.resume=True` a sweep reloads
every saved group whose config equals the current one (`recon.checkpoint.config_differences`:
the same result-changing fields) and runs the others only; the final sweep.json / .csv /
.npz are the same as an unbroken sweep's (apart from timings). A resume that finds no saved
group says so in one log line and starts at group 1. A sweep config that differs from the
saved groups' is refused in one line, as a single run's resume is.
"""
from __future__ import annotations

import os
import shutil
from typing import Any, Dict, Optional

import numpy as np
from absl import logging

from recon import checkpoint, io
from recon.errors import ExperimentError

FOLDER = 'groups'


def folder(workdir: str) -> str:
  return os.path.join(workdir, FOLDER)


def saved(workdir: str) -> bool:
  return os.path.isdir(folder(workdir)) and any(
      e.endswith('.json') for e in os.listdir(folder(workdir)))


def prepare(workdir: str, config: Any) -> None:
  """The workdir rules of a sweep's saved groups: overwrite drops them, a fresh start on a
  workdir that holds them is refused (resume continues them)."""
  if config.run.overwrite:
    shutil.rmtree(folder(workdir), ignore_errors=True)
  elif not config.run.resume and saved(workdir):
    raise ExperimentError(
        f'workdir: {workdir} holds an unfinished sweep ({folder(workdir)}); pass '
        '--config.run.resume=True to continue it, choose another --workdir or pass '
        '--config.run.overwrite=True to replace it')


def save(workdir: str, index: int, config: Any, records, info: Dict[str, Any],
         arrays: Dict[str, np.ndarray]) -> None:
  base = os.path.join(folder(workdir), str(index))
  io.write_npz(base + '.npz', **arrays)
  io.write_json(base + '.json', {'config': config.to_dict(), 'records': records, 'info': info})


def load(workdir: str, index: int, config: Any) -> Optional[Dict[str, Any]]:
  """Group `index` as saved ({'records', 'info', 'arrays'}), or None when it is not."""
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
  diff = checkpoint.config_differences(stored.get('config') or {}, config.to_dict())
  if diff:
    raise ExperimentError(
        f'run.resume: the sweep config differs from the saved groups in {folder(workdir)} in '
        f'{", ".join(diff)}; restore those values, or choose another --workdir')
  return {'records': stored['records'], 'info': stored['info'], 'arrays': arrays}


def say_resume(workdir: str, found: int, total: int) -> None:
  if found:
    logging.info('sweep: resuming %s: %d of %d group(s) already finished', workdir, found,
                 total)
  else:
    logging.info('sweep: run.resume found no finished group in %s, starting at group 1',
                 folder(workdir))
