"""The optimisation loop every pipeline shares: optimiser, chunks, checkpoints, re-seeding.

`optimise` runs `loss_fn(x, problem)` from x0 under `constraint` in jitted chunks
(`recon.optimize.drive`), checkpointing to WORKDIR/checkpoints/ and resuming from
it, logging progress, re-seeding collapsed candidates (`recon.refine`) and letting
a refiner (`recon.splitting.Splitter`) replace the variables and the problem
between chunks. Scoring and writing the outputs is `recon.report`.
"""
from __future__ import annotations

import time
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from absl import logging

from recon import checkpoint, escalate, metrics, optimize, refine
from recon.attack import Attack
from recon.errors import ExperimentError

Array = jax.Array


def init_candidates(key: Array, n_candidates: int, d: int, dtype) -> Array:
  """Candidates ~ N(0, I) (projected onto the sphere by the constraint)."""
  return jax.random.normal(key, (n_candidates, d), dtype)


def chunk_fn(cfg: ml_collections.ConfigDict, loss_fn, optimizer, constraint):
  """`(state, problem, stop_step) -> state`: `optimize.run_chunk` bound to the config.

  Pure and unjitted, so a caller can jit it (one run) or jit(vmap(...)) it (a sweep).
  """
  return lambda s, prob, stop: optimize.run_chunk(
      s, prob, stop, loss_fn=loss_fn, optimizer=optimizer, constraint=constraint,
      tol=cfg.attack.tol, max_steps=cfg.attack.max_steps)


def make_optimizer(cfg: ml_collections.ConfigDict, lr=None, momentum=None):
  """The config's Optax optimiser (name, lr, momentum, lr schedule; L-BFGS memory);
  `lr`/`momentum` override the config's (a sweep passes traced per-point values)."""
  a = cfg.attack
  return optimize.make_optimizer(
      a.optimizer, a.lr if lr is None else lr, a.momentum if momentum is None else momentum,
      schedule=a.schedule, decay_steps=a.decay_steps or a.max_steps, final_ratio=a.final_ratio,
      memory_size=a.lbfgs_memory, linesearch_steps=a.lbfgs_linesearch_steps)


class Outcome(NamedTuple):
  """What `optimise` hands to the report."""
  state: Any  # optimize.State at the stop
  problem: Any  # the problem at the stop (a refiner may have replaced it)
  history: List[Tuple[int, float]]  # (step, loss)
  resumed_from: Optional[int]  # the checkpoint step resumed from, or None
  reseeder: Optional[refine.Reseeder]
  escalator: Optional[escalate.Escalator] = None


def optimise(cfg: ml_collections.ConfigDict, workdir: str, attack: Attack, *, t0: float,
             x_true: Optional[np.ndarray] = None, keys: Optional[Dict[str, Array]] = None,
             resume: Optional[bool] = None, pursuit=None) -> Outcome:
  """Optimises `attack.loss_fn(x, problem)` from `attack.x0` (see
  `recon.reconstruct.reconstruct_and_report`).

  `x_true` (host array, optional) only feeds the progress log's recon_error of
  `decode(x)`. `pursuit` (`recon.pursuit.Pursuit`, optional) joins the escalation.
  """
  problem, loss_fn, x0, constraint = attack.problem, attack.loss_fn, attack.x0, attack.constraint
  decode, refiner = attack.decode, attack.refiner
  optimizer = make_optimizer(cfg)
  state = optimize.init_state(x0, optimizer, loss_fn, problem, constraint)
  current = {'problem': problem}
  chunk_jit = jax.jit(chunk_fn(cfg, loss_fn, optimizer, constraint))
  chunk = lambda s, stop: chunk_jit(s, current['problem'], stop)  # noqa: E731
  checkpointer = checkpoint.RunCheckpointer(
      workdir, cfg.to_dict(), keys=keys,
      every_seconds=cfg.run.checkpoint_every_seconds,
      every_steps=cfg.run.checkpoint_every_steps,
      keep=cfg.run.checkpoint_keep)
  if resume is None:
    resume = bool(cfg.run.resume) and bool(checkpoint.saved_steps(workdir))
  if resume and refiner is not None:
    raise ExperimentError('run.resume: a run with sample splitting changes its problem between '
                          'chunks and cannot be resumed; accepted: split \'none\'')
  reseeder = None
  if cfg.attack.reseed.every:
    if not (len(jax.tree.leaves(x0)) == 1 and np.ndim(x0) == 2):
      raise ExperimentError('attack.reseed.every: re-seeding needs the optimised variables to be '
                            'one (n_candidates, k) array; accepted here: 0')
    reseeder = refine.Reseeder(
        jax.random.fold_in(jax.random.PRNGKey(cfg.seed), 0x5EED), loss_fn, problem,
        constraint, optimizer, every=cfg.attack.reseed.every,
        threshold=cfg.attack.reseed.threshold,
        n_proposals=cfg.attack.reseed.proposals)
  escalator = None
  if (cfg.attack.escalate.mode == 'auto' and refiner is None
      and len(jax.tree.leaves(x0)) == 1 and np.ndim(x0) == 2):
    # 'auto': one candidate set, no sample splitting (restarts and splitting are their own
    # escalations).
    escalator = escalate.Escalator(
        jax.random.fold_in(jax.random.PRNGKey(cfg.seed), 0xE5C), loss_fn, problem,
        constraint, optimizer, tol=cfg.attack.tol, every=cfg.attack.escalate.every,
        window=cfg.attack.escalate.window,
        trial_steps=cfg.attack.escalate.trial_steps,
        restart_after=cfg.attack.escalate.restart_after,
        restart_steps=cfg.attack.escalate.restart_steps, max_steps=cfg.attack.max_steps,
        accept_ratio=cfg.attack.escalate.accept_ratio,
        weak_ratio=cfg.attack.escalate.weak_ratio,
        max_weak_share=cfg.attack.escalate.max_weak_share, pursuit=pursuit)
  resumed_from = None
  if resume:
    state, history, resumed_from = checkpointer.restore(state)
    grew = int(state.status) == optimize.MAX_STEPS and int(state.step) < cfg.attack.max_steps
    if grew:
      state = state._replace(status=jnp.asarray(optimize.RUNNING, jnp.int32))  # budget grew
    if reseeder is not None:
      if 'reseed' in checkpointer.restored_aux:
        reseeder.load_state_dict(checkpointer.restored_aux['reseed'])
      else:
        logging.warning('the checkpoint holds no re-seeder state (written by an older '
                        'version): re-seeding restarts its key and schedule')
      if grew:
        # The stopped run skipped the check due at its last step; an unbroken run made it
        # (and logged the loss after it).
        state = reseeder(state)
        if history and history[-1][0] == int(state.step):
          history[-1] = (int(state.step), float(state.loss))
    if escalator is not None and 'escalate' in checkpointer.restored_aux:
      escalator.load_state_dict(checkpointer.restored_aux['escalate'])
    logging.info('resumed from the checkpoint at step %d (loss %.3e)', resumed_from,
                 float(state.loss))
  else:
    history = [(0, float(state.loss))]

  decode = decode if decode is not None else (lambda params: params)
  has_truth = x_true is not None

  def log_progress(s):
    err = (f'  recon_error '
           f'{metrics.per_sample_errors(x_true, np.asarray(decode(s.x))).mean():.4f}'
           if has_truth else '')
    logging.info('step %7d  loss %.3e%s  (%.0fs)', int(s.step), float(s.loss), err,
                 time.time() - t0)

  progress = optimize.ProgressLogger(log_progress, cfg.run.log_every_seconds)

  def on_chunk(s):
    history.append((int(s.step), float(s.loss)))
    stopped = int(s.status) != optimize.RUNNING or int(s.step) >= cfg.attack.max_steps
    aux = {}
    if reseeder is not None:
      aux['reseed'] = reseeder.state_dict()
    if escalator is not None:
      aux['escalate'] = escalator.state_dict()
    checkpointer(s, history, stopped, aux=aux or None)
    progress(s)
    if refiner is None or int(s.status) != optimize.RUNNING or int(s.step) >= cfg.attack.max_steps:
      return None
    out = refiner(s.x, current['problem'], int(s.step), history)
    if out is None:
      return None
    new_x, current['problem'] = out
    fresh = optimize.init_state(new_x, optimizer, loss_fn, current['problem'], lambda z: z)
    history.append((int(s.step), float(fresh.loss)))
    return fresh._replace(step=s.step)

  compiled_chunk = chunk
  if reseeder is not None:
    chunk = lambda s, stop: reseeder(compiled_chunk(s, stop))  # noqa: E731
  if escalator is not None:
    escalator.chunk = compiled_chunk
    wrapped = chunk
    chunk = lambda s, stop: escalator(wrapped(s, stop))  # noqa: E731

  state = optimize.drive(state, chunk, max_steps=cfg.attack.max_steps,
                         chunk_steps=cfg.run.chunk_steps, on_chunk=on_chunk)
  checkpointer.close()
  progress(state, force=True)
  return Outcome(state=state, problem=current['problem'], history=history,
                 resumed_from=resumed_from, reseeder=reseeder, escalator=escalator)
