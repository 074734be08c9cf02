"""The projection loss in float64 (recon/certify/float64_loss.py): it is the residual of theta off the
candidates' feature span with no ridge, its blind rounding floor bounds what the truth scores,
and the precision split tells the ridge from a wrong row."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon.certify import float64_loss
from recon.certify import rung as polish
from recon.objectives import projection
from tests.test_polish import D, N, _loss32, _planted, _stuck


def test_loss64_is_the_least_squares_residual_share_and_ignores_row_order():
  p = 8 * N * D
  x, theta, ff = _planted(p)
  wrong = _stuck(x, 2).astype(np.float64)
  with jax.enable_x64(True):
    loss = float64_loss.loss64(ff, wrong, theta)
    phi = np.asarray(ff(jnp.asarray(wrong)), np.float64)
    t = np.asarray(theta, np.float64)
    coef, *_ = np.linalg.lstsq(phi.T, t, rcond=None)
    expected = float(np.sum((t - phi.T @ coef) ** 2) / np.sum(t ** 2))
    assert loss == pytest.approx(expected, rel=1e-9)
    assert float64_loss.loss64(ff, wrong[::-1], theta) == pytest.approx(loss, rel=1e-9)
    assert 0 < loss < 1
    f64 = float64_loss.Features64(ff)
    assert f64(wrong).dtype == jnp.float64
    assert float64_loss.loss64(f64, wrong, theta) == pytest.approx(loss, rel=1e-9)
    jac = np.asarray(f64.row_jacobian(jnp.asarray(wrong)))
    assert jac.shape == (N, p, D)
    eps = 1e-6  # the per-row Jacobian against a finite difference along one coordinate
    bumped = wrong.copy()
    bumped[1, 0] += eps
    diff = (np.asarray(f64(bumped))[1] - np.asarray(f64(wrong))[1]) / eps
    np.testing.assert_allclose(jac[1, :, 0], diff, rtol=1e-4, atol=1e-6)


def test_the_rounding_floor_bounds_the_loss_at_the_truth_of_a_float32_victim():
  p = 8 * N * D
  x, theta, ff = _planted(p)
  with jax.enable_x64(True):
    at_truth = float64_loss.loss64(ff, x, theta)
    floor32 = float64_loss.rounding_floor(ff, x, theta)
    floor64 = float64_loss.rounding_floor(ff, x, theta.astype(np.float64))
  assert 0 < at_truth < polish.FLOOR_MARGIN * floor32
  assert floor64 < 1e-25 < floor32 < 1e-10  # float64 weights have (almost) no floor


def test_the_precision_split_tells_the_ridge_from_a_wrong_row():
  """At the true rows a float32 loss with a ridge is nearly all precision (float64 without the
  ridge: theta's rounding); with one row wrong nearly none of it is. Blind: from the rows and
  theta alone."""
  p = 8 * N * D
  x, theta, ff = _planted(p, weak=None)
  x32 = x.astype(np.float32)
  ridge = float(projection.projection_loss(ff(jnp.asarray(x32)), jnp.asarray(theta), 1e-3))
  split = float64_loss.precision_split(ff, x32, theta, ridge)
  assert ridge > 1e-7 and split["loss_float64"] < 1e-10, (ridge, split)
  assert split['precision_share'] > 0.999
  wrong = _stuck(x, 2)
  loss = _loss32(ff, wrong, theta)
  split = float64_loss.precision_split(ff, wrong, theta, loss)
  assert split['loss_float64'] == pytest.approx(loss, rel=0.05)
  assert split['precision_share'] < 0.05
  with jax.enable_x64(True):  # the split is loss64 of the same rows
    assert split['loss_float64'] == pytest.approx(float64_loss.loss64(ff, wrong, theta), rel=1e-12)
  assert jnp.zeros(()).dtype == jnp.float32  # x64 switched back off
  assert float64_loss.precision_split(ff, wrong, theta, loss, max_entries=p * N - 1) is None
  assert float64_loss.precision_split(ff, wrong, theta, 0.0) is None
