"""Blind refinements of a running reconstruction: re-seeding collapsed candidates.

Known failure of projection-loss descent: two candidates converge onto the same
training sample (the second one adds almost nothing to the span of Phi_hat) while
another sample stays uncovered, and the loss stalls. Detection and repair use only
the candidates and the loss, never the ground truth:

  collapsed: candidate j has an earlier candidate i with cos(x_i, x_j) > threshold;
  re-seed:   x_j <- argmin_{z in Z} L(X with x_j := z), Z = `n_proposals` fresh N(0, I)
             points projected by the constraint (the proposal that best explains what
             the others leave unexplained of theta); accepted only if that loss is at
             most `accept_ratio` times the current loss (two candidates that sit on two
             genuinely close samples are left alone: replacing one raises the loss).
After a re-seed the optimiser state is re-initialised. The re-seeder's own state
(its PRNG key, the next check's step, the counters) is `state_dict()`: a run's
checkpoints carry it, so a resumed run re-seeds exactly as an unbroken one.
"""
from __future__ import annotations

from typing import Any, Callable, NamedTuple, Optional

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from recon.attack import optimiser as optimize
from recon.config import sections
from recon.attack.rescue.step import Step

Array = jax.Array


def collapsed(x: Array, threshold: float) -> Array:
  """(m,) bool: x_j has an earlier row x_i (i < j) with cosine similarity > threshold."""
  chex.assert_rank(x, 2)
  xn = x / jnp.maximum(jnp.linalg.norm(x, axis=1, keepdims=True), jnp.finfo(x.dtype).tiny)
  cos = xn @ xn.T
  earlier = jnp.triu(jnp.ones(cos.shape, bool), k=1)  # [i, j] with i < j
  return jnp.any((cos > threshold) & earlier, axis=0)


# jaxlib versions whose CPU runtime deadlocks on the proposals' batched form now and then: every
# thread idle, the call never returns (measured on jaxlib 0.10.2 at (m, p) = (32, 1 024):
# hung by the second call; 0.12 ran every try; docs/reliability.md).
CPU_BATCH_DEADLOCK_BELOW = (0, 12)


def proposal_batch(k: int, limit: int, backend: Optional[str] = None,
                   jaxlib_version: Optional[str] = None) -> int:
  """Slots per vmapped batch when ranking proposals for k slots: min(limit, k), or 1 (one slot
  after another, a loop the runtime does not deadlock on) on the CPU backend of a jaxlib older than
  CPU_BATCH_DEADLOCK_BELOW. Defaults: jax.default_backend() and the installed jaxlib."""
  import jaxlib  # pylint: disable=import-outside-toplevel
  backend = backend or jax.default_backend()
  version = tuple(int(v) for v in (jaxlib_version or jaxlib.__version__).split('.')[:2])
  if backend == 'cpu' and version < CPU_BATCH_DEADLOCK_BELOW:
    return 1
  return max(1, min(limit, k))


def best_replacement(key: Array, x: Array, j: Array, loss_fn: Callable[[Array, Any], Array],
                     problem: Any, constraint: Callable[[Array], Array],
                     n_proposals: int, score: Optional[Callable[[Array, Array], Array]] = None
                     ) -> tuple[Array, Array]:
  """(z*, L(X with x_j := z*)) over n_proposals random points z (blind: loss only).
  `score(j, z) -> (n_proposals,)`: the losses of the replacements by a cheaper route (e.g.
  `recon.objectives.projection.replacement_losses`); z* is then its argmin and only z*'s loss
  is evaluated by `loss_fn`."""
  z = constraint(jax.random.normal(key, (n_proposals, x.shape[1]), x.dtype))
  if score is not None:
    ranked = score(j, z)
    best = jnp.argmin(jnp.where(jnp.isfinite(ranked), ranked, jnp.inf))
    loss = loss_fn(x.at[j].set(z[best]), problem)
    return z[best], jnp.where(jnp.isfinite(loss), loss, jnp.inf)
  losses = jax.lax.map(lambda zi: loss_fn(x.at[j].set(zi), problem), z)
  losses = jnp.where(jnp.isfinite(losses), losses, jnp.inf)
  best = jnp.argmin(losses)
  return z[best], losses[best]


class ReseedStats(NamedTuple):
  checks: int
  reseeded: int
  rejected: int


class Reseeder(Step):
  """Wraps a compiled chunk: every `every` steps, re-seeds collapsed candidates (host side)."""

  def __init__(self, key: Array, loss_fn: Callable[[Array, Any], Array], problem: Any,
               constraint: Callable[[Array], Array], optimizer: optax.GradientTransformation,
               settings: sections.Reseed, *, accept_ratio: float = 2.0):
    """`settings`: the section attack.reseed, whole."""
    every, threshold, n_proposals = settings.every, settings.threshold, settings.proposals
    self._key = key
    self._loss_fn = loss_fn
    self._problem = problem
    self._optimizer = optimizer
    self._every = every
    self._threshold = threshold
    self._accept_ratio = accept_ratio
    self._next = every
    self.stats = ReseedStats(0, 0, 0)
    self._collapsed = jax.jit(lambda x: collapsed(x, threshold))
    self._replace = jax.jit(lambda k, x, j, prob: best_replacement(
        k, x, j, loss_fn, prob, constraint, n_proposals))
    self._loss = jax.jit(loss_fn)

  def state_dict(self) -> dict:
    """The mutable state as JSON values: key (raw uint32 words), next check, counters."""
    key = self._key
    if jax.dtypes.issubdtype(getattr(key, 'dtype', None), jax.dtypes.prng_key):
      key = jax.random.key_data(key)
    return {'key': np.asarray(key).tolist(), 'next': int(self._next),
            'stats': [int(v) for v in self.stats]}

  def load_state_dict(self, saved: dict) -> None:
    """Restores `state_dict()` (the key keeps this re-seeder's key type)."""
    raw = jnp.asarray(np.asarray(saved['key'], np.uint32))
    if jax.dtypes.issubdtype(getattr(self._key, 'dtype', None), jax.dtypes.prng_key):
      raw = jax.random.wrap_key_data(raw)
    self._key = raw
    self._next = int(saved['next'])
    self.stats = ReseedStats(*[int(v) for v in saved['stats']])

  def summary(self) -> dict:
    return {'reseeded': self.stats.reseeded, 'reseed_rejected': self.stats.rejected}

  def resumed(self, state: optimize.ReconState, budget_grew: bool) -> optimize.ReconState:
    """A run stopped at its budget skipped the check due at its last step, which an unbroken
    run with the larger budget made: make it now."""
    return self(state) if budget_grew else state

  def update(self, state: optimize.ReconState) -> optimize.ReconState:
    step = int(state.step)
    if step < self._next or int(state.status) != optimize.RUNNING:
      return state
    self._next = step + self._every
    flagged = np.nonzero(np.asarray(self._collapsed(state.x)))[0]
    checks, done, rejected = self.stats
    if not len(flagged):
      self.stats = ReseedStats(checks + 1, done, rejected)
      return state
    x = state.x
    current = float(state.loss)
    changed = False
    for j in flagged:
      self._key, sub = jax.random.split(self._key)
      z, new_loss = self._replace(sub, x, jnp.asarray(j), self._problem)
      if float(new_loss) <= self._accept_ratio * current:
        x = x.at[int(j)].set(z)
        current = float(new_loss)
        done += 1
        changed = True
      else:
        rejected += 1
    self.stats = ReseedStats(checks + 1, done, rejected)
    logging.info('step %d: %d collapsed candidate(s); re-seeded %d in total (%d rejected)',
                 step, len(flagged), done, rejected)
    if not changed:
      return state
    return state._replace(x=x, opt_state=self._optimizer.init(x),
                          loss=self._loss(x, self._problem).astype(state.loss.dtype))
