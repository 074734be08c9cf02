"""Data sets: one interface, `load(config, key, dtype) -> (X, y, meta)`.

X is (n, d) with every sample flattened (images in (H, W, C) order), y is (n,),
and `meta` describes what came back (`image_shape` is (H, W, C) for image data,
None otherwise). Data sets (`config.dataset`):

  synthetic_sphere    rows uniform on the sphere of radius sqrt(d) (the law-of-
                      reconstruction paper's); y = <x, g> + eps, g ~ N(0, I/d),
                      eps ~ N(0, label_noise^2).
  synthetic_subspace  the same, but rows on the sqrt(d)-sphere inside a random
                      k-dimensional subspace (k = config.planted_dim);
                      meta['basis'] is its orthonormal basis B (d x k), x = B z.
  digits              scikit-learn's bundled 8x8 digits (1797 images, no download).
  cifar10             the official "python version" batch files in config.data_dir.
  mnist               the official IDX files (gzipped or not) in config.data_dir.

Image data: `classes` picks the classes (None: all ten), n samples balanced over
them (counts differ by at most one), each class's subset drawn by the data key.
Labels: one class -> +1; two classes (a, b) -> -1 for a, +1 for b (a regression
target for the random-features model); three or more -> the class's position in
`classes` (int32). Pixels are scaled to [0, 1], then optionally converted to
grayscale (ITU-R BT.601 luma) and downsampled by block averaging to
`image_size` (a divisor of the native size). Preprocessing (`preprocess`):
  'sphere'       x <- (x - mean) / std with the subset's global mean and std,
                 then every row rescaled to norm sqrt(d) (the random-features
                 theory's sphere); the per-row norms before rescaling are kept
                 in meta['row_norms'] so `to_pixels` maps rows back to pixels.
  'standardize'  only the standardisation.
  'none'         pixels in [0, 1].
The synthetic generators are pure JAX functions of a key (sweeps can vmap them).
"""
from __future__ import annotations

import gzip
import io as _io
import math
import os
import pickle
import struct
import zlib
from typing import Any, Dict, List, Optional, Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from recon.errors import ExperimentError

Array = jax.Array

DATASETS = ('synthetic_sphere', 'synthetic_subspace', 'digits', 'cifar10', 'mnist')
PREPROCESS = ('sphere', 'standardize', 'none')

CIFAR10_PAGE = 'https://www.cs.toronto.edu/~kriz/cifar.html'
MNIST_PAGE = 'http://yann.lecun.com/exdb/mnist/'
CIFAR10_FILES = tuple(f'data_batch_{i}' for i in range(1, 6))
CIFAR10_NAMES = ('airplane', 'automobile', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse',
                 'ship', 'truck')
MNIST_FILES = ('train-images-idx3-ubyte', 'train-labels-idx1-ubyte')

# Native (H, W, C) and number of classes of each image data set.
NATIVE = {'digits': ((8, 8, 1), 10), 'cifar10': ((32, 32, 3), 10), 'mnist': ((28, 28, 1), 10)}
PIXEL_RANGE = (0.0, 1.0)
LUMA = np.array([0.299, 0.587, 0.114])  # ITU-R BT.601 grayscale weights.


class DataError(ExperimentError):
  """Unusable data or data settings; the message is one line (path, expected files, source)."""


# ---------------------------------------------------------------------------------------------
# Synthetic data (pure JAX).


def sphere_rows(key: Array, n: int, d: int, dtype=jnp.float32) -> Array:
  """n rows uniform on the sphere of radius sqrt(d) in R^d."""
  z = jax.random.normal(key, (n, d), dtype)
  return z * (jnp.sqrt(jnp.asarray(d, dtype)) / jnp.linalg.norm(z, axis=1, keepdims=True))


def _linear_labels(key: Array, x: Array, noise: float) -> Array:
  """y = x g + eps, g ~ N(0, I/d), eps ~ N(0, noise^2)."""
  kg, ke = jax.random.split(key)
  n, d = x.shape
  g = jax.random.normal(kg, (d,), x.dtype) / jnp.sqrt(jnp.asarray(d, x.dtype))
  return x @ g + noise * jax.random.normal(ke, (n,), x.dtype)


def synthetic_sphere(key: Array, n: int, d: int, noise: float = 0.5,
                     dtype=jnp.float32) -> Tuple[Array, Array]:
  """(X, y): X on the sqrt(d)-sphere, y = X g + eps, g ~ N(0, I/d), eps ~ N(0, noise^2)."""
  kx, kg, ke = jax.random.split(key, 3)
  x = sphere_rows(kx, n, d, dtype)
  g = jax.random.normal(kg, (d,), dtype) / jnp.sqrt(jnp.asarray(d, dtype))
  y = x @ g + noise * jax.random.normal(ke, (n,), dtype)
  return x, y


def subspace_basis(key: Array, d: int, k: int, dtype=jnp.float32) -> Array:
  """B (d x k) with orthonormal columns spanning a uniformly random k-dim subspace."""
  q, r = jnp.linalg.qr(jax.random.normal(key, (d, k), dtype))
  return q * jnp.where(jnp.diag(r) < 0, -1.0, 1.0).astype(dtype)  # Haar: fix QR's signs


def synthetic_subspace(key: Array, n: int, d: int, k: int, noise: float = 0.5,
                       dtype=jnp.float32) -> Tuple[Array, Array, Array]:
  """(X, y, B): X = Z B^T, Z uniform on the sqrt(d)-sphere of R^k, B (d x k) orthonormal.

  Rows lie on the sqrt(d)-sphere inside span(B); y = X g + eps, g ~ N(0, I/d),
  eps ~ N(0, noise^2), as in synthetic_sphere.
  """
  kb, kz, kg, ke = jax.random.split(key, 4)
  basis = subspace_basis(kb, d, k, dtype)
  z = jax.random.normal(kz, (n, k), dtype)
  z = z * (jnp.sqrt(jnp.asarray(d, dtype)) / jnp.linalg.norm(z, axis=1, keepdims=True))
  x = z @ basis.T
  g = jax.random.normal(kg, (d,), dtype) / jnp.sqrt(jnp.asarray(d, dtype))
  y = x @ g + noise * jax.random.normal(ke, (n,), dtype)
  return x, y, basis


# ---------------------------------------------------------------------------------------------
# Readers of the official file formats (NumPy, on the host).


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


def read_idx(path: str, expected: str = '') -> np.ndarray:
  """An IDX file (gzipped or not, told by its first bytes) -> array of its stated shape."""
  expected = expected or _mnist_expected(os.path.dirname(path) or '.')
  raw = _read_bytes(path, expected)
  if raw[:2] == b'\x1f\x8b':
    try:
      raw = gzip.decompress(raw)
    except (OSError, EOFError, zlib.error) as e:
      raise DataError(f'malformed file {path} (broken gzip: {e}); {expected}') from None
  if len(raw) < 4 or raw[:2] != b'\x00\x00' or raw[2] not in _IDX_TYPES or raw[3] == 0:
    raise DataError(f'malformed file {path} (no IDX ubyte header: first bytes '
                    f'{raw[:4].hex() or "none"}); {expected}')
  ndim = raw[3]
  header = 4 + 4 * ndim
  if len(raw) < header:
    raise DataError(f'malformed file {path} (truncated IDX header); {expected}')
  shape = struct.unpack('>' + 'I' * ndim, raw[4:header])
  dtype = _IDX_TYPES[raw[2]]
  size = math.prod(shape) * dtype.itemsize
  if len(raw) - header != size:
    raise DataError(f'malformed file {path} (IDX header says {list(shape)} = {size} bytes, '
                    f'file holds {len(raw) - header}); {expected}')
  return np.frombuffer(raw, dtype, offset=header).reshape(shape)


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


def read_digits() -> Tuple[np.ndarray, np.ndarray]:
  """scikit-learn's bundled digits: (images (1797, 8, 8, 1) in 0..16, labels (1797,))."""
  from sklearn.datasets import load_digits  # pylint: disable=import-outside-toplevel
  bunch = load_digits()
  return bunch.images[..., None], bunch.target.astype(np.int64)


# ---------------------------------------------------------------------------------------------
# Selection and preprocessing.


def image_shape(config: Any) -> Tuple[int, int, int]:
  """(H, W, C) that `config` gives for an image data set, checked without reading files."""
  (h, w, c), _ = NATIVE[config.dataset]
  size = config.get('image_size', None)
  if size is not None:
    accepted = [s for s in range(1, h + 1) if h % s == 0 and w % s == 0]
    if size not in accepted:
      raise DataError(f'config.image_size: invalid value {size!r} for {config.dataset} '
                      f'({h}x{w}); accepted: None (native) or one of '
                      f'{", ".join(map(str, accepted))}')
    h = w = size
  if config.get('grayscale', False):
    c = 1
  return (h, w, c)


def input_dim(config: Any) -> int:
  """d of the flattened rows `load(config, ...)` returns."""
  if config.dataset in NATIVE:
    return math.prod(image_shape(config))
  return int(config.d)


def class_counts(n: int, num_classes: int) -> List[int]:
  """n split over classes as evenly as possible (the first n mod C classes get one more)."""
  return [n // num_classes + (i < n % num_classes) for i in range(num_classes)]


def select_balanced(key: Array, labels: np.ndarray, classes: Sequence[int],
                    n: int) -> np.ndarray:
  """Indices of n samples balanced over `classes`, each class's subset drawn with the key.

  Grouped by class in the order of `classes`; within a class in source order.
  """
  out = []
  smallest = min(int(np.sum(labels == c)) for c in classes)
  for i, (c, count) in enumerate(zip(classes, class_counts(n, len(classes)))):
    pool = np.flatnonzero(labels == c)
    if count > len(pool):
      raise DataError(f'config.n: {n} samples need {count} of class {c}, which has only '
                      f'{len(pool)}; accepted: n <= {smallest * len(classes)} for classes '
                      f'{tuple(classes)}')
    perm = np.asarray(jax.random.permutation(jax.random.fold_in(key, i), len(pool)))
    out.append(np.sort(pool[perm[:count]]))
  return np.concatenate(out)


def downsample(images: np.ndarray, size: int) -> np.ndarray:
  """Block average (N, H, W, C) -> (N, size, size, C); size divides H and W."""
  n, h, w, c = images.shape
  fh, fw = h // size, w // size
  return images.reshape(n, size, fh, size, fw, c).mean(axis=(2, 4))


def to_grayscale(images: np.ndarray) -> np.ndarray:
  """(N, H, W, 3) -> (N, H, W, 1) by ITU-R BT.601 luma; one channel passes through."""
  if images.shape[-1] == 1:
    return images
  return images @ LUMA[:, None]


def preprocess(x: np.ndarray, mode: str) -> Tuple[np.ndarray, Dict[str, Any]]:
  """Rows (n, d) -> preprocessed rows and the statistics that undo it (see module doc)."""
  x = np.asarray(x, np.float64)
  n, d = x.shape
  stats = {'preprocess': mode, 'mean': 0.0, 'std': 1.0, 'row_norms': np.linalg.norm(x, axis=1)}
  if mode in ('sphere', 'standardize'):
    mean, std = float(x.mean()), float(x.std())
    std = std if std > 0 else 1.0
    x = (x - mean) / std
    stats.update(mean=mean, std=std, row_norms=np.linalg.norm(x, axis=1))
  if mode == 'sphere':
    x = x * (np.sqrt(d) / np.maximum(stats['row_norms'], 1e-12))[:, None]
  return x, stats


def to_pixels(x: np.ndarray, meta: Dict[str, Any],
              row_norms: Optional[np.ndarray] = None) -> np.ndarray:
  """Undoes `preprocess`: rows -> pixel values (the source's [0, 1] scale).

  'sphere' rows are rescaled to `row_norms` (default meta['row_norms'], the true
  rows' norms; pass a candidate's matched sample's norm to show it at true scale).
  """
  x = np.asarray(x, np.float64)
  mode = meta.get('preprocess')
  if mode == 'sphere':
    norms = meta['row_norms'] if row_norms is None else row_norms
    x = x * (np.asarray(norms, np.float64) / np.sqrt(x.shape[1]))[:, None]
  if mode in ('sphere', 'standardize'):
    x = x * meta['std'] + meta['mean']
  return x


def _classes(config: Any, num_classes: int) -> Tuple[int, ...]:
  classes = config.get('classes', None)
  if classes is None:
    return tuple(range(num_classes))
  ok = (isinstance(classes, (tuple, list)) and len(classes) > 0
        and all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < num_classes
                for c in classes) and len(set(classes)) == len(classes))
  if not ok:
    raise DataError(f'config.classes: invalid value {classes!r} for {config.dataset}; accepted: '
                    f'None (all) or a tuple of distinct ints in 0..{num_classes - 1}, e.g. (0, 1)')
  return tuple(classes)


def _labels(source_labels: np.ndarray, classes: Tuple[int, ...]) -> Tuple[np.ndarray, str]:
  """Labels by the module docstring's rule, and that rule in words."""
  position = np.array([classes.index(int(c)) for c in source_labels], np.int32)
  if len(classes) == 1:
    return np.ones(len(source_labels)), 'all +1 (one class)'
  if len(classes) == 2:
    return 2.0 * position - 1.0, f'-1 for class {classes[0]}, +1 for class {classes[1]}'
  return position, 'position of the class in config.classes (int32)'


def load_images(config: Any, key: Array) -> Tuple[np.ndarray, np.ndarray, Dict[str, Any]]:
  """Image data set -> (rows (n, H*W*C) float64, labels, meta) on the host."""
  name = config.dataset
  shape = image_shape(config)
  d = math.prod(shape)
  if config.get('d', d) != d:
    raise DataError(f'config.d: {config.d} does not match {name} images of shape '
                    f'{shape[0]}x{shape[1]}x{shape[2]}; accepted: d = {d}')
  classes = _classes(config, NATIVE[name][1])
  data_dir = config.get('data_dir', None)
  if name == 'digits':
    images, labels = read_digits()
    scale, names = 16.0, tuple(str(i) for i in range(10))
  else:
    if data_dir is None:
      expected = (_cifar_expected if name == 'cifar10' else _mnist_expected)('data_dir')
      raise DataError(f'config.data_dir: required for dataset {name!r}; accepted: a folder '
                      f'path; {expected}')
    data_dir = os.path.expanduser(data_dir)
    if name == 'cifar10':
      images, labels, names = read_cifar10(data_dir)
    else:
      images, labels = read_mnist(data_dir)
      names = tuple(str(i) for i in range(10))
    scale = 255.0
  idx = select_balanced(key, labels, classes, config.n)
  pix = images[idx].astype(np.float64) / scale
  if config.get('grayscale', False):
    pix = to_grayscale(pix)
  if shape[0] != pix.shape[1]:
    pix = downsample(pix, shape[0])
  x, stats = preprocess(pix.reshape(len(idx), d), config.get('preprocess', 'sphere'))
  y, label_rule = _labels(labels[idx], classes)
  meta = {'name': name, 'image_shape': shape, 'classes': classes,
          'class_names': tuple(names[c] for c in classes), 'labels': label_rule,
          'indices': idx, 'source_labels': labels[idx], 'pixel_range': PIXEL_RANGE,
          'data_dir': data_dir, **stats}
  return x, y, meta


def load(config: Any, key: Array, dtype=jnp.float32) -> Tuple[Array, Array, Dict[str, Any]]:
  """Returns (X (n, d), y (n,), meta) for `config.dataset` (see the module docstring)."""
  name = config.dataset
  if name == 'synthetic_sphere':
    x, y = synthetic_sphere(key, config.n, config.d, config.label_noise, dtype)
    return x, y, {'name': name, 'image_shape': None, 'preprocess': None,
                  'row_norms': np.full(config.n, np.sqrt(config.d))}
  if name == 'synthetic_subspace':
    k = config.get('planted_dim', None)
    if k is None or not 1 <= k <= config.d:
      raise DataError(f'config.planted_dim: invalid value {k!r} for synthetic_subspace; '
                      f'accepted: an int in 1..d = {config.d}')
    x, y, basis = synthetic_subspace(key, config.n, config.d, k, config.label_noise, dtype)
    return x, y, {'name': name, 'image_shape': None, 'preprocess': None, 'basis': basis,
                  'planted_dim': k, 'row_norms': np.full(config.n, np.sqrt(config.d))}
  if name in NATIVE:
    x, y, meta = load_images(config, key)
    y = jnp.asarray(y, jnp.int32 if y.dtype.kind == 'i' else dtype)
    return jnp.asarray(x, dtype), y, meta
  raise DataError(f'config.dataset: unknown name {name!r}; accepted: {", ".join(DATASETS)}')


def describe(meta: Dict[str, Any]) -> Dict[str, Any]:
  """The JSON-sized part of meta (no bases or large arrays) for summary.json."""
  keys = ('name', 'image_shape', 'classes', 'class_names', 'labels', 'indices', 'preprocess',
          'mean', 'std', 'planted_dim', 'data_dir')
  return {k: meta[k] for k in keys if k in meta}
