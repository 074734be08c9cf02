"""The projection loss in float64: the precision rung's and the certificate's yardstick.

The attack's own loss runs in the run's dtype (float32 by default) with a ridge
(jitter tr G / m) on the Gram G = Phi Phi^T. Judged without either, at candidates X (m x d)
and theta (p):

  L64(X) = ||r||^2 / ||theta||^2,  r = theta - Q Q^T theta,  Q an orthonormal basis of the row
  span of Phi(X) (QR of Phi^T, float64, no jitter)  (`loss64`).

Its floor at the truth is the rounding in theta itself: theta = Phi^T alpha, from features in
theta's dtype, summed and stored there, carries an error delta; the truth scores
||P_perp delta||^2 / ||theta||^2. `rounding_floor_estimate` (blind) gives its expected size as a
sum of independent roundings and a statistical upper bound on it (the precision rung's and the
truth certificate's floor); `rounding_floor` is the worst case (eps S)^2, S = sum_i |alpha_i|
||phi_i|| / ||theta||, every error aligned (the triangle inequality, 10-50x above the truth's
loss). `precision_split` compares a run's loss
with L64 at the same rows: the share of that loss that precision (ridge, rounding), not rows,
accounts for. `Features64` compiles a feature map in float64 once, with its per-row Jacobian.
Every function here is float64: call under `jax.enable_x64`.
"""
from __future__ import annotations

from typing import Callable, Dict, Optional

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


class Features64:
  """feature_fn in float64 and its per-row Jacobian `row_jacobian(X)` ((m, p, d)), each jitted
  once (the rung calls both hundreds of times). A map with column blocks
  (`recon.models.features.FeatureMap`) keeps them (`block_fn`, `params`): the matrix-free
  Jacobians of `recon.certify.residual_jacobian` walk them. Create and call under
  `jax.enable_x64`."""

  def __init__(self, feature_fn: Callable):
    f = lambda x: jnp.asarray(feature_fn(x), jnp.float64)  # noqa: E731
    self._features = jax.jit(f)
    self.row_jacobian = jax.jit(jax.vmap(jax.jacfwd(lambda xi: f(xi[None])[0])))
    if hasattr(feature_fn, 'block_fn'):
      self.block_fn, self.params = feature_fn.block_fn, feature_fn.params

  def __call__(self, x) -> Array:
    return self._features(jnp.asarray(x, jnp.float64))


def basis(features: Array) -> Array:
  """(p, m) orthonormal basis of the row span of features (m, p)."""
  q, _ = jnp.linalg.qr(features.T)
  return q


def loss64(feature_fn: Callable, x, theta) -> float:
  """The projection loss in float64 via QR (no jitter); call under `jax.enable_x64`."""
  theta = jnp.asarray(theta, jnp.float64).reshape(-1)
  q = basis(jnp.asarray(feature_fn(jnp.asarray(x, jnp.float64)), jnp.float64))
  r = theta - q @ (q.T @ theta)
  return float(jnp.sum(r ** 2) / jnp.sum(theta ** 2))


def rounding_floor(feature_fn: Callable, x, theta) -> float:
  """The loss theta's own rounding leaves at any exact solution, estimated blind:
  (eps S)^2 with S = sum_i |alpha_i| ||phi(x_i)|| / ||theta||, alpha theta's coefficients on
  the candidates' features and eps that of theta's dtype (theta = Phi^T alpha summed in that
  precision carries an error ~ eps S ||theta||). Measured against the loss at the true rows
  (float32 victims, d = 64, data in a 4-dim subspace, 10 seeds): truth / estimate 0.16-0.50.
  Call under `jax.enable_x64`."""
  eps = float(np.finfo(np.asarray(theta).dtype).eps) if np.issubdtype(
      np.asarray(theta).dtype, np.floating) else float(np.finfo(np.float64).eps)
  phi = np.asarray(feature_fn(jnp.asarray(x, jnp.float64)), np.float64)
  theta64 = np.asarray(theta, np.float64).reshape(-1)
  alpha, *_ = np.linalg.lstsq(phi.T, theta64, rcond=None)
  spread = float(np.sum(np.abs(alpha) * np.linalg.norm(phi, axis=1)) /
                 max(np.linalg.norm(theta64), 1e-300))
  return (eps * spread) ** 2


FLOOR_Z = 5.0  # `rounding_floor_estimate`'s bound: the expected floor + FLOOR_Z of its deviations


def rounding_floor_estimate(feature_fn: Callable, x, theta) -> Dict[str, float]:
  """The loss theta's rounding leaves at the true rows, estimated blind as a sum of independent
  rounding errors (docs/random_features.md, "The rounding floor"), at rows x (candidates).

  theta (p,) in its dtype (u = eps / 2 its unit roundoff) is the victim's Phi_dt^T alpha:
  features computed in that dtype (Phi_dt), the sum rounded, the result stored. Its error
  delta = theta - Phi_64^T alpha has independent coordinates of variance
      v_j = sum_i alpha_i^2 (e_ij^2 + (2 u^2 / 3) phi_ij^2) + ulp(theta_j)^2 / 12,
  e = Phi_dt(x) - Phi_64(x) the features' own rounding, measured here by evaluating
  `feature_fn` in theta's dtype (zero for float64), (2 u^2 / 3) phi^2 the product and the
  addition of each term rounded in theta's dtype, ulp^2 / 12 the stored value's rounding. The
  truth's loss is L* = ||P_perp delta||^2 / ||theta||^2, a weighted chi-square of p - m terms:
      expected = sum_j v_j / ||theta||^2  (the (1 - m / p) of the projection dropped),
      dof = (sum_j v_j)^2 / sum_j v_j^2,  bound = expected (1 + FLOOR_Z sqrt(2 / dof)).
  Returns {'expected', 'bound', 'dof', 'worst' (`rounding_floor`, the triangle inequality)}.
  `feature_fn` a plain feature map (not `Features64`: it must compute in the dtype of its
  input); call under `jax.enable_x64`."""
  theta_np = np.asarray(theta).reshape(-1)
  dt = theta_np.dtype if np.issubdtype(theta_np.dtype, np.floating) else np.dtype(np.float64)
  u = float(np.finfo(dt).eps) / 2
  x64 = np.asarray(x, np.float64).reshape(len(x), -1)
  phi = np.asarray(jnp.asarray(feature_fn(jnp.asarray(x64)), jnp.float64), np.float64)
  phi_dt = np.asarray(jnp.asarray(feature_fn(jnp.asarray(x64.astype(dt))), jnp.float64),
                      np.float64)
  theta64 = theta_np.astype(np.float64)
  alpha, *_ = np.linalg.lstsq(phi.T, theta64, rcond=None)
  a2 = alpha ** 2
  ulp = np.spacing(np.abs(theta_np.astype(dt))).astype(np.float64)
  v = a2 @ ((phi_dt - phi) ** 2 + (2 * u * u / 3) * phi ** 2) + ulp ** 2 / 12
  norm2 = max(float(theta64 @ theta64), 1e-300)
  expected = float(np.sum(v)) / norm2
  dof = float(np.sum(v) ** 2 / max(float(np.sum(v ** 2)), 1e-300))
  spread = float(np.sum(np.abs(alpha) * np.linalg.norm(phi, axis=1)) / np.sqrt(norm2))
  return {'expected': expected, 'bound': expected * (1 + FLOOR_Z * np.sqrt(2 / max(dof, 1.0))),
          'dof': dof, 'worst': (2 * u * spread) ** 2}


SPLIT_MAX_ENTRIES = 5 * 10 ** 7  # `precision_split`: p m entries of its float64 features at most


def precision_split(feature_fn: Callable, x, theta, loss: float,
                    max_entries: int = SPLIT_MAX_ENTRIES) -> Optional[Dict[str, float]]:
  """How much of a run's loss L (its dtype, its ridge jitter tr G / m) is precision, blind:
  {'loss_float64': L64, 'precision_share': max(0, 1 - L64 / L)}, L64 the same rows' loss in
  float64 without the ridge (`loss64`). Near 1: the ridge and rounding (right rows with nearly
  dependent features, whose small Gram eigenvalues the ridge hides); near 0: rows that no
  precision makes right where they are (the rung may still move them). None if p m > max_entries."""
  x = np.asarray(x)
  m, p = x.shape[0], int(np.asarray(theta).size)
  if p * m > max_entries or not loss > 0:
    return None
  with jax.enable_x64(True):
    l64 = loss64(lambda z: jnp.asarray(feature_fn(z), jnp.float64), x.reshape(m, -1), theta)
  return {'loss_float64': l64, 'precision_share': max(0.0, 1.0 - l64 / float(loss))}


def absorbed_share(m: int, d: int, p: int) -> float:
  """q = m (d - 1) / (p - m): the share of theta's rounding residual that moving the m
  candidates on their spheres can absorb (the residual Jacobian's m (d - 1) directions among
  the p - m outside the features' span); 1 when p <= m (d - 1) + m."""
  free = p - m
  return float(min(1.0, m * (d - 1) / free)) if free > 0 else 1.0


def truth_loss_bound(loss: float, floor: float, *, m: int, d: int, p: int) -> float:
  """A bound on the truth's own float64 loss: from the float64 loss `loss` (no ridge) reached
  at a stationary set near it, loss / (1 - q) (q = `absorbed_share`: the share of the truth's
  residual such a set can absorb), or from theta's rounding, `floor`
  (`rounding_floor_estimate`), whichever is larger."""
  q = absorbed_share(m, d, p)
  return max(loss / (1.0 - q) if q < 1.0 else np.inf, float(floor))
