"""Checkpoints of a reconstruction run (orbax), resume, and the config-compatibility rule.

A checkpoint (WORKDIR/checkpoints/<step>/) holds the full `optimize.ReconState`
(candidates, optimiser state, step, loss, status) and the run's PRNG keys as an
orbax pytree, plus JSON metadata: the resolved config and the loss history so
far. The trained model lives next to it in WORKDIR/model/ (`recon.models.checkpoint`).
orbax writes each step to a temporary folder and renames it when complete, so
a run killed at any moment leaves the previous checkpoints intact.

Resuming continues the step loop from the saved state; the step body does not
depend on where chunks start, so a resumed run ends bit-for-bit where an
unbroken one does (on the same device and software).
"""
from __future__ import annotations

import json
import os
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

import jax
import numpy as np
import orbax.checkpoint as ocp

from recon.errors import ExperimentError

# Fields that may differ between a checkpointed run and its resumption because they do
# not change the final candidates or metrics. max_steps may only grow.
RESUMABLE_FIELDS = ('name', 'log_every_seconds', 'chunk_steps', 'checkpoint_every_seconds',
                    'checkpoint_every_steps', 'checkpoint_keep', 'resume', 'overwrite')
GROWABLE_FIELDS = ('max_steps',)

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


def config_differences(saved: Dict[str, Any], current: Dict[str, Any]) -> List[str]:
  """Fields whose change would change the result: 'field (saved -> current)' per field."""
  out = []
  for name in sorted(set(saved) | set(current)):
    if name in RESUMABLE_FIELDS:
      continue
    old, new = saved.get(name), current.get(name)
    if name in GROWABLE_FIELDS and old is not None and new is not None and new >= old:
      continue
    if old != new:
      out.append(f'{name} ({old!r} -> {new!r})')
  return out


def _manager(workdir: str, keep: int) -> ocp.CheckpointManager:
  return ocp.CheckpointManager(
      checkpoint_dir(workdir),
      options=ocp.CheckpointManagerOptions(max_to_keep=keep, create=True,
                                           enable_async_checkpointing=False,
                                           cleanup_tmp_directories=True))


def read_config(workdir: str) -> Optional[Dict[str, Any]]:
  """The config stored with the latest checkpoint of workdir (None if there is none)."""
  steps = saved_steps(workdir)
  if not steps:
    return None
  meta = os.path.join(checkpoint_dir(workdir), str(steps[-1]), 'meta')
  plain = os.path.join(meta, 'metadata')  # orbax's JSON item file: read without starting JAX
  if os.path.isfile(plain):
    with open(plain) as f:
      return json.load(f)['config']
  restored = ocp.Checkpointer(ocp.JsonCheckpointHandler()).restore(meta)
  return restored['config']


class RunCheckpointer:
  """Saves the state after a chunk every `every_steps` steps or `every_seconds` seconds.

  A trigger set to 0 is off; a run that has stopped is always saved, so a killed
  run never redoes work after its last chunk. Keeps the latest `keep` checkpoints.
  """

  def __init__(self, workdir: str, config: Dict[str, Any], keys: Optional[Dict[str, Any]] = None,
               every_seconds: float = DEFAULTS['checkpoint_every_seconds'],
               every_steps: int = DEFAULTS['checkpoint_every_steps'],
               keep: int = DEFAULTS['checkpoint_keep']):
    self._workdir = workdir
    self._config = config
    self._keys = {k: np.asarray(jax.random.key_data(v) if jax.dtypes.issubdtype(
        getattr(v, 'dtype', None), jax.dtypes.prng_key) else v) for k, v in (keys or {}).items()}
    self._every_seconds = every_seconds
    self._every_steps = every_steps
    self._manager = _manager(workdir, keep)
    self._last_time = time.monotonic()
    self._last_step = 0
    self.saves = 0
    self.restored_aux: Dict[str, Any] = {}  # the `aux` saved with the restored checkpoint

  def restore(self, template: Any) -> Tuple[Any, List[Tuple[int, float]], int]:
    """(state, history, step) of the latest checkpoint, `template` giving the tree."""
    step = self._manager.latest_step()
    try:
      restored = self._manager.restore(step, args=ocp.args.Composite(
          state=ocp.args.StandardRestore({'state': template, 'keys': self._keys}),
          meta=ocp.args.JsonRestore()))
    except ValueError as e:
      if 'tree structures do not match' not in str(e):
        raise
      raise ExperimentError(
          f'resume: the checkpoint at step {step} in {self._workdir}/checkpoints holds a state of another '
          'layout (written by another recon version, or with another optimizer / '
          'lr_schedule); accepted: resume with the version and config that wrote it, or start '
          'afresh with overwrite=True') from None
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
    step = int(state.step)
    now = time.monotonic()
    due = stopped or (
        (self._every_steps > 0 and step - self._last_step >= self._every_steps) or
        (self._every_seconds > 0 and now - self._last_time >= self._every_seconds))
    if not due or step in self._manager.all_steps():
      return False
    meta = {'config': self._config, 'step': step,
            'history': {'step': [int(h[0]) for h in history],
                        'loss': [float(h[1]) for h in history]}}
    if aux:
      meta['aux'] = aux
    self._manager.save(step, args=ocp.args.Composite(
        state=ocp.args.StandardSave({'state': state, 'keys': self._keys}),
        meta=ocp.args.JsonSave(meta)))
    self._last_time, self._last_step = now, step
    self.saves += 1
    return True

  def close(self) -> None:
    self._manager.wait_until_finished()
    self._manager.close()
