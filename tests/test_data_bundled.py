"""The bundled real-image data sets (lfw_faces, photo_patches), the recon/data package split,
and the rf_faces / rf_cifar configs."""
import json
import os

import jax
import numpy as np
import pytest

from configs import base, rf_cifar, rf_faces
from recon.config import validate as config_lib
from recon import data, pipelines

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _cfg(overrides=None):
  """The data section: 20 lfw_faces crops at their native 25x25, then `overrides`."""
  c = base.get_config()
  c.update_from_flattened_dict({'data.name': 'lfw_faces', 'data.n': 20, 'data.d': 625,
                                **(overrides or {})})
  return c.data


def test_lfw_faces_shapes_labels_and_sizes():
  x, y, meta = data.load(_cfg(), jax.random.PRNGKey(0))
  assert x.shape == (20, 625) and meta['image_shape'] == (25, 25, 1)
  np.testing.assert_array_equal(np.asarray(y), [-1.0] * 10 + [1.0] * 10)  # non-face, face
  assert meta['class_names'] == ('non-face', 'face')
  np.testing.assert_allclose(np.linalg.norm(np.asarray(x), axis=1), 25.0, rtol=1e-5)
  faces = np.asarray(meta['indices'])
  assert (faces[np.asarray(y) > 0] < 100).all() and (faces[np.asarray(y) < 0] >= 100).all()
  x5, _, m5 = data.load(_cfg({'data.image_size': 5, 'data.d': 25}), jax.random.PRNGKey(0))
  assert x5.shape == (20, 25) and m5['image_shape'] == (5, 5, 1)
  pix = data.to_pixels(np.asarray(x), meta)
  assert pix.min() >= -1e-5 and pix.max() <= 1 + 1e-5


def test_photo_patches_shapes_labels_and_determinism():
  cfg = _cfg({'data.name': 'photo_patches', 'data.d': 3072, 'data.n': 12})
  x, y, meta = data.load(cfg, jax.random.PRNGKey(3))
  assert x.shape == (12, 3072) and meta['image_shape'] == (32, 32, 3)
  assert sorted(set(np.asarray(y).tolist())) == [-1.0, 1.0]
  np.testing.assert_array_equal(np.asarray(y), [1.0] * 6 + [-1.0] * 6)  # 2 per photograph
  assert np.asarray(meta['indices']).shape == (12, 2)  # top-left corners
  again = data.load(cfg, jax.random.PRNGKey(3))
  np.testing.assert_array_equal(np.asarray(again[0]), np.asarray(x))
  other = data.load(cfg, jax.random.PRNGKey(4))
  assert not np.array_equal(np.asarray(other[0]), np.asarray(x))
  x8, _, m8 = data.load(_cfg({'data.name': 'photo_patches', 'data.d': 192, 'data.n': 12, 'data.image_size': 8}),
                        jax.random.PRNGKey(3))
  assert x8.shape == (12, 192) and m8['image_shape'] == (8, 8, 3)
  json.dumps(data.describe(meta), default=lambda a: np.asarray(a).tolist())


def test_refusals_are_one_line():
  cases = [(_cfg({'data.image_size': 4, 'data.d': 16}), 'config.data.image_size: invalid value 4 for lfw_faces (25x25); '
            'accepted: None (native) or one of 1, 5, 25'),
           (_cfg({'data.n': 201}), 'config.data.n: 201 samples need 101 of class 0, which has only 100; '
            'accepted: n <= 200 for classes (0, 1)'),
           (_cfg({'data.name': 'photo_patches', 'data.d': 3072, 'data.image_size': 5}), 'config.data.image_size: invalid '
            'value 5 for photo_patches (32x32); accepted: None (native) or one of 1, 2, 4, 8, '
            '16, 32'),
           (_cfg({'data.name': 'photo_patches', 'data.d': 3072, 'data.n': 6001}), 'config.data.n: 6001 patches need 1001 '
            'per photograph, more than 1000; accepted: n <= 6000 for classes (0, 1, 2, 3, 4, 5)'),
           (_cfg({'data.d': 100}), 'config.data.d: 100 does not match lfw_faces images of shape 25x25x1; '
            'accepted: d = 625')]
  for cfg, message in cases:
    with pytest.raises(data.DataError) as e:
      data.load(cfg, jax.random.PRNGKey(0))
    assert str(e.value) == message


def test_data_package_keeps_the_api_and_module_sizes():
  for name in ('load', 'names', 'describe', 'to_pixels', 'synthetic_sphere',
               'sphere_rows', 'synthetic_subspace', 'DataError', 'read_idx', 'read_cifar10',
               'read_mnist', 'read_digits', 'CIFAR10_PAGE', 'MNIST_PAGE', 'image_shape',
               'input_dim', 'preprocess', 'downsample', 'select_balanced', 'NATIVE'):
    assert hasattr(data, name), name
  assert {'lfw_faces', 'photo_patches', 'file'} <= set(data.names())
  folder = os.path.join(ROOT, 'recon', 'data')
  for f in os.listdir(folder):
    if f.endswith('.py'):
      with open(os.path.join(folder, f)) as fh:
        assert len(fh.read().splitlines()) <= 450, f


def test_configs_scale_p_with_d_and_n():
  c = rf_cifar.get_config()
  config_lib.validate(c)
  assert (c.data.d, c.data.n, c.victim.p) == (3072, 100, 3_072_000) and c.victim.weight_rng == 'hash_box_muller'
  c.data.image_size, c.data.n = 8, 10
  assert (c.data.d, c.victim.p) == (192, 19_200)
  f = rf_faces.get_config()
  config_lib.validate(f)
  assert (f.data.name, f.data.d, f.data.n, f.victim.p) == ('lfw_faces', 25, 20, 5000)
  f.data.image_size = 25
  assert (f.data.d, f.victim.p) == (625, 125_000)


@pytest.mark.slow
def test_rf_faces_reconstructs_every_face(tmp_path):
  c = rf_faces.get_config()
  c.data.n, c.run.log_every_seconds = 10, 60.0
  summary = pipelines.run(c, str(tmp_path / 'run'))
  m = summary['metrics']
  assert m['victim_interpolates'] is True
  assert m['recon_error'] < 0.05 and m['frac_recovered'] == 1.0, m
  assert os.path.isfile(tmp_path / 'run' / 'grid.png')


@pytest.mark.slow
def test_rf_cifar_relu_reconstructs_small_patches(tmp_path):
  c = rf_cifar.get_config()
  c.data.image_size, c.data.n, c.run.log_every_seconds = 4, 6, 60.0  # d = 48, p = 2880, relu
  m = pipelines.run(c, str(tmp_path / 'run'))['metrics']
  assert m['victim_interpolates'] is True and m['memory_lean'] is False
  assert m['recon_error'] < 0.05 and m['frac_recovered'] == 1.0, m
  assert os.path.isfile(tmp_path / 'run' / 'grid.png')
