"""Vectorised sweeps of the KKT pipeline: homogeneous MLPs trained toward max margin and
attacked as one jit(vmap(...)) program (`recon.sweep.grid` dispatches here for `victim.name`
'homogeneous_mlp').

Everything a point holds is a pytree that vmaps, so the group runs as the single run does
(`recon.pipelines.kkt`), every victim at once:

  victim    theta(0) = init(key_model), full-batch GD on the logistic / cross-entropy loss
            for victim.train.max_steps steps with the per-sample duals
                duals_i = -eta sum_t dL/df(x_i)(theta_t)
            (`recon.models.train.program`, the single run's steps, vmapped);
  problem   the single run's attack of each trained victim (`kkt.build_attack`, on the
            host): the target theta (theta - theta_0 for attack.kkt.target 'delta', the planted
            sum_i lambda_i grad g_i(x_i) for 'planted'), the candidates' labels, the duals'
            scale, the equation mask and weights; the constraint's radius and first-layer
            basis (`kkt.constraint_args_for`) as per-point arrays;
  attack    the objective's loss, e.g. for kkt_binary
                ||target - sum_j lambda_j y_j grad_theta f(theta; x_hat_j)||^2 / ||target||^2
                + the dual penalty,
            over (x_hat, lambda) with per-point lr / momentum (`optax.inject_hyperparams`).

Vectorised axes: `seed`, `attack.lr`, `attack.momentum`; `victim.width`, `data.n`,
`attack.n_candidates`, ... change shapes: one compiled group per value. Not in a sweep (their
single runs do them): a saved model (`victim.checkpoint`), weight decay (an L-BFGS
stationary point), sample splitting, L-BFGS, descent rescue steps. `victim.train.polish` (SLSQP
to the exact max-margin KKT point) runs on the host, victim by victim, between the vmapped
training and the vmapped attack. A point's metrics are the single run's
(`tests/test_sweep_kkt.py`).
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

from recon import registry
from recon.config import routes, sections
from recon.config import validate as config_lib
from recon.attack import driver
from recon.attack import optimiser as optimize
from recon.report import scoring as report
from recon.attack.rescue import chain as rescue
from recon.runtime import runs
from recon.sweep import axis as sweep_axis
from recon.certify import symmetry
from recon.models import train
from recon.pipelines import kkt as pk

def check(data_cfg: sections.Data, victim: sections.Victim, attack: sections.Attack,
          swept: Tuple[str, ...]) -> None:
  """One-line ConfigError for what a KKT sweep cannot vectorise in the data, victim and attack
  sections (before any compute)."""
  refuse = functools.partial(sweep_axis.refuse, 'the KKT pipeline')
  sweep_axis.refuse_width_axes('the KKT pipeline', swept)
  if victim.checkpoint:
    refuse('victim.checkpoint', victim.checkpoint, "'' (a victim trained here; attack a "
           'saved model in a single run)')
  if victim.train.weight_decay > 0:
    refuse('victim.train.weight_decay', victim.train.weight_decay,
           '0.0 (its L-BFGS stationary point runs single)')
  if rescue.descent_steps(attack.rescue):
    refuse('attack.rescue', tuple(attack.rescue), "() or ('polish',) (the KKT attack's "
           'variables are candidates and duals)')
  if routes.uses_subspace_pipeline(attack):
    refuse('attack.subspace.mode / attack.subspace.alpha_mode',
           (attack.subspace.mode, attack.subspace.alpha_mode),
           "('none', 'closed_form') (the subspace pipeline does not attack homogeneous MLPs)")
  pk.check_attack_config(data_cfg, victim, attack)


def run_group(group, *, devices=None, log_every_seconds: float = 5.0,
              label: str = '') -> Dict[str, Any]:
  """Trains and attacks the group's victims as one vmapped program; per-point arrays.

  Returns the arrays of `recon.sweep.grid.run_group` ('x_true', 'x_hat', 'final_loss', 'steps',
  'status') and each victim's training metrics, with a leading point axis.
  """
  t0 = time.time()
  cfg = group.points[0].cfg  # static fields are shared by the group
  dtype = runs.set_dtype(cfg.run.dtype)
  devices = list(devices if devices is not None else jax.devices())
  size = len(group.points)
  points = sweep_axis.padded(group.points, len(devices))
  batch = len(points)
  kind, out_dim, loss = pk.task(cfg.data, cfg.attack)
  num_classes = cfg.data.num_classes
  keys = [runs.split_keys(pt.cfg.seed) for pt in points]
  loaded = [pk.load_data(pt.cfg.data, pt.cfg.attack, k['data'], dtype)
            for pt, k in zip(points, keys)]
  for _, labels, _ in loaded:
    pk.check_training_labels(labels, kind, num_classes)
  x = jnp.stack([a.reshape(a.shape[0], -1) for a, _, _ in loaded])
  labels = jnp.stack([b for _, b, _ in loaded])
  targets = labels if kind == 'binary' else labels.astype(jnp.int32)
  n, d = x.shape[1:]
  net = pk.make_network(cfg.victim, out_dim, dtype)
  lr = cfg.victim.train.lr
  program = lambda xp, tp: train.program(  # noqa: E731  (the single run's GD with duals)
      net.apply, xp, tp, loss=loss, optimizer=optax.sgd(lr), duals_lr=lr)
  batched = sweep_axis.sharding(devices)
  key_model = jax.device_put(jnp.stack([k['model'] for k in keys]), batched)
  x, targets = jax.device_put((x, targets), batched)
  params0 = jax.jit(jax.vmap(net.init), out_shardings=batched)(key_model, x)
  carry = jax.jit(jax.vmap(lambda p, xp, tp: program(xp, tp).init(p)),
                  out_shardings=batched)(params0, x, targets)
  chunk = jax.jit(jax.vmap(lambda c, xp, tp, stop: program(xp, tp).chunk(c, stop),
                           in_axes=(0, 0, 0, None)), out_shardings=batched)
  max_steps, step, last_log = cfg.victim.train.max_steps, 0, time.time()
  while step < max_steps:
    step = min(step + cfg.run.chunk_steps, max_steps)
    carry = chunk(carry, x, targets, jnp.asarray(step, jnp.int32))
    if time.time() - last_log > log_every_seconds:
      logging.info('sweep %s: training %d victims, step %d/%d (%.0fs)', label, size,
                   int(jax.device_get(carry[2]).max()), max_steps, time.time() - t0)
      last_log = time.time()
  params_t, train_ok, duals = carry[0], jax.device_get(carry[4]), carry[6]
  train_loss = np.asarray(jax.jit(jax.vmap(lambda p, xp, tp: program(xp, tp).objective(p)))(
      params_t, x, targets))
  t_train = time.time() - t0

  # The single run's attack of every victim, built on the host; its loss and decode are the
  # same functions for every point (they close over shapes only).
  act, alpha = pk.attack_activation(cfg.victim, cfg.attack)
  attack_net = (net if (act, alpha) == (cfg.victim.activation, cfg.victim.act_alpha) else
                pk.make_network(cfg.victim, out_dim, dtype, act, alpha))
  at = lambda tree, i: jax.tree.map(lambda a: a[i], tree)  # noqa: E731
  attacks, cargs, victim_info = [], [], []
  for i, pt in enumerate(points):
    p0, xi = at(params0, i), x[i]
    pt_i, info = pk.finish_victim(pt.cfg.victim, net, at(params_t, i), xi, targets[i], kind)
    victim_info.append(info)
    radius = float(np.median(np.linalg.norm(np.asarray(xi), axis=1)))
    args = pk.constraint_args_for(pt.cfg.attack, pt.cfg.data.n, pt_i, radius, dtype)
    attacks.append(pk.build_attack(pt.cfg.attack, pt.cfg.data.n, pt.cfg.seed, attack_net, p0,
                                   pt_i, kind, num_classes, d, radius, keys[i]['init'], dtype,
                                   planted=(xi, labels[i], duals[i]), constraint_args=args))
    cargs.append(jax.tree.map(lambda a: jnp.asarray(a, dtype), args))
  first = attacks[0]
  eliminated_sphere = cfg.attack.kkt.lambda_solve == 'eliminate' and cfg.attack.kkt.prior == 'sphere'
  if eliminated_sphere and not np.allclose(
      [float(c['radius']) for c in cargs], float(cargs[0]['radius']), rtol=1e-6):
    raise config_lib.ConfigError(  # the eliminated loss closes over the radius
        f"config.data.name: {cfg.data.name!r} gives each seed's rows another norm, which "
        "attack.kkt.lambda_solve 'eliminate' with the sphere prior cannot vectorise; accepted: "
        "data.name 'synthetic_sphere', or one run per seed")
  loss_fn, decode = first.loss_fn, first.decode or (lambda s: s)
  kkt_kind = pk.kkt_labels(cfg.attack) or kind
  problems, x0, cargs = jax.device_put(
      (sweep_axis.stack([a.problem for a in attacks]), sweep_axis.stack([a.x0 for a in attacks]),
       sweep_axis.stack(cargs)), batched)

  def setup(x0_i, prob, args, lr_i, momentum):
    return optimize.init_state(x0_i, driver.make_optimizer(cfg.attack, lr_i, momentum), loss_fn,
                               prob, pk.attack_constraint(cfg.attack, kkt_kind, args))

  hyper = jax.device_put(sweep_axis.attack_hyper(points, dtype), batched)
  state = jax.jit(jax.vmap(setup), out_shardings=batched)(x0, problems, cargs, *hyper)
  optimizer = driver.make_optimizer(cfg.attack)  # lr, momentum: read from the batched state
  step_chunk = jax.jit(jax.vmap(
      lambda s, prob, args, stop: driver.chunk_fn(
          cfg.attack, loss_fn, optimizer, pk.attack_constraint(cfg.attack, kkt_kind, args))(
              s, prob, stop), in_axes=(0, 0, 0, None)), out_shardings=batched)
  progress = optimize.batch_progress(size, label, t0, log_every_seconds)
  state = optimize.drive(state, lambda s, stop: step_chunk(s, problems, cargs, stop),
                         max_steps=cfg.attack.max_steps, chunk_steps=cfg.run.chunk_steps,
                         on_chunk=progress)
  progress(state, force=True)
  out = {'x_true': x, 'x_hat': jax.vmap(decode)(state.x),
         'final_loss': jax.jit(jax.vmap(loss_fn))(state.x, problems), 'steps': state.step,
         'status': state.status}
  out = {k: np.asarray(v)[:size] for k, v in jax.device_get(out).items()}
  out.update(train_final_loss=train_loss[:size], train_finite=np.asarray(train_ok)[:size],
             victim_info=victim_info[:size], setup_seconds=t_train, seconds=time.time() - t0,
             batch=batch, p_total=0, n_shards=len(jax.tree.leaves(state.x)[0].sharding.device_set),
             n_params=int(sum(np.size(a) // batch for a in jax.tree.leaves(params_t))))
  return out


def record(pt, out: Dict[str, Any], i: int) -> Tuple[Dict[str, Any], np.ndarray]:
  """Point i's metrics (the single run's `report.score` and the victim's training outcome)
  with its coordinates, and its candidates."""
  cfg = pt.cfg
  x_true, x_hat = out['x_true'][i], out['x_hat'][i]
  result = report.score(
      x_true, x_hat, threshold=cfg.run.recovered_threshold,
      final_loss=float(out['final_loss'][i]), steps=int(out['steps'][i]),
      status=int(out['status'][i]), sign_invariant=symmetry.sign_invariant(cfg.victim.activation))
  train_loss = float(out['train_final_loss'][i])
  result.update(out['victim_info'][i])
  result.update({
      'model': cfg.victim.name, 'width': cfg.victim.width, 'depth': cfg.victim.depth,
      'objective': cfg.attack.objective, 'n_params': out['n_params'],
      'train_loss': train_loss, 'train_steps': int(cfg.victim.train.max_steps),
      'train_finite': bool(out['train_finite'][i]) and bool(np.isfinite(train_loss))})
  record_ = {'index': pt.index, **dict(pt.coords)}
  record_.update({'seed': cfg.seed, 'activation': cfg.victim.activation, 'lr': cfg.attack.lr,
                  'momentum': cfg.attack.momentum, 'optimizer': cfg.attack.optimizer,
                  'dtype': cfg.run.dtype})
  record_.update(result)
  return record_, x_hat


registry.register('sweep', routes.KKT, registry.Sweep(check=check, run_group=run_group,
                                                      record=record))
