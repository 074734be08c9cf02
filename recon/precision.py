"""Numerics that must hold at any width: the min-norm fit, its check, the matmul precision.

Issue #17: `jnp.linalg.svd` with numpy's pseudo-inverse cut-off max(n, p) * eps * s_max
dropped well-resolved singular values once p is large (float32, p = 3,072,000: cut-off
0.37 s_max, train_mse 0.54 on a Phi whose Gram has condition 84). Here:

* `min_norm_gram(phi, y)`: theta = Phi^T alpha with alpha from the n x n Gram
  G = Phi Phi^T, accumulated over column chunks with compensated (Kahan) summation so its
  error does not grow with p, eigen-decomposed with a cut-off n * eps(dtype) * lambda_max
  (set by n and the dtype, never by p), then `REFINE_STEPS` steps of iterative refinement
  alpha += G^+ (y - Phi theta): the residual is taken against Phi itself, so the solve only
  has to be a good preconditioner (converges while cond(G) * n * eps < 1) and the final
  train residual sits at the float32 rounding floor (measured: docs/random_features.md,
  "The fit at any width").
  Every product is lax.Precision.HIGHEST whatever the run's matmul_precision (on GPUs the
  default float32 matmul is TF32, 10 bits of mantissa).
* `victim_interpolates(train_mse, y, n, p)`: the check a run records in summary.json.
* `MATMUL_PRECISIONS`, `apply_matmul_precision`: the run's `matmul_precision` policy.
"""
from __future__ import annotations

from typing import Any, Dict, Optional

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

Array = jax.Array

HIGHEST = jax.lax.Precision.HIGHEST
# Columns per chunk of the Gram accumulation (the per-chunk float32 product error is
# ~ eps * sqrt(chunk); the chunk sums are added with Kahan compensation).
GRAM_CHUNK = 65536
REFINE_STEPS = 2
# The thin SVD (numpy's pseudo-inverse cut-off, wide dynamic range) is kept where it is
# cheap and p is close to n (rank deficiency, the interpolation threshold): p <= SVD_MAX_RATIO * n.
SVD_MAX_RATIO = 8
# train_mse above this fraction of var(y) (p >= n) means the victim does not interpolate.
INTERPOLATION_TOL = 1e-6

# matmul_precision values: jax_default_matmul_precision for every compiled program of a run.
# 'highest': full float32 (6-pass bf16 / no TF32); 'high': bf16_3x / TF32-class on GPU and
# TPU; 'default': the backend's own choice (TF32 on Ampere+ GPUs, 1-pass bf16 on TPUs).
MATMUL_PRECISIONS = ('highest', 'high', 'default')
DEFAULT_MATMUL_PRECISION = 'highest'


def _dot(a: Array, b: Array, contract) -> Array:
  return jax.lax.dot_general(a, b, (contract, ((), ())), precision=HIGHEST)


def gram(phi: Array, chunk: int = GRAM_CHUNK) -> Array:
  """G = Phi Phi^T (n x n), summed over column chunks of `chunk` with Kahan compensation."""
  n, p = phi.shape
  chunk = max(1, min(int(chunk), p))
  full = p // chunk
  g = jnp.zeros((n, n), phi.dtype)
  comp = jnp.zeros((n, n), phi.dtype)

  def add(carry, block):
    s, c = carry
    t = _dot(block, block, ((1,), (1,))) - c
    total = s + t
    return total, (total - s) - t

  if full:
    def body(i, carry):
      block = jax.lax.dynamic_slice_in_dim(phi, i * chunk, chunk, axis=1)
      return add(carry, block)
    g, comp = jax.lax.fori_loop(0, full, body, (g, comp))
  if p % chunk:
    g, comp = add((g, comp), phi[:, full * chunk:])
  return g - comp


def _pinv_sym(g: Array, rows: int) -> Array:
  """G^+ of a symmetric PSD G, eigenvalues below rows * eps * lambda_max dropped."""
  w, q = jnp.linalg.eigh(g)
  cut = rows * jnp.finfo(g.dtype).eps * w[-1]
  keep = w > cut
  w_inv = jnp.where(keep, 1.0 / jnp.where(keep, w, 1.0), 0.0)
  return _dot(q * w_inv, q, ((1,), (1,)))


def min_norm_gram(phi: Array, y: Array, refine_steps: int = REFINE_STEPS,
                  chunk: int = GRAM_CHUNK) -> Array:
  """theta = Phi^T G^+ y, G = Phi Phi^T (compensated), refined against Phi (module doc)."""
  g_inv = _pinv_sym(gram(phi, chunk), phi.shape[0])
  y = y.astype(phi.dtype)
  alpha = g_inv @ y
  theta = _dot(alpha, phi, ((0,), (0,)))
  for _ in range(refine_steps):
    r = y - _dot(phi, theta, ((1,), (0,)))
    theta = theta + _dot(g_inv @ r, phi, ((0,), (0,)))
  return theta


def interpolation_report(train_mse: float, y: Any, n: int, p: int,
                         tol: float = INTERPOLATION_TOL) -> Dict[str, Any]:
  """{'victim_interpolates', 'train_mse_over_var_y', 'interpolation_tol'} for summary.json.

  p >= n random features interpolate generically (Phi has full row rank), so
  train_mse / var(y) > tol means the fit lost digits (or Phi is rank-deficient). tol = 1e-6:
  a correct float32 fit sits at 1e-14..1e-10 of var(y) (rounding of theta), the issue-#17
  failure at 0.1..0.5; 1e-6 (a relative residual of 1e-3) leaves four orders of margin on
  each side and is where the attack's loss floor at the true data, ~ train_mse / var(y),
  starts to hide the reconstruction (1e-6 is the loss scale of a recovered run). var(y) = 0
  (one class) falls back to mean(y^2). For p < n the model is a least-squares fit and
  `victim_interpolates` is None (not expected).
  """
  y = np.asarray(y, np.float64)
  scale = float(np.var(y)) or float(np.mean(y ** 2)) or 1.0
  ratio = float(train_mse) / scale
  ok = None if p < n else bool(ratio <= tol)
  return {'victim_interpolates': ok, 'train_mse_over_var_y': ratio, 'interpolation_tol': tol}


def check_victim(train_mse: float, y: Any, n: int, p: int, dtype: str = 'float32',
                 tol: float = INTERPOLATION_TOL) -> Dict[str, Any]:
  """`interpolation_report`, plus one warning line when a p >= n victim does not interpolate."""
  report = interpolation_report(train_mse, y, n, p, tol)
  if report['victim_interpolates'] is False:
    logging.warning('victim does not interpolate: train_mse/var(y) = %.3g > %.0e at n=%d, p=%d '
                    '(%s); the fit lost digits or Phi is rank-deficient: theta* is not in the span '
                    'of the true features, so the loss floor is not 0 (try dtype=float64)',
                    report['train_mse_over_var_y'], tol, n, p, dtype)
  return report


def check_matmul_precision(value: Optional[str]) -> str:
  value = DEFAULT_MATMUL_PRECISION if value is None else value
  if value not in MATMUL_PRECISIONS:
    raise ValueError(f'run.matmul_precision: unknown value {value!r}; accepted: '
                     f'{", ".join(MATMUL_PRECISIONS)}')
  return value


def apply_matmul_precision(value: Optional[str]) -> str:
  """Sets jax_default_matmul_precision for every program compiled after this call.

  'default' clears it (the backend's own choice). Returns the applied name (recorded in
  summary.json as config.run.matmul_precision and metrics.matmul_precision).
  """
  value = check_matmul_precision(value)
  jax.config.update('jax_default_matmul_precision', None if value == 'default' else value)
  return value


def current_matmul_precision() -> str:
  """The process's jax_default_matmul_precision as a MATMUL_PRECISIONS name."""
  value = jax.config.jax_default_matmul_precision
  return 'default' if value is None else str(value)

