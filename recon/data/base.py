"""Constants and the error type shared by the data modules."""
from __future__ import annotations

import numpy as np

from recon.errors import ExperimentError


CIFAR10_PAGE = 'https://www.cs.toronto.edu/~kriz/cifar.html'
MNIST_PAGE = 'http://yann.lecun.com/exdb/mnist/'
CIFAR10_FILES = tuple(f'data_batch_{i}' for i in range(1, 6))
CIFAR10_NAMES = ('airplane', 'automobile', 'bird', 'cat', 'deer', 'dog', 'frog', 'horse',
                 'ship', 'truck')
MNIST_FILES = ('train-images-idx3-ubyte', 'train-labels-idx1-ubyte')

# Bundled colour photographs that photo_patches cuts from: (package, name). The first
# PHOTO_POSITIVE are labelled +1, the rest -1.
PHOTOS = (('skimage', 'astronaut'), ('skimage', 'chelsea'), ('skimage', 'coffee'),
          ('skimage', 'rocket'), ('sklearn', 'china'), ('sklearn', 'flower'))
PHOTO_POSITIVE = 3
PATCH = 32

# Native (H, W, C) and number of classes of each image data set.
NATIVE = {'digits': ((8, 8, 1), 10), 'cifar10': ((32, 32, 3), 10), 'mnist': ((28, 28, 1), 10),
          'lfw_faces': ((25, 25, 1), 2), 'photo_patches': ((PATCH, PATCH, 3), len(PHOTOS))}
PIXEL_RANGE = (0.0, 1.0)
LUMA = np.array([0.299, 0.587, 0.114])  # ITU-R BT.601 grayscale weights.


class DataError(ExperimentError):
  """Unusable data or data settings; the message is one line (path, expected files, source)."""
