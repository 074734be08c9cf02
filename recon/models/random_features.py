"""Random-features regression f(x) = phi(x)^T theta, trained in closed form.

theta* = Phi^+ y is the minimum-norm least-squares solution: the interpolator
once p >= n, the least-squares fit below. It lies in the row span of Phi, which
is what the projection loss exploits.
"""
from __future__ import annotations

import chex
import jax
import jax.numpy as jnp

Array = jax.Array


def min_norm_solution(phi: Array, y: Array, n_features=None) -> Array:
  """theta = Phi^+ y via the thin SVD of Phi (n x p).

  Same O(n^2 p) cost as forming the n x n kernel Phi Phi^T, but it does not square
  the condition number; singular values below max(n, p) * eps * s_max are dropped
  (the pseudo-inverse's usual cut-off). Valid for p < n, p = n and p > n.
  `n_features` (default p, may be traced): the number of non-zero-padded columns,
  so that a Phi padded with zero columns has the cut-off of the unpadded one.
  """
  chex.assert_rank(phi, 2)
  chex.assert_rank(y, 1)
  chex.assert_equal(phi.shape[0], y.shape[0])
  u, s, vt = jnp.linalg.svd(phi, full_matrices=False)
  eps = jnp.finfo(phi.dtype).eps
  width = phi.shape[1] if n_features is None else n_features
  cutoff = jnp.maximum(phi.shape[0], width) * eps * s[0]
  s_inv = jnp.where(s > cutoff, 1.0 / jnp.where(s > cutoff, s, 1.0), 0.0)
  return vt.T @ (s_inv * (u.T @ y))


def train_mse(phi: Array, theta: Array, y: Array) -> Array:
  """Mean squared error of phi(x)^T theta on the training set."""
  return jnp.mean((phi @ theta - y) ** 2)
