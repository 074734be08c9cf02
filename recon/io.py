"""Outputs written atomically: a temporary file in the same folder, then a rename.

A crash mid-write leaves the previous file (or none), never a truncated one.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
from typing import Any

import numpy as np


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


def _atomic_write(path: str, write) -> None:
  folder = os.path.dirname(os.path.abspath(path))
  os.makedirs(folder, exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=folder, prefix='.' + os.path.basename(path) + '.', suffix='.tmp')
  try:
    with os.fdopen(fd, 'wb') as f:
      write(f)
      f.flush()
      os.fsync(f.fileno())
    os.replace(tmp, path)
  except BaseException:
    if os.path.exists(tmp):
      os.remove(tmp)
    raise


def write_json(path: str, obj: Any) -> None:
  text = json.dumps(_jsonable(obj), indent=2, sort_keys=False) + '\n'
  _atomic_write(path, lambda f: f.write(text.encode()))


def read_json(path: str) -> Any:
  with open(path) as f:
    return json.load(f)


def write_text(path: str, text: str) -> None:
  _atomic_write(path, lambda f: f.write(text.encode()))


def write_npz(path: str, **arrays: np.ndarray) -> None:
  _atomic_write(path, lambda f: np.savez(f, **{k: np.asarray(v) for k, v in arrays.items()}))


def write_bytes(path: str, data: bytes) -> None:
  _atomic_write(path, lambda f: f.write(data))
