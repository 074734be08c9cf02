"""Over-parameterised candidates, cut to n: the rescue step 'cut' (`recon.attack.rescue.chain`).

A projection attack may optimise m > n candidates for n samples (`attack.n_candidates`). The
surplus rows give the descent room: a row that would sit at a poor local minimum for a sample
is joined by others, and the loss ‖P⊥_{Φ̂} θ*‖² / ‖θ*‖² falls faster in steps (photo patches at
n = 100: 200 candidates hold 88 rows after 16 000 steps of the bare descent where 100 hold
about 60, docs/random_features.md). But m > n rows cannot be certified (the certificate needs
the candidates locally unique, and its Jacobian grows with m), and every step costs m rows.

The cut keeps n rows, blind: with D_j = L_{-j} - L the leave-one-out gain of row j (the loss
without it minus the loss with it, one float64 Cholesky of the rows' Gram for all m:
`gains_from_gram`), it drops the `share` of the rows of smallest gain, recomputes the gains of the rest,
and repeats until n remain (a surplus row that duplicates a kept one has gain ≈ 0 only while
its twin is kept, so the rows go a few at a time, not all at once). The optimiser's state
follows the kept rows (every leaf shaped like the candidates, or ending in their shape, is
sliced; counts and schedules go on), so the descent continues on n rows at the step it had
reached, at half the cost per step for m = 2n.

It acts once: when the run stops (converged or out of budget), so the report and the
certificate see n rows, or earlier, after the first chunk that ends at or past step `at` > 0,
so that the last steps cost n rows. A run that had converged with m rows and is above tol with
n rows descends on while budget remains.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Optional, Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import scipy.linalg
from absl import logging

from recon.attack import optimiser as optimize
from recon.config import choices, sections
from recon.attack.rescue.step import Step

SHARE = 0.05  # rows dropped per round, as a share of the current rows (at least one)
JITTER = 1e-9  # the float64 ridge of the gains, relative to tr(G) / m
# The optimiser's state after the cut: 'kept', the kept rows' own (moments, counts); 'fresh', a
# new one at the learning rate the schedule had reached, decaying on from it.


def gains_from_gram(gram: np.ndarray, b: np.ndarray, tt: float,
                    jitter: float = JITTER) -> np.ndarray:
  """(m,) leave-one-out gains D_j = L_{-j} - L = α_j² / ((A⁻¹)_jj ‖θ‖²) of rows with Gram
  G = Φ̂Φ̂ᵀ and b = Φ̂θ, A = G + ε I (ε = jitter tr(G) / m), α = A⁻¹ b: the rank-one downdate of
  `recon.objectives.projection.removal_losses`, from G and b alone (float64, on the host)."""
  m = len(gram)
  a = gram + (jitter * np.trace(gram) / m + np.finfo(np.float64).tiny) * np.eye(m)
  factor = scipy.linalg.cho_factor(a, lower=True)
  alpha = scipy.linalg.cho_solve(factor, b)
  inv_diag = np.diag(scipy.linalg.cho_solve(factor, np.eye(m)))
  return alpha ** 2 / inv_diag / tt


def kept_rows(gram: np.ndarray, b: np.ndarray, tt: float, keep: int,
              share: float = SHARE) -> np.ndarray:
  """The indices (sorted) of the `keep` rows left after dropping, round by round,
  max(1, share x current) rows of smallest leave-one-out gain (`gains_from_gram` of the rows
  left; at most the surplus). At most `keep` rows: all of them."""
  rows = np.arange(len(gram))
  while len(rows) > keep:
    try:
      g = gains_from_gram(gram[np.ix_(rows, rows)], b[rows], tt)
    except np.linalg.LinAlgError:  # not positive definite in float64: rank by the diagonal
      g = np.diag(gram)[rows]
    g = np.where(np.isfinite(g), g, -np.inf)  # a row whose removal is undefined goes first
    k = min(len(rows) - keep, max(1, int(share * len(rows))))
    rows = np.delete(rows, np.argsort(g, kind='stable')[:k])
  return rows


def take_rows(tree: Any, shape: Sequence[int], rows: np.ndarray) -> Any:
  """Every leaf of `tree` whose trailing dimensions are `shape` (m, d), sliced to `rows` along
  the m axis (the candidates, Adam's moments, L-BFGS's (memory, m, d) pairs); other leaves
  (counts, learning rates) as they are."""
  shape, idx = tuple(shape), jnp.asarray(rows)
  k = len(shape)

  def cut(a):
    if np.ndim(a) >= k and tuple(np.shape(a)[-k:]) == shape:
      return jnp.take(a, idx, axis=np.ndim(a) - k)
    return a
  return jax.tree.map(cut, tree)


class CutStep(Step):
  """The rescue step 'cut' (module docstring): once, at step `at` > 0 or when the run stops, the
  candidates are cut to `keep` rows by leave-one-out gain (`system`: x -> (Gram, Φ̂θ, ‖θ‖²) in
  float64, `recon.attack.rescue.pursuit.Pursuit.gram_system`)."""

  def __init__(self, system: Callable[[np.ndarray], Tuple[np.ndarray, np.ndarray, float]],
               loss_fn: Callable, problem, settings: sections.Cut, *, keep: int, max_steps: int,
               optimizer: Optional[optax.GradientTransformation] = None,
               unit: Callable[[Any], Any] = lambda t: 1.0):
    """`settings`: the section attack.cut, whole."""
    at, state = settings.at, settings.state
    if keep < 1 or at < 0 or state not in choices.CUT_STATES:
      raise ValueError(f'cut: keep {keep} must be positive, at {at} non-negative, state '
                       f'{state!r} one of {", ".join(choices.CUT_STATES)}')
    if state == 'fresh' and optimizer is None:
      raise ValueError("cut: state 'fresh' needs the optimizer")
    self._optimizer, self._state, self._unit = optimizer, state, unit
    self._system, self._problem = system, problem
    self._loss = jax.jit(loss_fn)
    self._keep, self._at, self._max_steps = int(keep), int(at), int(max_steps)
    self.rows: Optional[list] = None  # the kept rows, once cut
    self.info: dict = {}
    self.chunk = None  # the bare chunk, set by `recon.attack.rescue.chain.Chain.wrap` (unused)

  def state_dict(self) -> dict:
    return {'rows': self.rows, 'info': self.info}

  def load_state_dict(self, saved: dict) -> None:
    self.rows = None if saved.get('rows') is None else [int(j) for j in saved['rows']]
    self.info = dict(saved.get('info') or {})

  def template(self, state: Any, saved: dict) -> Any:
    """The layout of a checkpoint written after the cut (`saved`: this step's state_dict):
    `state` cut to as many rows."""
    rows = saved.get('rows')
    return state if rows is None else take_rows(state, np.shape(state.x), np.arange(len(rows)))

  def summary(self) -> dict:
    return {'cut': self.info or None}

  def update(self, state: Any) -> Any:
    step, m = int(state.step), int(np.shape(state.x)[0])
    stopped = int(state.status) != optimize.RUNNING or step >= self._max_steps
    due = stopped or (self._at > 0 and step >= self._at)
    if self.rows is not None or m <= self._keep or not due:
      return state
    t0 = time.time()
    before = float(state.loss)
    rows = kept_rows(*self._system(np.asarray(state.x)), self._keep)
    out = take_rows(state, np.shape(state.x), rows)
    if self._state == 'fresh':  # Adam's moments restart; the lr goes on from where it was
      lr = optimize.learning_rate_now(state.opt_state, self._unit)
      opt_state = self._optimizer.init(out.x)
      out = out._replace(opt_state=opt_state if lr is None else
                         optimize.set_learning_rate(opt_state, lr, self._unit))
    loss = self._loss(out.x, self._problem).astype(state.loss.dtype)
    status = state.status
    if step < self._max_steps and int(status) != optimize.NONFINITE:
      status = jnp.asarray(optimize.RUNNING, jnp.int32)  # the n rows descend on
    out = out._replace(loss=loss, status=status)
    self.rows = [int(j) for j in rows]
    self.info = {'step': step, 'from': m, 'to': len(rows), 'loss_before': before,
                 'loss_after': float(loss), 'seconds': round(time.time() - t0, 2)}
    logging.info('step %d: cut %d candidates to %d by leave-one-out gain: loss %.2e -> %.2e '
                 '(%.1fs)', step, m, len(rows), before, float(loss), time.time() - t0)
    return out
