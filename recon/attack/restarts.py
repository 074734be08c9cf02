"""Parallel restarts chosen by the blind projection loss.

K candidate sets X_1..X_K (K initialisations; block 0 the single run's start) are optimised at
once as a vmapped batch of K runs of the same problem (`recon.attack.driver.optimise`): block k follows
exactly the run it would follow alone, with its own optimiser state, step count and status,
and the rescue steps of `attack.rescue` act on every block as on the runs of a sweep
(escalation's key of block 0 is the single run's, block k's fold_in(PRNGKey(seed), k)). The
run's loss (history, progress, tol) is min_k L(X_k) (`stacked_loss`'s value): once a block
converges, the others stop at the end of that chunk (`stop_at_first_converged`), and the answer
is the block with the lowest blind loss (`BestRestart`); the attacker never needs the truth.
`view` is the one-run face of the batch (step and status of the best block, the min loss) that
the history, checkpoints' bookkeeping and the report read.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, Optional, Tuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from recon.config import sections
from recon import registry
from recon.attack import optimiser as optimize
from recon.attack.rescue import chain as rescue_chain
from recon.errors import ExperimentError

Array = jax.Array
LossFn = Callable[[Array, Any], Array]



def restartable_victims() -> Tuple[str, ...]:
  """The registered victims whose attack optimises one (m, d) candidate array and so can
  stack K of them (`Victim.restartable`: random features, the networks attacked by their head)."""
  return tuple(name for name, v in registry.items('victim') if v.restartable)


def check_config(attack: sections.Attack, victim: sections.Victim) -> None:
  """Refuses `attack.restarts > 1` where the restarts would not be independent runs (before any
  output is written): L-BFGS (its line search couples the blocks), a rescue step of one run
  (`recon.attack.rescue.chain.unbatched`: re-seeding, pursuit, swaps, the cut), sample
  splitting, feature sharding, a subspace search or a victim that is not restartable.
  The rescue steps that serve a batch ('escalate') act on every restart. Reads the
  config's `attack` and `victim` sections."""
  k = attack.restarts
  if k == 1:
    return
  conflicts = []
  if victim.name not in restartable_victims() or attack.subspace.mode != 'none':
    conflicts.append(f"model {victim.name!r}, subspace {attack.subspace.mode!r}")
  if attack.optimizer == 'lbfgs':
    conflicts.append("optimizer 'lbfgs'")
  one_run = rescue_chain.unbatched(attack.rescue)
  if one_run:
    conflicts.append(f"{', '.join(map(repr, one_run))} in attack.rescue")
  if attack.split.mode != 'none':
    conflicts.append(f"split {attack.split.mode!r}")
  if victim.feature_shards > 1:
    conflicts.append(f"feature_shards {victim.feature_shards}")
  if conflicts:
    raise ExperimentError(
        f"attack.restarts: {k} restarts cannot run with {', '.join(conflicts)}; accepted: "
        f"attack.restarts "
        f"1, or model in {', '.join(sorted(restartable_victims()))} (subspace 'none') with optimizer 'sgd' or "
        f"'adam', attack.rescue of {', '.join(rescue_chain.batched_names())}, split 'none' and "
        "feature_shards 1")


def with_restarts(n_restarts: int, loss_fn: LossFn, problem: Any, key: Array,
                  init_fn: Callable[[Array], Array]) -> Tuple[LossFn, Array, Any]:
  """(loss_fn, x0, decode) of an attack: one candidate set init_fn(key) when n_restarts
  (`attack.restarts`) is 1 (decode None), else n_restarts stacked ones (value min_k L(X_k),
  decode the block of lowest blind loss, `BestRestart`)."""
  if n_restarts == 1:
    return loss_fn, init_fn(key), None
  return (stacked_loss(loss_fn), init_restarts(key, n_restarts, init_fn),
          BestRestart(loss_fn, problem))


def init_restarts(key: Array, n_restarts: int, init_fn: Callable[[Array], Array]) -> Array:
  """(K, m, d) starting points: block 0 is init_fn(key) (the single run's start), block k
  init_fn(fold_in(key, k))."""
  if n_restarts < 1:
    raise ValueError(f'attack.restarts: {n_restarts} is not >= 1')
  blocks = [init_fn(key)] + [init_fn(jax.random.fold_in(key, k)) for k in range(1, n_restarts)]
  return jnp.stack(blocks)


def restart_losses(loss_fn: LossFn, xs: Array, problem: Any) -> Array:
  """(K,) blind losses L(X_k) of the blocks of xs (K, m, d)."""
  chex.assert_rank(xs, 3)
  return jax.vmap(loss_fn, in_axes=(0, None))(xs, problem)


def stacked_loss(loss_fn: LossFn) -> LossFn:
  """`loss(xs, problem)`: value min_k L(X_k), gradient that of sum_k L(X_k) (block k: dL/dX_k).

  value = S - stop_gradient(S - min), S = sum_k L(X_k).
  """
  def loss(xs, problem):
    per = restart_losses(loss_fn, xs, problem)
    total = jnp.sum(per)
    return total - jax.lax.stop_gradient(total - jnp.min(per))
  return loss


def batch_problem(problem: Any, n_restarts: int) -> Any:
  """The problem repeated on a leading axis of K: one per restart, as the batched rescue steps
  read it (K copies in memory; `recon.attack.memory` counts K candidate sets)."""
  return jax.tree.map(lambda a: jnp.broadcast_to(a, (n_restarts,) + jnp.shape(a)), problem)


def rescue_keys(seed: int, n_restarts: int) -> Array:
  """(K, 2) keys of the rescue steps: block 0 the single run's PRNGKey(seed), block k
  fold_in(PRNGKey(seed), k)."""
  key = jax.random.PRNGKey(seed)
  return jnp.stack([key] + [jax.random.fold_in(key, k) for k in range(1, n_restarts)])


def stop_at_first_converged(state: optimize.ReconState) -> optimize.ReconState:
  """Once a block has converged, the blocks still running stop (status MAX_STEPS: the run's
  budget is spent, as the run's status is that of its best block)."""
  done = jnp.any(state.status == optimize.CONVERGED)
  status = jnp.where(done & (state.status == optimize.RUNNING), optimize.MAX_STEPS,
                     state.status)
  return state._replace(status=status.astype(jnp.int32))


def view(state: optimize.ReconState) -> optimize.ReconState:
  """The batch of K restarts as one run: x the (K, m, d) blocks (decode picks one), loss
  min_k, step and status those of the block with the lowest loss (converged when any block
  converged, running while any block runs)."""
  losses = np.asarray(jax.device_get(state.loss), np.float64)
  status = np.asarray(jax.device_get(state.status))
  best = int(np.argmin(np.where(np.isfinite(losses), losses, np.inf)))
  if (status == optimize.CONVERGED).any():
    best = int(np.flatnonzero(status == optimize.CONVERGED)[
        np.argmin(losses[status == optimize.CONVERGED])])
    run_status = optimize.CONVERGED
  elif (status == optimize.RUNNING).any():
    run_status = optimize.RUNNING
  else:
    run_status = int(status[best])
  return optimize.ReconState(x=state.x, opt_state=state.opt_state, step=state.step[best],
                             loss=state.loss[best],
                             status=jnp.asarray(run_status, jnp.int32))


class BestRestart:
  """`decode(xs) -> X_k*`, k* = argmin_k L(X_k) (blind); `summary()` for the run's metrics.
  `block_loss` is one block's loss L (the driver runs the K blocks as a batch with it)."""

  def __init__(self, loss_fn: LossFn, problem: Any):
    self.block_loss = loss_fn
    # The problem is an argument of the compiled function, never a captured constant.
    losses = jax.jit(lambda xs, prob: restart_losses(loss_fn, xs, prob))
    self._losses = lambda xs: losses(xs, problem)
    self.chosen: Optional[int] = None
    self.losses: Optional[List[float]] = None

  def __call__(self, xs: Array) -> Array:
    losses = np.asarray(self._losses(jnp.asarray(xs)), np.float64)
    finite = np.where(np.isfinite(losses), losses, np.inf)
    self.chosen = int(np.argmin(finite))
    self.losses = [float(v) for v in losses]
    self._last = np.asarray(xs)
    return jnp.asarray(xs)[self.chosen]

  def sets_at_tol(self, tol: float) -> List[np.ndarray]:
    """The candidate sets (of the last decode) whose blind loss is <= tol, chosen one first."""
    if self.losses is None:
      return []
    order = [self.chosen] + [k for k in range(len(self.losses)) if k != self.chosen]
    return [self._last[k] for k in order if self.losses[k] <= tol]

  def summary(self) -> Dict[str, Any]:
    return {'n_restarts': None if self.losses is None else len(self.losses),
            'chosen': self.chosen, 'losses': self.losses}
