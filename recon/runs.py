"""A run's fixed inputs and its output folder: dtype, key tree, workdir rules.

`prepare_run_workdir` applies the resume / overwrite rules of a single run,
`prepare_workdir` the simpler rule of a sweep (refuse a finished one).
"""
from __future__ import annotations

import os
import shutil
from typing import Dict

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from absl import logging

from recon import checkpoint
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


def prepare_run_workdir(workdir: str, cfg: ml_collections.ConfigDict) -> bool:
  """Applies the workdir rules before compute; returns True when resuming.

  A workdir holding a run (summary.json, checkpoints or a saved model) is refused
  unless run.resume=True (continue from its latest checkpoint; the config must agree
  in every result-changing field) or run.overwrite=True (its outputs are replaced).
  """
  resume, overwrite = cfg.run.resume, cfg.run.overwrite
  if resume and overwrite:
    raise ExperimentError('run.resume, run.overwrite: both True; accepted: at most one of them')
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
    diff = checkpoint.config_differences(saved, cfg.to_dict())
    if diff:
      raise ExperimentError(
          f'run.resume: the config differs from the checkpointed run in {", ".join(diff)}; '
          'restore those values, or choose another --workdir')
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
  if overwrite:
    for name in ('checkpoints', 'model'):
      shutil.rmtree(os.path.join(workdir, name), ignore_errors=True)
  os.makedirs(workdir, exist_ok=True)
  return False


def prepare_workdir(workdir: str, overwrite: bool, marker: str = 'summary.json') -> None:
  """Refuses a workdir holding a finished run (`marker`) unless overwrite; creates it."""
  done = os.path.join(workdir, marker)
  if os.path.exists(done) and not overwrite:
    raise ExperimentError(
        f'workdir: {workdir} already holds a finished run ({marker}); choose another '
        '--workdir or pass --config.run.overwrite=True')
  os.makedirs(workdir, exist_ok=True)
