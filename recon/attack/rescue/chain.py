"""Rescue steps: transforms of the descent's chunk, composed like `optax.chain`.

The descent runs in compiled chunks, `chunk(state, stop) -> state`
(`recon.attack.optimiser.run_chunk`). A rescue step acts on the host between chunks: it reads the
state (step, status, loss, candidates) and may replace candidates and their optimiser
state. As a transform of the chunk,

    step.wrap(inner)(state, stop) = step(inner(state, stop)),

and `attack.rescue = (s_1, ..., s_k)` runs chunk, then s_1, ..., then s_k after every chunk:

    chain(chunk) = s_k ∘ ... ∘ s_1 ∘ chunk.

A step is an (init, update) pair, as an Optax transformation is
(recon/attack/rescue/step.py): `init(section, ctx)` gives its state, a `step.Step` holding its
settings and counters, whose `update(state) -> state` is the step (s_i above); `applies(ctx)`
says, before init, whether it acts on this attack at all (None, or why not: logged, the step
left out). A step's own trials (escalation's short runs) use the bare chunk (`step.chunk`),
never the chain, so a trial is not itself rescued. Each step's state rides in the run's
checkpoints under its name (`state_dict()` / `load_state_dict(d)`), so a resumed run rescues
exactly as an unbroken one, and reports `summary()`.

Every step is registered once, here, as kind 'rescue' (`recon.registry.Rescue`: its config
section, `applies`, `init`, its stage). A step of stage 'end' acts once, after the descent:
'polish', the float64 precision rung, which the certificate runs where it fails
(`recon.certify.rung`, switched on by `end_steps(attack.rescue)`). A new step is one `Step`
subclass and one `registry.register('rescue', name, ...)` (tests/test_rescue.py registers a
toy one).

The other refiners of a run are not steps of this chain, and are named once here as what
they are: `attack.restarts` runs K candidate sets as one vmapped batch, the lowest loss wins
(recon/attack/restarts.py; every batched step, 'escalate', acts on each set); sample
splitting (`attack.split`, recon/attack/splitting.py) replaces the attack's problem between
chunks (the driver's `refiner`); the precision rung is the 'end' step above.

  reseed    every `every` steps, candidates that collapsed onto one another (cosine >
            `threshold`) are re-drawn: the best of `proposals` random points for the slot
            (`recon.attack.rescue.reseed.Reseeder`); one run only
  escalate  on a loss plateau, the weak candidates (leave-one-out gains) are replaced by
            their mirror images or random proposals, kept when a short trial halves the
            loss; after rejected rounds a whole new candidate set is tried
            (`recon.attack.rescue.escalate.Escalator`); one run or a vmapped batch of runs (a sweep's
            points, or the K blocks of `attack.restarts`, each escalated as its own run). It
            needs one (m, d) candidate array per run and a fixed problem: with a pytree of
            variables or sample splitting it is skipped
  pursue    every `every` steps from `start`, the dead rows (leave-one-out gain) or the
            stuck rows (pin radii) are re-placed where the residual of θ points, kept when the
            loss drops on the spot (`recon.attack.rescue.pursuit.PursuitStep`); one projection run on a
            feature map (random features) only
  swap      from `start`, after every chunk, the row of smallest leave-one-out gain re-placed
            by residual pursuit, kept when the loss is lower after `steps` steps of descent
            (`recon.attack.rescue.swap.SwapStep`); one projection run on a feature map only
  cut       once, at step `at` (or when the run stops first), m > n candidates are cut to the n
            of largest leave-one-out gain, the optimiser's state following the kept rows
            (`recon.attack.rescue.cut.CutStep`); one projection run on a feature map that knows n only
  polish    stage 'end': the precision rung (`recon.certify.rung`)
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import jax
import numpy as np
import optax
from absl import logging

from recon import registry
from recon.attack.rescue import escalate
from recon.attack.rescue import cut as cut_lib
from recon.attack.rescue import pursuit as pursuit_lib
from recon.attack.rescue import reseed as refine
from recon.attack.rescue import swap as swap_lib
from recon.attack.rescue.step import Step
from recon.config import sections
from recon.errors import ExperimentError

Array = jax.Array
Chunk = Callable[[Any, Array], Any]


@dataclasses.dataclass(frozen=True)
class Context:
  """What an attack offers its rescue steps.

  key          PRNGKey(seed) of the run; a batch: the runs' keys stacked (B, ...)
  loss_fn      (x, problem) -> scalar, of one run
  problem      the attack's problem (a batch: stacked per run)
  constraint   x -> x on the constraint set (the spheres)
  optimizer    the attack's Optax optimiser (a step resets its state)
  tol          the loss at which a run has converged
  max_steps    the step budget
  batched      a vmapped batch of runs (recon.sweep.grid; the K restarts of one run) rather than one
  single_array the variables are one (m, d) candidate array per run (not a pytree)
  refiner      sample splitting replaces the problem between chunks
  pursuit      recon.attack.rescue.pursuit.Pursuit for escalation's extra trial, or None
  rows_fn      `recon.attack.plan.Attack.rows_fn` (one run's), or None; jitter: its loss's
  schedule_unit the optimiser's lr factor at a schedule count (`optimize.schedule_unit`)
  n_samples    the number of training samples when the attack knows it (attack.knows_n), or None
  """
  key: Array
  loss_fn: Callable[[Any, Any], Array]
  problem: Any
  constraint: Callable[[Any], Any]
  optimizer: optax.GradientTransformation
  tol: float
  max_steps: int
  batched: bool = False
  single_array: bool = True
  refiner: bool = False
  pursuit: Any = None
  rows_fn: Optional[Callable[[Any, Any], Any]] = None
  jitter: float = 0.0
  schedule_unit: Callable[[Any], Any] = lambda t: 1.0
  n_samples: Optional[int] = None


def _fold(key: Array, data: int, batched: bool) -> Array:
  return jax.vmap(lambda k: jax.random.fold_in(k, data))(key) if batched else (
      jax.random.fold_in(key, data))


def _needs_one_array(ctx: Context) -> Optional[str]:
  """'escalate' acts on one (m, d) candidate array per run and a fixed problem."""
  if ctx.refiner:
    return 'sample splitting: its own escalation'
  if not ctx.single_array:
    return 'the optimised variables are not one candidate array'
  return None


def _needs_pursuit(ctx: Context) -> Optional[str]:
  if ctx.pursuit is None:
    return 'it needs one projection run on a feature map: random features, one candidate set'
  return None


def _needs_pursuit_and_n(ctx: Context) -> Optional[str]:
  if ctx.pursuit is None or ctx.n_samples is None:
    return ('it needs one projection run on a feature map that knows n: random features, '
            'attack.knows_n')
  return None


def _init_reseed(section: Any, ctx: Context) -> refine.Reseeder:
  if not ctx.single_array:
    raise ExperimentError("attack.rescue: 'reseed' needs the optimised variables to be one "
                          "(n_candidates, k) array; accepted here: a rescue without 'reseed'")
  if ctx.refiner:  # it holds the problem, which sample splitting replaces between chunks
    raise ExperimentError("attack.rescue: 'reseed' with sample splitting (attack.split.mode); "
                          "accepted: a rescue without 'reseed', or attack.split.mode 'none'")
  return refine.Reseeder(_fold(ctx.key, 0x5EED, False), ctx.loss_fn, ctx.problem,
                         ctx.constraint, ctx.optimizer, sections.Reseed.from_section(section))


def _init_escalate(section: Any, ctx: Context) -> escalate.Escalator:
  return escalate.Escalator(
      _fold(ctx.key, 0xE5C, ctx.batched), ctx.loss_fn, ctx.problem, ctx.constraint,
      ctx.optimizer, sections.Escalate.from_section(section), tol=ctx.tol,
      max_steps=ctx.max_steps, batched=ctx.batched, residual_pursuit=ctx.pursuit, rows_fn=ctx.rows_fn,
      jitter=ctx.jitter)


def _init_pursue(section: Any, ctx: Context) -> pursuit_lib.PursuitStep:
  return pursuit_lib.PursuitStep(ctx.pursuit, ctx.loss_fn, ctx.problem,
                                 sections.Pursue.from_section(section), unit=ctx.schedule_unit,
                                 optimizer=ctx.optimizer)


def _init_swap(section: Any, ctx: Context) -> swap_lib.SwapStep:
  return swap_lib.SwapStep(ctx.pursuit, ctx.loss_fn, ctx.problem, ctx.optimizer,
                          sections.Swap.from_section(section), unit=ctx.schedule_unit)


def _init_cut(section: Any, ctx: Context) -> cut_lib.CutStep:
  return cut_lib.CutStep(ctx.pursuit.gram_system, ctx.loss_fn, ctx.problem,
                         sections.Cut.from_section(section), keep=ctx.n_samples,
                         max_steps=ctx.max_steps, optimizer=ctx.optimizer, unit=ctx.schedule_unit)


registry.register('rescue', 'reseed', registry.Rescue(section='reseed', init=_init_reseed))
_ALWAYS = lambda section: True  # noqa: E731
registry.register('rescue', 'escalate', registry.Rescue(
    section='escalate', init=_init_escalate, applies=_needs_one_array, batched=True,
    pursuit=lambda section: section.pursuit == 'auto', loo_batch=escalate.LOO_BATCH))
registry.register('rescue', 'pursue', registry.Rescue(
    section='pursue', init=_init_pursue, applies=_needs_pursuit, pursuit=_ALWAYS))
registry.register('rescue', 'swap', registry.Rescue(
    section='swap', init=_init_swap, applies=_needs_pursuit, pursuit=_ALWAYS))
registry.register('rescue', 'cut', registry.Rescue(
    section='cut', init=_init_cut, applies=_needs_pursuit_and_n, pursuit=_ALWAYS))
registry.register('rescue', 'polish', registry.Rescue(section='polish', stage='end'))


def descent_steps(names: Sequence[str]) -> Tuple[str, ...]:
  """The names of `attack.rescue` that act between chunks, in order."""
  return tuple(n for n in names if registry.lookup('rescue', n).stage == 'descent')


def uses_pursuit(names: Sequence[str], attack: Any) -> bool:
  """Whether a step of `names` (`attack.rescue`) uses residual pursuit, by its section of the
  `attack` section (then the run builds one: `Context.pursuit`)."""
  entries = [registry.lookup('rescue', n) for n in names]
  return any(e.pursuit is not None and e.pursuit(getattr(attack, e.section)) for e in entries)


def loo_batch(names: Sequence[str]) -> int:
  """The most leave-one-out losses a descent step of `names` computes at once (0: none)."""
  return max((registry.lookup('rescue', n).loo_batch for n in descent_steps(names)), default=0)


def end_steps(names: Sequence[str]) -> Tuple[str, ...]:
  """The names of `attack.rescue` that act once after the descent (the precision rung)."""
  return tuple(n for n in names if registry.lookup('rescue', n).stage == 'end')


def unbatched(names: Sequence[str]) -> Tuple[str, ...]:
  """The descent steps of `names` that cannot serve a vmapped batch of runs."""
  return tuple(n for n in descent_steps(names) if not registry.lookup('rescue', n).batched)


class Chain:
  """The built descent steps of `attack.rescue`, in order: `wrap(chunk)`, their states and
  summaries by name."""

  def __init__(self, steps: Sequence[Tuple[str, Step]]):
    self.steps: List[Tuple[str, Step]] = list(steps)

  def get(self, name: str) -> Any:
    return dict(self.steps).get(name)

  def wrap(self, chunk: Chunk) -> Chunk:
    """s_k ∘ ... ∘ s_1 ∘ chunk; every step's own trials run the bare `chunk`."""
    wrapped = chunk
    for _, step in self.steps:
      step.chunk = chunk
      wrapped = (lambda inner, s: lambda state, stop: s.update(inner(state, stop)))(
          wrapped, step)
    return wrapped

  def state_dict(self) -> Dict[str, Any]:
    return {name: step.state_dict() for name, step in self.steps}

  def load_state_dict(self, saved: Dict[str, Any]) -> List[str]:
    """Restores each step's state saved under its name; returns the names not saved."""
    missing = []
    for name, step in self.steps:
      if name in saved:
        step.load_state_dict(saved[name])
      else:
        missing.append(name)
    return missing

  def template(self, state: Any, saved: Dict[str, Any]) -> Any:
    """The layout of a checkpoint whose rescue states are `saved` (a step that changes the
    candidates' shape, 'cut', says how), from the initial `state`."""
    for name, step in self.steps:
      if name in saved:
        state = step.template(state, saved[name])
    return state

  def resumed(self, state: Any, budget_grew: bool) -> Any:
    """After a restore: each step's catch-up (`Step.resumed`: the re-seeder's check due at the
    step a run stopped at)."""
    for _, step in self.steps:
      state = step.resumed(state, budget_grew)
    return state

  def summary(self) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for _, step in self.steps:
      out.update(step.summary())
    return out


def build(names: Sequence[str], attack: Any, ctx: Context) -> Chain:
  """The descent steps of `names` (`attack.rescue`), each initialised from its section of the
  `attack` config section; a step whose `applies(ctx)` says why not is left out (logged)."""
  steps = []
  for name in descent_steps(names):
    entry = registry.lookup('rescue', name)
    if ctx.batched and not entry.batched:
      raise ExperimentError(f"attack.rescue: {name!r} does not serve a vmapped batch of runs; "
                            f"accepted in sweeps: {', '.join(batched_names())}")
    why_not = entry.applies(ctx) if entry.applies is not None else None
    if why_not is not None:
      logging.info('attack.rescue: %r skipped (%s)', name, why_not)
      continue
    steps.append((name, entry.init(getattr(attack, entry.section), ctx)))
  return Chain(steps)


def batched_names() -> Tuple[str, ...]:
  return tuple(n for n, e in registry.items('rescue') if e.stage == 'end' or e.batched)


def per_run(chain: Chain, size: int) -> Dict[str, np.ndarray]:
  """A batch's per-run counters of every step (`Step.per_run`; {} for most)."""
  out: Dict[str, np.ndarray] = {}
  for _, step in chain.steps:
    out.update({k: np.asarray(v[:size]) for k, v in step.per_run().items()})
  return out
