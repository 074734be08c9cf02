"""Pictures: the image grid and the loss curve are written as valid PNG files, also by a run."""
import json
import os

import numpy as np
import pytest
from matplotlib import image as mpimg

from configs import base
from recon import errors, pipelines
from recon.report import plots
from recon.report import scoring as report

PNG = b'\x89PNG\r\n\x1a\n'


def assert_png(path):
  with open(path, 'rb') as f:
    assert f.read(8) == PNG
  img = mpimg.imread(path)
  assert img.ndim == 3 and img.shape[0] > 50 and img.shape[1] > 50
  return img


def test_grid_order_best_first_and_subsampled():
  scores = np.array([0.1, 0.9, 0.5, 0.7])
  np.testing.assert_array_equal(plots.grid_order(scores, 10), [1, 3, 2, 0])
  many = np.linspace(0, 1, 100)
  order = plots.grid_order(many, 7)
  assert len(order) == 7 and order[0] == 99 and order[-1] == 0
  assert np.all(np.diff(many[order]) < 0)


@pytest.mark.parametrize('shape,n', [((8, 8, 1), 5), ((4, 4, 3), 23)])
def test_image_grid_writes_png(tmp_path, shape, n):
  rng = np.random.default_rng(0)
  d = int(np.prod(shape))
  x = rng.random((n, d))
  path = tmp_path / 'grid.png'
  shown = plots.image_grid(str(path), x, x + 0.1 * rng.standard_normal(x.shape), shape,
                           rng.random(n), max_images=20)
  assert len(shown) == min(n, 20)
  assert_png(path)


def test_loss_curve_writes_png_even_with_bad_values(tmp_path):
  plots.loss_curve(str(tmp_path / 'a.png'), [0, 10, 20, 30], [1.0, 1e-3, 0.0, float('nan')])
  assert_png(tmp_path / 'a.png')
  plots.loss_curve(str(tmp_path / 'b.png'), [0], [0.0])
  assert_png(tmp_path / 'b.png')


def tiny_config(overrides=None):
  """Random features on four 4x4 digits, 40 Adam steps (no escalation, no polish)."""
  c = base.get_config()
  c.update_from_flattened_dict({
      'name': 't', 'data.name': 'digits', 'data.n': 4, 'data.d': 16, 'data.classes': (0, 1),
      'data.image_size': 4, 'data.label_noise': 0.0, 'victim.p': 160, 'attack.optimizer': 'adam',
      'attack.lr': 0.05, 'attack.max_steps': 40, 'attack.rescue': (),
      'run.chunk_steps': 20, 'run.log_every_seconds': 100.0,
      **(overrides or {})})
  return c


@pytest.mark.slow  # ~13 CPU-s
def test_image_run_writes_grid_loss_curve_and_image_metrics(tmp_path):
  summary = pipelines.run(tiny_config(), str(tmp_path))
  m = summary['metrics']
  for key in ('ssim_mean', 'psnr_mean', 'frac_recovered_ssim', 'n_recovered_ssim'):
    assert key in m
  assert -1.0 <= m['ssim_mean'] <= 1.0 and m['ssim_filter_size'] == 3
  assert summary['data']['image_shape'] == (4, 4, 1) and len(summary['data']['indices']) == 4
  assert_png(tmp_path / 'grid.png')
  assert_png(tmp_path / 'loss_curve.png')
  with open(tmp_path / 'summary.json') as f:
    assert json.load(f)['metrics']['ssim_threshold'] == 0.7


@pytest.mark.slow  # ~8 CPU-s
def test_synthetic_run_writes_loss_curve_only(tmp_path):
  c = tiny_config({'data.name': 'synthetic_sphere', 'data.classes': None, 'data.image_size': None, 'data.d': 5, 'victim.p': 100, 'data.label_noise': 0.5})
  summary = pipelines.run(c, str(tmp_path))
  assert 'ssim_mean' not in summary['metrics']
  assert_png(tmp_path / 'loss_curve.png')
  assert not os.path.exists(tmp_path / 'grid.png')


def test_too_large_ssim_window_is_refused_before_compute(tmp_path):
  with pytest.raises(errors.ExperimentError, match='config.run.ssim_filter_size'):
    pipelines.run(tiny_config({'run.ssim_filter_size': 5}), str(tmp_path))
  assert not os.path.exists(tmp_path / 'summary.json')


def test_write_plots_without_pixel_metadata(tmp_path):
  """A pipeline whose meta only sets image_shape still gets a grid (range from the data)."""
  rng = np.random.default_rng(0)
  x = rng.standard_normal((3, 16)) * 5.0
  meta = {'image_shape': (4, 4, 1)}
  report.write_plots(str(tmp_path), x, x + 0.01, meta, {'step': [0, 1], 'loss': [1.0, 0.5]},
                         {'status': 'converged', 'ssim_filter_size': 3})
  assert_png(tmp_path / 'grid.png')
  assert_png(tmp_path / 'loss_curve.png')


def test_the_precision_rungs_float64_loss_is_drawn_on_the_loss_curve(tmp_path):
  from recon.report import scoring as report
  assert report.rung_loss({'polish': {'kept': True, 'loss_after': 2e-13}}) == 2e-13
  assert report.rung_loss({'polish': {'kept': False, 'loss_after': 2e-13}}) is None
  assert report.rung_loss({'polish': {'applied': False}}) is None and report.rung_loss({}) is None
  plots.loss_curve(str(tmp_path / 'a.png'), [0, 10, 20], [1.0, 1e-4, 1e-8])
  plots.loss_curve(str(tmp_path / 'b.png'), [0, 10, 20], [1.0, 1e-4, 1e-8], rung_loss=2e-13)
  assert_png(tmp_path / 'b.png')
  assert (tmp_path / 'a.png').read_bytes() != (tmp_path / 'b.png').read_bytes()
