"""Data sets: one interface, `load(config.data, key, dtype) -> (X, y, meta)`.

X is (n, d) with every sample flattened (images in (H, W, C) order), y is (n,),
and `meta` describes what came back (`data.image_shape` is (H, W, C) for image data,
None otherwise). Data sets (`data.name`; every function takes the config's `data` section):

  synthetic_sphere    rows uniform on the sphere of radius sqrt(d) (the law-of-
                      reconstruction paper's); y = <x, g> + eps, g ~ N(0, I/d),
                      eps ~ N(0, data.label_noise^2).
  synthetic_subspace  the same, but rows on the sqrt(d)-sphere inside a random
                      k-dimensional subspace (k = data.planted_dim);
                      meta['basis'] is its orthonormal basis B (d x k), x = B z.
  digits              scikit-learn's bundled 8x8 digits (1797 images, no download).
  cifar10             the official "python version" batch files in data.dir.
  mnist               the official IDX files (gzipped or not) in data.dir.
  lfw_faces           scikit-image's bundled LFW subset (200 greyscale 25x25 crops, 100
                      faces then 100 non-faces); labels +1 face, -1 non-face; d = 625.
  photo_patches       32x32x3 patches at seeded random positions of six bundled colour
                      photographs (recon/data/bundled.py); labels +1 for the first three
                      photographs, -1 for the others; d = 3072 (the CIFAR-10 shape).
  file                the auditor's own training set: `data.path`, an .npz holding 'x'
                      (n, d) or (n, H, W[, C]) and optionally 'y' (n,) (recon/data/auditor.py);
                      data.n / data.d None take the file's sizes (`resolve_file`).

Image data: `data.classes` picks the classes (lfw_faces: 0 non-face, 1 face;
photo_patches: photo index; None: all ten), n samples balanced over them (counts differ by
at most one), each class's subset drawn by the data key. Labels: one class -> +1; two
classes (a, b) -> -1 for a, +1 for b (a regression target for the random-features model);
three or more -> the class's position in `data.classes` (int32); `data.binary_rule='parity'`
instead labels +1 odd, -1 even digits. Pixels are scaled to [0, 1], then optionally
converted to grayscale (ITU-R BT.601 luma) and downsampled by block averaging to
`data.image_size` (a divisor of the native size). Preprocessing (`data.preprocess`):
  'sphere'       x <- (x - mean) / std with the subset's global mean and std,
                 then every row rescaled to norm sqrt(d) (the random-features
                 theory's sphere); the per-row norms before rescaling are kept
                 in meta['row_norms'] so `to_pixels` maps rows back to pixels.
  'standardize'  only the standardisation.
  'center'       pixels minus the subset's global mean (Haim et al.), scale kept.
  'none'         pixels in [0, 1].
The synthetic generators are pure JAX functions of a key (sweeps can vmap them).
"""
from __future__ import annotations

import dataclasses
import math
import os
from typing import Any, Dict, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np

# The public API: every name below stays importable as recon.data.NAME.
from recon import registry
from recon.config import sections
from recon.data.base import (CIFAR10_FILES, CIFAR10_NAMES, CIFAR10_PAGE, LUMA,  # noqa: F401
                             MNIST_FILES, MNIST_PAGE, NATIVE, PATCH, PHOTO_POSITIVE, PHOTOS,
                             PIXEL_RANGE, DataError)
from recon.data import auditor
from recon.data.bundled import (LFW_NAMES, PATCHES_PER_PHOTO, PHOTO_LABEL_RULE, cut_patches,  # noqa: F401
                                photo_labels, photo_names, read_digits, read_lfw, read_photo)
from recon.data.files import (_ArrayUnpickler, _cifar_expected, _cifar_folder,  # noqa: F401
                              _idx_path, _mnist_expected, _read_bytes, read_cifar10,
                              read_cifar10_batch, read_idx, read_mnist)
from recon.data.preprocess import (_classes, _labels, class_counts, downsample,  # noqa: F401
                                   image_shape, input_dim, preprocess, select_balanced,
                                   to_grayscale, to_pixels)
from recon.data.synthetic import (_linear_labels, sphere_rows, subspace_basis,  # noqa: F401
                                  synthetic_subspace, synthetic_sphere)

Array = jax.Array


def load_images(data_cfg: sections.Data,
                key: Array) -> Tuple[np.ndarray, np.ndarray, Dict[str, Any]]:
  """Image data set -> (rows (n, H*W*C) float64, labels, meta) on the host."""
  name = data_cfg.name
  shape = image_shape(data_cfg)
  d = math.prod(shape)
  if data_cfg.d != d:
    raise DataError(f'config.data.d: {data_cfg.d} does not match {name} images of shape '
                    f'{shape[0]}x{shape[1]}x{shape[2]}; accepted: d = {d}')
  classes = _classes(data_cfg, NATIVE[name][1])
  data_dir = data_cfg.dir
  if name == 'photo_patches':
    return _load_patches(data_cfg, key, shape, classes)
  if name == 'digits':
    images, labels = read_digits()
    scale, names = 16.0, tuple(str(i) for i in range(10))
  elif name == 'lfw_faces':
    images, labels = read_lfw()
    scale, names = 1.0, LFW_NAMES
  else:
    if data_dir is None:
      expected = (_cifar_expected if name == 'cifar10' else _mnist_expected)('data_dir')
      raise DataError(f'config.data.dir: required for dataset {name!r}; accepted: a folder '
                      f'path; {expected}')
    data_dir = os.path.expanduser(data_dir)
    if name == 'cifar10':
      images, labels, names = read_cifar10(data_dir)
    else:
      images, labels = read_mnist(data_dir)
      names = tuple(str(i) for i in range(10))
    scale = 255.0
  idx = select_balanced(key, labels, classes, data_cfg.n)
  pix = images[idx].astype(np.float64) / scale
  return _finish(data_cfg, pix, labels[idx], idx, shape, classes, names, data_dir)


def _finish(data_cfg: sections.Data, pix: np.ndarray, source_labels: np.ndarray, idx, shape,
            classes,
            names, data_dir) -> Tuple[np.ndarray, np.ndarray, Dict[str, Any]]:
  """Greyscale, resize and preprocess pixels (N, H, W, C) in [0, 1]; label; describe."""
  if data_cfg.grayscale:
    pix = to_grayscale(pix)
  if shape[0] != pix.shape[1]:
    pix = downsample(pix, shape[0])
  x, stats = preprocess(pix.reshape(len(pix), math.prod(shape)),
                        data_cfg.preprocess)
  if data_cfg.name == 'photo_patches':
    y, label_rule = photo_labels(source_labels), PHOTO_LABEL_RULE
  else:
    y, label_rule = _labels(source_labels, classes, data_cfg.binary_rule)
  meta = {'name': data_cfg.name, 'image_shape': shape, 'classes': classes,
          'class_names': tuple(names[c] for c in classes), 'labels': label_rule,
          'indices': idx, 'source_labels': source_labels, 'pixel_range': PIXEL_RANGE,
          'data_dir': data_dir, **stats}
  return x, y, meta


def _load_patches(data_cfg: sections.Data, key: Array, shape, classes):
  """photo_patches: n patches balanced over the photographs in `data.classes` (module docstring)."""
  counts = class_counts(data_cfg.n, len(classes))
  if max(counts) > PATCHES_PER_PHOTO:
    raise DataError(f'config.data.n: {data_cfg.n} patches need {max(counts)} per photograph, '
                    f'more than {PATCHES_PER_PHOTO}; accepted: n <= '
                    f'{PATCHES_PER_PHOTO * len(classes)} for classes {tuple(classes)}')
  patches, source, corners = cut_patches(key, classes, counts)
  return _finish(data_cfg, patches.astype(np.float64) / 255.0, source, corners, shape, classes,
                 photo_names(), None)


def load(data_cfg: sections.Data, key: Array,
         dtype=jnp.float32) -> Tuple[Array, Array, Dict[str, Any]]:
  """Returns (X (n, d), y (n,), meta) for `data_cfg.name`: the loader registered under that
  name (recon/registry.py; the built-in ones below, see the module docstring)."""
  return registry.lookup('dataset', data_cfg.name).load(data_cfg, key, dtype)


def names() -> Tuple[str, ...]:
  """The registered data set names (`data.name`)."""
  return registry.names('dataset')


def _load_sphere(data_cfg: sections.Data, key: Array, dtype) -> Tuple[Array, Array, Dict[str, Any]]:
  x, y = synthetic_sphere(key, data_cfg.n, data_cfg.d, data_cfg.label_noise, dtype)
  return x, y, {'name': data_cfg.name, 'image_shape': None, 'preprocess': None,
                'row_norms': np.full(data_cfg.n, np.sqrt(data_cfg.d))}


def _load_subspace(data_cfg: sections.Data, key: Array,
                   dtype) -> Tuple[Array, Array, Dict[str, Any]]:
  k = data_cfg.planted_dim
  if k is None or not 1 <= k <= data_cfg.d:
    raise DataError(f'config.data.planted_dim: invalid value {k!r} for synthetic_subspace; '
                    f'accepted: an int in 1..d = {data_cfg.d}')
  x, y, basis = synthetic_subspace(key, data_cfg.n, data_cfg.d, k, data_cfg.label_noise, dtype)
  return x, y, {'name': data_cfg.name, 'image_shape': None, 'preprocess': None, 'basis': basis,
                'planted_dim': k, 'row_norms': np.full(data_cfg.n, np.sqrt(data_cfg.d))}


def _load_image_set(data_cfg: sections.Data, key: Array,
                    dtype) -> Tuple[Array, Array, Dict[str, Any]]:
  x, y, meta = load_images(data_cfg, key)
  y = jnp.asarray(y, jnp.int32 if y.dtype.kind == 'i' else dtype)
  return jnp.asarray(x, dtype), y, meta


def _load_file(data_cfg: sections.Data, key: Array, dtype) -> Tuple[Array, Array, Dict[str, Any]]:
  del key  # the auditor's file is the data set as it is
  x, y, meta = auditor.load(data_cfg, preprocess)
  if y is not None:
    y = jnp.asarray(y, jnp.int32 if y.dtype.kind in 'iu' else dtype)
  return jnp.asarray(x, dtype), y, meta


# The synthetic sets' names, for the pipelines that build their own rows of them (the KKT
# pipeline's balanced class labels) or read their planted subspace.
SPHERE, SUBSPACE = 'synthetic_sphere', 'synthetic_subspace'
registry.register('dataset', SPHERE, registry.Dataset(_load_sphere))
registry.register('dataset', SUBSPACE, registry.Dataset(_load_subspace))
for _name in NATIVE:  # digits, cifar10, mnist, lfw_faces, photo_patches
  registry.register('dataset', _name, registry.Dataset(_load_image_set))
registry.register('dataset', auditor.NAME, registry.Dataset(_load_file, own_sizes=True))


def trains_victim(victim: Any, pipeline: Optional[str]) -> bool:
  """True when recon trains the victim on data.path's file (so it needs 'y'): no
  victim.checkpoint in the victim section, and no named pipeline (leak_width reads the file's
  rows only)."""
  return not victim.checkpoint and pipeline is None


def resolve_file(data_cfg: Any, victim: Any, pipeline: Optional[str]) -> None:
  """data.name 'file': checks the file against the data section `data_cfg` before compute and
  sets data.n / data.d left None to the file's sizes (in place); other data sets: nothing.
  The victim section and the pipeline say whether recon trains the victim on the file
  (`trains_victim`: then it needs 'y')."""
  if data_cfg.name != auditor.NAME:
    return
  sizes = auditor.resolve_sizes(data_cfg, trains_victim=trains_victim(victim, pipeline))
  for field, value in sizes.items():
    if data_cfg[field] is None:
      data_cfg[field] = value


def load_held_out(data_cfg: sections.Data, key: Array, m: int,
                  dtype=jnp.float32) -> Tuple[Optional[Array], Optional[Array], str]:
  """(X', y', how): m held-out samples of the task `load(data_cfg, key)` draws from, for a
  victim's utility (never seen by training or the attack); (None, None, why) when there is
  no such task.

  synthetic_sphere: fresh rows on the sphere with the same direction g (key's split), fresh
  label noise. Image sets: `load` with n = m on a key folded from `key` (the same classes and
  preprocessing; images drawn twice are dropped, so m' <= m rows may come back; a class too
  small for m halves m until it fits).
  """
  if data_cfg.name == SPHERE:
    kx, kg, ke = jax.random.split(key, 3)
    x = sphere_rows(jax.random.fold_in(kx, 1), m, data_cfg.d, dtype)
    g = jax.random.normal(kg, (data_cfg.d,), dtype) / jnp.sqrt(jnp.asarray(data_cfg.d, dtype))
    y = x @ g + data_cfg.label_noise * jax.random.normal(jax.random.fold_in(ke, 1), (m,), dtype)
    return x, y, 'synthetic_sphere: fresh rows, the same g'
  if data_cfg.name in NATIVE and data_cfg.name != 'photo_patches':
    held = dataclasses.replace(sections.Data.from_section(data_cfg), n=m)
    while True:  # a small data set (lfw_faces: 100 per class) gives what it has
      try:
        x, y, meta = load(held, jax.random.fold_in(key, 1), dtype)
        break
      except DataError:
        if held.n == 1:
          return None, None, f'{data_cfg.name}: too few samples for a held-out set'
        held = dataclasses.replace(held, n=max(1, held.n // 2))
    _, _, train_meta = load(data_cfg, key, dtype)
    seen = set(np.asarray(train_meta.get('indices', [])).reshape(-1).tolist())
    keep = np.array([int(i) not in seen for i in np.asarray(meta['indices']).reshape(-1)])
    return x[keep], y[keep], f'{data_cfg.name}: another draw of the same classes, overlap dropped'
  return None, None, f'{data_cfg.name}: no held-out set'


def describe(meta: Dict[str, Any]) -> Dict[str, Any]:
  """The JSON-sized part of meta (no bases or large arrays) for summary.json."""
  keys = ('name', 'image_shape', 'classes', 'class_names', 'labels', 'indices', 'preprocess',
          'mean', 'std', 'planted_dim', 'data_dir', 'path')
  return {k: meta[k] for k in keys if k in meta}
