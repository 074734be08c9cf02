"""Random-features regression f(x) = phi(x)^T theta, trained in closed form.

theta* = Phi^+ y is the minimum-norm least-squares solution: the interpolator
once p >= n, the least-squares fit below. It lies in the row span of Phi, which
is what the projection loss exploits.
"""
from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

from recon import registry
from recon.models import min_norm as precision

Array = jax.Array


def min_norm_solution(phi: Array, y: Array, n_features=None) -> Array:
  """theta = Phi^+ y, right at any width (issue #17).

  p <= SVD_MAX_RATIO * n (near-square, where Phi may be rank-deficient or close to it):
  the thin SVD with numpy's cut-off max(n, p) * eps * s_max. Wider: the n x n Gram route
  `recon.models.min_norm.min_norm_gram` (Gram, eigen-solve and residuals in float64 on Phi in its
  own dtype, cut-off set by n and the dtypes, iterative refinement against Phi), which stays
  at the rounding floor at p = 3e6 in float32 where the SVD's p-dependent cut-off dropped
  half the spectrum, and on correlated inputs (cond(G) ~ 1e6) where a float32 Gram did not.
  Valid for p < n, p = n and p > n. `n_features` (default p, may be traced): the number of
  non-zero-padded columns, so that a Phi padded with zero columns has the cut-off of the
  unpadded one (SVD route; the Gram route's cut-off does not depend on p).
  """
  chex.assert_rank(phi, 2)
  chex.assert_rank(y, 1)
  chex.assert_equal(phi.shape[0], y.shape[0])
  if phi.shape[1] > precision.SVD_MAX_RATIO * phi.shape[0]:
    return precision.min_norm_gram(phi, y)
  u, s, vt = jnp.linalg.svd(phi, full_matrices=False)
  eps = jnp.finfo(phi.dtype).eps
  width = phi.shape[1] if n_features is None else n_features
  cutoff = jnp.maximum(phi.shape[0], width) * eps * s[0]
  s_inv = jnp.where(s > cutoff, 1.0 / jnp.where(s > cutoff, s, 1.0), 0.0)
  return vt.T @ (s_inv * (u.T @ y))


def train_mse(phi: Array, theta: Array, y: Array) -> Array:
  """Mean squared error of phi(x)^T theta on the training set (Phi theta summed in float64,
  `recon.models.min_norm.train_residual`), in Phi's dtype."""
  return precision.train_residual(phi, theta, y)


# f(x) = sigma(V x)^T theta with theta* = Phi^+ y (recon/pipelines/random_features.py); a
# saved one (kind 'random_features') fixes p, d and the activation.
registry.register('victim', 'random_features', registry.Victim(
    pipeline='random_features', features='random',
    checkpoint_fields={'p': 'victim.p', 'd': 'data.d', 'activation': 'victim.activation'}))
