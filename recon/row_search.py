"""The precision rung's row re-search (step 2 of `recon.polish`): a free row searched with the
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
function vmapped over rows: row i's held basis is the span of every row's features and
Jacobians with row i's columns zeroed (the span `held_basis` gives for the others; the SVD
rank cut zeroes basis columns instead of dropping them, so shapes are static), and its random
starts are drawn with the key the one-row search would use, so each row's result equals
`row_search`'s from the same X. `row_batch` rows per pass (memory: each holds a p x m (d + 1)
float64 basis), a progress line after each pass and, inside a long pass, every
`LOG_SECONDS` (the Adam steps run `SEARCH_CHUNK` per compiled call, the state carried over). `distinct` picks, among found rows, those to
place when several slots found the same sample. Call everything under `jax.enable_x64`.
"""
from __future__ import annotations

import time
from typing import Callable, Optional, Sequence, Tuple

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


def row_batch_size(p: int, m: int, d: int, budget: float = ROW_BATCH_BYTES) -> int:
  """Rows per vmapped search pass: each holds a p x m (d + 1) float64 basis and its SVD's
  work arrays (~4 copies)."""
  return max(1, int(budget // (4 * 8 * p * m * (d + 1))))


SEARCH_CHUNK = 100  # Adam steps per compiled call of the batched search (progress between)
LOG_SECONDS = 10.0  # a progress line inside a pass at most this often


class _BatchSearch:
  """The batched row search as three compiled functions, each vmapped over rows: `setup`
  (row i's held basis Q, r_0 and the starts; signature (theta, x, feats (m, p), jac (m, p, d),
  rows (k,), keys (k,))), `advance` (Adam steps on l_i, `SEARCH_CHUNK` per call, the optimiser
  state carried between calls, so the chunks are the one `steps`-long descent) and `best`
  (each row's best start and its l_i). Call under `jax.enable_x64`."""

  def __init__(self, feature_fn: Callable, *, starts: int, steps: int, lr: float,
               radius: float, rtol: float = 1e-10):
    opt = optax.adam(optax.cosine_decay_schedule(lr, max(steps, 1), alpha=0.05))
    n_random = max(starts - 2, 0)

    def setup(theta, x, feats, jac, i, key):
      m, d = x.shape
      keep = (jnp.arange(m) != i).astype(x.dtype)
      cols = jnp.concatenate([(feats * keep[:, None]).T,
                              jnp.transpose(jac * keep[:, None, None], (1, 0, 2))
                              .reshape(feats.shape[1], -1)], axis=1)
      u, sv, _ = jnp.linalg.svd(cols, full_matrices=False)
      q = u * (sv > rtol * sv[0])[None, :]  # the held basis; cut columns zeroed
      r0 = theta - q @ (q.T @ theta)
      r0 = r0 / jnp.maximum(jnp.linalg.norm(r0), 1e-300)
      z0 = jnp.concatenate([x[i][None], -x[i][None],
                            jax.random.normal(key, (n_random, d), jnp.float64)])
      z0 = project(z0, radius)
      return q, r0, z0, opt.init(z0)

    def advance(q, r0, z, state, length):
      grad = jax.vmap(jax.value_and_grad(lambda zz: _ell(feature_fn, q, r0, zz)))

      def body(carry, _):
        z, state = carry
        _, g = grad(z)
        upd, state = opt.update(g, state, z)
        return (project(z + upd, radius), state), None

      (z, state), _ = jax.lax.scan(body, (z, state), None, length=length)
      return z, state

    def best(q, r0, z):
      values = jax.vmap(lambda zz: _ell(feature_fn, q, r0, zz))(z)
      values = jnp.where(jnp.isfinite(values), values, jnp.inf)
      k = jnp.argmin(values)
      return z[k], values[k]

    self.steps = steps
    self.setup = jax.jit(jax.vmap(setup, in_axes=(None, None, None, None, 0, 0)))
    self._advance = {}
    self._advance_fn = advance
    self.best = jax.jit(jax.vmap(best))

  def advance(self, q, r0, z, state, length: int):
    if length not in self._advance:
      self._advance[length] = jax.jit(jax.vmap(
          lambda q_, r_, z_, s_: self._advance_fn(q_, r_, z_, s_, length)))
    return self._advance[length](q, r0, z, state)


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
                     row_batch: Optional[int] = None, t0: Optional[float] = None
                     ) -> Tuple[np.ndarray, np.ndarray]:
  """`row_search` for every row in `rows`, all with the others held at the same X, vmapped
  over rows (`row_batch` per pass; default `row_batch_size`); row rows[n] draws its random
  starts with fold_in(key, n), as the one-row search of the n-th row would. Returns (rows
  (k, d), l_i (k,)). Logs a progress line after each pass, and every `LOG_SECONDS` within one
(rows, Adam step, best l_i so far). Call under `jax.enable_x64`."""
  t0 = time.time() if t0 is None else t0
  x = jnp.asarray(x, jnp.float64)
  m, d = x.shape
  theta = jnp.asarray(theta, jnp.float64).reshape(-1)
  feats = jnp.asarray(feature_fn(x), jnp.float64)
  jac = jnp.asarray(feature_fn.row_jacobian(x) if hasattr(feature_fn, 'row_jacobian') else
                    jax.vmap(jax.jacfwd(lambda z: feature_fn(z[None])[0]))(x), jnp.float64)
  batch = row_batch or row_batch_size(int(feats.shape[1]), m, d)
  search = _BatchSearch(feature_fn, starts=starts, steps=steps, lr=lr, radius=radius)
  rows = [int(i) for i in rows]
  found, values = [], []
  last = time.time()
  for start in range(0, len(rows), batch):
    part = rows[start:start + batch]
    keys = jnp.stack([jax.random.fold_in(key, n) for n in range(start, start + len(part))])
    q, r0, z, state = search.setup(theta, x, feats, jac, jnp.asarray(part), keys)
    done = 0
    while done < steps:
      length = min(SEARCH_CHUNK, steps - done)
      z, state = search.advance(q, r0, z, state, length)
      z = jax.block_until_ready(z)  # the clock below times the compute, not its dispatch
      done += length
      if done < steps and time.time() - last >= LOG_SECONDS:
        last = time.time()
        logging.info('precision rung: rows %d-%d of %d, Adam step %d of %d, best unexplained '
                     'share %.2e (%.0fs)', start + 1, start + len(part), len(rows), done, steps,
                     float(jnp.min(search.best(q, r0, z)[1])), last - t0)
    z, v = search.best(q, r0, z)
    del q, r0, state
    found.append(np.asarray(z))
    values.append(np.asarray(v))
    last = time.time()
    logging.info('precision rung: rows re-searched %d of %d (vmapped, %d per pass), best '
                 'unexplained share %.2e (%.0fs)', start + len(part), len(rows), batch,
                 float(np.min(values[-1])), time.time() - t0)
  return np.concatenate(found), np.concatenate(values)
