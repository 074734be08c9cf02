"""The data subspace: its estimate from dW1, principal angles, lifting z -> x = U z.

Under (momentum) GD without weight decay every update of the first layer is
sum_i u_i x_i^T, so dW1 = W1_T - W1_0 (rows = neurons, width x d) has its row space
inside span{x_i}. The top-k right singular vectors U_k (d x k) of dW1 estimate the
data subspace; candidates are then searched as x_hat = U_k z, z in R^k with
||z|| = sqrt(d) (so ||x_hat|| = sqrt(d) too): a k-dimensional search instead of d.

Automatic k (`choose_k`): keep the singular values above a relative noise floor,
s_i > floor * s_1, and cut at the largest gap ratio s_i / s_{i+1} among them (the
value after the last kept one counts as s_{i+1}, floored at floor * s_1), i.e.
k = argmax_{i <= r} s_i / max(s_{i+1}, floor * s_1), r = #{s_i > floor * s_1}.

Weight decay adds -(1 - prod(1 - lr * wd)) W1_0, a full-rank random term, to dW1:
the estimate then tilts away from the data (measured by `scripts/subspace.py --part=two_layer`).
"""
from __future__ import annotations

from typing import Dict, Optional, Tuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


class SubspaceError(ValueError):
  """A subspace request that cannot be met; the message is one line."""


def choose_k(s: np.ndarray, noise_floor: float) -> int:
  """k = argmax_{i <= r} s_i / max(s_{i+1}, floor * s_1), r = #{s_i > floor * s_1}
  (floor: attack.subspace.noise_floor)."""
  s = np.asarray(s, np.float64)
  floor = noise_floor * s[0]
  r = int(np.sum(s > floor))
  if r == 0:
    raise SubspaceError('attack.subspace.mode: dW1 is zero (the first layer did not train); '
                        'accepted: a model whose first layer trains')
  nxt = np.maximum(np.append(s[1:], 0.0)[:r], floor)
  return int(np.argmax(s[:r] / nxt)) + 1


def effective_rank(s: np.ndarray, shape: Tuple[int, int], dtype,
                   noise_floor: float) -> int:
  """#{s_i > max(floor, max(shape) * eps) * s_1}: the rank above the relative noise floor.

  GD accumulates rounding in dW1 (about 1e-5 relative in float32), so the plain
  numerical rank over-counts; the same floor as `choose_k` is used.
  """
  s = np.asarray(s, np.float64)
  if s.size == 0 or s[0] == 0:
    return 0
  return int(np.sum(s > max(noise_floor, max(shape) * np.finfo(dtype).eps) * s[0]))


def estimate_subspace(delta_w1: Array, k: Optional[int],
                      noise_floor: float) -> Dict[str, np.ndarray]:
  """U_k: top-k right singular vectors of dW1 (width x d); k (attack.subspace.dim) from
  `choose_k` if None, with the relative floor attack.subspace.noise_floor.

  Returns {'basis' (d x k), 'k', 'singular_values' (all), 'rank' (`effective_rank`)}.
  Raises a one-line SubspaceError on a non-finite dW1/SVD, k > d or k > rank(dW1).
  """
  chex.assert_rank(delta_w1, 2)
  d = delta_w1.shape[1]
  if k is not None and k > d:
    raise SubspaceError(f'attack.subspace.dim: {k} exceeds the input dimension d={d}; '
                        f'accepted: 1..{d} or None (automatic)')
  dw = np.asarray(delta_w1)
  if not np.all(np.isfinite(dw)):
    raise SubspaceError('attack.subspace.mode: dW1 = W1_trained - W1_init is not finite (diverged '
                        'training?); accepted: a finite weight change')
  _, s, vt = np.linalg.svd(dw.astype(np.float64), full_matrices=False)
  if not (np.all(np.isfinite(s)) and np.all(np.isfinite(vt))):
    raise SubspaceError('attack.subspace.mode: the SVD of dW1 is not finite; accepted: a finite '
                        'weight change')
  rank = effective_rank(s, dw.shape, dw.dtype, noise_floor)
  if k is None:
    k = choose_k(s, noise_floor)
  elif k > rank:
    raise SubspaceError(f'attack.subspace.dim: {k} exceeds rank(dW1)={rank} (singular values above '
                        f'{noise_floor:g} x the largest); accepted: 1..{rank} or None (automatic)')
  return {'basis': vt[:k].T.astype(dw.dtype), 'k': int(k), 'singular_values': s,
          'rank': rank}


def principal_angles(a: np.ndarray, b: np.ndarray) -> np.ndarray:
  """Principal angles (radians, ascending) between span(a) and span(b) (d x ka, d x kb).

  cos(theta_i) = i-th singular value of Qa^T Qb (Q orthonormal bases);
  min(ka, kb) angles, 0 where one subspace contains the other's directions.
  """
  qa, _ = np.linalg.qr(np.asarray(a, np.float64))
  qb, _ = np.linalg.qr(np.asarray(b, np.float64))
  cos = np.linalg.svd(qa.T @ qb, compute_uv=False)
  # arcsin of the residual is accurate for small angles, arccos for large ones.
  k = min(qa.shape[1], qb.shape[1])
  small, large = (qa, qb) if qa.shape[1] <= qb.shape[1] else (qb, qa)
  resid = small - large @ (large.T @ small)
  sin = np.sort(np.linalg.svd(resid, compute_uv=False))[:k]
  cos = np.sort(np.clip(cos[:k], -1.0, 1.0))[::-1]
  return np.where(cos > np.sqrt(0.5), np.arcsin(np.clip(sin, 0.0, 1.0)), np.arccos(cos))


def subspace_residual(x: np.ndarray, basis: np.ndarray) -> np.ndarray:
  """||x - U U^T x|| / ||x|| per row: how far each sample lies outside span(U)."""
  x = np.asarray(x, np.float64)
  q, _ = np.linalg.qr(np.asarray(basis, np.float64))
  r = x - (x @ q) @ q.T
  return np.linalg.norm(r, axis=1) / np.maximum(np.linalg.norm(x, axis=1), 1e-300)
