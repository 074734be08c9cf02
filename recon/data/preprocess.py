"""Selection, resizing, preprocessing of image rows, and its inverse (`to_pixels`)."""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence, Tuple

import jax
import numpy as np

from recon.config import sections
from recon.data.base import LUMA, NATIVE, DataError

Array = jax.Array


def image_shape(data_cfg: sections.Data) -> Tuple[int, int, int]:
  """(H, W, C) that `data_cfg` gives for an image data set, checked without reading files."""
  (h, w, c), _ = NATIVE[data_cfg.name]
  size = data_cfg.image_size
  if size is not None:
    accepted = [s for s in range(1, h + 1) if h % s == 0 and w % s == 0]
    if size not in accepted:
      raise DataError(f'config.data.image_size: invalid value {size!r} for {data_cfg.name} '
                      f'({h}x{w}); accepted: None (native) or one of '
                      f'{", ".join(map(str, accepted))}')
    h = w = size
  if data_cfg.grayscale:
    c = 1
  return (h, w, c)


def input_dim(data_cfg: sections.Data) -> int:
  """d of the flattened rows `load(data_cfg, ...)` returns."""
  if data_cfg.name in NATIVE:
    return math.prod(image_shape(data_cfg))
  return int(data_cfg.d)


def class_counts(n: int, num_classes: int) -> List[int]:
  """n split over classes as evenly as possible (the first n mod C classes get one more)."""
  return [n // num_classes + (i < n % num_classes) for i in range(num_classes)]


def select_balanced(key: Array, labels: np.ndarray, classes: Sequence[int],
                    n: int) -> np.ndarray:
  """Indices of n samples balanced over `data.classes`, each class's subset drawn with the key.

  Grouped by class in the order of `data.classes`; within a class in source order.
  """
  out = []
  smallest = min(int(np.sum(labels == c)) for c in classes)
  for i, (c, count) in enumerate(zip(classes, class_counts(n, len(classes)))):
    pool = np.flatnonzero(labels == c)
    if count > len(pool):
      raise DataError(f'config.data.n: {n} samples need {count} of class {c}, which has only '
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
    std = std if std > 1e-12 * max(1.0, abs(mean)) else 1.0  # constant data: rounding only
    x = (x - mean) / std
    stats.update(mean=mean, std=std, row_norms=np.linalg.norm(x, axis=1))
  if mode == 'center':  # pixels minus the subset's global mean (Haim et al.'s mean subtraction)
    mean = float(x.mean())
    x = x - mean
    stats.update(mean=mean, row_norms=np.linalg.norm(x, axis=1))
  if mode == 'sphere':
    zero = np.flatnonzero(stats['row_norms'] <= 1e-10 * np.sqrt(d) * max(1.0, abs(stats['mean'])))
    if zero.size:  # a row equal to the global mean (e.g. a constant data set) has no direction
      raise DataError(f"config.data.preprocess: 'sphere' leaves row(s) "
                      f"{', '.join(str(int(i)) for i in zero[:5])}{' ...' if zero.size > 5 else ''}"
                      f' of {n} at zero (equal to the global mean {stats["mean"]:.3g}): no '
                      "direction to put on the sphere; accepted: rows that differ from their "
                      "mean, or preprocess 'none' with rows already on the sqrt(d)-sphere")
    x = x * (np.sqrt(d) / stats['row_norms'])[:, None]
  return x, stats


def to_pixels(x: np.ndarray, meta: Dict[str, Any],
              row_norms: Optional[np.ndarray] = None) -> np.ndarray:
  """Undoes `data.preprocess`: rows -> pixel values (the source's [0, 1] scale).

  'sphere' rows are rescaled to `row_norms` (default meta['row_norms'], the true
  rows' norms; pass a candidate's matched sample's norm to show it at true scale).
  """
  x = np.asarray(x, np.float64)
  mode = meta.get('preprocess')
  if mode == 'sphere':
    norms = meta['row_norms'] if row_norms is None else row_norms
    x = x * (np.asarray(norms, np.float64) / np.sqrt(x.shape[1]))[:, None]
  if mode in ('sphere', 'standardize', 'center'):
    x = x * meta['std'] + meta['mean']
  return x


def _classes(data_cfg: sections.Data, num_classes: int) -> Tuple[int, ...]:
  classes = data_cfg.classes
  if classes is None:
    return tuple(range(num_classes))
  ok = (isinstance(classes, (tuple, list)) and len(classes) > 0
        and all(isinstance(c, int) and not isinstance(c, bool) and 0 <= c < num_classes
                for c in classes) and len(set(classes)) == len(classes))
  if not ok:
    raise DataError(f'config.data.classes: invalid value {classes!r} for {data_cfg.name}; accepted: '
                    f'None (all) or a tuple of distinct ints in 0..{num_classes - 1}, e.g. (0, 1)')
  return tuple(classes)


def _labels(source_labels: np.ndarray, classes: Tuple[int, ...],
            binary_rule: str = 'classes') -> Tuple[np.ndarray, str]:
  """Labels by the module docstring's rule, and that rule in words; data.binary_rule 'parity':
  +1 for an odd source label, -1 for an even one (digit / MNIST odd vs even)."""
  if binary_rule == 'parity':
    return np.where(np.asarray(source_labels) % 2 == 1, 1.0, -1.0), '+1 odd, -1 even (parity)'
  if binary_rule != 'classes':
    raise DataError(f"config.data.binary_rule: unknown name {binary_rule!r}; accepted: 'classes', "
                    "'parity'")
  position = np.array([classes.index(int(c)) for c in source_labels], np.int32)
  if len(classes) == 1:
    return np.ones(len(source_labels)), 'all +1 (one class)'
  if len(classes) == 2:
    return 2.0 * position - 1.0, f'-1 for class {classes[0]}, +1 for class {classes[1]}'
  return position, 'position of the class in data.classes (int32)'
