"""Image metrics: SSIM (dm-pix) and PSNR on min-max rescaled images, sign-invariant pairing."""
import numpy as np
import pytest
from sklearn.datasets import load_digits

from recon import metrics

SHAPE = (8, 8, 1)


def digits(n=6):
  return load_digits().images[:n].reshape(n, 64) / 16.0


def test_filter_size_rule():
  assert metrics.ssim_filter_size((8, 8, 1)) == 3
  assert metrics.ssim_filter_size((16, 16, 3)) == 11
  assert metrics.ssim_filter_size((28, 28, 1)) == 11
  assert metrics.ssim_filter_size((2, 2, 1)) == 1


def test_ssim_of_image_with_itself_is_one_and_drops_with_noise():
  x = digits()
  rng = np.random.default_rng(0)
  np.testing.assert_allclose(metrics.ssim_pairs(x, x, SHAPE), 1.0, atol=1e-5)
  small = metrics.ssim_pairs(x, x + 0.05 * rng.standard_normal(x.shape), SHAPE)
  large = metrics.ssim_pairs(x, x + 0.5 * rng.standard_normal(x.shape), SHAPE)
  assert np.all(small < 0.999) and np.all(large < small)
  assert large.mean() < 0.5 < small.mean()


def test_ssim_ignores_positive_scale_and_offset_but_not_sign():
  x = digits(3)
  np.testing.assert_allclose(metrics.ssim_pairs(x, 3.0 * x - 1.0, SHAPE), 1.0, atol=1e-5)
  assert np.all(metrics.ssim_pairs(x, -x, SHAPE) < 0.0)


def test_ssim_rgb_and_large_window():
  rng = np.random.default_rng(1)
  x = rng.random((2, 16 * 16 * 3))
  shape = (16, 16, 3)
  np.testing.assert_allclose(metrics.ssim_pairs(x, x, shape), 1.0, atol=1e-5)
  assert np.all(metrics.ssim_pairs(x, rng.random(x.shape), shape) < 0.3)
  with pytest.raises(ValueError):
    metrics.ssim_pairs(x, x, shape, filter_size=17)


def test_psnr_identity_capped_and_noise_lower():
  x = digits(4)
  assert np.all(metrics.psnr_pairs(x, x, SHAPE) == metrics.PSNR_MAX_DB)
  noisy = metrics.psnr_pairs(x, x + 0.1 * np.random.default_rng(2).standard_normal(x.shape),
                             SHAPE)
  assert np.all(np.isfinite(noisy)) and np.all(noisy < 30.0) and np.all(noisy > 5.0)


def test_image_metrics_sign_invariant_and_permutation_invariant():
  x = digits(6)
  x_hat = -x[[3, 0, 5, 1, 4, 2]]  # shuffled and negated: a perfect reconstruction
  m = metrics.image_metrics(x, x_hat, SHAPE)
  assert m['ssim_mean'] == pytest.approx(1.0, abs=1e-5)
  assert m['frac_recovered_ssim'] == 1.0 and m['n_recovered_ssim'] == 6
  assert m['ssim_filter_size'] == 3 and m['ssim_threshold'] == metrics.SSIM_THRESHOLD
  np.testing.assert_allclose(metrics.per_sample_ssim(x, x_hat, SHAPE), 1.0, atol=1e-5)


def test_frac_recovered_ssim_counts_by_threshold():
  x = digits(6)
  rng = np.random.default_rng(3)
  x_hat = x.copy()
  x_hat[:3] = rng.random((3, 64))  # three candidates are noise
  m = metrics.image_metrics(x, x_hat, SHAPE)
  assert m['n_recovered_ssim'] == 3 and m['frac_recovered_ssim'] == 0.5
  assert metrics.image_metrics(x, x_hat, SHAPE, threshold=0.9999)['n_recovered_ssim'] <= 3
  assert m['ssim_min'] < 0.5 < m['ssim_median'] <= 1.0


def test_uncovered_images_are_never_recovered():
  x = digits(4)
  m = metrics.image_metrics(x, x[:2], SHAPE)  # two candidates for four images
  assert m['n_recovered_ssim'] == 2
