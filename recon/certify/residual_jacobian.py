"""The certificate's residual Jacobian without forming it: block by block over the features.

The certificate (`recon.certify.certificate`) needs, at the candidates X_hat (m x d), the residual
Jacobian on the spheres' tangent space,
    J = P_perp K  (p x m (d - 1)),   K = [alpha_i dphi_i/dx_i B_i]_i,
(phi_i the p features of row i, alpha theta's span coefficients, B_i (d x (d - 1)) an
orthonormal basis of row i's tangent space, P_perp the projector off the row span of
Phi = Phi(X_hat)): its smallest singular value (the pin radius) and, per row,
s_i = sqrt(lambda_max([(J^T J)^-1]_ii)) (the row radii). Formed densely J has p m (d - 1)
entries: 2.3e8 at (m, d, p) = (100, 48, 48 000), 9.4e11 at the papers' CIFAR size
(100, 3072, 3 072 000). Here the features are only ever seen one column block
Phi_c = Phi[:, c] at a time (`features.FeatureMap.block`, V sliced or regenerated; any other
feature_fn is one block of all p columns), with D_c = [dphi_i,c/dx_i B_i]_i (c x m (d - 1),
from `jax.jacfwd` of the block):

  pass 1 (`stats`):  G = sum_c Phi_c Phi_c^T, b = sum_c Phi_c theta_c, N = sum_c Phi_c D_c;
                     alpha = G^+ b (= lstsq(Phi^T, theta)), C = G^+ N diag(alpha) (m x m (d-1)),
                     so that J's block of rows c is J_c = D_c diag(alpha) - Phi_c^T C, formed
                     explicitly (no cancellation between K^T K and K^T P K).
  'gram' (`tangent_gram`): H = J^T J = sum_c J_c^T J_c, (m (d - 1))^2 entries; the
                     certificate then takes the same eigendecompositions as from a dense J
                     (exact sigma's and per-row radii). p (m (d - 1))^2 flops: those of the
                     dense path's J^T J.
  'matrix_free' (`smallest_singular_value`): H V = sum_c J_c^T (J_c V) for a block of
                     vectors, J_c V by `jax.jvp` and J_c^T W by `jax.vjp` of the feature block
                     (4 p m d flops per vector); lambda_min(H) by LOBPCG
                     (`scipy.sparse.linalg.lobpcg`) preconditioned by H's per-row diagonal
                     blocks ((d - 1)^2 each, `row_blocks`, block-Jacobi: it undoes the rows'
                     scales alpha_i). A Ritz value theta_1 is >= lambda_min; with its residual
                     r_1 (||x_1|| = 1) an eigenvalue lies in [theta_1 - ||r_1||, theta_1], and
                     theta_1 - ||r_1|| is what the certificate uses. LOBPCG from a random block
                     could in principle miss an eigenvalue below the one it converged to
                     (the one thing this cannot rule out; the block size and the seed are fixed).
                     The per-row radii here are the whole set's bound s_i <= 1 / sigma_min
                     (an upper bound: a row it calls pinned is pinned).
  'normal equations' (`transpose_apply`, `damped_solve`: the precision rung's Gauss-Newton
                     step above its dense cap): J^T r by `jax.vjp` block by block, and
                     (H + mu I) s = J^T r by conjugate gradients on the operator above,
                     preconditioned by the damped per-row blocks H_ii + mu I.
Memory: the tangent bases (m d (d - 1)); pass 1 and 'gram'/`row_blocks` hold one block's
Jacobian (m x c x d) and J_c (c x m (d - 1)), c chosen so that c m d <=
`default_block_entries()`; plus N and C (m^2 (d - 1) each), and H for 'gram' or the per-row
blocks (m (d - 1)^2) and LOBPCG's ~ 3 k m (d - 1) vectors (k = block size) for
'matrix_free'. Every pass is float64 (call under `jax.enable_x64`).
"""
from __future__ import annotations

import dataclasses
import functools
import weakref
from typing import Any, Callable, Dict, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np
import scipy.linalg
import scipy.linalg.blas
import scipy.sparse.linalg
import threadpoolctl

# Features per block x m x d: 32 MB of float64 per block Jacobian on a CPU, 1 GB on an
# accelerator (fewer, larger blocks: 7 046 of 436 features at the papers' CIFAR size).
BLOCK_ENTRIES_CPU, BLOCK_ENTRIES_ACCELERATOR = 1 << 22, 1 << 27


def default_block_entries() -> int:
  return BLOCK_ENTRIES_CPU if jax.default_backend() == 'cpu' else BLOCK_ENTRIES_ACCELERATOR


def blas_threads(backend: Optional[str] = None) -> Optional[int]:
  """NumPy's BLAS threads for the certificate's and the precision rung's host linear algebra:
  1 where XLA computes on the host CPU (the two fight for the cores, and a BLAS thread that
  waits for a busy core stalls the call: a 1 980-square Cholesky took 4.7 s with OpenBLAS's two
  threads and 0.16 s with one on the 2-core CPU under load), None (the library's default) where
  XLA computes on an accelerator."""
  backend = jax.default_backend() if backend is None else backend
  return 1 if backend == 'cpu' else None


def host_blas():
  """A context in which NumPy's BLAS runs on `blas_threads()` threads."""
  return threadpoolctl.threadpool_limits(limits=blas_threads())


LOBPCG_BLOCK = 8
LOBPCG_TOL = 1e-11  # on the residual of H / lambda_max(H)
LOBPCG_MAXITER = 400


def tangent_bases(x_hat) -> np.ndarray:
  """(m, d, d - 1): an orthonormal basis of each row's tangent space (the last d - 1 left
  singular vectors of x_i)."""
  flat = np.asarray(x_hat, np.float64).reshape(len(x_hat), -1)
  return np.stack([np.linalg.svd(row[:, None], full_matrices=True)[0][:, 1:] for row in flat])


def block_fn(feature_fn: Callable, p: int) -> Tuple[Callable, Any, Any]:
  """(block_fn(params, x, start, count), params, the one count it allows or None): the map's
  own blocks (`features.FeatureMap`), any count; else one block of all p columns."""
  if hasattr(feature_fn, 'block_fn'):
    return feature_fn.block_fn, feature_fn.params, None
  try:  # one block function per map, so that the compiled passes are reused across calls
    whole = _WHOLE_BLOCKS.get(feature_fn)
  except TypeError:  # not weakly referable
    whole = None
  if whole is None or whole[1] != p:
    ref = weakref.ref(feature_fn) if _referable(feature_fn) else (lambda: feature_fn)
    whole = ((lambda params, x, start, count: ref()(x)[:, :p]), p)
    try:
      _WHOLE_BLOCKS[feature_fn] = whole
    except TypeError:
      pass
  return whole[0], None, p


_WHOLE_BLOCKS: 'weakref.WeakKeyDictionary' = weakref.WeakKeyDictionary()


def _referable(obj) -> bool:
  try:
    weakref.ref(obj)
  except TypeError:
    return False
  return True


@dataclasses.dataclass
class Stats:
  """Pass 1's results (float64): see the module docstring."""
  x: jax.Array  # (m, d)
  bases: jax.Array  # (m, d, d - 1)
  gram: np.ndarray  # (m, m)
  alpha: np.ndarray  # (m,)
  c: jax.Array  # (m, m (d - 1)): G^+ Phi K
  theta_norm: float
  block: Callable  # block_fn(params, x, start, count)
  params: Any
  count: int
  n_blocks: int


def _pinv_solve(gram: np.ndarray, rhs: np.ndarray) -> np.ndarray:
  return np.linalg.lstsq(gram, rhs, rcond=None)[0]


def _tangent_block(block: Callable, params, x, bases, start, count: int):
  """(Phi_c (m, count), D_c (count, m, d - 1)) in float64: row i's derivatives pushed forward
  along its d - 1 tangent directions B_i only (not along all d coordinates and then projected:
  the same D_c, about a quarter less work per block)."""
  phi = jnp.asarray(block(params, x, start, count), jnp.float64)

  def row(xi, bi):  # (count, d - 1): d phi_i / d u at u = 0, x_i moved to x_i + B_i u
    return jax.jacfwd(lambda u: block(params, (xi + bi @ u)[None], start, count)[0])(
        jnp.zeros(bi.shape[1], bi.dtype))
  dc = jax.vmap(row)(x, bases)  # (m, count, d - 1)
  return phi, jnp.transpose(jnp.asarray(dc, jnp.float64), (1, 0, 2))


@functools.partial(jax.jit, static_argnames=('block', 'count'))
def _stats_block(block, count, params, x, bases, start, th):
  phi, dc = _tangent_block(block, params, x, bases, start, count)
  return phi @ phi.T, phi @ th, jnp.einsum('kc,cme->kme', phi, dc)


def stats(feature_fn: Callable, x_hat, theta, block_entries: int | None = None) -> Stats:
  """Pass 1 (module docstring); `block_entries` (default `default_block_entries()`) bounds
  count m d. Call under `jax.enable_x64`."""
  block_entries = default_block_entries() if block_entries is None else block_entries
  x = jnp.asarray(np.asarray(x_hat, np.float64).reshape(len(x_hat), -1))
  m, d = x.shape
  theta64 = np.asarray(theta, np.float64).reshape(-1)
  p = theta64.shape[0]
  block, params, most = block_fn(feature_fn, p)
  count = int(min(p, max(1, block_entries // (m * d)))) if most is None else most
  n_blocks = -(-p // count)
  theta_pad = np.zeros(n_blocks * count)
  theta_pad[:p] = theta64
  bases = jnp.asarray(tangent_bases(x_hat))
  gram = jnp.zeros((m, m))
  b = jnp.zeros((m,))
  n = jnp.zeros((m, m, d - 1))
  for j in range(n_blocks):
    g_j, b_j, n_j = _stats_block(block, count, params, x, bases, jnp.int32(j * count),
                                 jnp.asarray(theta_pad[j * count:(j + 1) * count]))
    gram, b, n = gram + g_j, b + b_j, n + n_j
  gram = np.asarray(gram)
  alpha = _pinv_solve(gram, np.asarray(b))
  c = _pinv_solve(gram, (np.asarray(n) * alpha[None, :, None]).reshape(m, -1))
  return Stats(x=x, bases=bases, gram=gram, alpha=alpha, c=jnp.asarray(c),
               theta_norm=float(np.linalg.norm(theta64)), block=block, params=params,
               count=count, n_blocks=n_blocks)


def _jacobian_block(st_block, count, params, x, bases, alpha, c, start):
  """J_c (count, m, d - 1)."""
  m = x.shape[0]
  phi, dc = _tangent_block(st_block, params, x, bases, start, count)
  return dc * alpha[None, :, None] - (phi.T @ c).reshape(count, m, -1)


@functools.partial(jax.jit, static_argnames=('block', 'count'), donate_argnames=('acc',))
def _gram_block(block, count, params, x, bases, alpha, c, start, acc):
  jc = _jacobian_block(block, count, params, x, bases, alpha, c, start).reshape(count, -1)
  return acc + jc.T @ jc


@functools.partial(jax.jit, static_argnames=('block', 'count'), donate_argnames=('acc',))
def _row_blocks_block(block, count, params, x, bases, alpha, c, start, acc):
  jc = _jacobian_block(block, count, params, x, bases, alpha, c, start)
  return acc + jnp.einsum('cme,cmf->mef', jc, jc)


def _fold(st: Stats, fn, acc):
  alpha = jnp.asarray(st.alpha)
  for j in range(st.n_blocks):
    acc = fn(st.block, st.count, st.params, st.x, st.bases, alpha, st.c, jnp.int32(j * st.count),
             acc)
  return acc


@functools.partial(jax.jit, static_argnames=('block', 'count'))
def _jacobian_block_t(block, count, params, x, bases, alpha, c, start):
  """J_c^T (m (d - 1), count): in C order, J_c's Fortran layout (what BLAS's syrk reads)."""
  return _jacobian_block(block, count, params, x, bases, alpha, c, start).reshape(count, -1).T


def tangent_gram(st: Stats, host: Optional[bool] = None) -> np.ndarray:
  """H = J^T J ((m (d - 1))^2), accumulated block by block. Call under `jax.enable_x64`.

  `host` (default: on the host CPU) each block's J_c is formed by XLA and H += J_c^T J_c by
  BLAS's symmetric rank-k update (`dsyrk`: half the flops of the product, one thread,
  `blas_threads`), the next block formed while this one is added: 4.4x faster than XLA's
  float64 product at (m, d, p) = (20, 100, 20 000) on 2 CPU cores; else (an accelerator) the
  product is XLA's. Both sum the same float64 products in another order: H agrees to rounding.
  """
  k = st.c.shape[1]
  if not (jax.default_backend() == 'cpu' if host is None else host):
    return np.asarray(_fold(st, _gram_block, jnp.zeros((k, k))))
  alpha = jnp.asarray(st.alpha)
  form = lambda j: _jacobian_block_t(st.block, st.count, st.params, st.x, st.bases, alpha,  # noqa: E731
                                     st.c, jnp.int32(j * st.count))
  h = np.zeros((k, k), order='F')
  with host_blas():
    pending = form(0)
    for j in range(st.n_blocks):
      jt = np.asarray(pending)
      if j + 1 < st.n_blocks:
        pending = form(j + 1)  # dispatched: XLA forms it while BLAS adds this one
      h = scipy.linalg.blas.dsyrk(1.0, jt.T, beta=1.0, c=h, trans=1, lower=1, overwrite_c=1)
  lower = np.tril(h)
  return lower + np.tril(lower, -1).T


def row_blocks(st: Stats) -> np.ndarray:
  """(m, d - 1, d - 1): H's diagonal blocks H_ii = J_i^T J_i. Call under `jax.enable_x64`."""
  m, d = st.x.shape
  return np.asarray(_fold(st, _row_blocks_block, jnp.zeros((m, d - 1, d - 1))))


@functools.partial(jax.jit, static_argnames=('block', 'count'), donate_argnames=('acc',))
def _operator_block(block, count, params, x, bases, alpha, c, start, acc, vecs):
  m, d = x.shape
  f = lambda z: jnp.asarray(block(params, z, start, count), jnp.float64)  # noqa: E731
  phi, pull = jax.vjp(f, x)

  def apply(v):
    dx = jnp.einsum('mde,me->md', bases, v.reshape(m, d - 1))
    dphi = jax.jvp(f, (x,), (dx,))[1]  # (m, count): row i moved by dx_i
    w = alpha @ dphi - phi.T @ (c @ v)  # J_c v (count,)
    g = pull(jnp.outer(alpha, w))[0]  # K_c^T w, in x coordinates
    return jnp.einsum('mde,md->me', bases, g).reshape(-1) - c.T @ (phi @ w)

  return acc + jax.vmap(apply)(vecs)


def gram_operator(st: Stats, width: int = LOBPCG_BLOCK) -> Callable[[np.ndarray], np.ndarray]:
  """V (m (d - 1), k) -> H V through jvp / vjp of the feature blocks (J never formed), in
  groups of `width` vectors (zero padded: one compiled shape whatever k the caller sends).
  Call (and use) under `jax.enable_x64`."""
  m, d = st.x.shape
  alpha = jnp.asarray(st.alpha)

  def matmat(v: np.ndarray) -> np.ndarray:
    v = np.asarray(v, np.float64).reshape(m * (d - 1), -1)
    k = v.shape[1]
    padded = np.zeros((-(-k // width) * width, v.shape[0]))
    padded[:k] = v.T
    out = np.empty_like(padded)
    for g in range(0, len(padded), width):
      vecs = jnp.asarray(padded[g:g + width])
      acc = jnp.zeros_like(vecs)
      for j in range(st.n_blocks):
        acc = _operator_block(st.block, st.count, st.params, st.x, st.bases, alpha, st.c,
                              jnp.int32(j * st.count), acc, vecs)
      out[g:g + width] = np.asarray(acc)
    return out[:k].T

  return matmat


@functools.partial(jax.jit, static_argnames=('block', 'count'), donate_argnames=('acc',))
def _transpose_block(block, count, params, x, bases, alpha, c, start, acc, w):
  """acc + J_c^T w_c (m (d - 1),) by one `jax.vjp` of the feature block."""
  m, d = x.shape
  f = lambda z: jnp.asarray(block(params, z, start, count), jnp.float64)  # noqa: E731
  phi, pull = jax.vjp(f, x)
  g = pull(jnp.outer(alpha, w))[0]  # K_c^T w, in x coordinates
  return acc + jnp.einsum('mde,md->me', bases, g).reshape(-1) - c.T @ (phi @ w)


def transpose_apply(st: Stats, u) -> np.ndarray:
  """J^T u (m (d - 1),) for u (p,), block by block (J never formed). Call under
  `jax.enable_x64`."""
  m, d = st.x.shape
  u = np.asarray(u, np.float64).reshape(-1)
  padded = np.zeros(st.n_blocks * st.count)
  padded[:u.shape[0]] = u
  alpha = jnp.asarray(st.alpha)
  acc = jnp.zeros((m * (d - 1),))
  for j in range(st.n_blocks):
    acc = _transpose_block(st.block, st.count, st.params, st.x, st.bases, alpha, st.c,
                           jnp.int32(j * st.count), acc,
                           jnp.asarray(padded[j * st.count:(j + 1) * st.count]))
  return np.asarray(acc)


CG_RTOL = 1e-10  # `damped_solve`: on ||rhs - (H + mu I) s|| / ||rhs||
CG_MAXITER = 1000


def damped_solve(st: Stats, rhs, mu: float, blocks: Optional[np.ndarray] = None, *,
                 rtol: float = CG_RTOL, maxiter: int = CG_MAXITER
                 ) -> Tuple[np.ndarray, Dict[str, Any]]:
  """s = (H + mu I)^-1 rhs, H = J^T J, by conjugate gradients on the operator (`gram_operator`,
  one vector at a time: 4 p m d flops an iteration, memory O(p + m d)), preconditioned by the
  damped per-row blocks H_ii + mu I (`row_blocks`, passed as `blocks` to reuse them across
  damping trials). Returns (s, {'iterations', 'residual'} (relative)). Call under
  `jax.enable_x64`."""
  m, d = st.x.shape
  k = d - 1
  blocks = row_blocks(st) if blocks is None else blocks
  inv = np.linalg.inv(blocks + mu * np.eye(k)[None])
  matvec = gram_operator(st, width=1)
  apply = lambda v: matvec(v[:, None])[:, 0] + mu * v  # noqa: E731
  pre = lambda v: np.einsum('mef,mf->me', inv, v.reshape(m, k)).reshape(-1)  # noqa: E731
  b = np.asarray(rhs, np.float64).reshape(-1)
  norm_b = float(np.linalg.norm(b))
  s = np.zeros_like(b)
  if norm_b == 0.0:
    return s, {'iterations': 0, 'residual': 0.0}
  r = b.copy()
  z = pre(r)
  q = z.copy()
  rz = float(r @ z)
  it = 0
  for it in range(1, maxiter + 1):
    hq = apply(q)
    step = rz / float(q @ hq)
    s += step * q
    r -= step * hq
    if np.linalg.norm(r) <= rtol * norm_b:
      break
    z = pre(r)
    rz, rz_old = float(r @ z), rz
    q = z + (rz / rz_old) * q
  return s, {'iterations': it, 'residual': float(np.linalg.norm(r) / norm_b)}


def smallest_singular_value(st: Stats, block_size: int = LOBPCG_BLOCK, tol: float = LOBPCG_TOL,
                            maxiter: int = LOBPCG_MAXITER, seed: int = 0
                            ) -> Tuple[float, float, Dict[str, object]]:
  """(sigma_min(J), sigma_max(J), info) by LOBPCG on H = J^T J, matrix-free (module
  docstring); sigma_min from theta_1 - ||r_1|| (never above the eigenvalue LOBPCG found).
  info: 'converged', 'iterations', 'residual' (relative to lambda_max), 'ritz' (the k
  smallest Ritz values of H). Call under `jax.enable_x64`."""
  m, d = st.x.shape
  k_dim = m * (d - 1)
  k = int(max(1, min(block_size, k_dim // 5)))
  matmat = gram_operator(st, width=k)
  op = scipy.sparse.linalg.LinearOperator((k_dim, k_dim), matvec=matmat, matmat=matmat,
                                          dtype=np.float64)
  rng = np.random.default_rng(seed)
  # lambda_max first (unpreconditioned, quick), the scale for the tolerances.
  probe = rng.normal(size=(k_dim, 1))
  scale = float(np.linalg.norm(matmat(probe)) / np.linalg.norm(probe))
  top, _ = scipy.sparse.linalg.lobpcg(op, probe, largest=True, tol=1e-8 * max(scale, 1e-300),
                                      maxiter=200)
  lam_max = float(top[0])
  blocks = row_blocks(st)
  inv_blocks = []
  for blk in blocks:
    lam, vec = np.linalg.eigh(blk)
    lam = np.maximum(lam, max(float(lam[-1]), 1e-300) * 1e-14)
    inv_blocks.append((vec / lam) @ vec.T)
  inv_blocks = np.stack(inv_blocks)

  def precondition(v):
    v = np.asarray(v).reshape(m, d - 1, -1)
    return np.einsum('mef,mfk->mek', inv_blocks, v).reshape(k_dim, -1)

  pre = scipy.sparse.linalg.LinearOperator((k_dim, k_dim), matvec=precondition,
                                           matmat=precondition, dtype=np.float64)
  x0 = rng.normal(size=(k_dim, k))
  lam, vec, hist = scipy.sparse.linalg.lobpcg(op, x0, M=pre, largest=False,
                                              tol=tol * max(lam_max, 1e-300), maxiter=maxiter,
                                              retResidualNormsHistory=True)
  order = np.argsort(lam)
  lam, vec = lam[order], vec[:, order]
  v1 = vec[:, :1] / np.linalg.norm(vec[:, 0])
  ritz = float(v1[:, 0] @ matmat(v1)[:, 0])
  resid = float(np.linalg.norm(matmat(v1)[:, 0] - ritz * v1[:, 0]))
  lam_min = max(ritz - resid, 0.0)
  info = {'converged': bool(resid <= max(10 * tol * lam_max, 1e-3 * ritz)),
          'iterations': len(hist), 'residual': resid / max(lam_max, 1e-300),
          'ritz': [float(v) for v in lam], 'block_size': k}
  return float(np.sqrt(lam_min)), float(np.sqrt(max(lam_max, 0.0))), info


def gram_spectrum(h: np.ndarray, m: int, safe: float = 1e4) -> Dict[str, Any] | None:
  """From H = J^T J without its eigendecomposition (an n^3 / 3 Cholesky instead of a
  tridiagonalisation: ~10x faster at n = m (d - 1) = 4 700): sigma_min = 1 / sqrt(lambda_max
  (H^-1)) and sigma_max by Lanczos (`scipy.sparse.linalg.eigsh`, H^-1 through the Cholesky
  factor L), the row scales s_i^2 = lambda_max([H^-1]_ii) with [H^-1]_ii = (L^-1 E_i)^T
  (L^-1 E_i), and rank(rtol) = n - (eigenvalues <= (rtol sigma_max)^2), counted by the
  inertia of H - tau I (Sylvester: the negative pivots of its LDL^T). The same numbers as
  the eigendecomposition while lambda_min > `safe` eps lambda_max (where the dense path's
  clipping of tiny eigenvalues changes nothing); None otherwise (H numerically singular:
  then the caller takes the eigendecomposition)."""
  n = h.shape[0]
  if not np.all(np.isfinite(h)) or not np.any(h):
    return None  # H = 0 (degenerate data: every feature derivative vanishes) or broken
  # A fixed start vector: ARPACK's own is random, and a resumed run must certify bit for bit.
  start = np.random.default_rng(0).standard_normal(n)
  try:
    top = scipy.sparse.linalg.eigsh(h, k=1, which='LA', return_eigenvectors=False, v0=start)
    lam_max = float(top[0])
    chol = scipy.linalg.cho_factor(h, lower=True)
    inv_op = scipy.sparse.linalg.LinearOperator(
        (n, n), matvec=lambda v: scipy.linalg.cho_solve(chol, v), dtype=np.float64)
    inv_top = float(scipy.sparse.linalg.eigsh(inv_op, k=1, which='LA', v0=start,
                                              return_eigenvectors=False)[0])
  except (np.linalg.LinAlgError, scipy.sparse.linalg.ArpackError,
          scipy.sparse.linalg.ArpackNoConvergence):
    return None  # numerically singular or no Lanczos convergence: the eigendecomposition
  lam_min = 1.0 / inv_top if inv_top > 0 else 0.0
  if not lam_min > safe * np.finfo(np.float64).eps * lam_max:
    return None
  lower = np.tril(chol[0])
  l_inv = scipy.linalg.solve_triangular(lower, np.eye(n), lower=True)
  k = n // m
  scales = np.array([np.sqrt(max(float(np.linalg.eigvalsh(
      l_inv[:, i * k:(i + 1) * k].T @ l_inv[:, i * k:(i + 1) * k])[-1]), 0.0))
                     for i in range(m)])
  sigma_max = float(np.sqrt(lam_max))

  def rank(rtol: float) -> int:
    tau = (rtol * sigma_max) ** 2
    if tau < lam_min:
      return n
    _, d_blocks, _ = scipy.linalg.ldl(h - tau * np.eye(n), lower=True)
    return int(n - np.sum(np.linalg.eigvalsh(d_blocks) <= 0))

  return {'sigma_min': float(np.sqrt(lam_min)), 'sigma_max': sigma_max, 'rank': rank,
          'row_scales': scales}
