"""Trained models on disk: a metadata JSON plus an orbax pytree, one folder per model.

Layout of a model folder (e.g. WORKDIR/model/):

    model.json   {"format": "recon.model/1", "kind": ..., "architecture": ..., "hparams": {...},
                  "parts": [...], "n": ..., "dtype": ..., "info": {...}}
    arrays/      orbax pytree {"trained": ..., "initial": ..., "extras": ..., "truth": ...}

`kind` is 'random_features' (trained = {'theta'}, extras = {'v_key'}; V is
regenerated from its key, V_ij ~ N(0, 1/d)) or 'flax' (trained and initial =
Flax params of `ARCHITECTURES[architecture](**hparams)`). `initial`, `extras`
and `truth` ({'x', 'y'}: the training set, when known) are optional; `parts`
lists the ones present. A folder is written to a temporary sibling and renamed,
so a crash leaves the previous model or none, never half of one.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from typing import Any, Callable, Dict, Optional

import jax
import numpy as np
import orbax.checkpoint as ocp

from recon.models import networks

FORMAT = 'recon.model/1'
KINDS = ('random_features', 'flax')
PARTS = ('trained', 'initial', 'extras', 'truth')

# Flax architectures a checkpoint can name; hparams are the module's constructor arguments.
ARCHITECTURES: Dict[str, Callable[..., Any]] = {
    'TwoLayer': networks.TwoLayer,
}


class ModelCheckpointError(ValueError):
  """A model folder that cannot be read; the message is one line."""


@dataclasses.dataclass
class ModelCheckpoint:
  """A trained model, its initial parameters and (optionally) its training set."""
  kind: str
  hparams: Dict[str, Any]
  trained: Any
  initial: Any = None
  extras: Optional[Dict[str, Any]] = None
  truth: Optional[Dict[str, Any]] = None  # {'x': (n, ...), 'y': (n, ...)} when known
  architecture: Optional[str] = None  # flax only: a key of ARCHITECTURES
  n: Optional[int] = None  # training-set size, when known (sets n_candidates' default)
  info: Dict[str, Any] = dataclasses.field(default_factory=dict)

  def module(self):
    """The Flax module of a 'flax' checkpoint."""
    if self.kind != 'flax':
      raise ModelCheckpointError(f'model kind {self.kind!r} has no Flax module')
    return ARCHITECTURES[self.architecture](**self.hparams)


def _arrays(tree: Any) -> Any:
  return jax.tree.map(np.asarray, tree)


def model_dir(path: str) -> str:
  """`path` itself if it holds model.json, else path/model (a run's workdir)."""
  if os.path.isfile(os.path.join(path, 'model.json')):
    return path
  return os.path.join(path, 'model')


def save(path: str, model: ModelCheckpoint) -> None:
  """Writes `model` to the folder `path` (replacing an existing model there)."""
  if model.kind not in KINDS:
    raise ModelCheckpointError(f'kind: unknown {model.kind!r}; accepted: {", ".join(KINDS)}')
  if model.kind == 'flax' and model.architecture not in ARCHITECTURES:
    raise ModelCheckpointError(f'architecture: unknown {model.architecture!r}; accepted: '
                               f'{", ".join(sorted(ARCHITECTURES))}')
  tree = {k: _arrays(getattr(model, k)) for k in PARTS if getattr(model, k) is not None}
  leaves = jax.tree.leaves(tree['trained'])
  meta = {
      'format': FORMAT, 'kind': model.kind, 'architecture': model.architecture,
      'hparams': dict(model.hparams), 'parts': sorted(tree), 'n': model.n,
      'dtype': str(leaves[0].dtype) if leaves else None, 'info': model.info,
  }
  path = os.path.abspath(path)
  parent = os.path.dirname(path)
  os.makedirs(parent, exist_ok=True)
  prefix = '.' + os.path.basename(path) + '.'
  for stale in os.listdir(parent):  # left by a save that was killed
    if stale.startswith(prefix) and stale.endswith('.tmp'):
      shutil.rmtree(os.path.join(parent, stale), ignore_errors=True)
  tmp = tempfile.mkdtemp(dir=parent, prefix=prefix, suffix='.tmp')
  try:
    checkpointer = ocp.StandardCheckpointer()
    checkpointer.save(os.path.join(tmp, 'arrays'), tree)
    checkpointer.wait_until_finished()
    with open(os.path.join(tmp, 'model.json'), 'w') as f:
      json.dump(meta, f, indent=2)
      f.write('\n')
    if os.path.exists(path):
      shutil.rmtree(path)
    os.replace(tmp, path)
  except BaseException:
    shutil.rmtree(tmp, ignore_errors=True)
    raise


def read_metadata(path: str) -> Dict[str, Any]:
  """model.json of the model at `path` (a model folder or a run's workdir); cheap."""
  folder = model_dir(path)
  file = os.path.join(folder, 'model.json')
  if not os.path.isfile(file):
    raise ModelCheckpointError(f'model_checkpoint: no model.json in {path!r} or {folder!r}; '
                               'accepted: a model folder written by recon (see docs)')
  with open(file) as f:
    meta = json.load(f)
  if meta.get('format') != FORMAT or meta.get('kind') not in KINDS:
    raise ModelCheckpointError(f'model_checkpoint: {file} is not a {FORMAT} model '
                               f'(format {meta.get("format")!r}, kind {meta.get("kind")!r})')
  if meta['kind'] == 'flax' and meta.get('architecture') not in ARCHITECTURES:
    raise ModelCheckpointError(
        f'model_checkpoint: architecture {meta.get("architecture")!r} unknown; accepted: '
        f'{", ".join(sorted(ARCHITECTURES))}')
  return meta


def load(path: str) -> ModelCheckpoint:
  """Reads the model at `path` (a model folder or a run's workdir); arrays as NumPy."""
  meta = read_metadata(path)
  tree = ocp.StandardCheckpointer().restore(os.path.join(model_dir(path), 'arrays'))
  tree = _arrays(tree)
  return ModelCheckpoint(kind=meta['kind'], hparams=meta['hparams'], architecture=meta.get(
      'architecture'), n=meta.get('n'), info=meta.get('info') or {},
                         **{k: tree.get(k) for k in PARTS})
