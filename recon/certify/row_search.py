"""The precision rung's row re-search (step 2 of `recon.certify.rung`): a free row searched with the
others held to first order, for many rows at once.

Q_o is an orthonormal basis of the held rows' features *and their Jacobians* d phi(x_k)/d x_k
(`held_basis`: the held rows sit slightly off their samples, having compensated for the wrong
row i, and the residual of that is a first-order move of theirs), r_0 = (I - Q_o Q_o^T) theta,
and candidate x in slot i leaves the part
    l_i(x) = 1 - cos^2(f(x), r_0),   f(x) = (I - Q_o Q_o^T) phi(x)
of ||r_0||^2 unexplained; l_i in [0, 1] is scale-free (a row carrying 1e-4 of theta is searched
as easily as one carrying half). Adam on l_i from the current row, its mirror image and
`starts` - 2 random points on the sphere, vmapped over starts (`row_search`).

`row_search_batch` searches several rows with the others held at the same X in one compiled
function vmapped over rows, on one shared basis (`shared_basis`): a single SVD of every row's
features and Jacobians C = U S V^T, and per row i the (d + 1)-column complement W_i of its held
span inside span(U), so ||P_held phi||^2 = ||U^T phi||^2 - ||W_i^T U^T phi||^2 (the same span
`held_basis` gives for the others, without a p x m (d + 1) SVD per row). Row i's random starts
are drawn with the key the one-row search would use; with `prune=()` and a float64 product each
row's result equals `row_search`'s from the same X. By default the search's cost, the product
U^T phi (p x m (d + 1) per start and step), runs in float32 and the starts are pruned by
successive halving (`PRUNE`: each row keeps its best 8 starts at 20 % of the steps and its best
2 at 50 %, a third of the work); l_i of the returned rows is float64. `row_batch` rows per pass
(memory: each row's starts, `row_batch_size`), a progress line after each pass and, inside a
long pass, every `LOG_SECONDS` (the Adam steps run `SEARCH_CHUNK` per compiled call, the state
carried over). `distinct` picks, among found rows, those to place when several slots found the
same sample. Call everything under `jax.enable_x64`.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Optional, Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

Array = jax.Array


def project(z: Array, radius: float) -> Array:
  return z * (radius / jnp.maximum(jnp.linalg.norm(z, axis=-1, keepdims=True), 1e-300))


def _ell(feature_fn: Callable, q: Array, r0: Array, z: Array) -> Array:
  """l(z) = 1 - cos^2(f, r_0) with f = (I - Q Q^T) phi(z), from one product Q^T phi (p x r):
  f . r_0 = phi . r_0 (r_0 is orthogonal to Q) and ||f||^2 = ||phi||^2 - ||Q^T phi||^2, half the
  work of forming f (the search's cost: 1000 steps x 32 starts of it)."""
  phi = jnp.asarray(feature_fn(z[None]), jnp.float64)[0]
  c = phi @ r0
  ff = phi @ phi - jnp.sum((q.T @ phi) ** 2)
  return 1.0 - c ** 2 / jnp.maximum(ff, 1e-300)


def held_basis(feature_fn: Callable, others: Array, rtol: float = 1e-10) -> Array:
  """(p, r) orthonormal basis of span{phi(x_k), d phi(x_k) / d x_k : k held}: the held rows'
  features and every first-order move of them (so a residual they could absorb by moving
  a little is not mistaken for the searched row's share). SVD, rank cut at rtol."""
  feats = jnp.asarray(feature_fn(others), jnp.float64)  # (k, p)
  jac = jax.vmap(jax.jacfwd(lambda z: feature_fn(z[None])[0]))(others)  # (k, p, d)
  cols = jnp.concatenate([feats.T, jnp.transpose(jnp.asarray(jac, jnp.float64), (1, 0, 2))
                          .reshape(feats.shape[1], -1)], axis=1)
  u, s, _ = jnp.linalg.svd(cols, full_matrices=False)
  return u[:, np.asarray(s > rtol * s[0])]


def row_search(feature_fn: Callable, theta, x, i: int, key: Array, *, starts: int,
               steps: int, lr: float, radius: float) -> Tuple[np.ndarray, float]:
  """The best row for slot i with the others held (step 2 of the module docstring).

  Returns (row (d,), l_i of that row); call under `jax.enable_x64`.
  """
  x = jnp.asarray(x, jnp.float64)
  m, d = x.shape
  theta = jnp.asarray(theta, jnp.float64).reshape(-1)
  others = jnp.concatenate([x[:i], x[i + 1:]])
  q = held_basis(feature_fn, others)
  r0 = theta - q @ (q.T @ theta)
  r0 = r0 / jnp.maximum(jnp.linalg.norm(r0), 1e-300)

  def ell(z):
    return _ell(feature_fn, q, r0, z)

  n_random = max(starts - 2, 0)
  z0 = jnp.concatenate([x[i][None], -x[i][None],
                        jax.random.normal(key, (n_random, d), jnp.float64)])
  z0 = project(z0, radius)
  opt = optax.adam(optax.cosine_decay_schedule(lr, max(steps, 1), alpha=0.05))
  grad = jax.vmap(jax.value_and_grad(ell))

  def body(carry, _):
    z, state = carry
    _, g = grad(z)
    upd, state = opt.update(g, state, z)
    return (project(z + upd, radius), state), None

  (z, _), _ = jax.lax.scan(body, (z0, opt.init(z0)), None, length=steps)
  values = jax.vmap(ell)(z)
  values = jnp.where(jnp.isfinite(values), values, jnp.inf)
  best = int(jnp.argmin(values))
  return np.asarray(z[best]), float(values[best])


ROW_BATCH_BYTES = 1.5e9  # memory for one vmapped pass of the row search (the bases dominate)


def row_batch_size(p: int, m: int, d: int, starts: int = 32,
                   budget: float = ROW_BATCH_BYTES) -> int:
  """Rows per vmapped search pass: each holds its starts' features and their cotangents
  (~8 copies of starts x p float64) and its complement W_i (m (d + 1) x (d + 1)); the shared
  basis U (p x m (d + 1)) is held once, outside the budget."""
  return max(1, int(budget // (8 * (8 * starts * p + m * (d + 1) ** 2))))


# Successive halving of the starts: at 20 % of the steps each row keeps its best 8 starts, at
# 50 % its best 2 (a third of the work of 32 starts run to the end).
PRUNE = ((0.2, 8), (0.5, 2))
SEARCH_CHUNK = 100  # Adam steps per compiled call of the batched search (progress between)
LOG_SECONDS = 10.0  # a progress line inside a pass at most this often


def shared_basis(feats: Array, jac: Array, rtol: float = 1e-10) -> Tuple[Array, Array, Array]:
  """One SVD for every row's held basis. C = [phi(x_k) | d phi(x_k)/d x_k]_k (p x m (d + 1),
  features first, then each row's d Jacobian columns) = U S V^T, rank r cut at rtol. Row i's
  held span is U span(S V^T_{:, -i}) (C without row i's d + 1 columns); inside span(U) its
  complement is null(V_{-i}^T S) = S^-1 {y : ||V_i^T y|| = ||y||}, the left singular vectors
  of V_i = V^T[:, cols of i] with singular value 1 mapped by S^-1 (from
  V_{-i} V_{-i}^T = I - V_i V_i^T on span(U)). Returns (U (p, r), W (m, r, d + 1): row i's
  complement, orthonormal, its unused columns zero, a_theta-free). With W_i, for any vector f:
  ||P_held f||^2 = ||U^T f||^2 - ||W_i^T U^T f||^2, the per-row SVD of `held_basis` replaced
  by an r x (d + 1) one."""
  m, p = feats.shape
  d = jac.shape[-1]
  cols = jnp.concatenate([feats.T, jnp.transpose(jac, (1, 0, 2)).reshape(p, m * d)], axis=1)
  u, sv, vt = jnp.linalg.svd(cols, full_matrices=False)
  r = int(np.sum(np.asarray(sv > rtol * sv[0])))
  u, sv, vt = u[:, :r], sv[:r], vt[:r]
  idx = jnp.concatenate([jnp.arange(m)[:, None], m + jnp.arange(m)[:, None] * d
                         + jnp.arange(d)[None, :]], axis=1)  # (m, d + 1) columns of row i

  def complement(ci):
    y, sy, _ = jnp.linalg.svd(vt[:, ci], full_matrices=False)  # (r, d + 1)
    owned = sy ** 2 > 1.0 - OWNED_TOL  # directions no held column reaches
    w, sw, _ = jnp.linalg.svd((y * owned[None, :]) / sv[:, None], full_matrices=False)
    return w * (jnp.arange(d + 1) < jnp.sum(owned))[None, :]

  return u, jax.jit(jax.vmap(complement))(idx), sv


OWNED_TOL = 1e-8  # V_i's singular values^2 above 1 - this: a direction only row i's columns hold


class _BatchSearch:
  """The batched row search as three compiled functions, vmapped over rows, on the shared
  basis (`shared_basis`: U once, row i's complement W_i): `setup` (row i's r_0 and starts;
  signature (theta, x, u, w_i, i, key)), `advance` (Adam steps on l_i, `SEARCH_CHUNK` per call,
  the optimiser state carried between calls, so the chunks are the one `steps`-long descent)
  and `best` (each row's best start and its l_i). l_i(z) = 1 - (phi . r_0)^2 / ||f||^2 with
  ||f||^2 = ||phi||^2 - ||U^T phi||^2 + ||W_i^T U^T phi||^2. Call under `jax.enable_x64`."""

  def __init__(self, feature_fn: Callable, *, starts: int, steps: int, lr: float,
               radius: float):
    opt = optax.adam(optax.cosine_decay_schedule(lr, max(steps, 1), alpha=0.05))
    n_random = max(starts - 2, 0)

    def ell(u, w, r0, z):
      phi = jnp.asarray(feature_fn(z[None]), jnp.float64)[0]
      a = jnp.asarray(u.T @ phi.astype(u.dtype), jnp.float64)
      c = phi @ r0
      ff = phi @ phi - a @ a + jnp.sum((w.T @ a) ** 2)
      return 1.0 - c ** 2 / jnp.maximum(ff, 1e-300)

    def setup(theta, x, u, w, i, key):
      d = x.shape[1]
      a = u.T @ theta
      r0 = theta - u @ (a - w @ (w.T @ a))
      r0 = r0 / jnp.maximum(jnp.linalg.norm(r0), 1e-300)
      z0 = jnp.concatenate([x[i][None], -x[i][None],
                            jax.random.normal(key, (n_random, d), jnp.float64)])
      z0 = project(z0, radius)
      return r0, z0, opt.init(z0)

    def advance(u, w, r0, z, state, length):
      grad = jax.vmap(jax.value_and_grad(lambda zz: ell(u, w, r0, zz)))

      def body(carry, _):
        z, state = carry
        _, g = grad(z)
        upd, state = opt.update(g, state, z)
        return (project(z + upd, radius), state), None

      (z, state), _ = jax.lax.scan(body, (z, state), None, length=length)
      return z, state

    def all_values(u, w, r0, z):
      values = jax.vmap(lambda zz: ell(u, w, r0, zz))(z)
      return jnp.where(jnp.isfinite(values), values, jnp.inf)

    def best(u, w, r0, z):
      values = all_values(u, w, r0, z)
      k = jnp.argmin(values)
      return z[k], values[k]

    def keep_best(u, w, r0, z, state, keep):
      order = jnp.argsort(all_values(u, w, r0, z))[:keep]
      pick = lambda a: a[order] if a.ndim == 2 else a  # noqa: E731  (per start: z, Adam's moments)
      return z[order], jax.tree_util.tree_map(pick, state)

    self.steps = steps
    self.setup = jax.jit(jax.vmap(setup, in_axes=(None, None, None, 0, 0, 0)))
    self._advance = {}
    self._advance_fn = advance
    self.best = jax.jit(jax.vmap(best, in_axes=(None, 0, 0, 0)))
    self.keep_best = jax.jit(jax.vmap(keep_best, in_axes=(None, 0, 0, 0, 0, None)),
                             static_argnums=5)

  def advance(self, u, w, r0, z, state, length: int):
    if length not in self._advance:
      self._advance[length] = jax.jit(jax.vmap(
          lambda u_, w_, r_, z_, s_: self._advance_fn(u_, w_, r_, z_, s_, length),
          in_axes=(None, 0, 0, 0, 0)))
    return self._advance[length](u, w, r0, z, state)


def distinct(rows: np.ndarray, values: np.ndarray, threshold: float) -> list:
  """Indices of the found rows to place, best (lowest l_i) first, skipping any within relative
  distance `threshold` of an already taken one or of its mirror image (two slots that found
  the same sample: the other slot is searched again in the next round)."""
  taken = []
  for n in np.argsort(values, kind='stable'):
    z = rows[n]
    scale = max(float(np.linalg.norm(z)), 1e-300)
    if all(min(np.linalg.norm(z - rows[t]), np.linalg.norm(z + rows[t])) >= threshold * scale
           for t in taken):
      taken.append(int(n))
  return sorted(taken)


def row_search_batch(feature_fn: Callable, theta, x, rows: Sequence[int], key: Array, *,
                     starts: int, steps: int, lr: float, radius: float,
                     row_batch: Optional[int] = None, t0: Optional[float] = None,
                     prune: Sequence[Tuple[float, int]] = PRUNE,
                     basis_dtype: Any = jnp.float32) -> Tuple[np.ndarray, np.ndarray]:
  """`row_search` for every row in `rows`, all with the others held at the same X, vmapped
  over rows (`row_batch` per pass; default `row_batch_size`); row rows[n] draws its random
  starts with fold_in(key, n), as the one-row search of the n-th row would. Returns (rows
  (k, d), l_i (k,)). Logs a progress line after each pass, and every `LOG_SECONDS` within one
  (rows, Adam step, best l_i so far).

  `prune` ((fraction of steps, starts kept), ...): at each fraction every row keeps its best
  starts by l_i (successive halving; () keeps all, as `row_search` does). `basis_dtype`: the
  product U^T phi, the search's cost, in this dtype (the rest, and the returned l_i, float64).
  Call under `jax.enable_x64`."""
  t0 = time.time() if t0 is None else t0
  x = jnp.asarray(x, jnp.float64)
  m, d = x.shape
  theta = jnp.asarray(theta, jnp.float64).reshape(-1)
  feats = jnp.asarray(feature_fn(x), jnp.float64)
  jac = jnp.asarray(feature_fn.row_jacobian(x) if hasattr(feature_fn, 'row_jacobian') else
                    jax.vmap(jax.jacfwd(lambda z: feature_fn(z[None])[0]))(x), jnp.float64)
  u, w_all, _ = shared_basis(feats, jac)
  u_search = u.astype(basis_dtype)
  stages = sorted((int(f * steps), int(k)) for f, k in prune if 0 < f < 1 and k < starts)
  batch = row_batch or row_batch_size(int(feats.shape[1]), m, d, starts)
  search = _BatchSearch(feature_fn, starts=starts, steps=steps, lr=lr, radius=radius)
  rows = [int(i) for i in rows]
  found, values = [], []
  last = time.time()
  for start in range(0, len(rows), batch):
    part = rows[start:start + batch]
    keys = jnp.stack([jax.random.fold_in(key, n) for n in range(start, start + len(part))])
    w = w_all[jnp.asarray(part)]
    r0, z, state = search.setup(theta, x, u, w, jnp.asarray(part), keys)
    done, pending = 0, list(stages)
    while done < steps:
      if pending and done >= pending[0][0]:
        z, state = search.keep_best(u, w, r0, z, state, min(pending.pop(0)[1], z.shape[1]))
        continue
      length = min(SEARCH_CHUNK, steps - done, *(at - done for at, _ in pending[:1]))
      z, state = search.advance(u_search, w, r0, z, state, length)
      z = jax.block_until_ready(z)  # the clock below times the compute, not its dispatch
      done += length
      if done < steps and time.time() - last >= LOG_SECONDS:
        last = time.time()
        logging.info('precision rung: rows %d-%d of %d, Adam step %d of %d, best unexplained '
                     'share %.2e (%.0fs)', start + 1, start + len(part), len(rows), done, steps,
                     float(jnp.min(search.best(u, w, r0, z)[1])), last - t0)
    z, v = search.best(u, w, r0, z)
    del r0, state
    found.append(np.asarray(z))
    values.append(np.asarray(v))
    last = time.time()
    logging.info('precision rung: rows re-searched %d of %d (vmapped, %d per pass), best '
                 'unexplained share %.2e (%.0fs)', start + len(part), len(rows), batch,
                 float(np.min(values[-1])), time.time() - t0)
  return np.concatenate(found), np.concatenate(values)
