import functools

import jax
import jax.numpy as jnp
import numpy as np

from recon import data
from recon.models import features, random_features


# Jitted: op-by-op dispatch compiles every primitive separately (several times the CPU time).
@functools.partial(jax.jit, static_argnums=(0, 1, 2, 3))
def _phi(n, d, p, seed=0):
  x, y = data.synthetic_sphere(jax.random.PRNGKey(seed), n, d)
  v = features.random_weights(jax.random.PRNGKey(seed + 1), p, d)
  return features.rf_features(v, x, 'relu_tanh'), y


_min_norm = jax.jit(random_features.min_norm_solution)


def test_min_norm_solution_matches_numpy_pinv():
  for p in (3, 6, 40):  # p < n, p = n-ish, p > n
    phi, y = _phi(6, 4, p)
    theta = _min_norm(phi, y)
    expected = np.linalg.pinv(np.asarray(phi, np.float64)) @ np.asarray(y, np.float64)
    np.testing.assert_allclose(theta, expected, rtol=2e-3, atol=2e-4)


def test_interpolates_above_n_and_lies_in_row_span():
  phi, y = _phi(8, 5, 200)
  theta = _min_norm(phi, y)
  assert float(random_features.train_mse(phi, theta, y)) < 1e-8
  coef, *_ = np.linalg.lstsq(np.asarray(phi).T, np.asarray(theta), rcond=None)
  np.testing.assert_allclose(np.asarray(phi).T @ coef, theta, atol=1e-5)


def test_underparameterised_fit_does_not_interpolate():
  phi, y = _phi(20, 5, 4)
  theta = _min_norm(phi, y)
  assert float(random_features.train_mse(phi, theta, y)) > 1e-3
