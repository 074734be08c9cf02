"""The projection loss L(X_hat) = ||P_perp theta||^2 / ||theta||^2.

P projects onto the row span of the candidate feature matrix Phi_hat (m x p):
P theta = Phi_hat^T alpha with alpha = (G + eps I)^{-1} Phi_hat theta and
G = Phi_hat Phi_hat^T. alpha is the closed-form optimum of
||theta - Phi_hat^T alpha||^2, so this loss is the "parameter change explained by
candidate gradients" objective with its coefficients eliminated.

Numerics: a Cholesky solve of the m x m Gram with a relative jitter
eps = jitter * trace(G) / m (default 1e-6; it keeps the solve finite when two
candidates coincide and perturbs the loss by about (eps / lambda_min)^2), and the
residual theta - Phi_hat^T alpha is formed explicitly instead of the cancelling
difference ||theta||^2 - v^T alpha.
"""
from __future__ import annotations

import functools
from typing import NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from recon import registry

Array = jax.Array

DEFAULT_JITTER = 1e-6
# The solve of (G + eps I) alpha = v loses about log10(cond * eps_machine) digits; warn
# once the expected relative error of alpha exceeds this.
CONDITION_WARN_ERROR = 1e-2


def _ridge_cholesky(features: Array, target: Array, jitter: float):
  """Cholesky factor of G + eps I, G = Phi Phi^T, eps = jitter tr(G) / m (shapes checked)."""
  chex.assert_rank(features, 2)
  chex.assert_rank(target, {1, 2})
  chex.assert_equal(features.shape[1], target.shape[0])
  gram = features @ features.T
  m = gram.shape[0]
  eps = jitter * jnp.trace(gram) / m + jnp.finfo(gram.dtype).tiny
  chol = jax.scipy.linalg.cho_factor(gram + eps * jnp.eye(m, dtype=gram.dtype), lower=True)
  return chol


def span_coefficients(features: Array, target: Array, jitter: float = DEFAULT_JITTER) -> Array:
  """alpha = argmin_a ||target - features^T a||^2 (ridge-regularised by the jitter)."""
  chol = _ridge_cholesky(features, target, jitter)
  return jax.scipy.linalg.cho_solve(chol, features @ target)


def projection_residual(features: Array, target: Array, jitter: float = DEFAULT_JITTER) -> Array:
  """target - P target, P the projector onto the row span of `features`."""
  return target - span_coefficients(features, target, jitter) @ features


class ReplacementBasis(NamedTuple):
  """What `replacement_losses` reuses of one candidate set: the rows Phi (m, p), the target
  theta, b = Phi theta, G = Phi Phi^T, the lower Cholesky factor of A = G + eps I
  (eps = jitter tr(G) / m, `projection_loss`'s ridge) and the jitter."""
  features: Array
  target: Array
  b: Array
  gram: Array
  chol: Array
  jitter: float


def replacement_basis(features: Array, target: Array,
                      jitter: float = DEFAULT_JITTER) -> ReplacementBasis:
  """`ReplacementBasis` of the rows `features` (m, p) and the target (p,): one O(m^2 p) pass."""
  chol = _ridge_cholesky(features, target, jitter)  # (factor, lower=True)
  return ReplacementBasis(features, target, features @ target, features @ features.T, chol[0],
                          jitter)


def replacement_losses(basis: ReplacementBasis, j: Array, new_rows: Array,
                       refinements: int = 2) -> Array:
  """(P,) the projection loss with row j of Phi replaced by each row a of `new_rows` (P, p),
  O(P m p) past the basis instead of O(P m^2 p). The new Gram differs from G in row and
  column j only, G' = G + U M U^T with U = [e_j, delta], delta = Phi' a - G e_j,
  M = [[-delta_j, 1], [1, 0]], so by Woodbury (a 2 x 2 solve on A's Cholesky)

    (G' + eps I)^{-1} y = A^{-1} y - A^{-1} U (M^{-1} + U^T A^{-1} U)^{-1} U^T A^{-1} y,

  the coefficients alpha' of b' = Phi' theta = b + (a . theta - b_j) e_j follow; `refinements`
  steps of iterative refinement, alpha' += (G' + eps I)^{-1} (b' - (Phi' Phi'^T + eps' I)
  alpha'), with the products through Phi' (O(m p) each), take them to the replaced set's own
  ridge eps' = jitter tr(G') / m and back the accuracy the Woodbury form loses in float32. The
  residual r' = theta - Phi'^T alpha' is formed and L = ||r'||^2 / ||theta||^2, as
  `projection_loss` sums it (equal to it to ~1e-6 relative in float64 tests; in float32 to ~5e-6 relative,
  with the same best proposal, at (m, d, p) up to (500, 16, 32 000), where it is 76x faster)."""
  bs = basis
  m = bs.features.shape[0]
  phi_j = bs.features[j]
  norms = jnp.sum(new_rows ** 2, axis=1)
  c = (new_rows @ bs.features.T).at[:, j].set(norms)  # Phi' a: row j is a itself
  delta = c - bs.gram[j][None, :]  # (P, m)
  cho = lambda y: jax.scipy.linalg.cho_solve((bs.chol, True), y.T).T  # noqa: E731  A^{-1}
  s = cho(delta)  # A^{-1} delta, (P, m)
  g_col = cho(jnp.eye(m, dtype=bs.features.dtype)[j][None, :])[0]  # A^{-1} e_j
  k11, k12 = g_col[j], 1.0 + s[:, j]  # K = M^{-1} + U^T A^{-1} U
  k22 = delta[:, j] + jnp.sum(delta * s, axis=1)
  det = k11 * k22 - k12 * k12
  tiny = jnp.finfo(new_rows.dtype).tiny
  det = jnp.where(jnp.abs(det) > tiny, det, tiny)

  def solve(y):  # (G' + eps I)^{-1} y, row by row
    ay = cho(y)
    u1, u2 = ay[:, j], jnp.sum(delta * ay, axis=1)
    w1, w2 = (k22 * u1 - k12 * u2) / det, (k11 * u2 - k12 * u1) / det
    return ay - w1[:, None] * g_col[None, :] - w2[:, None] * s

  def rows_t(alpha):  # Phi'^T alpha, (P, p)
    return alpha @ bs.features + alpha[:, j][:, None] * (new_rows - phi_j[None, :])

  b_new = jnp.broadcast_to(bs.b, c.shape).at[:, j].set(new_rows @ bs.target)
  eps_new = bs.jitter * (jnp.trace(bs.gram) + delta[:, j]) / m + tiny  # (P,)
  alpha = solve(b_new)
  for _ in range(refinements):
    t = rows_t(alpha)
    gram_alpha = (t @ bs.features.T).at[:, j].set(jnp.sum(new_rows * t, axis=1))
    alpha = alpha + solve(b_new - gram_alpha - eps_new[:, None] * alpha)
  r = bs.target[None, :] - rows_t(alpha)
  loss = jnp.sum(r ** 2, axis=1) / jnp.sum(bs.target ** 2)
  return jnp.where(jnp.isfinite(loss), loss, jnp.inf)


def removal_losses(features: Array, target: Array, jitter: float = DEFAULT_JITTER) -> Array:
  """(m,) the projection loss without row j, for every j, from one Cholesky of A = G + eps I:

    L_{-j} = (||r||^2 + alpha_j^2 / (A^{-1})_jj) / ||theta||^2,   alpha = A^{-1} Phi theta,

  the residual gaining back alpha_j's part along the row's dual direction Phi^T A^{-1} e_j
  (exact for eps = 0). O(m^2 p + m^3) for all m, where m losses would be O(m^3 p). Against the
  float64 duplicate-row losses of `recon.attack.rescue.escalate.leave_one_out_losses` its gains L_{-j} - L are
  within 1.5% in float32 (the float32 duplicate-row losses: 13%) and give the same weak rows
  (tests/test_escalate.py)."""
  chol = _ridge_cholesky(features, target, jitter)
  alpha = jax.scipy.linalg.cho_solve(chol, features @ target)
  r = target - alpha @ features
  eye = jnp.eye(features.shape[0], dtype=features.dtype)
  g_diag = jnp.diag(jax.scipy.linalg.cho_solve(chol, eye))
  losses = (jnp.sum(r ** 2) + alpha ** 2 / g_diag) / jnp.sum(target ** 2)
  return jnp.where(jnp.isfinite(losses), losses, jnp.inf)


def _refined_coefficients(chol, features: Array, target: Array, refine: int) -> Array:
  """alpha = (G + eps I)^{-1} Phi theta, then `refine` steps of iterative refinement
  alpha <- alpha + (G + eps I)^{-1} Phi (theta - Phi^T alpha) on the explicit residual (theta a
  vector or a (p, C) matrix)."""
  rows_t = (lambda a: a @ features) if target.ndim == 1 else (lambda a: features.T @ a)
  alpha = jax.scipy.linalg.cho_solve(chol, features @ target)
  for _ in range(int(refine)):
    alpha = alpha + jax.scipy.linalg.cho_solve(chol, features @ (target - rows_t(alpha)))
  return alpha


def _loss_and_gradients(features: Array, target: Array, jitter: float, refine: int = 0):
  """(L, dL/dPhi, dL/dtheta) in closed form, with w = (G + eps I)^{-1} Phi r:

  dL/dPhi = (-2 (alpha + w) r^T + 2 alpha (Phi^T w)^T + (4 jitter / m)(w . alpha) Phi) / ||theta||^2,
  dL/dtheta = (2 (r - Phi^T w) - 2 L theta) / ||theta||^2.
  O(m p) beyond the Gram; reverse-mode autodiff through the solve would add a second
  m x m x p product (the Gram's cotangent times Phi).
  """
  chol = _ridge_cholesky(features, target, jitter)
  m = features.shape[0]
  if target.ndim == 2:
    return _loss_and_gradients_columns(chol, features, target, jitter, refine)
  alpha = _refined_coefficients(chol, features, target, refine)
  r = target - alpha @ features
  norm2 = jnp.sum(target ** 2)
  loss = jnp.sum(r ** 2) / norm2
  w = jax.scipy.linalg.cho_solve(chol, features @ r)
  phi_t_w = w @ features
  g_features = (-2.0 * jnp.outer(alpha + w, r) + 2.0 * jnp.outer(alpha, phi_t_w)
                + (4.0 * jitter / m) * jnp.dot(w, alpha) * features) / norm2
  g_target = (2.0 * (r - phi_t_w) - 2.0 * loss * target) / norm2
  return loss, g_features, g_target


def _loss_and_gradients_columns(chol, features: Array, target: Array, jitter: float,
                                refine: int = 0):
  """`_loss_and_gradients` for a target matrix Theta (p, C), one column per output:
  L = sum_c ||P_perp theta_c||^2 / ||Theta||_F^2, the projection loss of vec(Theta) onto the
  rows e_c (x) phi_i (every row of Phi in every column's block). Those rows' Gram is
  I_C (x) G, whose jitter jitter tr(I_C (x) G) / (C m) is G's own, so L equals that
  C m-row projection loss, with one m x m Gram instead of a C m x C m one. With
  A = (G + eps I)^{-1} Phi Theta, R = Theta - Phi^T A, W = (G + eps I)^{-1} Phi R:
  dL/dPhi = (-2 (A + W) R^T + 2 A (Phi^T W)^T + (4 jitter / m) <W, A> Phi) / ||Theta||^2,
  dL/dTheta = (2 (R - Phi^T W) - 2 L Theta) / ||Theta||^2 (C = 1: the vector case)."""
  m = features.shape[0]
  alpha = _refined_coefficients(chol, features, target, refine)  # (m, C)
  r = target - features.T @ alpha  # (p, C)
  norm2 = jnp.sum(target * target)
  loss = jnp.sum(r ** 2) / norm2
  w = jax.scipy.linalg.cho_solve(chol, features @ r)
  phi_t_w = features.T @ w
  g_features = (-2.0 * (alpha + w) @ r.T + 2.0 * alpha @ phi_t_w.T
                + (4.0 * jitter / m) * jnp.sum(w * alpha) * features) / norm2
  g_target = (2.0 * (r - phi_t_w) - 2.0 * loss * target) / norm2
  return loss, g_features, g_target


@functools.partial(jax.custom_jvp, nondiff_argnums=(2, 3))
def projection_loss(features: Array, target: Array, jitter: float = DEFAULT_JITTER,
                    refine: int = 0) -> Array:
  """||P_perp target||^2 / ||target||^2 in [0, 1]; 0 iff target is in the span. A target
  matrix (p, C) is projected column by column onto the same rows (`_loss_and_gradients_columns`:
  a linear head's parameter change against its penultimate features).

  Differentiated by a custom JVP <dL/dPhi, dPhi> + <dL/dtheta, dtheta> with the closed-form
  gradients of `_loss_and_gradients`: reverse mode costs O(m p) past the forward Gram, and
  the rule is itself differentiable, so Hessian-vector products (sample splitting) work.
  """
  return _loss_and_gradients(features, target, jitter, refine)[0]


@projection_loss.defjvp
def _projection_loss_jvp(jitter, refine, primals, tangents):
  features, target = primals
  d_features, d_target = tangents
  loss, g_features, g_target = _loss_and_gradients(features, target, jitter, refine)
  return loss, jnp.vdot(g_features, d_features) + jnp.vdot(g_target, d_target)


def check_condition(gram: np.ndarray, jitter: float = DEFAULT_JITTER,
                    warn_error: float = CONDITION_WARN_ERROR) -> float:
  """cond(G + eps I) (host side, float64); warns when cond * eps_machine(G.dtype) > warn_error.

  The ridge eps = jitter tr(G)/m bounds cond by about 1/jitter, so with the default
  jitter a float32 solve can lose all but ~1 digit: then switch to dtype='float64'.
  """
  gram = np.asarray(gram)
  m = gram.shape[0]
  g64 = gram.astype(np.float64)
  eps = jitter * np.trace(g64) / m
  eig = np.linalg.eigvalsh(g64 + eps * np.eye(m))
  cond = float(eig[-1] / max(eig[0], np.finfo(np.float64).tiny))
  unit = float(np.finfo(gram.dtype).eps) if np.issubdtype(gram.dtype, np.floating) else 0.0
  if cond * unit > warn_error:
    logging.warning('Gram solve: condition number %.3g in %s loses precision (expected '
                    'relative error of alpha ~ %.1g); candidates may have collapsed, or use '
                    "--config.run.dtype=float64", cond, gram.dtype, cond * unit)
  return cond


# The law's objective: one loss on the candidates' features, for every victim whose pipeline
# builds features (sigma(V x) of random features, the head's Jacobian rows of a network, the
# KKT pipeline's projection variant).
registry.register('objective', 'projection', registry.Objective(
    loss=projection_loss, pipelines=('random_features', 'networks', 'kkt'), head_rows=True))
