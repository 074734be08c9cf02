"""Escalation when the projection-loss descent is stuck: blind, from the loss alone.

A known way the attack stalls above the threshold: every candidate but one has found
its training sample, and the last one sits in a poor local minimum, for relu often
near the *mirror image* -x of its sample (relu(z) = |z|/2 + z/2 only sees the sign
through its linear part). The loss then plateaus at 1e-4 instead of reaching `tol`.

Detection and repair use only the candidates and the loss, never the ground truth:

  plateau:  at a check, L > tol and L > `plateau_ratio` * (L one `window` of steps ago),
            and no escalation within the last `window` steps;
  weakest:  the candidate whose removal raises the loss least,
                j* = argmin_j L(X with x_j := x_{j+1})   (a duplicate adds nothing to
            the span, so this is the leave-one-out loss);
  trials:   x_j* := -x_j* (its mirror image) and x_j* := the best of `n_proposals`
            random points (`refine.best_replacement`); each is optimised for
            `trial_steps` from a fresh optimiser state;
  accept:   the best trial if its loss is below `accept_ratio` * L; its steps count
            towards the budget. Otherwise the run continues from where it was.

Its state (trace of checked losses, last escalation, key, counters) is `state_dict()`,
saved with the run's checkpoints, so a resumed run escalates exactly as an unbroken one.
"""
from __future__ import annotations

from typing import Any, Callable, List, Tuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from recon import optimize, refine

Array = jax.Array


def leave_one_out_losses(x: Array, loss_fn: Callable[[Array, Any], Array], problem: Any) -> Array:
  """(m,) L(X with row j replaced by row j+1): the loss without candidate j's contribution."""
  m = x.shape[0]
  def one(j):
    return loss_fn(x.at[j].set(x[(j + 1) % m]), problem)
  losses = jax.lax.map(one, jnp.arange(m))
  return jnp.where(jnp.isfinite(losses), losses, jnp.inf)


class Escalator:
  """Wraps a compiled chunk `chunk(state, stop) -> state`; see the module docstring."""

  def __init__(self, key: Array, loss_fn: Callable[[Array, Any], Array], problem: Any,
               constraint: Callable[[Array], Array], optimizer: optax.GradientTransformation, *,
               tol: float, every: int = 500, window: int = 3000, plateau_ratio: float = 0.9,
               trial_steps: int = 500, accept_ratio: float = 0.5, n_proposals: int = 64):
    self._key = key
    self._problem = problem
    self._optimizer = optimizer
    self._tol = tol
    self._every = every
    self._window = window
    self._plateau_ratio = plateau_ratio
    self._trial_steps = trial_steps
    self._accept_ratio = accept_ratio
    self._next = every
    self._trace: List[Tuple[int, float]] = []
    self._last = -window
    self.tried = 0
    self.accepted = 0
    self.chunk = None  # the compiled chunk, set by the driver before the run
    self._loo = jax.jit(lambda x, prob: leave_one_out_losses(x, loss_fn, prob))
    self._replace = jax.jit(lambda k, x, j, prob: refine.best_replacement(
        k, x, j, loss_fn, prob, constraint, n_proposals))
    self._loss = jax.jit(loss_fn)
    self._constraint = constraint

  def state_dict(self) -> dict:
    key = self._key
    if jax.dtypes.issubdtype(getattr(key, 'dtype', None), jax.dtypes.prng_key):
      key = jax.random.key_data(key)
    return {'key': np.asarray(key).tolist(), 'next': int(self._next), 'last': int(self._last),
            'trace': [[int(s), float(v)] for s, v in self._trace],
            'tried': self.tried, 'accepted': self.accepted}

  def load_state_dict(self, saved: dict) -> None:
    raw = jnp.asarray(np.asarray(saved['key'], np.uint32))
    if jax.dtypes.issubdtype(getattr(self._key, 'dtype', None), jax.dtypes.prng_key):
      raw = jax.random.wrap_key_data(raw)
    self._key = raw
    self._next, self._last = int(saved['next']), int(saved['last'])
    self._trace = [(int(s), float(v)) for s, v in saved['trace']]
    self.tried, self.accepted = int(saved['tried']), int(saved['accepted'])

  def summary(self) -> dict:
    return {'escalations_tried': self.tried, 'escalations_accepted': self.accepted}

  def _plateau(self, step: int, loss: float) -> bool:
    if not loss > self._tol or step - self._last < self._window:
      return False
    past = [v for s, v in self._trace if s <= step - self._window]
    return bool(past) and loss > self._plateau_ratio * past[-1]

  def __call__(self, state: optimize.ReconState) -> optimize.ReconState:
    step = int(state.step)
    if step < self._next or int(state.status) != optimize.RUNNING:
      return state
    self._next = step + self._every
    loss = float(state.loss)
    plateau = self._plateau(step, loss)
    self._trace.append((step, loss))
    self._trace = [(s, v) for s, v in self._trace if s >= step - 2 * self._window]
    if not plateau:
      return state
    self._last = step
    self.tried += 1
    j = int(np.argmin(np.asarray(self._loo(state.x, self._problem))))
    self._key, sub = jax.random.split(self._key)
    z_rand, _ = self._replace(sub, state.x, jnp.asarray(j), self._problem)
    best = None
    for name, z in (('mirror', self._constraint(-state.x[j][None])[0]), ('random', z_rand)):
      x = state.x.at[j].set(z)
      trial = state._replace(x=x, opt_state=self._optimizer.init(x),
                             loss=self._loss(x, self._problem).astype(state.loss.dtype))
      trial = self.chunk(trial, step + self._trial_steps)
      if int(trial.status) != optimize.NONFINITE and (best is None or
                                                     float(trial.loss) < float(best[1].loss)):
        best = (name, trial)
    if best is not None and float(best[1].loss) < self._accept_ratio * loss:
      self.accepted += 1
      logging.info('step %d: loss plateau at %.2e; candidate %d (the weakest by leave-one-out '
                   'loss) replaced by its %s proposal: %.2e after %d trial steps', step, loss, j,
                   best[0], float(best[1].loss), self._trial_steps)
      self._next = int(best[1].step) + self._every
      return best[1]
    logging.info('step %d: loss plateau at %.2e; replacing candidate %d (weakest by '
                 'leave-one-out loss) did not help (best trial %.2e); continuing', step, loss, j,
                 float('nan') if best is None else float(best[1].loss))
    return state
