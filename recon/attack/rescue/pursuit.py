"""Residual pursuit: re-place the rows a run cannot pin where the unexplained part of θ points.

A projection attack that stalls at a loss L > tol with most rows on their samples has a few
candidates in wrong basins. Two blind signals find and re-place them:

* **Which rows** (`stuck_rows`): the certificate's per-row pin radii s_i
  (`recon.certify.certificate.row_radii`, from the candidates and θ only). A row on its sample is pinned
  to s_i ~ √L · scale_i; a stuck row is barely constrained, its radius orders of magnitude above
  the others'. Sorted in decreasing order over the top quarter of the rows (plus one), the
  largest ratio between neighbours s_(k) / s_(k+1) splits them: the k rows above it are stuck
  when that ratio is at least `min_gap`, else none is. (The leave-one-out rule of
  `recon.attack.rescue.escalate` looks at each row's share of the loss, where a near miss looks like a right
  row: measured at n = 100, d = 16, p = 4·dn, relu_tanh, on a tuning seed, the radii singled out
  exactly the 5 unrecovered rows with a 14x gap, leave-one-out one row per plateau.)
  Where the dense residual Jacobian the radii need does not fit (p·m·d above
  `recon.certify.certificate.MAX_JACOBIAN_ENTRIES`), the rows are the dead ones (`dead_rows`): a
  candidate's leave-one-out gain D_j = L_{-j} − L (`recon.objectives.projection.removal_losses`,
  one Cholesky) is the part of θ only it explains; a candidate far from every sample explains
  ~none of it, D_j ≤ `dead_ratio` × the median gain. (Photo patches, n = 100, d = 48,
  p = 10·dn, shadow seed 1000, after 20 000 steps: the 43 rows at D_j ≤ 0.1 × median were all
  wrong, of 48 wrong; the wrong rows' median gain 0.006 × the median, the right ones' 8 ×.)
* **Where to** (`place`): with the stuck rows removed, Φ_k = Φ(X_kept) and the residual
  r = P⊥ θ off the row span of Φ_k, the loss with one new row z is
      L(X_kept ∪ {z}) = (‖r‖² − (φ(z)ᵀ r)² / ‖P⊥ φ(z)‖²) / ‖θ‖²,
  so the best single row maximises the explained share (φ(z)ᵀ r)² / (‖P⊥ φ(z)‖² ‖r‖²): a
  search in d dimensions that costs one feature vector per start, run by Adam on the √d-sphere
  from `starts` random points at once (vmapped). The rows are placed one after another (each
  into the kept set before the next), the matching-pursuit order.

Used by the escalation (`recon.attack.rescue.escalate.Escalator`, `attack.escalate.pursuit`) as one more
trial beside the mirror and random proposals: kept only if its trial lowers the loss enough.
"""
from __future__ import annotations

import functools
import time
from typing import Callable, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from recon.certify import certificate
from recon.attack import optimiser as optimize
from recon.config import choices, sections
from recon.objectives import projection
from recon.attack.rescue.step import Step

# Feature entries (starts x p) a pursuit step may hold; fewer starts above it.
MAX_PURSUIT_ENTRIES = 1 << 26
DEAD_RATIO = 0.1  # `dead_rows`: leave-one-out gain at most this x the median gain
PLACE_LOG_SECONDS = 10.0  # `place`: a progress line at most this often
ROUND_FINAL_RATIO = 0.05  # `PursuitStep`: the learning rate at a round's end, x its start


def stuck_rows(radii, min_gap: float = 4.0, max_share: float = 0.25) -> np.ndarray:
  """The rows above the largest ratio gap of the sorted radii (module docstring), most
  loosely pinned first; empty when that gap is below `min_gap` or a radius is not finite."""
  radii = np.asarray(radii, np.float64)
  m = len(radii)
  if m < 2 or not np.all(np.isfinite(radii)):
    return np.zeros(0, np.int64)
  order = np.argsort(-radii, kind='stable')
  top = radii[order][: max(2, int(max_share * m) + 1)]
  gaps = top[:-1] / np.maximum(top[1:], 1e-300)
  k = int(np.argmax(gaps)) + 1
  return order[:k] if gaps[k - 1] >= min_gap else np.zeros(0, np.int64)


def dead_rows(gains, ratio: float = DEAD_RATIO) -> np.ndarray:
  """The rows whose leave-one-out gain is at most `ratio` x the median gain (module docstring),
  weakest first; empty when a gain is not finite or the median is not positive."""
  gains = np.asarray(gains, np.float64)
  med = float(np.median(gains)) if gains.size else 0.0
  if gains.size < 2 or not np.all(np.isfinite(gains)) or not med > 0.0:
    return np.zeros(0, np.int64)
  order = np.argsort(gains, kind='stable')
  return order[gains[order] <= ratio * med]


def _sphere(z, radius):
  return z / jnp.maximum(jnp.linalg.norm(z, axis=-1, keepdims=True), 1e-30) * radius




def start_factor(x_kept, start_points: str) -> jax.Array:
  """L with the search's starts z = L g / |L g| · √d, g ~ N(0, I): I for 'sphere' (uniform on
  the sphere); for 'rows' the Cholesky factor of the kept rows' second moment
  M = X_keptᵀ X_kept / k + 1e-4 · tr(M) / d · I, so the starts lie where the candidates do
  (photo patches hold 93% of their energy in 5 of 48 directions, which uniform starts miss)."""
  x_kept = jnp.asarray(x_kept)
  d = x_kept.shape[-1]
  if start_points == 'sphere':
    return jnp.eye(d, dtype=x_kept.dtype)
  if start_points != 'rows':
    raise ValueError(f'start_points {start_points!r}; accepted: {", ".join(choices.START_POINTS)}')
  moment = x_kept.T @ x_kept / max(1, x_kept.shape[0])
  return jnp.linalg.cholesky(moment + 1e-4 * jnp.trace(moment) / d * jnp.eye(d, dtype=moment.dtype))


@functools.partial(jax.jit, static_argnames=('feature_one', 'd', 'starts', 'steps'))
def search_row(feature_one: Callable, q, residual, key, radius, *, d: int, starts: int = 512,
               steps: int = 300, lr: float = 0.05, factor=None):
  """(z, share): the point of the √d-sphere whose feature vector, off the span of q's columns,
  explains the largest share of `residual` (module docstring), best of `starts` Adam runs from
  z = factor g / |factor g| · √d, g ~ N(0, I) (`start_factor`; None: uniform on the sphere)."""
  r2 = jnp.sum(residual ** 2)

  def neg_share(z):
    f = feature_one(z)
    fp = f - q @ (q.T @ f)
    return -(jnp.dot(fp, residual) ** 2) / (jnp.sum(fp ** 2) * r2 + 1e-30)

  opt = optax.adam(lr)
  z0 = jax.random.normal(key, (starts, d), residual.dtype)
  z0 = _sphere(z0 if factor is None else z0 @ jnp.asarray(factor, z0.dtype).T, radius)

  def step(carry, _):
    z, s = carry
    g = jax.vmap(jax.grad(neg_share))(z)
    u, s = opt.update(g, s, z)
    return (_sphere(optax.apply_updates(z, u), radius), s), None

  (z, _), _ = jax.lax.scan(step, (z0, opt.init(z0)), None, length=steps)
  scores = jax.vmap(neg_share)(z)
  best = jnp.argmin(scores)
  return z[best], -scores[best]


def place(feature_fn: Callable, theta, x, rows, key, radius: float, *, starts: int = 512,
          steps: int = 300, start_points: str = 'sphere') -> Tuple[np.ndarray, list]:
  """x with each of `rows` re-placed in turn by `search_row` against the residual of the rows
  kept so far, its starts by `start_points` (`start_factor` of the rows not re-placed);
  (new x, the explained share of each placement)."""
  x = jnp.asarray(x)
  m, d = x.shape
  theta = jnp.asarray(theta, x.dtype).reshape(-1)
  rows = [int(j) for j in rows]
  kept = [i for i in range(m) if i not in set(rows)]
  starts = int(max(8, min(starts, MAX_PURSUIT_ENTRIES // max(1, theta.shape[0]))))
  feature_one = _FeatureOne(feature_fn)
  factor = (None if start_points == 'sphere' else
            start_factor(x[jnp.asarray(kept, jnp.int32)], start_points))
  shares = []
  t0 = last = time.time()
  for i, j in enumerate(rows):
    if i and time.time() - last >= PLACE_LOG_SECONDS:
      last = time.time()
      logging.info('residual pursuit: %d of %d rows placed (%.0fs)', i, len(rows), last - t0)
    phi = jnp.asarray(feature_fn(x[jnp.asarray(kept)]), x.dtype)  # (k, p)
    q, _ = jnp.linalg.qr(phi.T)
    q = jnp.pad(q, ((0, 0), (0, m - q.shape[1])))  # (p, m): one compiled search for all rows
    residual = theta - q @ (q.T @ theta)
    z, share = search_row(feature_one, q, residual, jax.random.fold_in(key, i),
                          jnp.asarray(radius, x.dtype), d=d, starts=starts, steps=steps,
                          factor=factor)
    x = x.at[j].set(z.astype(x.dtype))
    kept.append(j)
    shares.append(float(share))
  return np.asarray(x), shares


class _FeatureOne:
  """z -> φ(z) (p,) of a feature map; hashable by the map's identity (a static jit argument)."""

  def __init__(self, feature_fn: Callable):
    self._f = feature_fn

  def __call__(self, z):
    return self._f(z[None])[0]

  def __hash__(self):
    return id(self._f)

  def __eq__(self, other):
    return isinstance(other, _FeatureOne) and other._f is self._f


class Pursuit:
  """`(x, loss) -> (x_new, rows) | None` for the escalation: the stuck rows by their pin radii
  (`stuck_rows`) where the dense residual Jacobian they need fits
  (`certificate.MAX_JACOBIAN_ENTRIES`), else the dead rows by leave-one-out gain (`dead_rows`),
  re-placed by `place` (`starts` Adam runs of `steps` per row); None when no row is singled out."""

  def __init__(self, feature_fn: Callable, theta, *, radius: float, tol: float, key,
               min_gap: float = 4.0, starts: int = 512, steps: int = 300,
               dead_ratio: float = DEAD_RATIO, start_points: str = 'sphere'):
    if start_points not in choices.START_POINTS:
      raise ValueError(f'start_points {start_points!r}; accepted: {", ".join(choices.START_POINTS)}')
    self._feature_fn, self._theta = feature_fn, np.asarray(theta).reshape(-1)
    self._start_points = start_points
    self._radius, self._tol, self._key = float(radius), float(tol), key
    self._min_gap, self._starts, self._steps = min_gap, starts, steps
    self._dead_ratio = dead_ratio
    self.calls = 0
    self.rule = None  # 'pin radius' | 'leave-one-out gain': how the last call chose its rows

  def with_search(self, *, starts: int, steps: int, dead_ratio: float,
                  start_points: str = 'sphere') -> 'Pursuit':
    """This pursuit (its features, θ, key) with another search and dead-row ratio."""
    return Pursuit(self._feature_fn, self._theta, radius=self._radius, tol=self._tol,
                   key=self._key, min_gap=self._min_gap, starts=starts, steps=steps,
                   dead_ratio=dead_ratio, start_points=start_points)

  def rows(self, x, loss: float) -> np.ndarray:
    """The rows to re-place (class docstring); sets `rule`."""
    m, d = x.shape
    if self._theta.shape[0] * m * d <= certificate.MAX_JACOBIAN_ENTRIES:
      self.rule = 'pin radius'
      radii = certificate.row_radii(self._feature_fn, x, self._theta, float(loss), self._tol)
      return stuck_rows(radii, self._min_gap)
    self.rule = 'leave-one-out gain'
    return dead_rows(self.gains(x), self._dead_ratio)

  def gains(self, x) -> np.ndarray:
    """Every row's leave-one-out gain D_j = L_{-j} - L (m,), one Cholesky."""
    phi = jnp.asarray(self._feature_fn(jnp.asarray(x)))
    theta = jnp.asarray(self._theta, phi.dtype)
    return (np.asarray(projection.removal_losses(phi, theta), np.float64)
            - float(projection.projection_loss(phi, theta)))

  def gram_system(self, x) -> Tuple[np.ndarray, np.ndarray, float]:
    """(G = Φ̂Φ̂ᵀ, b = Φ̂θ, ‖θ‖²) of the rows x in float64 on the host (`recon.attack.rescue.cut`)."""
    phi = np.asarray(self._feature_fn(jnp.asarray(x)), np.float64)
    theta = np.asarray(self._theta, np.float64)
    return phi @ phi.T, phi @ theta, float(theta @ theta)

  def place_rows(self, x, rows, salt: int) -> np.ndarray:
    """x with `rows` re-placed by `place` (this pursuit's search; its key folded with `salt`)."""
    x_new, _ = place(self._feature_fn, self._theta, np.asarray(x), rows,
                     jax.random.fold_in(self._key, salt), self._radius, starts=self._starts,
                     steps=self._steps, start_points=self._start_points)
    return x_new

  def __call__(self, x, loss: float) -> Optional[Tuple[np.ndarray, np.ndarray]]:
    x = np.asarray(x)
    rows = self.rows(x, loss)
    if not len(rows):
      return None
    self.calls += 1
    t0 = time.time()
    x_new, _ = place(self._feature_fn, self._theta, x, rows,
                     jax.random.fold_in(self._key, self.calls), self._radius,
                     starts=self._starts, steps=self._steps, start_points=self._start_points)
    logging.info('residual pursuit: %d row(s) by %s re-placed (%.0fs)', len(rows), self.rule,
                 time.time() - t0)
    return x_new, rows

  def batch(self, x, loss: float) -> Optional[Tuple[jax.Array, jax.Array]]:
    """The escalation's form: x (1, m, d) -> (x_new (1, m, d), re-placed rows (1, m) bool)."""
    out = self(np.asarray(x)[0], loss)
    if out is None:
      return None
    mask = np.zeros((1, x.shape[1]), bool)
    mask[0, np.asarray(out[1], int)] = True
    return jnp.asarray(out[0], x.dtype)[None], jnp.asarray(mask)


class PursuitStep(Step):
  """The rescue step 'pursue' (`recon.attack.rescue.chain`): every `every` steps from step `start`, the
  rows `Pursuit.rows` singles out are re-placed by `place`, and the new set is kept when its
  loss is below the current one on the spot: no trial. (Placing a row where the residual
  points lowers the loss at once by its explained share, while a dead row's removal raises
  it by its gain D_j ~ 0; the gain shows on the spot, and a 500-step trial of the escalation
  does not show what the next thousands of steps make of it.) With `lr` > 0 and the attack's
  `optimizer`, a kept round starts the optimiser afresh (`optimizer.init`: Adam's bias
  correction restarts with its moments; zeroing the re-placed rows' moments alone under a
  count of thousands moves them by ~3-6 x lr per coordinate for hundreds of steps, which raised
  the loss after every round on photo patches) and the step owns the learning rate from then
  on: a cosine from `lr` down to ROUND_FINAL_RATIO x `lr` over the `every` steps after each
  kept round (a warm restart per round), set after every chunk (`optimize.set_learning_rate`,
  through the optimiser's own schedule `unit`). Otherwise only the re-placed rows' state is
  zeroed (`optimize.reset_rows`). No round from step `stop` on (0: rounds to the end).
  One run only."""

  def __init__(self, pursuit: Pursuit, loss_fn: Callable, problem, settings: sections.Pursue, *,
               unit: Callable = lambda t: 1.0,
               optimizer: Optional[optax.GradientTransformation] = None):
    """`pursuit`: the run's residual pursuit, searched as `settings` (the section
    attack.pursue, whole) say."""
    self._pursuit = pursuit.with_search(starts=settings.starts, steps=settings.steps,
                                        dead_ratio=settings.dead_ratio,
                                        start_points=settings.start_points)
    self._problem, self._optimizer = problem, optimizer
    self._stop = int(settings.stop)  # no round from this step on (0: none)
    self._lr, self._unit = float(settings.lr), unit
    self._every, self._next = int(settings.every), int(settings.start)
    self._loss = jax.jit(loss_fn)
    self.rounds = self.kept = self.rows_placed = 0
    self._round_start = None  # the step of the last kept round
    self.seconds = 0.0
    self.chunk = None  # set by `recon.attack.rescue.chain.Chain.wrap`; the step runs no trials

  def state_dict(self) -> dict:
    return {'next': self._next, 'rounds': self.rounds, 'kept': self.kept,
            'rows_placed': self.rows_placed, 'calls': self._pursuit.calls,
            'round_start': self._round_start}

  def load_state_dict(self, saved: dict) -> None:
    self._next, self.rounds, self.kept = int(saved['next']), int(saved['rounds']), int(
        saved['kept'])
    self.rows_placed, self._pursuit.calls = int(saved['rows_placed']), int(saved['calls'])
    start = saved.get('round_start')
    self._round_start = None if start is None else int(start)

  def learning_rate(self, step: int) -> Optional[float]:
    """The learning rate the step sets at `step`: None before its first kept round (or with
    lr 0), else lr (r + (1 - r)(1 + cos(pi min(u, 1)))/2), u = (step - round start) / every,
    r = ROUND_FINAL_RATIO."""
    if self._lr <= 0 or self._round_start is None:
      return None
    u = min(max(step - self._round_start, 0) / self._every, 1.0)
    r = ROUND_FINAL_RATIO
    return self._lr * (r + (1 - r) * 0.5 * (1 + np.cos(np.pi * u)))

  def _scheduled(self, state):
    lr = self.learning_rate(int(state.step))
    if lr is None:
      return state
    return state._replace(opt_state=optimize.set_learning_rate(state.opt_state, lr, self._unit))

  def summary(self) -> dict:
    return {'pursuit_rounds': self.rounds, 'pursuit_rounds_kept': self.kept,
            'pursuit_rows_placed': self.rows_placed}

  def update(self, state):
    step = int(state.step)
    if int(state.status) != optimize.RUNNING:
      return state
    if step < self._next or 0 < self._stop <= step:
      return self._scheduled(state)
    self._next = step + self._every
    t0, current = time.time(), float(state.loss)
    out = self._pursuit(np.asarray(state.x), current)
    self.rounds += 1
    if out is None:
      logging.info('step %d: residual pursuit finds no row to re-place (%s)', step,
                   self._pursuit.rule)
      return self._scheduled(state)
    x_new, rows = out
    x_new = jnp.asarray(x_new, state.x.dtype)
    new = float(self._loss(x_new, self._problem))
    self.seconds += time.time() - t0
    if not new < current:
      logging.info('step %d: residual pursuit re-placed %d row(s) by %s: loss %.2e -> %.2e, '
                   'not kept (%.0fs)', step, len(rows), self._pursuit.rule, current, new,
                   time.time() - t0)
      return self._scheduled(state)
    self.kept += 1
    self.rows_placed += len(rows)
    logging.info('step %d: residual pursuit re-placed %d row(s) by %s: loss %.2e -> %.2e, '
                 'kept (%.0fs)', step, len(rows), self._pursuit.rule, current, new,
                 time.time() - t0)
    mask = np.zeros(state.x.shape[0], bool)
    mask[np.asarray(rows, int)] = True
    self._round_start = step
    opt_state = (optimize.reset_rows(state.opt_state, state.x, jnp.asarray(mask))
                 if self._optimizer is None or self._lr <= 0 else self._optimizer.init(x_new))
    return self._scheduled(state._replace(x=x_new, loss=jnp.asarray(new, state.loss.dtype),
                                          opt_state=opt_state))
