"""Numerics that must hold at any width: the min-norm fit, its check, the matmul precision.

Issue #17: `jnp.linalg.svd` with numpy's pseudo-inverse cut-off max(n, p) * eps * s_max
dropped well-resolved singular values once p is large (float32, p = 3,072,000: cut-off
0.37 s_max, train_mse 0.54 on a Phi whose Gram has condition 84). Issue #30: on correlated
inputs (100 photo patches, d = 3072, p = 3,072,000) the Gram G = Phi Phi^T has condition ~1e6
while Phi has only ~1e3, and a float32 Gram with the cut-off n * eps32 * lambda_max dropped
its four smallest eigenvalues: train_mse / var(y) 7.5e-5 (3.9e-19 here). Here:

* `min_norm_gram(phi, y)`: theta = Phi^T alpha, alpha = G^+ y, G = Phi Phi^T. Phi stays in
  its dtype (float32 in a float32 run: it is the p-wide object); the n x n algebra is
  float64 (`SOLVE_DTYPE`, under `jax.enable_x64` whatever the run's dtype, also inside jit
  and vmap): G is accumulated over column chunks of `GRAM_CHUNK`, each chunk cast to float64
  (Kahan-compensated chunk sums), eigen-decomposed in float64, and theta = Phi^T alpha is
  formed chunk by chunk in float64 and rounded once to Phi's dtype. Eigenvalues are dropped
  below max((n eps_Phi)^2, n eps64) * lambda_max: a singular value of Phi below
  n eps_Phi s_max is at the rounding level of Phi's own entries (the SVD route's rule, with n
  for max(n, p)), and n eps64 lambda_max is G's own rounding; set by n and the dtypes, never
  by p. So the fit is limited by cond(Phi) * eps_Phi, not by cond(G) * eps_Phi = cond(Phi)^2
  * eps_Phi. Then `REFINE_STEPS` steps of iterative refinement alpha += G^+ (y - Phi theta),
  the residual formed in float64 against Phi itself, so the eigen-solve only has to be a good
  preconditioner (float64 eigh loses eps64 * cond(G)) and the train residual ends at the
  rounding of theta.
  Every product is lax.Precision.HIGHEST whatever the run's matmul_precision (on GPUs the
  default float32 matmul is TF32, 10 bits of mantissa).
* `train_residual(phi, theta, y)`: y - Phi theta in float64, chunk by chunk (the check's
  number is not limited by a float32 product).
* `fit_report(n, p, dtype)`: how the fit computed (route, solve dtype), for summary.json.
* `victim_interpolates(train_mse, y, n, p)`: the check a run records in summary.json.
* `apply_matmul_precision`: the run's `matmul_precision` policy (recon.config.choices.MATMUL_PRECISIONS).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from recon.config import choices

Array = jax.Array

HIGHEST = jax.lax.Precision.HIGHEST
# Columns per chunk of the Gram and of the float64 products with Phi (each chunk is cast to
# float64: n * GRAM_CHUNK * 8 bytes at a time, 52 MB at n = 100).
GRAM_CHUNK = 65536
# The dtype of the Gram route's n x n algebra and of its residuals, whatever Phi's dtype.
SOLVE_DTYPE = 'float64'
REFINE_STEPS = 2
# The thin SVD (numpy's pseudo-inverse cut-off, wide dynamic range) is kept where it is
# cheap and p is close to n (rank deficiency, the interpolation threshold): p <= SVD_MAX_RATIO * n.
SVD_MAX_RATIO = 8
# train_mse above this fraction of var(y) (p >= n) means the victim does not interpolate.
INTERPOLATION_TOL = 1e-6

# matmul_precision values: jax_default_matmul_precision for every compiled program of a run.
# 'highest': full float32 (6-pass bf16 / no TF32); 'high': bf16_3x / TF32-class on GPU and
# TPU; 'default': the backend's own choice (TF32 on Ampere+ GPUs, 1-pass bf16 on TPUs).
DEFAULT_MATMUL_PRECISION = 'highest'


def _dot(a: Array, b: Array, contract) -> Array:
  return jax.lax.dot_general(a, b, (contract, ((), ())), precision=HIGHEST)


def _over_column_chunks(phi: Array, chunk: int, body: Callable, carry):
  """carry = body(carry, block, start) for phi's column blocks of `chunk` (the last one shorter)."""
  p = phi.shape[1]
  chunk = max(1, min(int(chunk), p))
  full = p // chunk
  # int32 indices: the program is traced under jax.enable_x64 but may be lowered (and
  # batched, under vmap) outside it, where an int64 index would meet int32 bounds.
  if full:
    def step(i, c):
      start = i * jnp.int32(chunk)
      return body(c, jax.lax.dynamic_slice_in_dim(phi, start, chunk, axis=1), start)
    carry = jax.lax.fori_loop(jnp.int32(0), jnp.int32(full), step, carry)
  if p % chunk:
    carry = body(carry, phi[:, full * chunk:], jnp.int32(full * chunk))
  return carry


def gram(phi: Array, chunk: int = GRAM_CHUNK, solve_dtype=SOLVE_DTYPE) -> Array:
  """G = Phi Phi^T (n x n) in the wider of Phi's dtype and `solve_dtype`, summed over column
  chunks cast to it (Kahan-compensated; under `jax.enable_x64`, so float64 in any run)."""
  wide = jnp.promote_types(phi.dtype, solve_dtype)
  n = phi.shape[0]

  def add(carry, block, start):
    del start
    s, c = carry
    block = block.astype(wide)
    t = _dot(block, block, ((1,), (1,))) - c
    total = s + t
    return total, (total - s) - t

  with jax.enable_x64(True):
    zeros = jnp.zeros((n, n), wide)
    g, comp = _over_column_chunks(phi, chunk, add, (zeros, zeros))
    return g - comp


def _phi_times(phi: Array, theta: Array, chunk: int, solve_dtype=SOLVE_DTYPE) -> Array:
  """Phi theta (n,) in float64 (`solve_dtype`), chunk by chunk (Phi, theta in their own dtype)."""
  wide = jnp.promote_types(phi.dtype, solve_dtype)

  def add(acc, block, start):
    part = jax.lax.dynamic_slice_in_dim(theta, start, block.shape[1]).astype(wide)
    return acc + _dot(block.astype(wide), part, ((1,), (0,)))

  return _over_column_chunks(phi, chunk, add, jnp.zeros((phi.shape[0],), wide))


def _add_phi_transpose_times(theta: Array, phi: Array, alpha: Array, chunk: int) -> Array:
  """theta + Phi^T alpha, each chunk formed in float64 and rounded once to theta's dtype."""
  wide = alpha.dtype

  def add(th, block, start):
    part = jax.lax.dynamic_slice_in_dim(th, start, block.shape[1])
    new = part.astype(wide) + _dot(alpha, block.astype(wide), ((0,), (0,)))
    return jax.lax.dynamic_update_slice_in_dim(th, new.astype(th.dtype), start, axis=0)

  return _over_column_chunks(phi, chunk, add, theta)


def eigen_cutoff(n: int, phi_dtype, solve_dtype=SOLVE_DTYPE) -> float:
  """Eigenvalues of G below this times lambda_max are dropped: max((n eps_Phi)^2, n eps_solve)."""
  eps_phi = float(jnp.finfo(phi_dtype).eps)
  eps_solve = float(jnp.finfo(jnp.promote_types(phi_dtype, solve_dtype)).eps)
  return max((n * eps_phi) ** 2, n * eps_solve)


def _pinv_sym(g: Array, rel_cut: float) -> Array:
  """G^+ of a symmetric PSD G, eigenvalues below rel_cut * lambda_max dropped."""
  w, q = jnp.linalg.eigh(g)
  keep = w > rel_cut * w[-1]
  w_inv = jnp.where(keep, 1.0 / jnp.where(keep, w, 1.0), 0.0)
  return _dot(q * w_inv, q, ((1,), (1,)))


def min_norm_gram(phi: Array, y: Array, refine_steps: int = REFINE_STEPS,
                  chunk: int = GRAM_CHUNK, solve_dtype=SOLVE_DTYPE) -> Array:
  """theta = Phi^T G^+ y in Phi's dtype; G, G^+ and the residuals in float64 (module doc).

  `solve_dtype` float32 on a float32 Phi is the route before issue #30 (a float32 Gram, cut-off
  n eps32 lambda_max): kept for the tests and the benchmark that show why it is not the default."""
  with jax.enable_x64(True):
    g_inv = _pinv_sym(gram(phi, chunk, solve_dtype),
                      eigen_cutoff(phi.shape[0], phi.dtype, solve_dtype))
    wide = g_inv.dtype
    y_wide = y.astype(wide)
    theta = _add_phi_transpose_times(jnp.zeros(phi.shape[1], phi.dtype), phi,
                                     _dot(g_inv, y_wide, ((1,), (0,))), chunk)
    for _ in range(refine_steps):
      r = y_wide - _phi_times(phi, theta, chunk, solve_dtype)
      theta = _add_phi_transpose_times(theta, phi, _dot(g_inv, r, ((1,), (0,))), chunk)
    return theta


def train_residual(phi: Array, theta: Array, y: Array, chunk: int = GRAM_CHUNK) -> Array:
  """mean((Phi theta - y)^2) with Phi theta formed in float64 chunk by chunk; in Phi's dtype."""
  with jax.enable_x64(True):
    r = _phi_times(phi, theta, chunk) - y.astype(jnp.promote_types(phi.dtype, SOLVE_DTYPE))
    return jnp.mean(r * r).astype(phi.dtype)


def fit_report(n: int, p: int, dtype) -> Dict[str, Any]:
  """{'fit_route', 'fit_solve_dtype'}: the route `min_norm_solution` takes at (n, p) and the
  dtype of its n x n solve and residuals ('gram': float64 whatever the run's dtype)."""
  gram_route = p > SVD_MAX_RATIO * n
  solve = jnp.promote_types(dtype, SOLVE_DTYPE) if gram_route else jnp.dtype(dtype)
  return {'fit_route': 'gram' if gram_route else 'svd', 'fit_solve_dtype': jnp.dtype(solve).name}


def interpolation_report(train_mse: float, y: Any, n: int, p: int,
                         tol: float = INTERPOLATION_TOL) -> Dict[str, Any]:
  """{'victim_interpolates', 'train_mse_over_var_y', 'interpolation_tol'} for summary.json.

  p >= n random features interpolate generically (Phi has full row rank), so
  train_mse / var(y) > tol means the fit lost digits (or Phi is rank-deficient). tol = 1e-6:
  a correct float32 fit sits at 1e-19..1e-10 of var(y) (rounding of theta), the issue-#17
  failure at 0.1..0.5, the issue-#30 one (a float32 Gram on correlated inputs) at 7.5e-5;
  1e-6 (a relative residual of 1e-3) is where the attack's loss floor at the true data, ~ train_mse / var(y),
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
  """`interpolation_report` and `fit_report`; one info line when the fit's solve ran in another
  dtype than the run (`dtype`), one warning line when a p >= n victim does not interpolate."""
  report = dict(interpolation_report(train_mse, y, n, p, tol), **fit_report(n, p, dtype))
  if report['fit_solve_dtype'] != jnp.dtype(dtype).name:
    logging.info('victim fit: Phi and theta* in %s (run.dtype), its n x n Gram, solve and '
                 'residuals in %s (%s route); train_mse/var(y) = %.3g (tol %.0e)', dtype,
                 report['fit_solve_dtype'], report['fit_route'],
                 report['train_mse_over_var_y'], tol)
  if report['victim_interpolates'] is False:
    logging.warning('victim does not interpolate: train_mse/var(y) = %.3g > %.0e at n=%d, p=%d '
                    '(%s); the fit lost digits or Phi is rank-deficient: theta* is not in the span '
                    'of the true features, so the loss floor is not 0 (try dtype=float64)',
                    report['train_mse_over_var_y'], tol, n, p, dtype)
  return report


def check_matmul_precision(value: Optional[str]) -> str:
  value = DEFAULT_MATMUL_PRECISION if value is None else value
  if value not in choices.MATMUL_PRECISIONS:
    raise ValueError(f'run.matmul_precision: unknown value {value!r}; accepted: '
                     f'{", ".join(choices.MATMUL_PRECISIONS)}')
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
  """The process's jax_default_matmul_precision as a name of choices.MATMUL_PRECISIONS."""
  value = jax.config.jax_default_matmul_precision
  return 'default' if value is None else str(value)

