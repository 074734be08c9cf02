"""Readers of the official CIFAR-10 (python version) and MNIST (IDX) files (NumPy, host)."""
from __future__ import annotations

import gzip
import io as _io
import math
import os
import pickle
import struct
import zlib
from typing import Tuple

import numpy as np

from recon.data.base import CIFAR10_FILES, CIFAR10_NAMES, CIFAR10_PAGE, MNIST_FILES, MNIST_PAGE
from recon.data.base import DataError


def _cifar_expected(folder: str) -> str:
  return (f'expected in {folder}: {", ".join(CIFAR10_FILES)} (and test_batch, batches.meta) '
          f'of the CIFAR-10 python version (cifar-10-python.tar.gz, extracted) from {CIFAR10_PAGE}')


def _mnist_expected(folder: str) -> str:
  return (f'expected in {folder}: {MNIST_FILES[0]}[.gz] and {MNIST_FILES[1]}[.gz] (IDX format, '
          f'gzipped or not) from the MNIST page {MNIST_PAGE}')


class _ArrayUnpickler(pickle.Unpickler):
  """Unpickles plain containers and NumPy arrays only (no arbitrary code from a data file)."""

  ALLOWED = {('numpy', 'ndarray'), ('numpy', 'dtype'),
             ('numpy.core.multiarray', '_reconstruct'), ('numpy._core.multiarray', '_reconstruct'),
             ('numpy.core.multiarray', 'scalar'), ('numpy._core.multiarray', 'scalar'),
             ('numpy.core.numeric', '_frombuffer'), ('numpy._core.numeric', '_frombuffer'),
             ('_codecs', 'encode')}

  def find_class(self, module, name):
    if (module, name) not in self.ALLOWED:
      raise pickle.UnpicklingError(f'disallowed global {module}.{name}')
    return super().find_class(module, name)


def _read_bytes(path: str, expected: str) -> bytes:
  if not os.path.isfile(path):
    raise DataError(f'missing file {path}; {expected}')
  try:
    with open(path, 'rb') as f:
      return f.read()
  except OSError as e:
    raise DataError(f'cannot read {path} ({e.strerror}); {expected}') from None


def read_cifar10_batch(path: str, expected: str = '') -> Tuple[np.ndarray, np.ndarray]:
  """One CIFAR-10 python batch -> (images (N, 32, 32, 3) uint8, labels (N,) int64)."""
  expected = expected or _cifar_expected(os.path.dirname(path) or '.')
  raw = _read_bytes(path, expected)
  try:
    batch = _ArrayUnpickler(_io.BytesIO(raw), encoding='bytes').load()
  except Exception as e:  # pylint: disable=broad-except  (any unpickling failure)
    raise DataError(f'malformed file {path} (not a CIFAR-10 python batch: '
                    f'{type(e).__name__}); {expected}') from None
  if not isinstance(batch, dict):
    raise DataError(f'malformed file {path} (holds a {type(batch).__name__}, not a dict); '
                    f'{expected}')
  batch = {k.decode() if isinstance(k, bytes) else k: v for k, v in batch.items()}
  images, labels = batch.get('data'), batch.get('labels')
  if not isinstance(images, np.ndarray) or labels is None:
    raise DataError(f'malformed file {path} (no "data" array or no "labels"); {expected}')
  labels = np.asarray(labels)
  if (images.dtype != np.uint8 or images.ndim != 2 or images.shape[1] != 3072
      or labels.shape != (images.shape[0],) or labels.dtype.kind not in 'iu'
      or (labels.size and (labels.min() < 0 or labels.max() > 9))):
    raise DataError(f'malformed file {path} (data {images.dtype}{list(images.shape)}, labels '
                    f'{labels.dtype}{list(labels.shape)}; expected uint8[N, 3072] and N labels in '
                    f'0..9); {expected}')
  # Rows are 1024 red, 1024 green, 1024 blue values, each plane row-major.
  return images.reshape(-1, 3, 32, 32).transpose(0, 2, 3, 1), labels.astype(np.int64)


def _cifar_folder(data_dir: str) -> str:
  nested = os.path.join(data_dir, 'cifar-10-batches-py')
  if not os.path.isfile(os.path.join(data_dir, CIFAR10_FILES[0])) and os.path.isdir(nested):
    return nested
  return data_dir


def read_cifar10(data_dir: str) -> Tuple[np.ndarray, np.ndarray, Tuple[str, ...]]:
  """The CIFAR-10 training set: (images (50000, 32, 32, 3) uint8, labels, class names).

  `data_dir` holds data_batch_1..5 (or their folder cifar-10-batches-py);
  class names come from batches.meta when present.
  """
  folder = _cifar_folder(data_dir)
  expected = _cifar_expected(folder)
  parts = [read_cifar10_batch(os.path.join(folder, name), expected) for name in CIFAR10_FILES]
  names = CIFAR10_NAMES
  meta_path = os.path.join(folder, 'batches.meta')
  if os.path.isfile(meta_path):
    try:
      with open(meta_path, 'rb') as f:
        m = _ArrayUnpickler(f, encoding='bytes').load()
      found = m.get(b'label_names', m.get('label_names'))
      names = tuple(v.decode() if isinstance(v, bytes) else str(v) for v in found)
      if len(names) != 10:
        raise ValueError('not ten names')
    except Exception:  # pylint: disable=broad-except
      raise DataError(f'malformed file {meta_path} (no list of ten "label_names"); '
                      f'{expected}') from None
  return (np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts]), names)


_IDX_TYPES = {0x08: np.dtype('u1')}  # MNIST uses unsigned bytes only.
IDX_MAX_DIMS = 4  # MNIST's files have 1 (labels) or 3 (images)
IDX_MAX_BYTES = 2 ** 30  # MNIST's largest file holds 47 MB


def read_idx(path: str, expected: str = '') -> np.ndarray:
  """An IDX file (gzipped or not, told by its first bytes) -> array of its stated shape.

  The header (at most IDX_MAX_DIMS dimensions, at most IDX_MAX_BYTES of data) is read and
  checked first; a gzipped file is then decompressed as a stream, and no further than the
  size its header declares (plus one byte, to tell a longer file), so a small file that
  expands to gigabytes is refused without expanding it.
  """
  expected = expected or _mnist_expected(os.path.dirname(path) or '.')
  if not os.path.isfile(path):
    raise DataError(f'missing file {path}; {expected}')
  try:
    with open(path, 'rb') as plain:
      zipped = plain.read(2) == b'\x1f\x8b'
      plain.seek(0)
      stream = gzip.GzipFile(fileobj=plain) if zipped else plain
      return _read_idx_stream(stream, path, expected)
  except (EOFError, zlib.error, gzip.BadGzipFile) as e:
    raise DataError(f'malformed file {path} (broken gzip: {e}); {expected}') from None
  except OSError as e:
    raise DataError(f'cannot read {path} ({e.strerror or e}); {expected}') from None


def _read_idx_stream(stream, path: str, expected: str) -> np.ndarray:
  magic = stream.read(4)
  if len(magic) < 4 or magic[:2] != b'\x00\x00' or magic[2] not in _IDX_TYPES or magic[3] == 0:
    raise DataError(f'malformed file {path} (no IDX ubyte header: first bytes '
                    f'{magic[:4].hex() or "none"}); {expected}')
  ndim = magic[3]
  if ndim > IDX_MAX_DIMS:
    raise DataError(f'malformed file {path} (IDX header declares {ndim} dimensions; accepted: '
                    f'at most {IDX_MAX_DIMS}); {expected}')
  dims = stream.read(4 * ndim)
  if len(dims) < 4 * ndim:
    raise DataError(f'malformed file {path} (truncated IDX header); {expected}')
  shape = struct.unpack('>' + 'I' * ndim, dims)
  dtype = _IDX_TYPES[magic[2]]
  size = math.prod(shape) * dtype.itemsize
  if size > IDX_MAX_BYTES:
    raise DataError(f'malformed file {path} (IDX header declares {list(shape)} = {size} bytes; '
                    f'accepted: at most {IDX_MAX_BYTES} bytes); {expected}')
  body = stream.read(size + 1)
  if len(body) != size:
    held = f'more than {size}' if len(body) > size else str(len(body))
    raise DataError(f'malformed file {path} (IDX header says {list(shape)} = {size} bytes, '
                    f'file holds {held}); {expected}')
  return np.frombuffer(body, dtype).reshape(shape)


def _idx_path(folder: str, name: str) -> str:
  """`name` if present, else `name.gz` (the missing-file error names the plain one)."""
  plain = os.path.join(folder, name)
  if not os.path.isfile(plain) and os.path.isfile(plain + '.gz'):
    return plain + '.gz'
  return plain


def read_mnist(data_dir: str) -> Tuple[np.ndarray, np.ndarray]:
  """The MNIST training set: (images (N, 28, 28, 1) uint8, labels (N,) int64)."""
  expected = _mnist_expected(data_dir)
  img_path = _idx_path(data_dir, MNIST_FILES[0])
  lab_path = _idx_path(data_dir, MNIST_FILES[1])
  images = read_idx(img_path, expected)
  labels = read_idx(lab_path, expected)
  if images.ndim != 3 or images.shape[1:] != (28, 28):
    raise DataError(f'malformed file {img_path} (images of shape {list(images.shape)}; '
                    f'expected [N, 28, 28]); {expected}')
  if labels.shape != (images.shape[0],) or (labels.size and labels.max() > 9):
    raise DataError(f'malformed file {lab_path} (labels of shape {list(labels.shape)}, expected '
                    f'[{images.shape[0]}] in 0..9 to match {os.path.basename(img_path)}); '
                    f'{expected}')
  return images[..., None], labels.astype(np.int64)
