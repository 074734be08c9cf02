"""Outputs written atomically: a temporary file in the same folder, then a rename.

A crash mid-write leaves the previous file (or none), never a truncated one. A file written in
a workdir is first listed in its manifest (recon/runtime/ownership.py: recon owns what it wrote). Files get
the mode an ordinary `open()` would give them (0666 less the process's umask), not
mkstemp's 0600.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from typing import Any

import numpy as np

from recon.runtime import ownership


def _jsonable(obj: Any) -> Any:
  if isinstance(obj, dict):
    return {str(k): _jsonable(v) for k, v in obj.items()}
  if isinstance(obj, (list, tuple)):
    return [_jsonable(v) for v in obj]
  if isinstance(obj, np.ndarray):
    return _jsonable(obj.tolist())
  if isinstance(obj, np.generic):
    return _jsonable(obj.item())
  if isinstance(obj, float) and not math.isfinite(obj):
    return str(obj)  # JSON has no inf/nan: 'inf', 'nan'
  if hasattr(obj, 'to_dict'):
    return _jsonable(obj.to_dict())
  return obj


def umask() -> int:
  """The process's umask, read without changing it where /proc allows (threads may be
  creating files meanwhile); else by the set-and-restore idiom."""
  try:
    with open('/proc/self/status') as f:
      for line in f:
        if line.startswith('Umask:'):
          return int(line.split()[1], 8)
  except (OSError, ValueError):
    pass
  old = os.umask(0o022)
  os.umask(old)
  return old


def _atomic_write(path: str, write) -> None:
  folder = os.path.dirname(os.path.abspath(path))
  ownership.claim(path)
  os.makedirs(folder, exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=folder, prefix='.' + os.path.basename(path) + '.', suffix='.tmp')
  try:
    os.chmod(tmp, 0o666 & ~umask())
    with os.fdopen(fd, 'wb') as f:
      write(f)
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp, path)
  except BaseException:
    if os.path.exists(tmp):
      os.remove(tmp)
    raise


def claim(path: str) -> None:
  """Lists `path` in the manifest of the workdir it lies in, before a writer other than the
  ones below creates it (a folder, orbax's checkpoints, a figure)."""
  ownership.claim(path)


def write_json(path: str, obj: Any) -> None:
  text = json.dumps(_jsonable(obj), indent=2, sort_keys=False) + '\n'
  _atomic_write(path, lambda f: f.write(text.encode()))


def normalized(obj: Any) -> Any:
  """`obj` as it reads back from JSON (tuples -> lists, numpy -> Python, inf -> 'inf')."""
  return json.loads(json.dumps(_jsonable(obj)))


def read_json(path: str) -> Any:
  with open(path) as f:
    return json.load(f)


def write_text(path: str, text: str) -> None:
  _atomic_write(path, lambda f: f.write(text.encode()))


def write_npz(path: str, **arrays: np.ndarray) -> None:
  _atomic_write(path, lambda f: np.savez(f, **{k: np.asarray(v) for k, v in arrays.items()}))


def write_npz_compressed(path: str, **arrays: np.ndarray) -> None:
  """`write_npz` with zip compression (np.savez_compressed)."""
  _atomic_write(path, lambda f: np.savez_compressed(
      f, **{k: np.asarray(v) for k, v in arrays.items()}))


def write_bytes(path: str, data: bytes) -> None:
  _atomic_write(path, lambda f: f.write(data))


def write_figure(path: str, fig: Any, dpi: int = 100) -> None:
  """A matplotlib figure as PNG, written atomically like every output."""
  import io as bytes_io  # pylint: disable=import-outside-toplevel
  buf = bytes_io.BytesIO()
  fig.savefig(buf, format='png', dpi=dpi)
  write_bytes(path, buf.getvalue())
