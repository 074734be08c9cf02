"""Parameter trees checked as numbers before they are used: sized before they are read, real
floating point only, names that map to one parameter each.

`orbax_entries(path)` sizes an orbax checkpoint from its metadata (shapes and dtypes, nothing
restored) and `file_fits(path)` a file whose arrays are stored raw (msgpack): both against the
host's memory (recon/data/headers.py). `dtype_problem(named)` finds the first parameter whose
dtype is not one of `headers.FLOAT_DTYPES` (complex, integer, bool, float8: the attack's
gradients and the certificate are real floating point; a complex weight cast to real would be
another model). Each returns what is wrong as words completing '<path> ...' (or None); the
caller words the refusal with its field (one line, exit status 2).
"""
from __future__ import annotations

import math
import os
from typing import Any, Dict, Optional, Tuple

import jax
import numpy as np

from recon.data import headers
from recon.errors import ExperimentError

ACCEPTED = ', '.join(headers.FLOAT_DTYPES)


class ForeignModelError(ExperimentError):
  """A model file or module that cannot be used; the message is one line (exit status 2)."""


def first_line(e: BaseException) -> str:
  return (str(e).strip().splitlines() or [''])[0][:200]


def cause(e: BaseException) -> str:
  """'SyntaxError: invalid syntax (file.py, line 3)', 'sys.exit(0)', ... of a user's exception."""
  if isinstance(e, SystemExit):
    return f'SystemExit (sys.exit({e.code!r}))'
  where = f' ({os.path.basename(e.filename)}, line {e.lineno})' if isinstance(
      e, SyntaxError) and e.filename else ''
  text = first_line(e) if not isinstance(e, SyntaxError) else (e.msg or '')
  return f'{type(e).__name__}: {text}{where}' if text else type(e).__name__


_KIND_WORDS = {'npy': 'an .npy file', 'npz': 'a zip / .npz file', 'pickle': 'a pickle',
               'safetensors': 'a safetensors file', 'msgpack': 'a msgpack file'}


def looks_like(path: str) -> str:
  """', it looks like a safetensors file' (from the first bytes), or ''."""
  kind = headers.sniff(path)
  return f'; it looks like {_KIND_WORDS[kind]}' if kind in _KIND_WORDS else ''




def leaf_names(tree: Any) -> Dict[str, Any]:
  """{'a/b/c': leaf} of a nested tree."""
  return {'/'.join(str(getattr(k, 'key', getattr(k, 'idx', k))) for k in path): leaf
          for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]}


def dtype_name(leaf: Any) -> str:
  dtype = getattr(leaf, 'dtype', None)
  if dtype is None:
    dtype = np.asarray(leaf).dtype
  return 'object' if np.dtype(dtype).hasobject else str(dtype)


def dtype_problem(named: Dict[str, str]) -> Optional[str]:
  """'has parameter K of dtype T' for the first dtype outside FLOAT_DTYPES, else None."""
  for name, dtype in named.items():
    if dtype not in headers.FLOAT_DTYPES:
      return f'has parameter {name!r} of dtype {dtype}'
  return None


def tree_dtype_problem(tree: Any) -> Optional[str]:
  """dtype_problem of every leaf of a params tree."""
  return dtype_problem({k: dtype_name(v) for k, v in leaf_names(tree).items()})


def _fits(found: Dict[str, headers.Entry]) -> Optional[str]:
  try:
    headers.check_sizes(found)
  except headers.HeaderError as e:
    return str(e)
  return None


def orbax_entries(path: str) -> Tuple[Dict[str, headers.Entry], Optional[str]]:
  """({name: Entry} from an orbax checkpoint's metadata, what is wrong with their sizes or
  None); ({}, None) when the folder has no metadata orbax can read (the restore says why)."""
  import orbax.checkpoint as ocp  # pylint: disable=import-outside-toplevel
  try:
    meta = ocp.PyTreeCheckpointer().metadata(os.path.abspath(path))
  except Exception:  # pylint: disable=broad-except  (no metadata: the restore's error)
    return {}, None
  tree = getattr(getattr(meta, 'item_metadata', meta), 'tree', None)
  found = {}
  for name, leaf in leaf_names(tree).items():
    shape, dtype = getattr(leaf, 'shape', None), getattr(leaf, 'dtype', None)
    if shape is None or dtype is None:
      continue
    dtype = np.dtype(dtype)
    nbytes = math.prod(shape) * dtype.itemsize
    found[name] = headers.Entry(tuple(shape), str(dtype), dtype.kind, nbytes, nbytes)
  return found, _fits(found)


def file_fits(path: str) -> Optional[str]:
  """What is wrong with reading a file whose arrays are stored raw (msgpack) whole, or None."""
  size = os.path.getsize(path)
  return _fits({'the file': headers.Entry((size,), 'uint8', 'u', size, size)})
