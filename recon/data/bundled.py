"""Images shipped inside installed packages (no download): digits, LFW crops, photo patches.

  digits         scikit-learn's 8x8 digits (1797 images, labels 0..9, pixels 0..16).
  lfw_faces      scikit-image's `lfw_subset()`: 200 greyscale 25x25 crops, the first 100
                 faces (source label 1), the last 100 non-faces (source label 0).
  photo_patches  32x32x3 patches cut at seeded random positions from six bundled colour
                 photographs (`base.PHOTOS`: scikit-image's astronaut, chelsea, coffee, rocket;
                 scikit-learn's china, flower); source label = the photograph's index.
"""
from __future__ import annotations

import functools
from typing import Sequence, Tuple

import jax
import numpy as np

from recon.data.base import PATCH, PHOTO_POSITIVE, PHOTOS, DataError

Array = jax.Array
LFW_NAMES = ('non-face', 'face')
# photo_patches draws at most this many (distinct) patches per photograph.
PATCHES_PER_PHOTO = 1000


def read_digits() -> Tuple[np.ndarray, np.ndarray]:
  """scikit-learn's bundled digits: (images (1797, 8, 8, 1) in 0..16, labels (1797,))."""
  from sklearn.datasets import load_digits  # pylint: disable=import-outside-toplevel
  bunch = load_digits()
  return bunch.images[..., None], bunch.target.astype(np.int64)


def _skimage_data():
  try:
    from skimage import data as skdata  # pylint: disable=import-outside-toplevel
  except ImportError:
    raise DataError('scikit-image is not installed; the lfw_faces and photo_patches data sets '
                    'read its bundled images; accepted: pip install "scikit-image>=0.22,<0.27" '
                    '(or pip install -e .)') from None
  return skdata


def read_lfw() -> Tuple[np.ndarray, np.ndarray]:
  """scikit-image's LFW subset: (images (200, 25, 25, 1) in [0, 1], labels 1 face / 0 not)."""
  images = np.asarray(_skimage_data().lfw_subset(), np.float64)
  labels = np.concatenate([np.ones(100, np.int64), np.zeros(len(images) - 100, np.int64)])
  return images[..., None], labels


@functools.lru_cache(maxsize=None)
def read_photo(index: int) -> np.ndarray:
  """Bundled photograph `PHOTOS[index]` as (H, W, 3) uint8."""
  package, name = PHOTOS[index]
  if package == 'skimage':
    image = getattr(_skimage_data(), name)()
  else:
    from sklearn.datasets import load_sample_image  # pylint: disable=import-outside-toplevel
    image = load_sample_image(f'{name}.jpg')
  return np.asarray(image, np.uint8)[..., :3]


def photo_names() -> Tuple[str, ...]:
  return tuple(name for _, name in PHOTOS)


def cut_patches(key: Array, photos: Sequence[int], counts: Sequence[int],
                size: int = PATCH) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
  """`counts[i]` patches (size x size x 3, uint8) of photograph photos[i] at positions drawn
  uniformly from fold_in(key, photo index) (distinct top-left corners): (patches, photo index,
  top-left corners (n, 2))."""
  out, labels, corners = [], [], []
  for photo, count in zip(photos, counts):
    image = read_photo(photo)
    h, w = image.shape[0] - size + 1, image.shape[1] - size + 1
    sub = jax.random.fold_in(key, photo)
    if jax.dtypes.issubdtype(sub.dtype, jax.dtypes.prng_key):
      sub = jax.random.key_data(sub)
    rng = np.random.default_rng(np.asarray(sub, np.uint32).ravel().tolist())
    flat = rng.choice(h * w, size=count, replace=False)
    for r, c in zip(flat // w, flat % w):
      out.append(image[r:r + size, c:c + size])
      corners.append((int(r), int(c)))
    labels += [photo] * count
  return (np.stack(out) if out else np.zeros((0, size, size, 3), np.uint8),
          np.asarray(labels, np.int64), np.asarray(corners, np.int64).reshape(-1, 2))


def photo_labels(photo_index: np.ndarray) -> np.ndarray:
  """+1 for the first PHOTO_POSITIVE photographs, -1 for the others."""
  return np.where(np.asarray(photo_index) < PHOTO_POSITIVE, 1.0, -1.0)


PHOTO_LABEL_RULE = (f'+1 for patches of {", ".join(photo_names()[:PHOTO_POSITIVE])}; -1 for '
                    f'{", ".join(photo_names()[PHOTO_POSITIVE:])}')
