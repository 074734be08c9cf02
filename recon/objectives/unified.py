"""The unified objective on initial and trained parameters (free or eliminated alpha).

  L(X_hat, alpha) = ||dtheta - sum_j alpha_j^T J(theta; x_hat_j)||^2 / ||dtheta||^2,

J(theta; x) the Jacobian of the outputs w.r.t. the reconstructed parameters (one row
per (candidate, output)), evaluated at the trained parameters (J_T), the initial ones
(J_0), or both: 'both' uses (J_T + J_0) / 2, the trapezoid rule for the GD path
dtheta = -lr sum_t sum_i r_i(t) J(theta_t; x_i) when the features move during
training (last layer of a net whose first layer trains). Minimising over alpha
in closed form, alpha* = (F F^T)^{-1} F t, gives `projection.projection_loss(F, t)`:
the two modes of `candidate_loss` agree at alpha = alpha*.

Candidates are either an array X_hat (alpha eliminated) or a pytree
{'x': X_hat, 'alpha': alpha} (alpha optimised jointly); with `problem['basis']`
(U, d x k) the candidates are subspace coordinates z and X_hat = z U^T.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

import chex
import jax
import jax.numpy as jnp

from recon.config import choices
from recon import registry
from recon.objectives import projection

Array = jax.Array



def head_jacobian_rows(h: Array, n_out: int) -> Array:
  """Rows d f_c / d vec(W_head) = vec(h_j e_c^T) for f = W_head^T h, W_head (width, C).

  h: (m, width) last hidden activations -> (m * C, width * C); row j * C + c,
  column w * C + c' (W_head flattened row-major). For C = 1 it is h itself.
  """
  chex.assert_rank(h, 2)
  if n_out == 1:
    return h
  eye = jnp.eye(n_out, dtype=h.dtype)
  rows = h[:, None, :, None] * eye[None, :, None, :]  # (m, C, width, C)
  return rows.reshape(h.shape[0] * n_out, h.shape[1] * n_out)


def stack(features_trained: Array | None, features_initial: Array | None, target: Array,
          gradient_at: str) -> Tuple[Array, Array]:
  """(F, t) of the chosen variant: J_T, J_0 or (J_T + J_0) / 2, against t = dtheta."""
  if gradient_at == 'trained':
    return features_trained, target
  if gradient_at == 'initial':
    return features_initial, target
  if gradient_at == 'both':
    return 0.5 * (features_trained + features_initial), target
  raise ValueError(f'attack.subspace.gradient_at: unknown name {gradient_at!r}; accepted: '
                   f'{", ".join(choices.GRADIENT_AT)}')


def unified_loss(alpha: Array, features: Array, target: Array) -> Array:
  """||t - F^T alpha||^2 / ||t||^2 for free coefficients alpha (one per feature row)."""
  chex.assert_rank([alpha, features, target], [1, 2, 1])
  chex.assert_equal(alpha.shape[0], features.shape[0])
  r = target - alpha @ features
  return jnp.sum(r ** 2) / jnp.sum(target ** 2)


def closed_form_loss(features: Array, target: Array,
                     jitter: float = projection.DEFAULT_JITTER) -> Array:
  """min_alpha of `unified_loss`: the projection loss ||P_perp t||^2 / ||t||^2."""
  return projection.projection_loss(features, target, jitter)


def optimal_alpha(features: Array, target: Array,
                  jitter: float = projection.DEFAULT_JITTER) -> Array:
  """alpha* = argmin_alpha ||t - F^T alpha||^2 (jitter-regularised)."""
  return projection.span_coefficients(features, target, jitter)


FeatureFn = Callable[[Array, Any], Array]  # (x_hat (m, d), model weights) -> rows (m C, p)


def candidate_x(candidates: Any, problem: Dict[str, Any]) -> Array:
  """The candidates in input space: X_hat, or z U^T when `problem` holds a basis U."""
  x = candidates['x'] if isinstance(candidates, dict) else candidates
  basis = problem.get('basis')
  return x if basis is None else x @ basis.T


def features_and_target(x_hat: Array, problem: Dict[str, Any], *, feature_fn: FeatureFn,
                        gradient_at: str) -> Tuple[Array, Array]:
  """(F, t) for input-space candidates; problem holds 'target' and the model weights
  'weights_trained' / 'weights_initial' that `feature_fn` reads."""
  f_t = feature_fn(x_hat, problem['weights_trained']) if gradient_at != 'initial' else None
  f_0 = feature_fn(x_hat, problem['weights_initial']) if gradient_at != 'trained' else None
  return stack(f_t, f_0, problem['target'], gradient_at)


def candidate_loss(candidates: Any, problem: Dict[str, Any], *, feature_fn: FeatureFn,
                   gradient_at: str, jitter: float = projection.DEFAULT_JITTER) -> Array:
  """L(X_hat, alpha) with free alpha if `candidates` has one, else min over alpha."""
  f, t = features_and_target(candidate_x(candidates, problem), problem,
                             feature_fn=feature_fn, gradient_at=gradient_at)
  if isinstance(candidates, dict) and 'alpha' in candidates:
    return unified_loss(candidates['alpha'], f, t)
  return closed_form_loss(f, t, jitter)


def init_candidates(x0: Array, problem: Dict[str, Any], *, alpha_mode: str,
                    feature_fn: FeatureFn, gradient_at: str,
                    jitter: float = projection.DEFAULT_JITTER) -> Any:
  """x0 for 'closed_form'; {'x': x0, 'alpha': alpha*(x0)} for 'joint' (warm start)."""
  if alpha_mode == 'closed_form':
    return x0
  if alpha_mode == 'joint':
    f, t = features_and_target(candidate_x(x0, problem), problem, feature_fn=feature_fn,
                               gradient_at=gradient_at)
    return {'x': x0, 'alpha': optimal_alpha(f, t, jitter)}
  raise ValueError(f'attack.subspace.alpha_mode: unknown name {alpha_mode!r}; accepted: '
                   f'{", ".join(choices.ALPHA_MODES)}')


# Owned by the subspace pipeline (recon/pipelines/subspace.py), which attacks a random-features
# model or a two-layer network inside a known / estimated subspace.
registry.register('objective', 'unified', registry.Objective(
    pipeline='subspace', pipelines=('random_features', 'networks')))
