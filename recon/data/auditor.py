"""The auditor's own training set: `data.name = 'file'` reads it from `data.path`.

The file is an `.npz` holding `x`, shape (n, d) (vectors) or (n, H, W[, C]) (images,
C = 1 or 3), and optionally `y`, shape (n,) (labels); or an `.npy` holding `x` alone.
It is sized from its headers first (recon/data/headers.py: keys, shapes, dtypes, and bytes
against the host's memory, before a byte is inflated), then read with `allow_pickle=False`
(a data file never runs code); every value must be a finite real number, and a file that
breaks a rule is refused in one line naming the
key and the expected shape (`DataError`, exit status 2).

What the file is for depends on where the victim comes from (docs/audit.md):
  * recon trains the victim (no `victim.checkpoint`): the file is its training set, so
    it needs `y` (random features fit theta* = Phi^+ y on it); `data.preprocess` applies
    as for every data set ('sphere' by default: the random-features theory's rows);
  * `victim.checkpoint` (a saved model): the file is only the truth the attack's
    candidates are scored against, never an input to the attack; it must hold the inputs
    exactly as the model saw them, so `data.preprocess` must be 'none', and `y` is optional.

`data.n` / `data.d` None take the file's length / row size (`resolve_sizes`, before any
compute); a number must agree with the file. Rows are flattened in (H, W, C) order, so
`meta['image_shape']` is (H, W, C) for images (SSIM, the report's pictures), else None.
"""
from __future__ import annotations

import functools
import math
import os
import zipfile
from typing import Any, Dict, Optional, Tuple

import numpy as np

from recon.config import sections
from recon.data import headers
from recon.data.base import DataError

NAME = 'file'
EXPECTED = ("an .npz holding 'x' of shape (n, d) or (n, H, W[, C]) with C 1 or 3, and "
            "optionally 'y' of shape (n,); or an .npy holding 'x'")


def _refuse(path: str, what: str) -> DataError:
  return DataError(f'config.data.path: {path} {what}; accepted: {EXPECTED}')


def _numeric(path: str, key: str, a: np.ndarray, shape: str) -> np.ndarray:
  if a.dtype.kind not in 'biuf':
    raise _refuse(path, f"has '{key}' of dtype {a.dtype} (expected real numbers, shape {shape})")
  if a.dtype.kind == 'f' and not np.all(np.isfinite(a)):
    bad = int(np.size(a) - np.count_nonzero(np.isfinite(a)))
    raise _refuse(path, f"has {bad} non-finite value(s) in '{key}' (expected finite, shape "
                        f'{shape})')
  return a


_KINDS = {'safetensors': 'a safetensors file', 'msgpack': 'a msgpack file',
          'unknown': 'unrecognised first bytes'}


def _headers(path: str) -> Dict[str, headers.Entry]:
  """{'x': Entry[, 'y': Entry]} of the file from its headers alone (nothing inflated): the
  keys, shapes, dtypes and sizes checked before a byte of an array is read."""
  kind = headers.sniff(path)
  if kind == 'pickle':
    raise _refuse(path, 'holds pickled data (refused: a data file never runs code)')
  if kind not in ('npy', 'npz'):
    raise _refuse(path, f'is not a NumPy .npz / .npy file ({_KINDS[kind]})')
  try:
    found = headers.entries(path, kind)
  except headers.HeaderError as e:
    raise _refuse(path, str(e)) from None
  if kind == 'npy':
    found = {'x': found['']}
  if 'x' not in found:
    raise _refuse(path, f"has no array 'x' (keys: {', '.join(found) or 'none'})")
  x, y = found['x'], found.get('y')
  _check_dtype(path, 'x', x, '(n, d) or (n, H, W[, C])')
  shape = list(x.shape)
  if len(shape) not in (2, 3, 4) or 0 in shape:
    raise _refuse(path, f"has 'x' of shape {shape} (expected (n, d) or (n, H, W[, C]), n >= 1)")
  if len(shape) == 4 and shape[3] not in (1, 3):
    raise _refuse(path, f"has 'x' of shape {shape} (expected (n, H, W, C) with C 1 or 3)")
  if y is not None:
    if y.shape != (shape[0],):
      raise _refuse(path, f"has 'y' of shape {list(y.shape)} (expected ({shape[0]},): one label "
                          "per row of 'x')")
    _check_dtype(path, 'y', y, f'({shape[0]},)')
  return found


def _check_dtype(path: str, key: str, entry: headers.Entry, shape: str) -> None:
  if entry.kind == 'O':
    raise _refuse(path, f"holds an object array in '{key}' (refused: allow_pickle=False)")
  if entry.kind not in 'biuf':
    raise _refuse(path, f"has '{key}' of dtype {entry.dtype} (expected real numbers, shape "
                        f'{shape})')


@functools.lru_cache(maxsize=4)
def _read(path: str, stamp: Tuple[int, int]) -> Tuple[np.ndarray, Optional[np.ndarray]]:
  del stamp  # the cache key: a changed file is read again
  _headers(path)
  try:
    loaded = np.load(path, allow_pickle=False)
    if isinstance(loaded, np.ndarray):
      x, y = loaded, None
    else:
      with loaded:
        x = loaded['x']
        y = loaded['y'] if 'y' in loaded.files else None
  except (ValueError, OSError, zipfile.BadZipFile, EOFError) as e:
    raise _refuse(path, f'is a damaged .npz / .npy ({type(e).__name__}: '
                        f'{(str(e).splitlines() or [""])[0][:80]})') from None
  _numeric(path, 'x', x, '(n, d) or (n, H, W[, C])')
  if y is not None:
    _numeric(path, 'y', y, f'({x.shape[0]},)')
  x.setflags(write=False)
  if y is not None:
    y.setflags(write=False)
  return x, y


def _checked_path(path: Optional[str]) -> str:
  if not path:
    raise DataError(f"config.data.path: required for data.name 'file'; accepted: {EXPECTED}")
  path = os.path.abspath(os.path.expanduser(path))
  why = headers.what_is(path)
  if why is not None:
    raise _refuse(path, why)
  return path


def read(path: Optional[str]) -> Tuple[np.ndarray, Optional[np.ndarray]]:
  """(x as stored, y or None) of the file, validated (module docstring); cached per file."""
  path = _checked_path(path)
  st = os.stat(path)
  return _read(path, (st.st_mtime_ns, st.st_size))


def image_shape(x: np.ndarray) -> Optional[Tuple[int, int, int]]:
  """(H, W, C) of stored images, None for vectors."""
  if x.ndim == 2:
    return None
  return (int(x.shape[1]), int(x.shape[2]), int(x.shape[3]) if x.ndim == 4 else 1)


def resolve_sizes(data_cfg: sections.Data, *, trains_victim: bool) -> Dict[str, int]:
  """{'n', 'd'} of the file for the data section `data_cfg` (data.name 'file'), checked before
  compute: None takes the file's size, a number must agree; `trains_victim` (recon trains the
  victim on the file) needs 'y'; a saved model (not `trains_victim`) needs preprocess 'none'."""
  path = _checked_path(data_cfg.path)
  found = _headers(path)  # the sizes from the headers: nothing inflated before they agree
  shape, y = list(found['x'].shape), found.get('y')
  n, d = int(shape[0]), int(math.prod(shape[1:]))
  for field, want in (('n', n), ('d', d)):
    value = getattr(data_cfg, field)
    if value is not None and value != want:
      what = f'{want} records' if field == 'n' else f'rows of size {want}'
      raise DataError(f'config.data.{field}: {value} but data.path {path} holds {what} '
                      f"('x' of shape {shape}); accepted: None (the file's) or {want}")
  if data_cfg.classes is not None or data_cfg.image_size is not None or data_cfg.grayscale:
    raise DataError("config.data.classes / image_size / grayscale: not applied to data.name "
                    "'file' (the file is the training set as it is); accepted: None, None, False")
  if trains_victim and y is None:
    raise _refuse(path, "has no 'y' (recon trains the victim on the file: it needs the labels, "
                        f'shape ({n},)); with victim.checkpoint the labels are optional')
  if not trains_victim and data_cfg.preprocess != 'none':
    raise DataError(f"config.data.preprocess: {data_cfg.preprocess!r} with victim.checkpoint and "
                    "data.name 'file' (the file is the truth to score against: the inputs as "
                    "the saved model saw them); accepted: 'none'")
  read(path)  # the values (finite real numbers), once the sizes agree
  return {'n': n, 'd': d}


def load(data_cfg: sections.Data,
         preprocess_fn) -> Tuple[np.ndarray, Optional[np.ndarray], Dict[str, Any]]:
  """(rows (n, d) float64 preprocessed by `preprocess_fn(rows, mode)`, y or None, meta)."""
  x, y = read(data_cfg.path)
  n, d = int(x.shape[0]), int(math.prod(x.shape[1:]))
  if (data_cfg.n is not None and data_cfg.n != n) or (data_cfg.d is not None and data_cfg.d != d):
    raise DataError(f'config.data.n / d: {data_cfg.n} / {data_cfg.d} but data.path holds {n} rows '
                    f'of size {d}; accepted: None or {n} / {d}')
  rows, stats = preprocess_fn(x.reshape(n, d).astype(np.float64), data_cfg.preprocess)
  meta = {'name': NAME, 'path': os.path.abspath(os.path.expanduser(data_cfg.path)),
          'image_shape': image_shape(x), 'labels': None if y is None else 'from the file',
          'pixel_range': None, **stats}
  return rows, None if y is None else np.array(y), meta
