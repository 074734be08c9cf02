import numpy as np
import pytest

from recon import metrics

RNG = np.random.default_rng(0)


def _rows(n=5, d=6):
  return RNG.normal(size=(n, d))


def test_perfect_reconstruction_is_invariant_to_permutation_and_sign():
  x = _rows()
  signs = np.array([1, -1, 1, -1, -1])[:, None]
  x_hat = (signs * x)[[3, 0, 4, 1, 2]]
  m = metrics.reconstruction_metrics(x, x_hat)
  assert m['recon_error'] == pytest.approx(0.0, abs=1e-12)
  assert m['frac_recovered'] == 1.0 and m['n_recovered'] == 5
  assert m['dist_abs'] == pytest.approx(0.0, abs=1e-12)
  np.testing.assert_allclose(metrics.aligned_candidates(x, x_hat), x, atol=1e-12)


def test_exact_values_on_a_hand_made_case():
  x = np.array([[2.0, 0.0], [0.0, 1.0]])
  x_hat = np.array([[0.0, -1.5], [2.0, 1.0]])
  # true 0 <-> cand 1: ||(2,0)-(2,1)|| / 2 = 0.5; true 1 <-> -cand 0: ||(0,1)-(0,1.5)|| / 1 = 0.5
  m = metrics.reconstruction_metrics(x, x_hat)
  assert m['recon_error'] == pytest.approx(0.5)
  assert m['frac_recovered'] == 0.0
  # dist_abs: |x| vs |x_hat| -> pairs (2,0)-(2,1): 1, (0,1)-(0,1.5): 0.5 -> 1.5 / (sqrt2 * 2)
  assert m['dist_abs'] == pytest.approx(1.5 / (np.sqrt(2) * 2))
  d = metrics.sign_invariant_distances(x, x_hat)
  np.testing.assert_allclose(d, [[np.sqrt(4 + 2.25) / 2, 0.5], [0.5, 2.0]])


def test_recovered_threshold():
  x = np.eye(3) * 10
  x_hat = x + np.array([[0.5, 0, 0], [0, 2.0, 0], [0, 0, 0.9]])  # rel. errors 0.05, 0.2, 0.09
  m = metrics.reconstruction_metrics(x, x_hat, threshold=0.1)
  assert m['n_recovered'] == 2 and m['frac_recovered'] == pytest.approx(2 / 3)


def test_more_candidates_than_samples_counts_duplicates():
  x = _rows(3, 4)
  x_hat = np.concatenate([x, x[:2] * 1.001, _rows(1, 4) * 50])
  m = metrics.reconstruction_metrics(x, x_hat)
  assert m['recon_error'] == pytest.approx(0.0, abs=1e-12)
  assert m['n_unmatched_candidates'] == 3 and m['n_duplicates'] == 2


def test_fewer_candidates_than_samples_counts_uncovered():
  x = np.array([[1.0, 0.0], [0.0, 1.0], [0.0, 1.1]])
  x_hat = np.array([[1.0, 0.0], [0.0, 1.05]])
  m = metrics.reconstruction_metrics(x, x_hat)
  assert m['n_uncovered_samples'] == 1
  assert m['n_recovered'] == 2 and m['frac_recovered'] == pytest.approx(2 / 3)
  errs = metrics.per_sample_errors(x, x_hat)
  np.testing.assert_allclose(sorted(errs), sorted([0.0, 0.05, 0.05 / 1.1]), atol=1e-12)


def test_feature_residual_zero_in_span_positive_outside():
  b = RNG.normal(size=(3, 20))
  a = RNG.normal(size=(2, 3)) @ b
  assert metrics.feature_residual(a, b) == pytest.approx(0.0, abs=1e-10)
  e = np.zeros((1, 20))
  e[0, 0] = 1.0
  q, _ = np.linalg.qr(b.T)
  out = e - (e @ q) @ q.T
  assert metrics.feature_residual(e, b) == pytest.approx(np.linalg.norm(out) / np.sqrt(20))


def test_dist_abs_counts_rows_the_matching_leaves_uncovered():
  # 4 exact copies of 8 samples: the matched half scores 0, the other half must not.
  x = _rows(8, 6)
  m = metrics.reconstruction_metrics(x, x[:4])
  assert m['recon_error'] > 0.2
  per_row_nearest = np.sqrt(np.min(np.sum((np.abs(x[4:, None]) - np.abs(x[None, :4])) ** 2, -1),
                                   axis=1))
  assert m['dist_abs'] == pytest.approx(per_row_nearest.sum() / (np.sqrt(6) * 8))
  assert m['dist_abs'] > 0.1


def test_signed_errors_for_activations_without_sign_symmetry():
  x = _rows(4, 5)
  x_hat = x * np.array([1, -1, 1, 1])[:, None]  # one row found with the wrong sign
  invariant = metrics.reconstruction_metrics(x, x_hat, sign_invariant=True)
  signed = metrics.reconstruction_metrics(x, x_hat, sign_invariant=False)
  assert invariant["recon_error"] == pytest.approx(0.0, abs=1e-7)
  assert invariant['frac_recovered'] == 1.0
  # signed: -x_1 is at relative distance 2 from x_1, and no other candidate is closer than it
  assert signed['recon_error'] > 0.25 and signed['frac_recovered'] == 0.75
  for m in (invariant, signed):  # both variants always reported
    assert m["recon_error_sign_invariant"] == pytest.approx(0.0, abs=1e-7)
    assert m['recon_error_signed'] == pytest.approx(signed['recon_error'])
  assert not signed['sign_invariant'] and invariant['sign_invariant']
  np.testing.assert_allclose(metrics.aligned_candidates(x, x_hat, sign_invariant=False), x_hat)


def test_sample_shares_are_each_samples_part_of_theta():
  phi = RNG.normal(size=(4, 50))
  alpha = np.array([2.0, -1.0, 0.0, 0.5])
  theta = phi.T @ alpha
  shares = metrics.sample_shares(phi, theta)
  expected = np.abs(alpha) * np.linalg.norm(phi, axis=1) / np.linalg.norm(theta)
  np.testing.assert_allclose(shares, expected, atol=1e-10)
  assert shares[2] < 1e-10 and shares[0] > 0.1


def test_pinned_but_wrong_counts_only_pinned_rows_far_from_their_sample():
  x = _rows(4, 6)
  x_hat = x.copy()
  x_hat[1] = _rows(1, 6)[0] * 3  # a wrong row
  assert metrics.pinned_but_wrong(x, x_hat, np.array([1, 0, 1, 1], bool)) == 0
  assert metrics.pinned_but_wrong(x, x_hat, np.ones(4, bool)) == 1
  # relu: -x is the same sample when signs are ignored, a wrong one when they are not.
  flipped = x.copy()
  flipped[0] *= -1
  assert metrics.pinned_but_wrong(x, flipped, np.ones(4, bool), sign_invariant=True) == 0
  assert metrics.pinned_but_wrong(x, flipped, np.ones(4, bool), sign_invariant=False) == 1


def test_an_error_exactly_at_the_threshold_is_not_recovered():
  """Recovered means a relative error strictly below the threshold (here exactly 0.1)."""
  x = np.eye(2) * 10.0
  x_hat = x + np.array([[1.0, 0.0], [0.0, 0.0]])
  assert metrics.per_sample_errors(x, x_hat).tolist() == [0.1, 0.0]
  m = metrics.reconstruction_metrics(x, x_hat, threshold=0.1)
  assert m['n_recovered'] == 1 and m['frac_recovered'] == 0.5


def test_up_to_norm_a_rescaled_row_is_recovered_and_its_norm_error_reported():
  rng = np.random.default_rng(0)
  x = rng.standard_normal((5, 9))
  scales = np.array([0.6, 0.8, 1.0, 1.2, 1.4])
  x_hat = (x / scales[:, None])[::-1]  # the right directions at the wrong norms, reordered
  raw = metrics.reconstruction_metrics(x, x_hat, sign_invariant=True)
  up_to = metrics.reconstruction_metrics(x, x_hat, sign_invariant=True, scale_invariant=True)
  assert raw['frac_recovered'] == pytest.approx(0.2) and not raw['scale_invariant']
  assert 'recon_error_with_norm' not in raw
  assert up_to['frac_recovered'] == 1.0 and up_to['recon_error'] < 1e-7
  assert up_to['scale_invariant']
  assert up_to['recon_error_with_norm'] == pytest.approx(raw['recon_error'])
  assert up_to['norm_error_median'] == pytest.approx(0.25)  # |1/s - 1|: 0.67 .25 0 .17 .29
  # a wrong direction stays wrong at any norm
  wrong = x_hat.copy()
  wrong[0] = rng.standard_normal(9)
  assert metrics.reconstruction_metrics(x, wrong, scale_invariant=True)['n_recovered'] == 4


def test_up_to_norm_distance_is_the_normalised_rows_distance_with_sign():
  rng = np.random.default_rng(1)
  x, x_hat = rng.standard_normal((4, 7)), rng.standard_normal((3, 7)) * 5
  u = x / np.linalg.norm(x, axis=1, keepdims=True)
  v = x_hat / np.linalg.norm(x_hat, axis=1, keepdims=True)
  signed = np.linalg.norm(u[:, None] - v[None], axis=-1)
  flipped = np.linalg.norm(u[:, None] + v[None], axis=-1)
  np.testing.assert_allclose(metrics.signed_distances(x, x_hat, scale_invariant=True), signed,
                             atol=1e-12)
  np.testing.assert_allclose(metrics.sign_invariant_distances(x, x_hat, scale_invariant=True),
                             np.minimum(signed, flipped), atol=1e-12)


def test_aligned_candidates_up_to_norm_are_at_the_true_rows_norm():
  rng = np.random.default_rng(2)
  x = rng.standard_normal((3, 5))
  x_hat = -3.0 * x[[2, 0, 1]]
  out = metrics.aligned_candidates(x, x_hat, sign_invariant=True, scale_invariant=True)
  np.testing.assert_allclose(out, x, atol=1e-9)
  out_raw = metrics.aligned_candidates(x, x_hat, sign_invariant=True)
  np.testing.assert_allclose(out_raw, 3.0 * x, atol=1e-12)


def test_normalized_rows_remove_each_rows_own_mean():
  """Rows at different offsets (a global mean would leave them apart): each becomes its own
  centred unit vector; a constant row becomes 0."""
  x = np.array([[1.0, 2.0, 3.0], [11.0, 12.0, 13.0], [-4.0, 0.0, -2.0], [5.0, 5.0, 5.0]])
  out = metrics.normalized_rows(x)
  e = np.array([-1.0, 0.0, 1.0]) / np.sqrt(2.0)
  np.testing.assert_allclose(out[:2], [e, e], atol=1e-15)
  np.testing.assert_allclose(out[2], np.array([-2.0, 2.0, 0.0]) / np.sqrt(8.0), atol=1e-15)
  np.testing.assert_array_equal(out[3], 0.0)


def test_per_sample_ssim_uses_the_filter_size_it_is_given():
  """On 8x8 images the default window is 3 (ssim_filter_size); a window of 7 given by the
  caller (run.ssim_filter_size) gives other values, the ones ssim_pairs gives at 7."""
  rng = np.random.default_rng(3)
  x = rng.standard_normal((3, 64))
  x_hat = -(x + 0.6 * rng.standard_normal(x.shape))[::-1]  # permuted, sign-flipped, noisy
  shape = (8, 8, 1)
  at7 = metrics.per_sample_ssim(x, x_hat, shape, filter_size=7)
  aligned = metrics.aligned_candidates(x, x_hat)
  np.testing.assert_allclose(at7, metrics.ssim_pairs(x, aligned, shape, 7), rtol=1e-6)
  default = metrics.per_sample_ssim(x, x_hat, shape)
  assert np.all(np.abs(at7 - default) > 1e-3)
