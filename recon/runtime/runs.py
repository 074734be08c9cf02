"""A run's fixed inputs and its output folder: dtype, key tree, workdir rules.

`prepare_run_workdir` applies the resume / overwrite rules of a single run,
`prepare_workdir` the simpler rule of a sweep (refuse a finished one).

recon touches only what it wrote (recon/runtime/ownership.py): a workdir holding anything its
manifest does not list is refused, and overwrite and cleanup act on listed entries only.
Overwrite never deletes before the run has shown it can start: the old outputs are moved
into WORKDIR/.replaced/ (summary.json first, so that the folder never looks finished with
another config's outputs), and `finish_replace` (called when the run ends, and at the start of
the next run on that workdir after a kill) deletes them once the new run has written
anything, or moves them back when it wrote nothing (a refusal before compute).
"""
from __future__ import annotations

import os
import tempfile
from typing import Any, Dict, Optional

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from recon.runtime import checkpoint, input_hashes, ownership
from recon.errors import ExperimentError

Array = jax.Array


def set_dtype(name: str):
  """Returns the JAX dtype; float64 switches on `jax_enable_x64` (process-wide)."""
  if name == 'float64':
    if not jax.config.jax_enable_x64:
      jax.config.update('jax_enable_x64', True)
    return jnp.float64
  return jnp.float32


def split_keys(seed_or_key) -> Dict[str, Array]:
  """The fixed key tree of a run: data, model (V), candidate initialisation."""
  key = jax.random.PRNGKey(seed_or_key) if np.ndim(seed_or_key) == 0 else seed_or_key
  k_data, k_model, k_init = jax.random.split(key, 3)
  return {'data': k_data, 'model': k_model, 'init': k_init}


def check_workdir(workdir: str) -> None:
  """One-line ExperimentError unless `workdir` is (or can be created as) a writable folder.

  Creates nothing: probes the workdir, or its nearest existing ancestor, with a temporary
  file (os.access alone is wrong for root and read-only file systems). A symbolic link whose
  target is missing (on the path or the workdir itself) is refused, and so are a path too
  long for the file system, the file system's root, the home folder and a repository's root.
  """
  check_path_length(workdir)
  ownership.refuse_special(workdir)
  probe = workdir
  while not os.path.exists(probe):
    if os.path.islink(probe):
      raise ExperimentError(f'workdir: {workdir}: {probe} is a symbolic link to the missing '
                            f'{os.readlink(probe)!r}; accepted: a folder path (existing or '
                            'creatable) you can write to')
    parent = os.path.dirname(probe)
    if parent == probe:
      break
    probe = parent
  if not os.path.isdir(probe):
    what = 'is a file' if probe == workdir else f'cannot be created: {probe} is a file'
    raise ExperimentError(f'workdir: {workdir} {what}; accepted: a folder path '
                          '(existing or creatable) you can write to')
  try:
    with tempfile.TemporaryFile(dir=probe):
      pass
  except OSError as e:
    where = '' if probe == workdir else f' (its existing parent {probe} is not writable)'
    raise ExperimentError(f'workdir: {workdir} is not writable{where}: '
                          f'{e.strerror or type(e).__name__}; accepted: a folder path '
                          'you can write to') from None


def check_path_length(workdir: str) -> None:
  """One line for a path the file system cannot hold (a name over NAME_MAX bytes, the whole
  over PATH_MAX), before any folder on it is created."""
  probe = workdir
  while not os.path.isdir(probe) and os.path.dirname(probe) != probe:
    probe = os.path.dirname(probe)
  try:
    name_max = os.pathconf(probe, 'PC_NAME_MAX')
    path_max = os.pathconf(probe, 'PC_PATH_MAX')
  except (OSError, ValueError):
    name_max, path_max = 255, 4096
  longest = max((os.fsencode(part) for part in workdir.split(os.sep)), key=len)
  if len(longest) > name_max:
    raise ExperimentError(f'workdir: a folder name of {len(longest)} bytes ({longest[:40].decode(errors="replace")}...); '
                          f'accepted: names of at most {name_max} bytes')
  if len(os.fsencode(workdir)) >= path_max:
    raise ExperimentError(f'workdir: the path is {len(os.fsencode(workdir))} bytes long; '
                          f'accepted: a path of under {path_max} bytes')


def prepare_run_workdir(workdir: str, run: Any, model_checkpoint: Optional[str],
                        record: Dict[str, Any]) -> bool:
  """Applies the workdir rules of the run section before compute; returns True when resuming
  (`model_checkpoint`: victim.checkpoint; `record`: the run's config as a dict).

  A workdir holding a run (summary.json, checkpoints or a saved model) is refused
  unless run.resume=True (continue from its latest checkpoint; the config must agree
  in every result-changing field) or run.overwrite=True (its outputs are replaced).
  """
  resume, overwrite = run.resume, run.overwrite
  if resume and overwrite:
    raise ExperimentError('run.resume, run.overwrite: both True; accepted: at most one of them')
  ownership.take(workdir)  # (again under the lock: refuses what recon did not write)
  finish_replace(workdir)  # left by a run killed while it replaced this workdir
  remove_stale_temps(workdir)
  if overwrite:
    check_model_outside(model_checkpoint, workdir)
  held = [name for name in ('summary.json', 'checkpoints', 'model')
          if os.path.exists(os.path.join(workdir, name))]
  steps = checkpoint.saved_steps(workdir)
  if resume and steps:
    saved = checkpoint.read_config(workdir)
    if saved and not isinstance(saved.get('attack'), dict):
      raise ExperimentError(
          f'run.resume: {workdir} was checkpointed by an older recon whose config had no sections '
          '(data, victim, attack, run); it cannot be resumed; accepted: a fresh --workdir, or '
          '--config.run.overwrite=True to replace it')
    diff = checkpoint.config_differences(saved, record)
    if diff:
      raise ExperimentError(
          f'run.resume: the config differs from the checkpointed run in {", ".join(diff)}; '
          'restore those values, or choose another --workdir')
    input_hashes.check(checkpoint.read_inputs(workdir), record)  # the same model, init, data
    logging.info('resuming %s from step %d', workdir, steps[-1])
    return True
  # resume=True without a finished checkpoint (killed before or during the first save):
  # a fresh start.
  if held and not overwrite and not (resume and 'summary.json' not in held):
    what = ', '.join(held)
    kind, hint = (('a finished', '') if 'summary.json' in held else
                  ('an unfinished', 'pass --config.run.resume=True to continue it, '))
    raise ExperimentError(
        f'workdir: {workdir} already holds {kind} run ({what}); {hint}choose another '
        '--workdir or pass --config.run.overwrite=True to replace it')
  os.makedirs(workdir, exist_ok=True)
  if overwrite:
    set_aside(workdir)
  return False


REPLACED = ownership.REPLACED
KEEP = ownership.BOOKKEEPING  # not outputs of a run


def check_model_outside(model_path, workdir: str) -> None:
  """Refuses to overwrite a workdir that holds the model the run is asked to attack."""
  if not model_path:
    return
  model, work = os.path.realpath(model_path), os.path.realpath(workdir)
  if model == work or model.startswith(work + os.sep):
    raise ExperimentError(
        f'victim.checkpoint: {model_path} lies inside the workdir {workdir} that '
        'run.overwrite=True would replace; accepted: a model outside the workdir (copy it '
        'first), or another --workdir')


def remove_stale_temps(workdir: str) -> int:
  """Removes the temporary files and folders that atomic writes of a killed run left in the
  workdir (`.NAME.XXXX.tmp` of a NAME the manifest lists: recon.runtime.io's files, a saved model's
  folder); returns how many. A user's file of that shape is not recon's and stays. Only
  called with the workdir lock held, so no live writer owns them."""
  stale = ownership.stale_temps(workdir)
  for name in stale:
    ownership.remove(os.path.join(workdir, name))
  if stale:
    logging.info('workdir: removed %d temporary file(s) left by a killed run: %s', len(stale),
                 ', '.join(stale))
  return len(stale)


def outputs(workdir: str):
  """The entries of workdir that a run of recon wrote (listed in its manifest)."""
  return ownership.outputs(workdir)


def set_aside(workdir: str) -> None:
  """Moves a run's outputs into WORKDIR/.replaced/, summary.json first (each a rename)."""
  names = outputs(workdir)
  if not names:
    return
  trash = os.path.join(workdir, REPLACED)
  os.makedirs(trash, exist_ok=True)
  for name in sorted(names, key=lambda e: e != 'summary.json'):
    os.replace(os.path.join(workdir, name), os.path.join(trash, name))


def finish_replace(workdir: str) -> None:
  """Ends an overwrite: deletes WORKDIR/.replaced when the workdir holds new outputs, else
  moves the old outputs back (the new run wrote nothing)."""
  trash = os.path.join(workdir, REPLACED)
  if not os.path.isdir(trash):
    return
  if outputs(workdir):
    ownership.remove(trash)  # holds listed entries only (set_aside)
    return
  try:
    for name in os.listdir(trash):
      os.replace(os.path.join(trash, name), os.path.join(workdir, name))
    os.rmdir(trash)
  except OSError as e:  # a read-only disk: the next run on this workdir tries again
    logging.warning('workdir: could not move the replaced outputs back from %s (%s)', trash, e)


def prepare_workdir(workdir: str, overwrite: bool, marker: str = 'summary.json') -> None:
  """Refuses a workdir holding a finished run (`marker`) unless `overwrite` (run.overwrite), or
  anything recon did not write; creates it."""
  ownership.take(workdir)
  done = os.path.join(workdir, marker)
  remove_stale_temps(workdir)
  if os.path.exists(done) and not overwrite:
    raise ExperimentError(
        f'workdir: {workdir} already holds a finished run ({marker}); choose another '
        '--workdir or pass --config.run.overwrite=True')
