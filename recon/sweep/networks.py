"""Vectorised sweeps of GD-trained networks: a group of victims trained and attacked as one
jit(vmap(...)) program (`recon.sweep.grid` dispatches here for the networks pipeline's victims).

Any registered victim that builds a Flax module (`victim.name` two_layer, resnet, vit,
random_features_gd, ...) sweeps, because everything a point holds is a pytree that vmaps:

  victim    W(0) = init(key_model), trained by the full-batch GD of `recon.models.train`
            (`train.program`: the single run's steps, early stop at victim.train.tol) with its own
            step size in the optimiser state (`optax.inject_hyperparams`): victim.train.lr,
            or 1 / lambda_max(J^T J / n) at W(0) per point;
  problem   theta = vec(W_L(T) - W_L(0)) (vec W_L(T) without knows_init) and the weights the
            head-Jacobian features are read at (`attack.jacobian_at`), as the single run's
            `recon.pipelines.networks.attack`:
                loss(X_hat) = ||P_perp[J(X_hat)] theta||^2 / ||theta||^2,
            J(X_hat) the per-class rows d f_c(x_j) / d vec(W_L);
  attack    candidates from key_init, the attack's optimiser with per-point lr / momentum,
            the batched rescue steps of attack.rescue (escalation).

Vectorised axes: `seed`, `attack.lr`, `attack.momentum`. The width (`victim.width`) changes
shapes, so it is a static axis: one compiled group per width (`victim.p` / `p_over_dn` are
the random-features width and are refused here). Not in a sweep: a saved model
(`victim.checkpoint`), DP-SGD and release noise (their single runs do them), restarts,
sample splitting, the subspace pipeline's attacks (`routes.uses_subspace_pipeline`: k is read
off each victim's dW1, a shape per point). Any objective registered for the networks pipeline runs on the features
(`registry.Objective`, e.g. one registered from a test). A point's metrics are the single run's (`tests/test_sweep_networks.py`).
"""
from __future__ import annotations

import functools
import time
from typing import Any, Dict, Tuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from recon.config import routes, sections
from recon.config import validate as config_lib
from recon import data, registry
from recon.attack import driver
from recon.attack import optimiser as optimize
from recon.report import scoring as report
from recon.attack.rescue import chain as rescue
from recon.runtime import runs
from recon.sweep import axis as sweep_axis
from recon.certify import symmetry
from recon.models import train
from recon.objectives import parameter_gradients
from recon.pipelines import networks as net

def check(data_cfg: sections.Data, victim: sections.Victim, attack: sections.Attack,
          swept: Tuple[str, ...]) -> None:
  """One-line ConfigError for what a network sweep cannot vectorise in the data, victim and
  attack sections (before any compute)."""
  refuse = functools.partial(sweep_axis.refuse, 'network victims')
  sweep_axis.refuse_width_axes('network victims', swept)
  if registry.lookup('victim', victim.name).build is None or victim.checkpoint:
    refuse('victim.name', victim.name, 'a victim trained here (two_layer, resnet, vit, '
           'random_features_gd), not a saved model')
  if victim.train.dp.mode != 'off':
    refuse('victim.train.dp.mode', victim.train.dp.mode, "'off' (DP-SGD runs single)")
  if routes.uses_subspace_pipeline(attack):
    # The subspace pipeline reads its dimension k off each victim's dW1 (a shape per point).
    s = attack.subspace
    raise config_lib.ConfigError(
        f'config.attack.objective: {attack.objective!r} (attack.subspace.mode {s.mode!r}, '
        f'attack.subspace.alpha_mode {s.alpha_mode!r}) runs the subspace pipeline, which sweeps '
        'of network victims do not vectorise; accepted: an objective of the networks pipeline '
        "with attack.subspace.mode 'none' and alpha_mode 'closed_form', or one run per seed")
  net.check_config(data_cfg, victim, attack)


def _optimizer(t: Any, lr) -> optax.GradientTransformation:
  """The victim's GD (`train.make_optimizer`) with its step size held in the state."""
  return optax.inject_hyperparams(train.make_optimizer, static_args=('momentum', 'weight_decay'))(
      lr=lr, momentum=t.momentum, weight_decay=t.weight_decay)


def run_group(group, *, devices=None, log_every_seconds: float = 5.0,
              label: str = '') -> Dict[str, Any]:
  """Trains and attacks the group's victims as one vmapped program; per-point arrays.

  Returns the arrays of `recon.sweep.grid.run_group` ('x_true', 'x_hat', 'final_loss', 'steps',
  'status'), the problems and the victims' training outcome, with a leading point axis.
  """
  t0 = time.time()
  cfg = group.points[0].cfg  # static fields are shared by the group
  dtype = runs.set_dtype(cfg.run.dtype)
  devices = list(devices if devices is not None else jax.devices())
  size = len(group.points)
  points = sweep_axis.padded(group.points, len(devices))
  batch = len(points)
  t = cfg.victim.train

  keys = [runs.split_keys(pt.cfg.seed) for pt in points]
  loaded = [data.load(pt.cfg.data, k['data'], dtype) for pt, k in zip(points, keys)]
  x = jnp.stack([a.reshape(a.shape[0], -1) for a, _, _ in loaded])
  n, d = x.shape[1:]
  model, _, input_shape, sample, layer = net.victim_module(cfg.data, cfg.victim, loaded[0][2], d,
                                                          keys[0]['model'], dtype)
  c = cfg.data.num_classes
  targets = jnp.stack([train.make_targets(t.loss, b, c, dtype) for _, b, _ in loaded])

  apply = net.apply_with(model, input_shape)
  constraint = optimize.sphere_constraint(float(np.sqrt(d)))
  batched = sweep_axis.sharding(devices)

  def init_victim(key_model, xp):
    params0, others = net.init_victim(model, key_model, sample)
    lr = (t.lr if t.lr is not None else 1.0 / train.gauss_newton_top_eigenvalue(
        lambda p, xb: apply(p, others, xb), params0, xp))
    # In the weights' dtype, as the single run's Python-float step size is applied.
    return params0, others, jnp.asarray(lr, jax.tree.leaves(params0)[0].dtype)

  inputs = jax.device_put((sweep_axis.stack(keys), x, targets), batched)
  params0, others, train_lr = jax.jit(jax.vmap(lambda k, xp: init_victim(k['model'], xp)),
                                      out_shardings=batched)(inputs[0], inputs[1])
  # Training: the single run's GD steps, chunk by chunk, every victim at once.
  placeholder = _optimizer(t, 0.0)  # the step size is read from each point's state
  program = lambda o, xp, tp, opt: train.program(  # noqa: E731  (the single run's steps)
      lambda q, xb: apply(q, o, xb), xp, tp, loss=t.loss, optimizer=opt, tol=t.tol)
  init_train = jax.vmap(lambda p, o, xp, tp, lr: program(o, xp, tp, _optimizer(t, lr)).init(p))
  chunk_train = jax.jit(jax.vmap(
      lambda carry, o, xp, tp, stop: program(o, xp, tp, placeholder).chunk(carry, stop),
      in_axes=(0, 0, 0, 0, None)), out_shardings=batched)
  carry = jax.jit(init_train)(params0, others, inputs[1], inputs[2], train_lr)
  last_log = time.time()
  while True:
    steps, loss, ok = jax.device_get(carry[2:5])
    active = (steps < t.max_steps) & ok & (loss > t.tol)
    if not active.any():
      break
    if time.time() - last_log > log_every_seconds:
      logging.info('sweep %s: training %d/%d victims still running, step %d (%.0fs)', label,
                   int(active[:size].sum()), size, int(steps.max()), time.time() - t0)
      last_log = time.time()
    stop = jnp.asarray(min(int(steps[active].min()) + cfg.run.chunk_steps, t.max_steps),
                       jnp.int32)
    carry = chunk_train(carry, others, inputs[1], inputs[2], stop)
  params_t, train_steps, train_loss, train_ok = carry[0], carry[2], carry[3], carry[4]
  t_train = time.time() - t0
  first = lambda tree: jax.tree.map(lambda a: a[0], tree)  # noqa: E731
  # The single run's attack (`recon.pipelines.networks`), vmapped: one linear head (read off
  # the first victim: its structure, not its values, is what the rows use) for the group.
  head = net.linear_head(cfg.attack, apply, first(params_t), first(others), keys[0]['init'], d,
                         dtype, layer)
  features, loss_fn = net.attack_functions(cfg.attack, apply, layer, head)
  knows = config_lib.knows_init(cfg.attack.knows_init, True)  # recon trains it: W(0) given

  def setup_point(p0, pt, oth, key_init, lr, momentum):
    # As the single run's attack: the weights in the run's dtype (a trained model is saved,
    # then read back and cast).
    p0, pt, oth = jax.tree.map(lambda a: jnp.asarray(a, dtype), (p0, pt, oth))
    prob = net.victim_problem(cfg.attack, layer, p0, pt, oth, knows_init=knows, head=head)
    x0 = driver.init_candidates(key_init, cfg.attack.n_candidates, d, dtype)
    state = optimize.init_state(x0, driver.make_optimizer(cfg.attack, lr, momentum), loss_fn,
                                prob, constraint)
    return prob, state

  hyper = jax.device_put(sweep_axis.attack_hyper(points, dtype), batched)
  problems, state = jax.jit(jax.vmap(setup_point), out_shardings=batched)(
      params0, params_t, others, inputs[0]['init'], *hyper)
  optimizer = driver.make_optimizer(cfg.attack)  # lr, momentum: read from the batched state
  step_chunk = jax.jit(jax.vmap(driver.chunk_fn(cfg.attack, loss_fn, optimizer, constraint),
                                in_axes=(0, 0, None)), out_shardings=batched)
  rescues = rescue.build(cfg.attack.rescue, cfg.attack, rescue.Context(
      key=jnp.stack([jax.random.PRNGKey(pt.cfg.seed) for pt in points]), loss_fn=loss_fn,
      problem=problems, constraint=constraint, optimizer=optimizer, tol=cfg.attack.tol,
      max_steps=cfg.attack.max_steps, batched=True))

  progress = optimize.batch_progress(size, label, t0, log_every_seconds)
  chunk = rescues.wrap(lambda s, stop: step_chunk(s, problems, stop))
  state = optimize.drive(state, chunk, max_steps=cfg.attack.max_steps,
                         chunk_steps=cfg.run.chunk_steps, on_chunk=progress)
  progress(state, force=True)
  batch_loss = jax.jit(jax.vmap(loss_fn))
  out = {'x_true': inputs[1], 'x_hat': state.x, 'final_loss': batch_loss(state.x, problems),
         'loss_at_truth': batch_loss(inputs[1], problems), 'steps': state.step,
         'status': state.status, 'train_lr': train_lr, 'train_steps': train_steps,
         'train_final_loss': train_loss, 'train_finite': train_ok}
  out = {k: np.asarray(v)[:size] for k, v in jax.device_get(out).items()}
  out['problems'] = jax.tree.map(lambda a: np.asarray(a)[:size], jax.device_get(problems))
  out['features'] = jax.jit(features)
  out['rescue_per_run'] = rescue.per_run(rescues, size)
  out.update(setup_seconds=t_train, seconds=time.time() - t0, batch=batch, p_total=0,
             n_shards=len(state.x.sharding.device_set), layer=layer, head_rows=head is not None,
             p_l=parameter_gradients.layer_size(jax.tree.map(lambda a: a[0], params_t), layer))
  return out


def record(pt, out: Dict[str, Any], i: int) -> Tuple[Dict[str, Any], np.ndarray]:
  """Point i's metrics (the single run's `report.score` and the victim's training outcome)
  with its coordinates, and its candidates."""
  cfg = pt.cfg
  prob = jax.tree.map(lambda a: jnp.asarray(a[i]), out['problems'])
  x_true, x_hat = out['x_true'][i], out['x_hat'][i]
  n, d = x_true.shape
  result = report.score(
      x_true, x_hat, threshold=cfg.run.recovered_threshold,
      final_loss=float(out['final_loss'][i]), steps=int(out['steps'][i]),
      status=int(out['status'][i]), phi_true=out['features'](prob, jnp.asarray(x_true)),
      phi_hat=out['features'](prob, jnp.asarray(x_hat)),
      sign_invariant=symmetry.sign_invariant(cfg.victim.activation))
  t = cfg.victim.train
  steps, final = int(out['train_steps'][i]), float(out['train_final_loss'][i])
  result.update({
      'model': cfg.victim.name, 'width': cfg.victim.width, 'num_classes': cfg.data.num_classes,
      'p_L': out['p_l'], 'p_L_over_dn': out['p_l'] / (d * n), 'train_lr': float(out['train_lr'][i]),
      'train_lr_source': net.train_lr_source(t),
      'train_steps': steps, 'train_final_loss': final,
      'train_reached_tol': bool(np.isfinite(final) and final <= t.tol),
      'train_finite': bool(out['train_finite'][i]) and bool(np.isfinite(final)),
      'projection_loss_at_truth': float(out['loss_at_truth'][i]),
      'jacobian_at': cfg.attack.jacobian_at, 'layer': out['layer'],
      'head_rows': out['head_rows']})
  result.update({k: int(v[i]) for k, v in out.get('rescue_per_run', {}).items()})
  rec = {'index': pt.index, **dict(pt.coords)}
  rec.update({'seed': cfg.seed, 'activation': cfg.victim.activation, 'lr': cfg.attack.lr,
              'momentum': cfg.attack.momentum, 'optimizer': cfg.attack.optimizer,
              'dtype': cfg.run.dtype, 'n': n, 'd': d})
  rec.update(result)
  return rec, x_hat


registry.register('sweep', routes.NETWORKS, registry.Sweep(check=check, run_group=run_group,
                                                           record=record))
