"""Subspace-aware pipelines: random features with a known subspace, a GD-trained two-layer net.

Both minimise the unified objective (`recon.objectives.unified`) over candidates
x_hat = U z (||z|| = sqrt(d)) when a basis U is used, else over x_hat in R^d:
  * random_features: dtheta = theta* (theta_0 = 0), features phi(x) = sigma(V x); V
    does not train, so U must be known ('known': the planted basis of the data).
  * two_layer: f(x) = W2 sigma(W1 x) trained by full-batch GD (+ optional weight
    decay); dtheta = vec(W2_T - W2_0), features sigma(W1 x) at W1_T and/or W1_0;
    U = top-k right singular vectors of dW1 = W1_T - W1_0 ('estimated') or the
    planted basis ('known').
Both end in `recon.pipelines.reconstruct.reconstruct_and_report` with candidates mapped back to R^d.
"""
from __future__ import annotations

import time
from typing import Any, Dict, Optional

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from recon.config import routes, sections
from recon.config import validate as config_lib
from recon import data, errors, registry
from recon.models import features, networks, train
from recon.models import saved as model_ckpt
from recon.attack import optimiser as optimize
from recon.attack import data_subspace as subspace_lib
from recon.pipelines import reconstruct, victims
from recon.pipelines import random_features as rf_pipeline
from recon.runtime import runs
from recon.attack.plan import Attack
from recon.objectives import unified

Array = jax.Array


def check(data_cfg: sections.Data, victim: sections.Victim,
          attack: sections.Attack) -> None:
  """Cross-field checks of the data, victim and attack sections before any compute; one-line
  ConfigError naming the field."""
  search = sections.Subspace.from_section(attack.subspace)
  mode = search.mode
  if data_cfg.name == data.SUBSPACE:
    k = data_cfg.planted_dim
    if k is None or k > data_cfg.d:
      raise config_lib.ConfigError(
          f'config.data.planted_dim: invalid value {k!r} for dataset synthetic_subspace with '
          f'd={data_cfg.d}; accepted: int 1..{data_cfg.d}')
  entry = registry.lookup('victim', victim.name)
  if mode == 'estimated' and entry.features == 'random':
    raise config_lib.ConfigError(
        "config.attack.subspace.mode: 'estimated' needs a trainable first layer, and "
        "random_features' first layer V is fixed (dW1 = 0); accepted: 'none', 'known'")
  if mode == 'known' and data_cfg.name != data.SUBSPACE:
    raise config_lib.ConfigError(
        f"config.attack.subspace.mode: 'known' needs a dataset with a known subspace, not "
        f"{data_cfg.name!r}; accepted: dataset 'synthetic_subspace', or mode "
        "'none'/'estimated'")
  k = search.dim
  if k is not None:
    if mode == 'none':
      raise config_lib.ConfigError(
          "config.attack.subspace.dim: set but config.attack.subspace.mode is 'none'; accepted: "
          "None, or mode 'known'/'estimated'")
    if k > data_cfg.d:
      raise config_lib.ConfigError(
          f'config.attack.subspace.dim: {k} exceeds the input dimension d={data_cfg.d}; accepted: '
          f'1..{data_cfg.d} or None (automatic)')
    if mode == 'known' and k != data_cfg.planted_dim:
      raise config_lib.ConfigError(
          f"config.attack.subspace.dim: {k} differs from the known subspace's dimension "
          f"data.planted_dim={data_cfg.planted_dim}; accepted: None or {data_cfg.planted_dim}")
  if entry.architecture is networks.TwoLayer and routes.uses_subspace_pipeline(attack):
    if victim.train.lr is None:
      raise config_lib.ConfigError('config.victim.train.lr: None; accepted: a GD step > 0 (the '
                                   'subspace pipeline does not pick one)')
    if victim.train.loss not in ('mse', 'logistic'):
      raise config_lib.ConfigError(
          f"config.victim.train.loss: invalid value {victim.train.loss!r} for the subspace "
          f"pipeline (one output); "
          "accepted: 'mse', 'logistic'")


def _first_layer_features(activation: str, n_out: int):
  """(x_hat, W1) -> d f / d vec(W2) rows: sigma(W1 x_hat) per output."""
  return lambda x, w1: unified.head_jacobian_rows(
      features.rf_features(w1, x, activation), n_out)


def _angle_metrics(basis: Optional[np.ndarray], true_basis: Optional[np.ndarray],
                   x_true: np.ndarray) -> Dict[str, Any]:
  out: Dict[str, Any] = {}
  if basis is None:
    return out
  if x_true is not None:
    out['subspace_residual_true'] = float(np.mean(subspace_lib.subspace_residual(x_true,
                                                                                 basis)))
  if true_basis is not None:
    angles = np.degrees(subspace_lib.principal_angles(basis, true_basis))
    out['principal_angles_deg'] = angles.tolist()
    out['max_principal_angle_deg'] = float(angles.max())
  return out


def _reconstruct(attack_cfg: sections.Attack, settings: reconstruct.Tail, workdir, *, keys,
                 x_true, y, meta, problem, feature_fn, gradient_at, basis, extra, threat_model,
                 t0):
  """Candidates (subspace coordinates if `basis`), loss, constraint, decode -> report
  (alpha found as attack.subspace.alpha_mode says; `gradient_at`: where the features are taken).

  x_true=None (a saved model without its data): blind metrics only.
  """
  d = problem['weights_trained'].shape[1]
  dtype = problem['weights_trained'].dtype
  if basis is not None:
    problem['basis'] = jnp.asarray(basis, dtype)
  dim = d if basis is None else basis.shape[1]
  sphere = optimize.sphere_constraint(float(np.sqrt(d)))  # ||U z|| = ||z||: U orthonormal
  x0 = sphere(jax.random.normal(keys['init'], (attack_cfg.n_candidates, dim), dtype))
  alpha_mode = sections.Subspace.from_section(attack_cfg.subspace).alpha_mode
  jitter = attack_cfg.jitter
  init = unified.init_candidates(x0, problem, alpha_mode=alpha_mode, feature_fn=feature_fn,
                                 gradient_at=gradient_at, jitter=jitter)
  constraint = sphere if alpha_mode == 'closed_form' else optimize.field_constraint(sphere)
  loss_fn = lambda c, prob: unified.candidate_loss(c, prob, feature_fn=feature_fn,
                                                   gradient_at=gradient_at, jitter=jitter)
  decode = lambda c: unified.candidate_x(c, problem)
  report_features = lambda x: feature_fn(x, problem['weights_trained'])
  extra = dict(extra, search_dim=int(dim), gradient_at=gradient_at, alpha_mode=alpha_mode)
  attack = Attack(problem=problem, loss_fn=loss_fn, x0=init, constraint=constraint,
                  feature_fn=report_features, decode=decode)
  return reconstruct.reconstruct_and_report(
      settings, workdir, attack, x_true=x_true, y=y, meta=meta, t0=t0, extra_metrics=extra,
      threat_model=threat_model, keys=keys)


def run(spec: sections.RunSpec, workdir: str, dtype, resuming: bool = False) -> Dict[str, Any]:
  """Dispatch on the victim's features (the sections have passed `check`): a random-features
  model, else the two-layer network."""
  settings = reconstruct.tail(spec.data, spec.victim, spec.attack, spec.run, spec.seed,
                              spec.to_dict())
  if registry.lookup('victim', spec.victim.name).features == 'random':
    return run_random_features(spec.data, spec.victim, spec.attack, settings, workdir, dtype)
  return run_two_layer(spec.data, spec.victim, spec.attack, settings, workdir, dtype,
                       resuming=resuming)


def run_random_features(data_cfg: sections.Data, victim: sections.Victim,
                        attack_cfg: sections.Attack, settings: reconstruct.Tail, workdir: str,
                        dtype) -> Dict[str, Any]:
  """theta* = Phi^+ y; reconstruct inside the known subspace (or R^d) from (V, theta*)."""
  t0 = time.time()
  keys = runs.split_keys(settings.seed)
  x_true, y, meta = data.load(data_cfg, keys['data'], dtype)
  prob = jax.jit(lambda k, x, y: rf_pipeline.make_rf_problem(
      k, x, y, p_total=victim.p, activation=victim.activation,
      rng=victim.weight_rng))(keys, x_true, y)
  train_mse = float(prob['train_mse'])
  problem = {'weights_trained': prob['v'], 'weights_initial': prob['v'], 'target': prob['theta']}
  mode = sections.Subspace.from_section(attack_cfg.subspace).mode
  basis = None if mode == 'none' else np.asarray(meta['basis'])
  p, d, n = victim.p, data_cfg.d, data_cfg.n
  k = d if basis is None else basis.shape[1]
  logging.info('random features: n=%d d=%d k=%d p=%d (p/kn=%.3g, p/dn=%.3g) train_mse=%.3g',
               n, d, k, p, p / (k * n), p / (d * n), train_mse)
  true_basis = meta.get('basis')
  extra = {'train_mse': train_mse, 'p': p, 'p_over_dn': p / (d * n), 'p_over_n': p / n,
           'subspace': mode, 'subspace_k': int(k)}
  if true_basis is not None:
    extra['p_over_kn'] = p / (true_basis.shape[1] * n)
  extra.update(_angle_metrics(basis, None if true_basis is None else np.asarray(true_basis),
                              np.asarray(x_true)))
  return _reconstruct(
      attack_cfg, settings, workdir, keys=keys, x_true=x_true, y=y, meta=meta, problem=problem,
      feature_fn=_first_layer_features(victim.activation, 1), gradient_at='trained',
      basis=basis, extra=extra, t0=t0,
      threat_model={'known': ['V (random-features weights or their key)', 'theta* (trained)',
                              'n_candidates', 'activation'] +
                             (['the data subspace U (given)'] if basis is not None else []),
                    'unknown': ['X (training inputs)', 'y (labels)']})


def train_two_layer(victim: sections.Victim, key: Array, x: Array, y: Array) -> Dict[str, Any]:
  """Full-batch GD (+ decoupled weight decay lr * wd * W) from the N(0, 1/fan_in) init.

  Returns {'params0', 'params', 'info', 'w1_init', 'w1' (width x d)}.
  """
  net = networks.TwoLayer(width=victim.width, out_dim=1, activation=victim.activation)
  params0 = net.init(key, x[:1])
  targets = y.reshape(-1, 1) if victim.train.loss == 'mse' else jnp.where(y >= 0, 1.0, -1.0)
  opt = optax.sgd(victim.train.lr)
  if victim.train.weight_decay > 0:
    opt = optax.chain(optax.add_decayed_weights(victim.train.weight_decay), opt)
  t = victim.train
  params, info = train.train(net.apply, params0, x, targets.astype(x.dtype), loss=t.loss,
                             optimizer=opt, max_steps=t.max_steps, tol=t.tol,
                             chunk_steps=min(t.max_steps, 2000))
  return {'params0': params0, 'params': params, 'info': info,
          'w1_init': params0['params']['hidden']['kernel'].T,
          'w1': params['params']['hidden']['kernel'].T}


def run_two_layer(data_cfg: sections.Data, victim: sections.Victim, attack_cfg: sections.Attack,
                  settings: reconstruct.Tail, workdir: str, dtype,
                  resuming: bool = False) -> Dict[str, Any]:
  """Train W2 sigma(W1 x) by GD (or load it: victim.checkpoint, or WORKDIR/model when
  resuming); estimate U from dW1; reconstruct from dW2 inside span(U)."""
  t0 = time.time()
  keys = runs.split_keys(settings.seed)
  load = lambda: data.load(data_cfg, keys['data'], dtype)  # noqa: E731
  source = victims.model_source(victim, workdir, resuming)
  if not source:
    x_true, y, meta = load()
    return run_two_layer_on(data_cfg, victim, attack_cfg, settings, workdir, x_true, y, meta,
                            keys=keys, t0=t0)
  model = victims.load_model(source)
  x_true, y, meta = victims.model_training_data(
      data_cfg, settings.run.dtype, victims.data_record(settings.record), model, load)
  return run_two_layer_on(data_cfg, victim, attack_cfg, settings, workdir, x_true, y, meta,
                          keys=keys, t0=t0, model=model, source=source, dtype=dtype)


def _net_from_model(model, d: int, dtype) -> Dict[str, Any]:
  """train_two_layer's output from a saved TwoLayer (initial and trained params)."""
  victims.check_flax_params(model, jnp.zeros((1, d), dtype))
  cast = lambda tree: jax.tree.map(lambda a: jnp.asarray(a, dtype), tree)  # noqa: E731
  params0, params = {'params': cast(model.initial)}, {'params': cast(model.trained)}
  return {'params0': params0, 'params': params,
          'info': dict({'steps': None, 'final_loss': None, 'reached_tol': None, 'finite': True},
                       **(model.info.get('train') or {})),
          'w1_init': params0['params']['hidden']['kernel'].T,
          'w1': params['params']['hidden']['kernel'].T}


def run_two_layer_on(data_cfg: sections.Data, victim: sections.Victim,
                     attack_cfg: sections.Attack, settings: reconstruct.Tail, workdir: str,
                     x_true: Optional[Array], y: Optional[Array], meta: Dict[str, Any], *,
                     keys: Dict[str, Array],
                     t0: Optional[float] = None, model=None, source: Optional[str] = None,
                     dtype=None) -> Dict[str, Any]:
  """The two-layer pipeline on given data (rows on the sqrt(d) sphere, scalar targets y).

  meta['basis'] (optional) is the true subspace, for principal angles and
  attack.subspace.mode 'known'. `victim.name` (a saved TwoLayer, read from `source`) replaces
  training; x_true may then be None (blind metrics). The model is saved to
  WORKDIR/model (initial and trained params, training info, data description).
  """
  t0 = time.time() if t0 is None else t0
  if model is None:
    net = train_two_layer(victim, keys['model'], x_true, y)
    model = model_ckpt.flax_model(
        networks.TwoLayer(width=victim.width, out_dim=1, activation=victim.activation),
        jax.device_get(net['params']['params']), jax.device_get(net['params0']['params']),
        n=int(x_true.shape[0]), info={'train': jax.device_get(net['info'])},
        data_description=victims.data_description(victims.data_record(settings.record), x_true,
                                                  None, meta))
  else:
    dtype = dtype if x_true is None else x_true.dtype
    net = _net_from_model(model, data_cfg.d if x_true is None else x_true.shape[1], dtype)
  victims.keep_model(workdir, model, source)
  info = net['info']
  if not info['finite']:
    raise errors.ExperimentError(
        f'victim.train.lr: training diverged at lr={victim.train.lr} (loss not finite); '
        f'accepted: a '
        'smaller train_lr')
  delta_w1 = net['w1'] - net['w1_init']
  delta_w2 = (net['params']['params']['head']['kernel']
              - net['params0']['params']['head']['kernel'])
  true_basis = meta.get('basis')
  search = sections.Subspace.from_section(attack_cfg.subspace)
  est = None
  if search.mode == 'estimated':
    try:
      est = subspace_lib.estimate_subspace(delta_w1, search.dim, search.noise_floor)
    except subspace_lib.SubspaceError as e:
      raise errors.ExperimentError(str(e)) from None
    basis = est['basis']
  elif search.mode == 'known':
    if true_basis is None:
      raise errors.ExperimentError(
          "attack.subspace.mode: 'known' needs the training data's subspace, which the model "
          "checkpoint does not record; accepted: 'estimated', 'none'")
    basis = np.asarray(true_basis)
  else:
    basis = None
  k = data_cfg.d if basis is None else basis.shape[1]
  logging.info('two-layer net: width=%d, GD %s steps, train loss %s, weight_decay %g; '
               'search dim %d (subspace %s)', victim.width, info['steps'], info['final_loss'],
               victim.train.weight_decay, k, search.mode)
  problem = {'weights_trained': net['w1'], 'weights_initial': net['w1_init'],
             'target': delta_w2.reshape(-1)}
  extra = {'train_steps_taken': info['steps'], 'train_final_loss': info['final_loss'],
           'train_reached_tol': info['reached_tol'], 'width': victim.width,
           'p': victim.width, 'p_over_dn': victim.width / (data_cfg.d * data_cfg.n),
           'weight_decay': victim.train.weight_decay,
           'subspace': search.mode, 'subspace_k': int(k),
           'delta_w1_rel': float(jnp.linalg.norm(delta_w1) / jnp.linalg.norm(net['w1_init']))}
  if true_basis is not None:
    extra['p_over_kn'] = victim.width / (true_basis.shape[1] * data_cfg.n)
  if est is not None:
    s = est['singular_values']
    extra['singular_values_top'] = (s[:12] / s[0]).tolist()
    extra['delta_w1_rank'] = est['rank']
    extra['auto_k'] = subspace_lib.choose_k(s, search.noise_floor)
  # Quality of the estimate: measured on the full-space run too (top data.planted_dim
  # directions of dW1), so a full-space run reports how good the estimate would be.
  if basis is None and true_basis is not None:
    probe = subspace_lib.estimate_subspace(delta_w1, None, search.noise_floor)
    extra['estimated_k'] = probe['k']
    extra.update({f'estimate_{a}': b for a, b in _angle_metrics(
        probe['basis'], np.asarray(true_basis), np.asarray(x_true)).items()})
  extra.update(_angle_metrics(basis, None if true_basis is None else np.asarray(true_basis),
                              None if x_true is None else np.asarray(x_true)))
  return _reconstruct(
      attack_cfg, settings, workdir, keys=keys, x_true=x_true, y=y, meta=meta, problem=problem,
      feature_fn=_first_layer_features(victim.activation, 1),
      gradient_at=search.gradient_at, basis=basis, extra=extra, t0=t0,
      threat_model={'known': ['W1, W2 at initialisation and after training', 'n_candidates',
                              'activation'],
                    'unknown': ['X (training inputs)', 'y (labels)', 'the data subspace'
                                if search.mode != 'known' else '(subspace given)']})


registry.register('pipeline', routes.SUBSPACE, registry.Pipeline(run=run, check=check))
