"""The optimisation loop every pipeline shares: optimiser, chunks, checkpoints, re-seeding.

`optimise` runs `loss_fn(x, problem)` from x0 under `constraint` in jitted chunks
(`recon.attack.optimiser.drive`), checkpointing to WORKDIR/checkpoints/ and resuming from
it, logging progress, applying the rescue steps of `attack.rescue` after each chunk
(`recon.attack.rescue.chain`: re-seeding, escalation) and letting a refiner
(`recon.attack.splitting.Splitter`) replace the variables and the problem between chunks. Scoring and writing the outputs is `recon.report.scoring`.
"""
from __future__ import annotations

import time
from typing import Any, Dict, List, NamedTuple, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from recon.config import sections
from recon import metrics
from recon.runtime import checkpoint
from recon.attack import restarts
from recon.attack import optimiser as optimize
from recon.attack.rescue import chain as rescue
from recon.attack.plan import Attack
from recon.errors import ExperimentError

Array = jax.Array


def init_candidates(key: Array, n_candidates: int, d: int, dtype) -> Array:
  """Candidates ~ N(0, I) (projected onto the sphere by the constraint)."""
  return jax.random.normal(key, (n_candidates, d), dtype)


def chunk_fn(section: sections.Attack, loss_fn, optimizer, constraint):
  """`(state, problem, stop_step) -> state`: `optimize.run_chunk` bound to the `attack`
  section (its tol and max_steps).

  Pure and unjitted, so a caller can jit it (one run) or jit(vmap(...)) it (a sweep).
  """
  return lambda s, prob, stop: optimize.run_chunk(
      s, prob, stop, loss_fn=loss_fn, optimizer=optimizer, constraint=constraint,
      tol=section.tol, max_steps=section.max_steps)


def make_optimizer(a: sections.Attack, lr=None, momentum=None):
  """The `attack` section's Optax optimiser (name, lr, momentum, lr schedule; L-BFGS memory);
  `lr`/`momentum` override the section's (a sweep passes traced per-point values)."""
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
  rescue: rescue.Chain  # the built descent steps of attack.rescue (their summaries)


def optimise(attack: Attack, section: sections.Attack, run: sections.Run,
             *, seed: int, workdir: str, config_record: Dict[str, Any], t0: float,
             x_true: Optional[np.ndarray] = None, keys: Optional[Dict[str, Array]] = None,
             resume: Optional[bool] = None, pursuit=None,
             n_samples: Optional[int] = None) -> Outcome:
  """Optimises `attack.loss_fn(x, problem)` from `attack.x0` (see
  `recon.pipelines.reconstruct.reconstruct_and_report`) under the config's `attack` section (optimiser,
  budget, tol, rescue steps) and `run` section (checkpoints, resume, logging).

  `seed` keys the rescue steps; `config_record` (the whole config as a dict) is what the
  checkpoints record, so a resume can refuse a changed config. `x_true` (host array,
  optional) only feeds the progress log's recon_error of `decode(x)`. `pursuit`
  (`recon.attack.rescue.pursuit.Pursuit`, optional) joins the escalation; `n_samples` (the known n, optional)
  is what the rescue step 'cut' keeps.
  """
  problem, loss_fn, x0, constraint = attack.problem, attack.loss_fn, attack.x0, attack.constraint
  decode, refiner = attack.decode, attack.refiner
  optimizer = make_optimizer(section)
  # K stacked restarts (decode: recon.attack.restarts.BestRestart) run as a vmapped batch of K runs;
  # `face` is the one-run view of the state that the history, the log and the report read.
  block_loss = getattr(decode, 'block_loss', None)
  n_restarts = int(np.shape(x0)[0]) if block_loss is not None else 1
  if n_restarts > 1:
    run_problem = restarts.batch_problem(problem, n_restarts)
    state = jax.vmap(lambda x, prob: optimize.init_state(x, optimizer, block_loss, prob,
                                                         constraint))(x0, run_problem)
    chunk_jit = jax.jit(jax.vmap(chunk_fn(section, block_loss, optimizer, constraint),
                                 in_axes=(0, 0, None)))
    face = restarts.view
  else:
    run_problem = problem
    state = optimize.init_state(x0, optimizer, loss_fn, problem, constraint)
    chunk_jit = jax.jit(chunk_fn(section, loss_fn, optimizer, constraint))
    face = lambda s: s  # noqa: E731
  current = {'problem': run_problem}

  def chunk(s, stop):
    s = chunk_jit(s, current['problem'], stop)
    return restarts.stop_at_first_converged(s) if n_restarts > 1 else s
  checkpointer = checkpoint.RunCheckpointer(
      workdir, config_record, keys=keys,
      every_seconds=run.checkpoint_every_seconds,
      every_steps=run.checkpoint_every_steps,
      keep=run.checkpoint_keep)
  if resume is None:
    resume = bool(run.resume) and bool(checkpoint.saved_steps(workdir))
  if resume and refiner is not None:
    raise ExperimentError('run.resume: a run with sample splitting changes its problem between '
                          'chunks and cannot be resumed; accepted: split \'none\'')
  batched = n_restarts > 1
  rescues = rescue.build(section.rescue, section, rescue.Context(
      key=restarts.rescue_keys(seed, n_restarts) if batched else jax.random.PRNGKey(seed),
      loss_fn=block_loss if batched else loss_fn, problem=run_problem,
      constraint=constraint, optimizer=optimizer, tol=section.tol,
      max_steps=section.max_steps, batched=batched,
      single_array=batched or (len(jax.tree.leaves(x0)) == 1 and np.ndim(x0) == 2),
      refiner=refiner is not None, pursuit=pursuit,
      rows_fn=None if batched else attack.rows_fn, jitter=section.jitter,
      schedule_unit=optimize.schedule_unit(section.schedule,
                                           section.decay_steps or section.max_steps,
                                           section.final_ratio),
      n_samples=n_samples))
  resumed_from = None
  if resume:
    # A step that changed the candidates' shape ('cut') gives the layout its checkpoints hold.
    state, history, resumed_from = checkpointer.restore(
        lambda saved: rescues.template(state, saved))
    now = face(state)
    grew = int(now.status) == optimize.MAX_STEPS and int(now.step) < section.max_steps
    if grew:  # the budget grew: every run that spent the old one goes on
      state = state._replace(status=jnp.where(
          (state.status == optimize.MAX_STEPS) & (state.step < section.max_steps),
          optimize.RUNNING, state.status).astype(jnp.int32))
    missing = rescues.load_state_dict(checkpointer.restored_aux)
    if missing:
      logging.warning('the checkpoint holds no state of the rescue step(s) %s (written by an '
                      'older version): they restart their keys and schedules', missing)
    state = rescues.resumed(state, grew)
    if grew and history and history[-1][0] == int(face(state).step):
      # The catch-up a resumed step made is what an unbroken run logged at this step.
      history[-1] = (int(face(state).step), float(face(state).loss))
    logging.info('resumed from the checkpoint at step %d (loss %.3e)', resumed_from,
                 float(face(state).loss))
  else:
    history = [(0, float(face(state).loss))]

  decode = decode if decode is not None else (lambda params: params)
  has_truth = x_true is not None

  def log_progress(s):
    err = (f'  recon_error '
           f'{metrics.per_sample_errors(x_true, np.asarray(decode(s.x))).mean():.4f}'
           if has_truth else '')
    logging.info('step %7d  loss %.3e%s  (%.0fs)', int(s.step), float(s.loss), err,
                 time.time() - t0)

  progress = optimize.ProgressLogger(log_progress, run.log_every_seconds)

  def on_chunk(state_now):
    s = face(state_now)
    history.append((int(s.step), float(s.loss)))
    stopped = int(s.status) != optimize.RUNNING or int(s.step) >= section.max_steps
    checkpointer(state_now, history, stopped, aux=rescues.state_dict() or None)
    progress(s)
    if refiner is None or int(s.status) != optimize.RUNNING or int(s.step) >= section.max_steps:
      return None
    out = refiner(s.x, current['problem'], int(s.step), history)
    if out is None:
      return None
    new_x, current['problem'] = out
    fresh = optimize.init_state(new_x, optimizer, loss_fn, current['problem'], lambda z: z)
    history.append((int(s.step), float(fresh.loss)))
    return fresh._replace(step=s.step)

  chunk = rescues.wrap(chunk)
  state = optimize.drive(state, chunk, max_steps=section.max_steps,
                         chunk_steps=run.chunk_steps, on_chunk=on_chunk)
  checkpointer.close()
  progress(face(state), force=True)
  return Outcome(state=face(state), problem=problem if batched else current['problem'],
                 history=history, resumed_from=resumed_from, rescue=rescues)
