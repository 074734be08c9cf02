"""Data loaders: synthetic generators, digits, and CIFAR-10 / MNIST from tiny files in the
official formats written to a temporary folder (no network)."""
import gzip
import os
import pickle
import struct
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest
from sklearn.datasets import load_digits

from configs import base
from recon import data, errors

KEY = jax.random.PRNGKey(0)


def cfg(overrides=None):
  """The data section of configs/base.py with digits 8x8 and `overrides` ({path: value})."""
  c = base.get_config()
  c.update_from_flattened_dict({'data.name': 'digits', 'data.classes': (0, 1), 'data.n': 6,
                                'data.d': 64, 'data.label_noise': 0.0, **(overrides or {})})
  return c.data


def one_line_error(fn, *parts):
  with pytest.raises(data.DataError) as e:
    fn()
  msg = str(e.value)
  assert '\n' not in msg
  for p in parts:
    assert p in msg, (p, msg)
  return msg


# --- synthetic -------------------------------------------------------------------------------


def test_synthetic_sphere_unchanged_interface():
  x, y, meta = data.load(cfg({'data.name': 'synthetic_sphere', 'data.n': 5, 'data.d': 7, 'data.label_noise': 0.5}), KEY)
  assert x.shape == (5, 7) and y.shape == (5,) and meta['image_shape'] is None
  np.testing.assert_allclose(np.linalg.norm(x, axis=1), np.sqrt(7), rtol=1e-5)


def test_synthetic_subspace_rows_on_sphere_inside_basis():
  c = cfg({'data.name': 'synthetic_subspace', 'data.n': 6, 'data.d': 12, 'data.planted_dim': 3, 'data.label_noise': 0.5})
  x, y, meta = data.load(c, KEY, jnp.float32)
  b = np.asarray(meta['basis'])
  assert x.shape == (6, 12) and x.dtype == jnp.float32 and y.shape == (6,)
  assert b.shape == (12, 3) and meta['planted_dim'] == 3
  np.testing.assert_allclose(b.T @ b, np.eye(3), atol=1e-5)
  np.testing.assert_allclose(np.linalg.norm(x, axis=1), np.sqrt(12), rtol=1e-5)
  x = np.asarray(x)
  assert np.abs(x - x @ b @ b.T).max() < 1e-4  # inside span(B) ...
  assert np.linalg.matrix_rank(x, tol=1e-3) == 3  # ... and spanning it
  _, _, other = data.load(c, jax.random.PRNGKey(1))
  assert np.abs(np.asarray(other['basis']) - b).max() > 0.1  # a new key, a new subspace


def test_synthetic_subspace_vmaps_over_keys():
  keys = jax.random.split(KEY, 3)
  # jit: one compiled program instead of op-by-op dispatch of every vmapped primitive.
  x, y, b = jax.jit(jax.vmap(lambda k: data.synthetic_subspace(k, 4, 6, 2)))(keys)
  assert x.shape == (3, 4, 6) and y.shape == (3, 4) and b.shape == (3, 6, 2)


@pytest.mark.parametrize('k', [None, 0, 13])
def test_synthetic_subspace_bad_dim(k):
  one_line_error(lambda: data.load(cfg({'data.name': 'synthetic_subspace', 'data.d': 12, 'data.planted_dim': k, 'data.label_noise': 0.1}), KEY), 'config.data.planted_dim')


# --- digits ----------------------------------------------------------------------------------


def test_digits_balanced_labels_shapes_and_true_scale():
  x, y, meta = data.load(cfg({'data.classes': (3, 5), 'data.n': 7}), KEY)
  assert x.shape == (7, 64) and x.dtype == jnp.float32 and y.dtype == jnp.float32
  assert meta['image_shape'] == (8, 8, 1) and meta['class_names'] == ('3', '5')
  assert list(meta['source_labels']) == [3, 3, 3, 3, 5, 5, 5]  # 4 + 3: balanced
  assert list(np.asarray(y)) == [-1, -1, -1, -1, 1, 1, 1]  # first class -1
  np.testing.assert_allclose(np.linalg.norm(x, axis=1), 8.0, rtol=1e-5)
  # Preprocessing is undone exactly by to_pixels (true scale, [0, 1]).
  images = load_digits().images[meta['indices']].reshape(7, 64) / 16.0
  np.testing.assert_allclose(data.to_pixels(np.asarray(x, np.float64), meta), images, atol=1e-5)
  assert meta['mean'] == pytest.approx(images.mean())
  assert meta['std'] == pytest.approx(images.std())


def test_digits_subset_depends_on_key_only():
  a = data.load(cfg({'data.n': 10}), KEY)[2]['indices']
  b = data.load(cfg({'data.n': 10}), KEY)[2]['indices']
  c = data.load(cfg({'data.n': 10}), jax.random.PRNGKey(5))[2]['indices']
  np.testing.assert_array_equal(a, b)
  assert set(a) != set(c)


def test_digits_multiclass_labels_are_positions():
  x, y, meta = data.load(cfg({'data.classes': (7, 2, 9), 'data.n': 6}), KEY)
  assert y.dtype == jnp.int32
  assert list(meta['source_labels']) == [7, 7, 2, 2, 9, 9]
  assert list(np.asarray(y)) == [0, 0, 1, 1, 2, 2]


def test_digits_all_classes_and_other_preprocessing():
  x, _, meta = data.load(cfg({'data.classes': None, 'data.n': 20, 'data.preprocess': 'standardize'}), KEY)
  assert sorted(set(meta['source_labels'])) == list(range(10))
  assert abs(float(x.mean())) < 1e-5 and float(x.std()) == pytest.approx(1.0, rel=1e-4)
  x, _, meta = data.load(cfg({'data.preprocess': 'none'}), KEY)
  assert float(x.min()) >= 0.0 and float(x.max()) <= 1.0
  np.testing.assert_allclose(data.to_pixels(np.asarray(x), meta), np.asarray(x))


def test_digits_downsampling_by_block_mean():
  x, _, meta = data.load(cfg({'data.image_size': 4, 'data.d': 16, 'data.preprocess': 'none', 'data.n': 2}), KEY)
  assert meta['image_shape'] == (4, 4, 1) and x.shape == (2, 16)
  full = load_digits().images[meta['indices']] / 16.0
  expected = full.reshape(2, 4, 2, 4, 2).mean(axis=(2, 4)).reshape(2, 16)
  np.testing.assert_allclose(np.asarray(x), expected, atol=1e-6)


def test_digits_config_errors():
  one_line_error(lambda: data.load(cfg({'data.d': 10}), KEY), 'config.data.d', 'd = 64')
  one_line_error(lambda: data.load(cfg({'data.image_size': 3, 'data.d': 9}), KEY), 'config.data.image_size', '1, 2, 4, 8')
  one_line_error(lambda: data.load(cfg({'data.classes': (0, 10)}), KEY), 'config.data.classes', '0..9')
  one_line_error(lambda: data.load(cfg({'data.classes': (1, 1)}), KEY), 'config.data.classes')
  one_line_error(lambda: data.load(cfg({'data.n': 1000}), KEY), 'config.data.n', 'n <=')


def test_data_error_is_an_experiment_error():
  assert issubclass(data.DataError, errors.ExperimentError)
  assert errors.ExperimentError is errors.ExperimentError


# --- CIFAR-10 (python version) ---------------------------------------------------------------


def write_cifar(folder, per_batch=4, protocol=2, meta=True):
  """Five training batches in the official layout; labels 0, 1, ..., 9, 0, 1, ... in order."""
  os.makedirs(folder, exist_ok=True)
  rng = np.random.default_rng(0)
  all_images, all_labels = [], []
  for i in range(1, 6):
    images = rng.integers(0, 256, (per_batch, 3072), dtype=np.uint8)
    labels = [(per_batch * (i - 1) + j) % 10 for j in range(per_batch)]
    batch = {b'batch_label': f'training batch {i} of 5'.encode(), b'labels': labels,
             b'data': images, b'filenames': [b'x.png'] * per_batch}
    with open(os.path.join(folder, f'data_batch_{i}'), 'wb') as f:
      pickle.dump(batch, f, protocol=protocol)
    all_images.append(images)
    all_labels += labels
  if meta:
    names = [f'name{k}'.encode() for k in range(10)]
    with open(os.path.join(folder, 'batches.meta'), 'wb') as f:
      pickle.dump({b'label_names': names, b'num_cases_per_batch': per_batch}, f, protocol=2)
  return np.concatenate(all_images), np.array(all_labels)


def cifar_cfg(folder, overrides=None):
  return cfg({'data.name': 'cifar10', 'data.dir': str(folder), 'data.d': 32 * 32 * 3,
              **(overrides or {})})


@pytest.mark.parametrize('protocol', [2, pickle.HIGHEST_PROTOCOL])
def test_cifar_loads_official_layout(tmp_path, protocol):
  raw, labels = write_cifar(tmp_path, protocol=protocol)
  x, y, meta = data.load(cifar_cfg(tmp_path, {'data.classes': (6, 9), 'data.n': 4, 'data.preprocess': 'none'}), KEY)
  assert x.shape == (4, 3072) and meta['image_shape'] == (32, 32, 3)
  assert list(labels[meta['indices']]) == [6, 6, 9, 9] and list(np.asarray(y)) == [-1, -1, 1, 1]
  assert meta['class_names'] == ('name6', 'name9')
  # Rows are stored as R, G, B planes; X is (H, W, C) flattened.
  expected = raw[meta['indices']].reshape(4, 3, 32, 32).transpose(0, 2, 3, 1).reshape(4, -1)
  np.testing.assert_allclose(np.asarray(x), expected / 255.0, atol=1e-6)


def test_cifar_grayscale_downsampled_and_nested_folder(tmp_path):
  raw, _ = write_cifar(tmp_path / 'cifar-10-batches-py', meta=False)
  c = cifar_cfg(tmp_path, {'data.classes': (1, 2, 3), 'data.n': 3, 'data.grayscale': True, 'data.image_size': 8, 'data.d': 64, 'data.preprocess': 'none'})
  x, y, meta = data.load(c, KEY)
  assert x.shape == (3, 64) and meta['image_shape'] == (8, 8, 1) and y.dtype == jnp.int32
  assert meta['class_names'] == ('automobile', 'bird', 'cat')  # default names without meta
  rgb = raw[meta['indices']].reshape(3, 3, 32, 32).transpose(0, 2, 3, 1) / 255.0
  gray = rgb @ np.array([0.299, 0.587, 0.114])
  expected = gray.reshape(3, 8, 4, 8, 4).mean(axis=(2, 4)).reshape(3, 64)
  np.testing.assert_allclose(np.asarray(x), expected, atol=1e-5)


def test_cifar_missing_dir_and_files(tmp_path):
  one_line_error(lambda: data.load(cfg({'data.name': 'cifar10', 'data.d': 3072, 'data.n': 2}), KEY),
                 'config.data.dir', data.CIFAR10_PAGE)
  write_cifar(tmp_path)
  os.remove(tmp_path / 'data_batch_3')
  one_line_error(lambda: data.load(cifar_cfg(tmp_path, {'data.n': 2}), KEY),
                 str(tmp_path / 'data_batch_3'), 'data_batch_1', 'python version',
                 data.CIFAR10_PAGE)


def test_cifar_malformed_files(tmp_path):
  write_cifar(tmp_path)
  path = tmp_path / 'data_batch_2'
  path.write_bytes(b'not a pickle at all')
  one_line_error(lambda: data.load(cifar_cfg(tmp_path, {'data.n': 2}), KEY), 'malformed', str(path),
                 data.CIFAR10_PAGE)
  with open(path, 'wb') as f:  # the wrong array shape
    pickle.dump({b'data': np.zeros((2, 100), np.uint8), b'labels': [0, 1]}, f)
  one_line_error(lambda: data.load(cifar_cfg(tmp_path, {'data.n': 2}), KEY), 'malformed', 'uint8[N, 3072]')
  with open(path, 'wb') as f:  # code in a "data" file is refused, not run
    pickle.dump(os.getcwd, f)
  one_line_error(lambda: data.load(cifar_cfg(tmp_path, {'data.n': 2}), KEY), 'malformed', str(path))


# --- MNIST (IDX) -----------------------------------------------------------------------------


def idx_bytes(array, magic_type=0x08):
  header = bytes([0, 0, magic_type, array.ndim]) + struct.pack('>' + 'I' * array.ndim,
                                                                 *array.shape)
  return header + array.astype(np.uint8).tobytes()


def write_mnist(folder, n=20, gz=True):
  rng = np.random.default_rng(1)
  images = rng.integers(0, 256, (n, 28, 28), dtype=np.uint8)
  labels = np.arange(n, dtype=np.uint8) % 10
  for name, arr in (('train-images-idx3-ubyte', images), ('train-labels-idx1-ubyte', labels)):
    raw = idx_bytes(arr)
    if gz:
      (folder / (name + '.gz')).write_bytes(gzip.compress(raw))
    else:
      (folder / name).write_bytes(raw)
  return images, labels


def mnist_cfg(folder, overrides=None):
  return cfg({'data.name': 'mnist', 'data.dir': str(folder), 'data.d': 784,
              'data.preprocess': 'none', **(overrides or {})})


@pytest.mark.parametrize('gz', [True, False])
def test_mnist_idx_gz_and_plain(tmp_path, gz):
  images, labels = write_mnist(tmp_path, gz=gz)
  x, y, meta = data.load(mnist_cfg(tmp_path, {'data.classes': (4, 8), 'data.n': 4}), KEY)
  assert x.shape == (4, 784) and meta['image_shape'] == (28, 28, 1)
  assert list(labels[meta['indices']]) == [4, 4, 8, 8] and list(np.asarray(y)) == [-1, -1, 1, 1]
  np.testing.assert_allclose(np.asarray(x), images[meta['indices']].reshape(4, -1) / 255.0,
                             atol=1e-6)
  x, _, meta = data.load(mnist_cfg(tmp_path, {'data.n': 2, 'data.image_size': 7, 'data.d': 49}), KEY)
  assert x.shape == (2, 49) and meta['image_shape'] == (7, 7, 1)


def test_read_idx_roundtrip(tmp_path):
  arr = np.arange(24, dtype=np.uint8).reshape(2, 3, 4)
  (tmp_path / 'a').write_bytes(idx_bytes(arr))
  np.testing.assert_array_equal(data.read_idx(str(tmp_path / 'a')), arr)


def test_mnist_missing_and_malformed(tmp_path):
  one_line_error(lambda: data.load(mnist_cfg(tmp_path, {'data.n': 2}), KEY), 'missing file',
                 str(tmp_path / 'train-images-idx3-ubyte'), 'train-labels-idx1-ubyte',
                 data.MNIST_PAGE)
  write_mnist(tmp_path, gz=False)
  img = tmp_path / 'train-images-idx3-ubyte'
  good = img.read_bytes()
  img.write_bytes(b'\x00\x00\x0d\x03' + good[4:])  # float type code: not MNIST
  one_line_error(lambda: data.load(mnist_cfg(tmp_path, {'data.n': 2}), KEY), 'malformed', str(img),
                 data.MNIST_PAGE)
  img.write_bytes(good[:-10])  # truncated
  one_line_error(lambda: data.load(mnist_cfg(tmp_path, {'data.n': 2}), KEY), 'malformed', 'header says')
  img.write_bytes(b'\x1f\x8b' + b'garbage')  # broken gzip
  one_line_error(lambda: data.load(mnist_cfg(tmp_path, {'data.n': 2}), KEY), 'broken gzip')
  img.write_bytes(good)
  (tmp_path / 'train-labels-idx1-ubyte').write_bytes(idx_bytes(np.zeros(3, np.uint8)))
  one_line_error(lambda: data.load(mnist_cfg(tmp_path, {'data.n': 2}), KEY), 'malformed',
                 'train-labels-idx1-ubyte', '[20]')


def test_cli_prints_one_line_for_missing_data(tmp_path, capsys):
  # In-process: recon.main.execute is what the CLI runs after parsing the flags.
  from configs import rf_digits  # pylint: disable=import-outside-toplevel
  from recon import main  # pylint: disable=import-outside-toplevel
  c = rf_digits.get_config()
  c.data.name, c.data.dir, c.data.d = 'mnist', str(tmp_path), 784
  assert main.execute(c, str(tmp_path / 'run')) == 2
  err = capsys.readouterr().err
  lines = [l for l in err.splitlines() if l.startswith('error:')]
  assert len(lines) == 1 and 'train-images-idx3-ubyte' in lines[0] and data.MNIST_PAGE in lines[0]
  assert 'Traceback' not in err


# --- the auditor's own file (data.name 'file', recon/data/auditor.py) -------------------------


# The victim sections of a run that trains its victim on the file (which then needs 'y'), and
# of one that attacks a saved model.
TRAINED_HERE, SAVED = SimpleNamespace(checkpoint=None), SimpleNamespace(checkpoint='model')


def _file_cfg(path, **overrides):
  return cfg({'data.name': 'file', 'data.path': str(path), 'data.n': None, 'data.d': None,
              'data.classes': None, **overrides})


def test_file_images_keep_their_shape_and_labels(tmp_path):
  img = np.random.default_rng(0).uniform(size=(5, 4, 3, 3))
  np.savez(tmp_path / 'img.npz', x=img, y=np.array([0, 1, 2, 1, 0]))
  c = _file_cfg(tmp_path / 'img.npz', **{'data.preprocess': 'none'})
  data.resolve_file(c, TRAINED_HERE, None)
  assert (c.n, c.d) == (5, 36)
  x, y, meta = data.load(c, KEY)
  assert meta['image_shape'] == (4, 3, 3) and meta['name'] == 'file'
  np.testing.assert_allclose(np.asarray(x), img.reshape(5, 36), rtol=1e-6)  # (H, W, C) order
  assert y.dtype == jnp.int32 and list(np.asarray(y)) == [0, 1, 2, 1, 0]
  assert data.describe(meta)['path'] == str(tmp_path / 'img.npz')


def test_file_rows_are_preprocessed_like_any_data_set(tmp_path):
  x0 = np.random.default_rng(1).normal(size=(3, 5)) * 7 + 2
  np.save(tmp_path / 'rows.npy', x0)  # an .npy: 'x' alone (no labels)
  c = _file_cfg(tmp_path / 'rows.npy')
  x, y, meta = data.load(c, KEY)
  assert y is None and meta['image_shape'] is None
  np.testing.assert_allclose(np.linalg.norm(np.asarray(x), axis=1), np.sqrt(5), rtol=1e-5)
  np.testing.assert_allclose(data.to_pixels(np.asarray(x), meta), x0, rtol=1e-5)
  one_line_error(lambda: data.resolve_file(c, TRAINED_HERE, None), "has no 'y'", '(3,)')
  one_line_error(lambda: data.resolve_file(c, SAVED, None),
                 "config.data.preprocess: 'sphere'", "accepted: 'none'")


def test_file_settings_it_does_not_apply_are_refused(tmp_path):
  np.savez(tmp_path / 'x.npz', x=np.ones((2, 3)), y=np.ones(2))
  for field, value in (('data.classes', (0, 1)), ('data.image_size', 2), ('data.grayscale', True)):
    c = _file_cfg(tmp_path / 'x.npz', **{field: value})
    one_line_error(lambda: data.resolve_file(c, TRAINED_HERE, None), 'not applied')
def test_held_out_samples_share_the_task():
  """synthetic_sphere: fresh rows, the same direction g (noise-free labels are predicted exactly
  by g fitted on the training set); digits: other images of the same classes."""
  from configs import base  # pylint: disable=import-outside-toplevel
  c = base.get_config().data
  c.n, c.d, c.label_noise = 20, 5, 0.0
  key = jax.random.PRNGKey(3)
  x, y, _ = data.load(c, key)
  xh, yh, how = data.load_held_out(c, key, 30)
  assert xh.shape == (30, 5) and 'same g' in how
  assert not np.any(np.all(np.isclose(np.asarray(xh)[:, None], np.asarray(x)[None]), -1))
  g = np.linalg.lstsq(np.asarray(x, np.float64), np.asarray(y, np.float64), rcond=None)[0]
  np.testing.assert_allclose(np.asarray(xh) @ g, np.asarray(yh), atol=1e-4)
  c = base.get_config().data
  c.name, c.classes, c.d, c.n = 'digits', (0, 1), 64, 10
  xh, yh, _ = data.load_held_out(c, key, 40)
  assert 0 < len(xh) <= 40 and set(np.asarray(yh).tolist()) <= {-1.0, 1.0}
  c.name = 'synthetic_subspace'
  assert data.load_held_out(c, key, 5)[0] is None


def test_sphere_refuses_rows_that_equal_the_global_mean():
  """A constant data set has no direction after 'sphere' subtracts its mean: one line naming
  the rows, not NaN rows that make theta* = 0 and the loss 0/0 downstream."""
  import importlib  # pylint: disable=import-outside-toplevel
  pre = importlib.import_module('recon.data.preprocess')  # recon.data.preprocess is a function
  from recon.data.base import DataError  # pylint: disable=import-outside-toplevel
  with pytest.raises(DataError, match=r"'sphere' leaves row\(s\) 0, 1, 2 of 3 at zero") as e:
    pre.preprocess(np.full((3, 5), 0.7), 'sphere')
  assert '\n' not in str(e.value)
  x = np.ones((3, 5))
  x[1, 0] = 2.0  # rows 0 and 2 still differ from the global mean (its mean is not 1)
  out, _ = pre.preprocess(x, 'sphere')
  np.testing.assert_allclose(np.linalg.norm(out, axis=1), np.sqrt(5))
  assert np.all(np.isfinite(pre.preprocess(np.full((3, 5), 0.7), 'none')[0]))
