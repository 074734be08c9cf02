"""Constrained first-order optimisation of candidates, compiled in chunks.

One step: g = grad L(x); x <- constraint(x + optax_update(g)), where x is an array
of candidates or any pytree holding them ({'x': X, 'alpha': a}: `field_constraint`).
The step loop runs inside `lax.while_loop` for `chunk_steps` steps per compiled
call; the host only sees chunk boundaries (progress logs, checkpoints). Every function here is pure
and vmappable over a batch of problems (see `recon/sweep/grid.py`).

Status codes of a run: RUNNING, CONVERGED (loss <= tol), NONFINITE (loss or
gradient not finite: the candidates are never moved by a non-finite update, so they
stay finite, at the point where the loss first failed; `loss` keeps the last finite
value), MAX_STEPS, STALLED (escalation gave up: `attack.escalate.give_up_after` plateaus in a
row that no escalation could lower, `recon.attack.rescue.escalate`).
"""
from __future__ import annotations

import time
from typing import Any, Callable, NamedTuple, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from recon.config import choices

Array = jax.Array

RUNNING, CONVERGED, NONFINITE, MAX_STEPS, STALLED = 0, 1, 2, 3, 4
STATUS_NAMES = {RUNNING: 'running', CONVERGED: 'converged', NONFINITE: 'nonfinite',
                MAX_STEPS: 'max_steps', STALLED: 'stalled'}



class LineSearchTransformation(optax.GradientTransformationExtraArgs):
  """An Optax transformation whose `update` needs `value`, `grad` and `value_fn`
  (a line search); `run_chunk` passes them."""


def needs_value_fn(optimizer) -> bool:
  return isinstance(optimizer, LineSearchTransformation)


def schedule_unit(schedule: str, decay_steps: Optional[int], final_ratio: float = 0.05
                  ) -> Callable[[Any], Any]:
  """t -> the factor of lr at the schedule's count t (`make_optimizer`): 1 for 'constant'."""
  if schedule != 'cosine':
    return lambda t: 1.0
  return optax.cosine_decay_schedule(1.0, decay_steps, alpha=final_ratio)


def _schedule_count(opt_state: Any):
  counts = [s.count for s in jax.tree.leaves(
      opt_state.inner_state, is_leaf=lambda s: isinstance(s, optax.ScaleByScheduleState))
            if isinstance(s, optax.ScaleByScheduleState)]
  return counts[0] if counts else None


def learning_rate_now(opt_state: Any, unit: Callable[[Any], Any]) -> Optional[float]:
  """The learning rate a `make_optimizer` state steps with now (its injected lr times the
  schedule's factor at its count); None without an injected lr (L-BFGS)."""
  hyper = getattr(opt_state, 'hyperparams', None)
  if not isinstance(hyper, dict) or 'learning_rate' not in hyper:
    return None
  count = _schedule_count(opt_state)
  return float(hyper['learning_rate']) * (1.0 if count is None else float(unit(count)))


def set_learning_rate(opt_state: Any, lr: float, unit: Callable[[Any], Any]) -> Any:
  """The state of a `make_optimizer` optimiser whose learning rate is `lr` now: the injected
  lr becomes lr / unit(count), count the schedule's own (it restarts with the state), so the
  schedule goes on decaying from lr. A state without an injected lr (L-BFGS) is returned."""
  hyper = getattr(opt_state, 'hyperparams', None)
  if not isinstance(hyper, dict) or 'learning_rate' not in hyper:
    return opt_state
  count = _schedule_count(opt_state)
  factor = float(unit(count)) if count is not None else 1.0
  old = hyper['learning_rate']
  return opt_state._replace(hyperparams={
      **hyper, 'learning_rate': jnp.full_like(old, lr / max(factor, 1e-30))})


def make_optimizer(name: str, lr, momentum=0.9, schedule: str = 'constant',
                   decay_steps: Optional[int] = None,
                   final_ratio: float = 0.05,
                   memory_size: int = 10,
                   linesearch_steps: int = 20) -> optax.GradientTransformation:
  """Optax optimiser by name; lr and momentum live in the state, so they can be vmapped.

  sgd: heavy-ball momentum (the paper's default, momentum 0.9); adam: Adam(b1=momentum).
  lbfgs: optax.lbfgs (two-loop recursion over `memory_size` pairs) with its zoom
  line search (strong Wolfe, `linesearch_steps` trials, unit step tried first, as
  optax.lbfgs's default); the direction is scaled by lr before the line search (use 1.0); momentum and schedule are ignored. Its update
  needs value/grad/value_fn (`needs_value_fn`), which `run_chunk` supplies.
  schedule 'cosine': lr_t = lr (r + (1 - r)(1 + cos(pi min(t, T)/T))/2), r = final_ratio,
  T = decay_steps (the step count restarts when the optimiser state is re-initialised). The
  unit-peak cosine multiplies the update after the base optimiser, so lr itself stays a
  (vmappable) hyperparameter in the state: sweeps batch lr under a schedule too.
  """
  if name == 'lbfgs':
    opt = optax.lbfgs(learning_rate=lr, memory_size=memory_size,
                      linesearch=optax.scale_by_zoom_linesearch(
                          max_linesearch_steps=linesearch_steps, initial_guess_strategy='one'))
    return LineSearchTransformation(opt.init, opt.update)
  if schedule not in choices.SCHEDULES:
    raise ValueError(f'attack.schedule: unknown name {schedule!r}; accepted: '
                     f'{", ".join(choices.SCHEDULES)}')
  if name not in ('sgd', 'adam'):
    raise ValueError(f'attack.optimizer: unknown name {name!r}; accepted: {", ".join(choices.OPTIMIZERS)}')
  base = optax.sgd if name == 'sgd' else (
      lambda learning_rate, momentum: optax.adam(learning_rate, b1=momentum))
  if schedule == 'constant':
    return optax.inject_hyperparams(base)(learning_rate=lr, momentum=momentum)
  if not decay_steps:
    raise ValueError('attack.decay_steps: required (>= 1) for the cosine schedule')
  unit = schedule_unit(schedule, decay_steps, final_ratio)

  def scheduled(learning_rate, momentum):
    return optax.chain(base(learning_rate, momentum), optax.scale_by_schedule(unit))
  return optax.inject_hyperparams(scheduled)(learning_rate=lr, momentum=momentum)



def sphere_constraint(radius: float) -> Callable[[Array], Array]:
  """Projects every row onto the sphere of the given radius.

  Rows are first divided by their largest entry, so huge rows (a too-large step)
  do not overflow the norm and collapse to zero.
  """
  def project(x):
    tiny = jnp.finfo(x.dtype).tiny
    scale = jnp.maximum(jnp.max(jnp.abs(x), axis=-1, keepdims=True), tiny)
    unit = x / scale
    norms = jnp.linalg.norm(unit, axis=-1, keepdims=True)
    return unit * (radius / jnp.maximum(norms, tiny))
  return project


def field_constraint(constraint: Callable[[Array], Array],
                     field: str = 'x') -> Callable[[Any], Any]:
  """Applies `constraint` to `params[field]` of a dict of parameters, the rest unchanged.

  For candidates optimised jointly with other variables, e.g. {'x': X, 'alpha': a}.
  """
  def project(params):
    return {**params, field: constraint(params[field])}
  return project


def _all_finite(tree) -> Array:
  return jnp.all(jnp.stack([jnp.all(jnp.isfinite(leaf)) for leaf in jax.tree.leaves(tree)]))


class ReconState(NamedTuple):
  """The full state of a reconstruction run (a pytree)."""
  x: Any  # candidates (n_candidates, ...), or a pytree of them and other variables
  opt_state: Any
  step: Array  # int32 scalar: steps taken
  loss: Array  # loss at the last evaluated point
  status: Array  # int32 scalar, one of the status codes


def init_state(x0: Any, optimizer: optax.GradientTransformation,
               loss_fn: Callable[[Array, Any], Array], problem: Any,
               constraint: Callable[[Array], Array]) -> ReconState:
  x0 = constraint(x0)
  dtype = jax.tree.leaves(x0)[0].dtype
  return ReconState(x=x0, opt_state=optimizer.init(x0), step=jnp.zeros((), jnp.int32),
                    loss=loss_fn(x0, problem).astype(dtype),
                    status=jnp.asarray(RUNNING, jnp.int32))


def run_chunk(state: ReconState, problem: Any, stop_step: Array, *,
              loss_fn: Callable[[Array, Any], Array], optimizer: optax.GradientTransformation,
              constraint: Callable[[Array], Array], tol: float, max_steps: int) -> ReconState:
  """Runs steps until `stop_step`, convergence, a non-finite value or `max_steps`."""
  value_and_grad = jax.value_and_grad(loss_fn)

  def cond(s):
    return (s.status == RUNNING) & (s.step < stop_step)

  def body(s):
    loss, grad = value_and_grad(s.x, problem)
    finite = jnp.isfinite(loss) & _all_finite(grad)
    converged = finite & (loss <= tol)
    if needs_value_fn(optimizer):
      updates, new_opt = optimizer.update(grad, s.opt_state, s.x, value=loss, grad=grad,
                                          value_fn=lambda z: loss_fn(z, problem))
    else:
      updates, new_opt = optimizer.update(grad, s.opt_state, s.x)
    new_x = constraint(optax.apply_updates(s.x, updates))
    move = finite & ~converged
    # Each leaf keeps its dtype: a learning rate injected as float64 (x64 switched on by an
    # earlier float64 run in this process) must not promote float32 candidates.
    keep = lambda a, b: jnp.where(move, a, b).astype(b.dtype)  # noqa: E731
    new_x = jax.tree.map(keep, new_x, s.x)
    new_opt = jax.tree.map(keep, new_opt, s.opt_state)
    step = s.step + move.astype(jnp.int32)
    status = jnp.where(~finite, NONFINITE, jnp.where(converged, CONVERGED, RUNNING))
    status = jnp.where((status == RUNNING) & (step >= max_steps), MAX_STEPS, status)
    loss = jnp.where(finite, loss, s.loss).astype(s.loss.dtype)
    return ReconState(new_x, new_opt, step, loss, status.astype(jnp.int32))

  return jax.lax.while_loop(cond, body, state)


def drive(state: ReconState, chunk_fn: Callable[[ReconState, Array], ReconState], *,
          max_steps: int, chunk_steps: int,
          on_chunk: Optional[Callable[[ReconState], None]] = None,
          mark_budget: bool = True) -> ReconState:
  """Host loop over compiled chunks until every run in `state` has stopped.

  Works for a single run and for a vmapped batch (statuses of any shape).
  `on_chunk(state)` is called after every chunk (logging, checkpoints, history); if
  it returns a state, the loop continues from that one (refinements such as sample
  splitting replace the candidates between chunks). Runs still running at `max_steps` are
  marked MAX_STEPS unless `mark_budget` is False (a trial that the descent continues).
  A chunk that neither advances a step nor stops a run raises RuntimeError (it would loop forever).
  """
  while True:
    status, steps = jax.device_get((state.status, state.step))
    running = status == RUNNING
    if not running.any():
      break
    # Runs still running advance in lockstep; stopped ones keep their step count.
    step = int(steps[running].max()) if steps.ndim else int(steps)
    if step >= max_steps:
      break
    stop = jnp.asarray(min(step + chunk_steps, max_steps), jnp.int32)
    state = chunk_fn(state, stop)
    jax.block_until_ready(state.x)
    new_status, new_steps = jax.device_get((state.status, state.step))
    if np.array_equal(new_status, status) and np.array_equal(new_steps, steps):
      raise RuntimeError(f'optimize.drive: a chunk to step {int(stop)} left every run at step {step} '
                         'and still running (the chunk function never advances the step)')
    if on_chunk is not None:
      replaced = on_chunk(state)
      if replaced is not None:
        state = replaced
  if not mark_budget:
    return state
  # Runs still marked RUNNING hit the step budget.
  status = jnp.where(state.status == RUNNING, MAX_STEPS, state.status)
  return state._replace(status=status.astype(jnp.int32))


class ProgressLogger:
  """Calls `log_fn(state)` at most every `every_seconds`, and on the last call (`force`) unless
  that state's step was the one logged last (no line twice)."""

  def __init__(self, log_fn: Callable[[ReconState], None], every_seconds: float):
    self._log_fn = log_fn
    self._every = every_seconds
    self._last = -float('inf')
    self._last_step = None

  def __call__(self, state: ReconState, force: bool = False) -> None:
    now = time.monotonic()
    step = np.asarray(jax.device_get(state.step)).tobytes()
    if (force and step != self._last_step) or now - self._last >= self._every:
      self._last, self._last_step = now, step
      self._log_fn(state)


def batch_progress(size: int, label: str, t0: float, every_seconds: float) -> ProgressLogger:
  """A `ProgressLogger` of a batch of runs (a sweep group's first `size` points; the rest pad
  the batch): the step, how many stopped, the best and median loss, seconds since t0."""

  def log(s: ReconState) -> None:
    status, loss, step = jax.device_get((s.status[:size], s.loss[:size], s.step[:size]))
    logging.info('sweep %s: step %d, %d/%d points stopped, loss best %.3e median %.3e (%.0fs)',
                 label, int(step.max()), int(np.sum(status != RUNNING)), size,
                 float(np.nanmin(loss)), float(np.nanmedian(loss)), time.time() - t0)
  return ProgressLogger(log, every_seconds)


def reset_rows(opt_state: Any, x: Array, rows: Array) -> Any:
  """Zeroes the rows `rows` ((..., m) bool, shaped like x without its last axis) of every
  optimiser-state leaf shaped like x (moments, momentum); other leaves (counts, schedule
  state, hyper-parameters) are kept.

  (Giving the row the other rows' average state instead was measured worse: at n = d = 8,
  p = 10 dn, relu, 20 seeds, 16 of 20 runs certified against 19 of 20; chosen by the
  certified rate, a blind signal.)
  """
  def one(leaf):
    if getattr(leaf, 'shape', None) == x.shape:
      return jnp.where(rows[..., None], jnp.zeros_like(leaf), leaf)
    return leaf
  return jax.tree.map(one, opt_state)


def reset_state(opt_state: Any, x: Array, runs: Array) -> Any:
  """A fresh optimiser state for the runs `runs` ((B,) bool; leading axis of x): leaves
  shaped like x and integer leaves (step counts of Adam and of the schedule) are zeroed;
  float leaves of another shape (injected hyper-parameters: lr, momentum) are kept.

  (Keeping the counts, so that the new set finishes on the schedule's remaining decay, was
  measured worse together with the averaged rows of `reset_rows`' note, in `recon.attack.rescue.escalate`.)
  """
  def one(leaf):
    if not hasattr(leaf, 'shape'):
      return leaf
    if leaf.shape == x.shape or jnp.issubdtype(leaf.dtype, jnp.integer):
      t = runs.reshape(runs.shape + (1,) * (leaf.ndim - runs.ndim)) if leaf.ndim else runs
      return jnp.where(t, jnp.zeros_like(leaf), leaf)
    return leaf
  return jax.tree.map(one, opt_state)


def select_runs(take: Array, a: Any, b: Any) -> Any:
  """Per run (leading axis): a where take, else b."""
  def one(u, v):
    t = take.reshape(take.shape + (1,) * (u.ndim - 1))
    return jnp.where(t, u, v)
  return jax.tree.map(one, a, b)
