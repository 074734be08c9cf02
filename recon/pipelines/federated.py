"""A federated client's update, inverted with the projection loss (pipeline 'federated').

config -> the client's data.n records -> the global network victim.name at initialisation,
W(0) (what the server sends) -> the client's local training, `federated.*` (E epochs,
minibatches of B, step eta, SGD or Adam; recon/models/federated.py) -> W(1) (what it sends
back) -> theta = vec(W_L(1) - W_L(0)) -> the head's Jacobian rows of the candidates at W(0)
(`federated.features_at` 'init') or at W(0) and W(1) stacked ('init_and_update') -> the
projection loss -> `recon.pipelines.networks.attack`: records.json, report.html, the
certificate, exactly as for a network attacked with a known init (attack.knows_init).

Threat model: the server knows the architecture, W(0) and W(1) (every layer), and n when
attack.knows_n; not the records, their labels, nor E, B, eta or the optimiser. WORKDIR/model
holds the server's view (W(0) as the initial, W(1) as the trained parameters).
"""
from __future__ import annotations

import dataclasses
import os
import time
from typing import Any, Dict

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from recon import data, errors, metrics, registry
from recon.attack import driver, gradient_matching, restarts
from recon.attack import optimiser as optimize
from recon.attack.plan import Attack
from recon.config import sections
from recon.models import federated, min_norm, train
from recon.models import saved as model_ckpt
from recon.objectives import parameter_gradients
from recon.pipelines import networks, reconstruct, victims
from recon.runtime import io, runs

NAME = 'federated'
# federated.features_at -> attack.jacobian_at on the attacked view (`attack_view`).
JACOBIAN_AT = {'init': 'trained', 'init_and_update': 'init_and_trained'}


def _fail(message: str):
  raise errors.ExperimentError(message)


def section(record: Dict[str, Any]) -> sections.Federated:
  """The `federated` section of a run's validated config record (RunSpec.record)."""
  return sections.Federated.from_section(record[NAME])


def check(data_cfg: sections.Data, victim: sections.Victim, attack: sections.Attack,
          run_cfg: sections.Run) -> None:
  """Cross-field refusals of the data, victim and attack sections (one line, before compute)."""
  del run_cfg
  if victim.checkpoint or victim.init_checkpoint:
    _fail('victim.checkpoint: a saved model with pipeline federated; accepted: None (the '
          'client trains the global model victim.name from its initialisation)')
  if registry.lookup('victim', victim.name).build is None:
    _fail(f'victim.name: {victim.name!r} builds no network; accepted: '
          f'{", ".join(n for n, v in registry.items("victim") if v.build is not None)}')
  if attack.knows_init is False:
    _fail('attack.knows_init: False with pipeline federated; accepted: None or True (the server '
          'sent W(0))')
  if data_cfg.n is None:
    _fail('data.n: None with pipeline federated; accepted: int >= 1 (the client\'s records)')
  networks.check_config(data_cfg, victim, attack)
  victims.check_victim(victim)
  restarts.check_config(attack, victim)


def check_client(fed: sections.Federated, n: int, num_classes: int) -> None:
  """The `federated` section against the client's n records and the classes (one line)."""
  if fed.batch is not None and fed.batch > n:
    _fail(f'federated.batch: {fed.batch} > data.n={n}; accepted: an int in 1..{n}, or None '
          '(full batch)')
  try:
    train.check_loss(fed.loss, num_classes)
  except train.TrainingSetupError as e:
    _fail(str(e).replace('victim.train.loss', 'federated.loss'))


def client_update(data_cfg: sections.Data, victim: sections.Victim, fed: sections.Federated,
                  keys: Dict[str, Any], x, y, meta: Dict[str, Any], dtype):
  """(module, layer, W(0), W(1), other collections, input shape, training info): the global
  model at initialisation and the client's local training on (x, y)."""
  n, d = x.shape
  model, _, input_shape, sample, layer = networks.victim_module(data_cfg, victim, meta, d,
                                                                keys['model'], dtype)
  params0, others = networks.init_victim(model, keys['model'], sample)
  apply = networks.make_apply(model, input_shape, others)
  targets = train.make_targets(fed.loss, y, data_cfg.num_classes, dtype)
  batch = fed.batch or n
  t = time.time()
  params1, info = federated.local_update(
      apply, params0, x, targets, loss=fed.loss, epochs=fed.epochs, batch=batch, lr=fed.lr,
      optimizer_name=fed.optimizer, key=jax.random.fold_in(keys['model'], 1))
  params1 = jax.block_until_ready(params1)
  seconds = time.time() - t
  if not info['finite']:
    _fail(f'federated.lr: the {fed.loss} loss became non-finite in local training at '
          f'lr={fed.lr:g}; accepted: a smaller --config.federated.lr')
  note = (f'{fed.epochs} local epoch(s) of {fed.optimizer} in batches of {batch} at lr '
          f'{fed.lr:g}: {info["steps"]} steps, {fed.loss} {info["loss_before"]:.3g} -> '
          f'{info["loss_after"]:.3g}')
  logging.info('client: %s (%.2f s)', note, seconds)
  train_info = {
      'train_loss_name': fed.loss, 'train_lr': float(fed.lr), 'train_lr_source': 'config',
      'train_steps': info['steps'], 'train_final_loss': info['loss_after'],
      'train_note': note, 'train_seconds': seconds, 'federated_epochs': fed.epochs,
      'federated_batch': batch, 'federated_optimizer': fed.optimizer,
      'federated_features_at': fed.features_at, 'client_loss_before': info['loss_before']}
  return model, layer, params0, params1, others, input_shape, train_info


def attack_view(fed: sections.Federated, layer: str, params0, params1):
  """The trained weights the head's Jacobian rows are read at: W(1) ('init_and_update': with
  W(0), stacked) or W(0) with the head W_L(1) ('init': every row at W(0); a linear head's own
  value never enters its Jacobian rows)."""
  return federated.head_view(params0, params1, layer) if fed.features_at == 'init' else params1


def certify_target(head_theta):
  """theta* (q,) for the certificate: the head update's dominant direction, Theta (q, C) times
  its top right singular vector -- a vector in the span of the records' features at W(0)
  whenever every column of Theta is (one full-batch GD step), read blind from Theta alone."""
  t = np.asarray(head_theta, np.float64)
  _, _, vt = np.linalg.svd(t, full_matrices=False)
  return jnp.asarray(t @ vt[0], head_theta.dtype)


def attack_update(data_cfg: sections.Data, victim: sections.Victim, attack: sections.Attack,
                  run_cfg: sections.Run, seed: int, fed: sections.Federated, model, layer: str,
                  params0, params1, others, input_shape, train_info: Dict[str, Any], record,
                  workdir, *, x, y, meta, keys, dtype, t0: float) -> Dict[str, Any]:
  """The projection attack on W_L(1) - W_L(0) (`recon.pipelines.networks`' parts, with W(0)
  known), reported like any run; with features_at 'init' and a linear head also certified
  against `certify_target` on the candidates' rows at W(0)."""
  attack_cfg = dataclasses.replace(attack, knows_init=True,
                                   jacobian_at=JACOBIAN_AT[fed.features_at])
  record['attack'].update(knows_init=True, jacobian_at=attack_cfg.jacobian_at)
  n, d = x.shape
  apply = networks.apply_with(model, input_shape)
  trained = attack_view(fed, layer, params0, params1)
  head = networks.linear_head(attack_cfg, apply, trained, others, keys['init'], d, dtype, layer)
  problem = networks.victim_problem(attack_cfg, layer, params0, trained, others, knows_init=True,
                                    head=head)
  _, loss_fn = networks.attack_functions(attack_cfg, apply, layer, head)
  certify = head is not None and fed.features_at == 'init'
  if certify:
    rows_at = problem['params']
    feature_fn = lambda xh: parameter_gradients.head_rows(  # noqa: E731
        lambda p, xb: apply(p, others, xb), rows_at, xh, layer=layer)
    theta_star = certify_target(problem['theta'])
  else:
    features, _ = networks.attack_functions(attack_cfg, apply, layer, head)
    feature_fn = lambda xh: features(problem, xh)  # noqa: E731
    theta_star = None
  attack_loss, x0, decode = restarts.with_restarts(
      attack_cfg.restarts, loss_fn, problem, keys['init'],
      lambda k: driver.init_candidates(k, attack_cfg.n_candidates, d, dtype))
  p_l = parameter_gradients.layer_size(params1, layer)
  extra = {
      'model': victim.name, 'num_classes': data_cfg.num_classes, 'p_L': p_l,
      'width': victim.width, 'p_L_over_dn': p_l / (d * n),
      'n_params_total': int(sum(np.size(a) for a in jax.tree.leaves(params1))),
      **train_info, 'image_shape': meta.get('image_shape') and list(meta['image_shape']),
      'jacobian_at': attack_cfg.jacobian_at, 'head_rows': head is not None,
      'certify_target': 'Theta v1 (the head update times its top right singular vector)'
                        if certify else None,
      'projection_loss_at_truth': float(jax.jit(loss_fn)(x, problem))}
  logging.info('p_L/(dn) = %.3g; projection loss at the true records (diagnostic) %.3e',
               p_l / (d * n), extra['projection_loss_at_truth'])
  bundle = Attack(problem=problem, loss_fn=attack_loss, x0=x0,
                  constraint=optimize.sphere_constraint(float(np.sqrt(d))),
                  feature_fn=feature_fn, decode=decode, certify_theta=theta_star)
  rows = {'init': 'W(0)', 'init_and_update': 'W(0) and W(1), stacked'}[fed.features_at]
  # The certificate counts the features' size p from victim.p (random features): here it is
  # the head's fan-in, the length of the rows it is given.
  rows_victim = dataclasses.replace(victim, p=int(problem['theta'].shape[0])) if certify else victim
  return reconstruct.reconstruct_and_report(
      reconstruct.tail(data_cfg, rows_victim, attack_cfg, run_cfg, seed, record), workdir,
      bundle, x_true=x, y=y, meta=meta, t0=t0, extra_metrics=extra, keys=keys,
      threat_model={
          'known': ['architecture', 'W(0) (sent by the server)', 'W(1) (the client\'s update)']
                   + (['n (number of records)'] if attack_cfg.knows_n else []),
          'unknown': ['X (the client\'s records)', 'y (labels: never used by the attack)',
                      'the local epochs, batch, step and optimiser']
                     + ([] if attack_cfg.knows_n else ['n (number of records)']),
          'target': f'theta = vec(W_{layer}(1) - W_{layer}(0))',
          'features': f'the head\'s Jacobian rows d f_c(x) / d vec(W_{layer}) at {rows}',
          'attacker_knows_init': True, 'attacker_knows_n': attack_cfg.knows_n})


def run(spec: sections.RunSpec, workdir: str, dtype, resuming: bool = False) -> Dict[str, Any]:
  """Trains the client's update, saves the server's view to WORKDIR/model, then attacks it."""
  del resuming  # the update is retrained from the seed (seconds); the attack resumes itself
  t0 = time.time()
  fed = section(spec.record)
  check_client(fed, spec.data.n, spec.data.num_classes)
  min_norm.apply_matmul_precision(spec.run.matmul_precision)
  keys = runs.split_keys(spec.seed)
  x, y, meta = data.load(spec.data, keys['data'], dtype)
  x = x.reshape(x.shape[0], -1)
  model, layer, params0, params1, others, input_shape, train_info = client_update(
      spec.data, spec.victim, fed, keys, x, y, meta, dtype)
  record = spec.to_dict()
  victims.keep_model(workdir, model_ckpt.flax_model(
      model, jax.device_get(params1), jax.device_get(params0),
      collections=jax.device_get(others) or None, n=x.shape[0], info={'train': train_info},
      data_description=victims.data_description(victims.data_record(record), x, input_shape,
                                                meta)), None)
  summary = attack_update(spec.data, spec.victim, spec.attack, spec.run, spec.seed, fed, model,
                          layer, params0, params1, others, input_shape, train_info, record,
                          workdir, x=x, y=y, meta=meta, keys=keys, dtype=dtype, t0=t0)
  if fed.baseline != 'none':
    io.write_json(os.path.join(workdir, 'baseline.json'), baseline(
        spec.data, spec.run, fed, networks.make_apply(model, input_shape, others), params0,
        params1, x, y, meta, keys, summary))
  return summary


def baseline(data_cfg: sections.Data, run_cfg: sections.Run, fed: sections.Federated, apply,
             params0, params1, x, y, meta: Dict[str, Any], keys: Dict[str, Any],
             summary: Dict[str, Any]) -> Dict[str, Any]:
  """The gradient-matching baseline on the same update (WORKDIR/baseline.json): its records
  back, scored like the run's (the same matching, threshold and symmetries), SSIM for images,
  its final objective, its matching term (the cosine distance alone: the blind signal its settings
  are chosen by, scripts/federated.py --tune) at the end and along the descent, and its seconds."""
  n, d = x.shape
  client = gradient_matching.Client(loss=fed.loss, epochs=fed.epochs, batch=fed.batch or n,
                                    lr=fed.lr, optimizer=fed.optimizer)
  setting = gradient_matching.Setting(lr=fed.baseline_lr, steps=fed.baseline_steps,
                                      tv=fed.baseline_tv)
  targets = train.make_targets(fed.loss, y, data_cfg.num_classes, x.dtype)
  image_shape = meta.get('image_shape')
  t = time.time()
  x_hat, info = gradient_matching.attack(
      apply, params0, params1, targets, client, setting, jax.random.fold_in(keys['init'], 7), n,
      d, image_shape)
  x_hat = jax.block_until_ready(x_hat)
  seconds = time.time() - t
  finite = bool(jnp.all(jnp.isfinite(x_hat)))
  x_hat = jnp.where(jnp.isfinite(x_hat), x_hat, 0.0)  # a diverged descent: its rows score as 0
  m = summary['metrics']
  sign, scale = m.get('sign_invariant', True), m.get('scale_invariant', False)
  x_true, x_hat = np.asarray(x, np.float64), np.asarray(x_hat, np.float64)
  out = {'baseline': fed.baseline, 'lr': setting.lr, 'steps': setting.steps, 'tv': setting.tv,
         'knows': 'W(0), W(1), the labels, E, B, eta, the loss and the optimiser',
         'finite': finite, 'final_loss': info['loss'], 'matching_loss': info['matching'],
         'matching_curve': {str(k): v for k, v in info['curve'].items()}, 'seconds': seconds,
         **metrics.reconstruction_metrics(x_true, x_hat, run_cfg.recovered_threshold, sign,
                                          scale)}
  if image_shape is not None:
    ssim = metrics.per_sample_ssim(x_true, x_hat, image_shape, run_cfg.ssim_filter_size, sign,
                                   scale)
    out['ssim_mean'] = float(np.mean(ssim))
  logging.info('gradient matching: %d of %d records back, matching loss %.3g, %.1f s',
               out['n_recovered'], n, info['matching'], seconds)
  return out


registry.register('pipeline', NAME, registry.Pipeline(
    run=run, check=check, sections=('data', 'victim', 'attack', 'run')))
