"""The content of a run's input files, recorded at its start and checked when it resumes.

A run reads files named by its config (`recon.config.validate.PATH_FIELDS`: the model, its initial
parameters, the data file or folder). The config compares paths; a file replaced at the same
path (other weights, other rows) would pass that check, and the resumed run would mix two
models' results under one name. `current` hashes them ({field: {path, sha256, bytes}}); a
run's checkpoints and a sweep's saved groups store that record beside their config, and
`check` refuses a resumption, in one line, when any input's content differs from it.
"""
from __future__ import annotations

import hashlib
import os
from typing import Any, Dict, Optional

from recon.config.validate import PATH_FIELDS
from recon.errors import ExperimentError

_CHUNK = 1 << 20
CONTENT_LIMIT = 4 << 30  # bytes of a folder hashed by content; above: by size and mtime


def _hash_file(path: str, digest) -> int:
  size = 0
  with open(path, 'rb') as f:
    for block in iter(lambda: f.read(_CHUNK), b''):
      digest.update(block)
      size += len(block)
  return size


def content_hash(path: str) -> Dict[str, Any]:
  """{'sha256', 'bytes'} of a file, or of a folder's files (their relative paths and contents,
  in sorted order; links followed, as a reader follows them)."""
  digest = hashlib.sha256()
  if not os.path.isdir(path):
    size = _hash_file(path, digest)
    return {'sha256': digest.hexdigest(), 'bytes': size}
  files = []
  for root, dirs, names in os.walk(path, followlinks=True):
    dirs.sort()
    files += [os.path.join(root, name) for name in sorted(names)]
  sizes = [os.path.getsize(f) for f in files]
  by_content = sum(sizes) <= CONTENT_LIMIT
  for full, size in zip(files, sizes):
    digest.update(os.path.relpath(full, path).encode() + b'\0')
    if by_content:
      _hash_file(full, digest)
    else:  # a large data folder: sizes and modification times stand in for the bytes
      digest.update(f'{size}:{os.stat(full).st_mtime_ns}'.encode())
  return {'sha256': digest.hexdigest(), 'bytes': sum(sizes),
          'of': 'content' if by_content else 'sizes and modification times'}


def current(record: Any) -> Dict[str, Dict[str, Any]]:
  """{field: {'path', 'sha256', 'bytes'}} of every input file a config's record (its dict,
  `RunSpec.to_dict()`) names and that exists."""
  out = {}
  for field in PATH_FIELDS:
    path = record
    try:
      for name in field.split('.'):  # (a walk of its own: the config is read once, here)
        path = path[name]
    except (KeyError, TypeError):  # a partial config (a test's, an older run's): nothing read
      continue
    if isinstance(path, str) and path and os.path.exists(path):
      out[field] = {'path': path, **content_hash(path)}
  return out


def check(saved: Optional[Dict[str, Dict[str, Any]]], record: Any) -> None:
  """One-line ExperimentError when an input of the run being resumed (`record`: its config's
  dict) differs from `saved`, the record its checkpoint holds (None: written by an older recon,
  not checked)."""
  if saved is None:
    return
  now = current(record)
  for field in sorted(set(saved) | set(now)):
    old, new = saved.get(field), now.get(field)
    if old is None or new is None:
      what = 'was not read' if old is None else 'is missing now'
      where = (new or old)['path']
      raise ExperimentError(
          f'run.resume: {field}: {where} {what} by the run being resumed; accepted: the inputs '
          'that run started on, or a fresh --workdir (or run.overwrite=True)')
    if old['sha256'] != new['sha256']:
      raise ExperimentError(
          f'run.resume: {field}: {new["path"]} changed since the run started (sha256 '
          f'{old["sha256"][:12]} -> {new["sha256"][:12]}, {old["bytes"]} -> {new["bytes"]} bytes); '
          'accepted: the file that run started on, or a fresh --workdir (or run.overwrite=True)')
