"""config -> data -> homogeneous MLP trained toward max margin -> KKT / projection objective
-> optimise (optionally with sample splitting) -> metrics -> outputs.

The victim is a bias-free MLP (`recon.models.homogeneous`) trained by full-batch GD
on the logistic (binary) or cross-entropy (multiclass) loss, optionally polished to
the nearby exact KKT point of the max-margin problem (`victim.train.polish`). The attacker
knows theta (and theta_0 when `attack.kkt.target='delta'`), the architecture, attack.n_candidates
and the candidate labels' balance; it fits x_hat (and duals) with the shared tail
`recon.pipelines.reconstruct.reconstruct_and_report`.
"""
from __future__ import annotations

import time
from typing import Any, Dict, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from recon import data, errors, registry
from recon.attack import splitting
from recon.attack import optimiser as optimize
from recon.pipelines import reconstruct, victims
from recon.config import routes, sections
from recon.runtime import runs
from recon.attack.plan import Attack
from recon.models import homogeneous, train
from recon.models import saved as model_ckpt
from recon.objectives import kkt

Array = jax.Array



def kkt_labels(attack) -> Optional[str]:
  """The label kind of attack.objective's KKT conditions ('binary', 'multiclass', 'general'),
  None for a loss on features (the projection objective): the objective's registration."""
  return registry.lookup('objective', attack.objective).kkt_labels


def task(data_cfg, attack) -> Tuple[str, int, str]:
  """(label kind, model outputs, training loss) from attack.objective and data.num_classes."""
  if data_cfg.num_classes < 2:
    raise errors.ExperimentError(
        f'data.num_classes: {data_cfg.num_classes} for a homogeneous_mlp victim; accepted: >= 2 '
        '(2: binary labels +-1)')
  labels = kkt_labels(attack)
  if labels == 'binary' and data_cfg.num_classes != 2:
    raise errors.ExperimentError(
        f'data.num_classes: {data_cfg.num_classes} with objective kkt_binary; accepted: 2 '
        '(or objective kkt_multiclass)')
  if labels == 'multiclass' or data_cfg.num_classes > 2:
    return 'multiclass', data_cfg.num_classes, 'cross_entropy'
  return 'binary', 1, 'logistic'


def balanced_labels(key: Array, n: int, kind: str, num_classes: int, dtype) -> Array:
  """Training labels with balanced classes in random order (+-1, or 0..C-1)."""
  base = kkt.balanced_labels(n, kind, num_classes, dtype)
  return jax.random.permutation(key, base)


def check_training_labels(labels, kind: str, num_classes: int) -> None:
  try:
    kkt.check_labels(labels, kind, 1 if kind == 'binary' else num_classes)
  except kkt.KKTError as e:
    raise errors.ExperimentError(str(e)) from None


def attack_activation(victim, attack) -> Tuple[str, Optional[float]]:
  """(activation, alpha) the attacker differentiates: `attack.kkt.activation` when set (e.g.
  'relu_smooth': relu forward, sigmoid(attack.kkt.act_alpha z) backward, Haim et al.), else the
  victim's."""
  if not attack.kkt.activation:
    return victim.activation, victim.act_alpha
  return attack.kkt.activation, attack.kkt.act_alpha or victim.act_alpha


def check_attack_config(data_cfg, victim, attack) -> None:
  """One-line errors of the data, victim and attack sections (its `kkt` section's fields
  together), raised before any compute."""
  task(data_cfg, attack)
  check_data_name(data_cfg)
  k = attack.kkt
  try:
    kkt.check_lambda_min(k.lambda_min)
    splitting.check_config(sections.Split.from_section(attack.split),
                           attack_activation(victim, attack)[0])
  except (kkt.KKTError, splitting.SplitError) as e:
    raise errors.ExperimentError(str(e)) from None
  on_features = kkt_labels(attack) is None
  if k.lambda_solve == 'eliminate' and not on_features:
    if attack.split.mode != 'none':
      raise errors.ExperimentError("attack.split.mode: sample splitting needs explicit duals; "
                                   "accepted with attack.kkt.lambda_solve 'eliminate': 'none'")
    if k.lambda_min > 0:
      raise errors.ExperimentError(f'attack.kkt.lambda_min: {k.lambda_min} with lambda_solve '
                                   "'eliminate' (free-sign duals); accepted: 0.0")
    if k.prior == 'box':
      raise errors.ExperimentError("attack.kkt.prior: 'box' with lambda_solve 'eliminate'; "
                                   "accepted: 'sphere', 'none'")
  if k.layers not in (None, '', 'all') and (on_features or k.lambda_solve == 'eliminate'):
    raise errors.ExperimentError(f"attack.kkt.layers: {k.layers!r} with objective "
                                 f"{attack.objective!r} / lambda_solve {k.lambda_solve!r}; "
                                 "accepted: 'all' (a layer subset needs explicit duals)")
  if k.candidate_subspace != 'none' and (on_features or k.lambda_solve == 'eliminate'):
    raise errors.ExperimentError(f"attack.kkt.candidate_subspace: {k.candidate_subspace!r} "
                                 f"with objective {attack.objective!r} / lambda_solve "
                                 f"{k.lambda_solve!r}; accepted: 'none'")
  if k.residual_weights != 'none' and attack.split.mode != 'none':
    raise errors.ExperimentError("attack.split.mode: sample splitting uses the unweighted "
                                 "residual; accepted with attack.kkt.residual_weights "
                                 "'gradient_rms': 'none'")
  if victim.train.weight_decay > 0 and victim.train.polish:
    raise errors.ExperimentError('victim.train.polish: True with victim.train.weight_decay > 0 '
                                 '(an exact stationary point already); accepted: False')
  if on_features and k.prior == 'box':
    raise errors.ExperimentError("attack.kkt.prior: 'box' with objective projection; accepted: "
                                 "'sphere', 'none'")


def make_network(victim, out_dim: int, dtype, activation: Optional[str] = None,
                 alpha: Optional[float] = None) -> homogeneous.HomogeneousMLP:
  """The victim's architecture; `activation`/`alpha` override the victim section's (same
  parameters)."""
  return homogeneous.HomogeneousMLP(
      widths=(victim.width,) * victim.depth, out_dim=out_dim,
      activation=activation or victim.activation,
      alpha=victim.act_alpha if alpha is None else alpha,
      first_init_scale=victim.first_init_scale, init_scale=victim.init_scale,
      param_dtype=dtype)


def train_victim(data_cfg, victim, attack, x: Array, labels: Array, key: Array):
  """Trains the MLP; returns (net, params_0, params_T, info with margins and training loss)."""
  kind, out_dim, loss = task(data_cfg, attack)
  net = make_network(victim, out_dim, x.dtype)
  params0 = net.init(key, x)
  targets = labels if kind == 'binary' else labels.astype(jnp.int32)
  wd = victim.train.weight_decay
  if wd > 0:  # exact stationary point of loss + wd/2 ||theta||^2 (L-BFGS)
    params, info = homogeneous.train_stationary(
        net.apply, params0, x, targets, loss=loss, weight_decay=wd,
        max_steps=victim.train.stationary_steps)
  else:
    lr = victim.train.lr  # plain GD, with the per-sample duals of its steps
    params, info = train.train(net.apply, params0, x, targets, loss=loss, optimizer=optax.sgd(lr),
                               max_steps=victim.train.max_steps, duals_lr=lr,
                               chunk_steps=2000)
  if not info['finite']:
    raise errors.ExperimentError('victim.train.lr: training diverged (non-finite loss); '
                                     'accepted: a smaller train_lr')
  params, out = finish_victim(victim, net, params, x, targets, kind, trained={
      'train_loss': info['final_loss'], 'train_steps': info['steps']}, training={
          'duals': info['duals'], **({'train_grad_norm': info['grad_norm']} if wd > 0 else {})})
  return net, params0, params, out


def finish_victim(victim, net, params, x: Array, targets: Array, kind: str, *,
                  trained: Optional[Dict[str, Any]] = None,
                  training: Optional[Dict[str, Any]] = None) -> Tuple[Any, Dict[str, Any]]:
  """The end of one victim's training (a single run's, or a sweep's victim by victim): the
  polish to the nearby exact KKT point of the max-margin problem (victim.train.polish; SLSQP
  on the host) and the training metrics -- the normalized margins before and after it, the
  homogeneity degree, the neuron Gram ranks of a one-hidden-layer net -- after `trained`,
  with `training` after the degree."""
  degree = homogeneous.degree_in_params(victim.activation, victim.depth)
  out = dict(trained or {})
  out.update(normalized_margin_gd=homogeneous.normalized_margin(net.apply, params, x, targets,
                                                                kind, degree),
             homogeneity_degree=degree, **(training or {}))
  if victim.train.polish:
    params, pinfo = homogeneous.polish_max_margin(net.apply, params, x, targets, kind)
    out.update({'polish_' + k: v for k, v in pinfo.items() if k != 'degree'})
  out['normalized_margin'] = homogeneous.normalized_margin(net.apply, params, x, targets, kind,
                                                           degree)
  if victim.depth == 1:
    kernel = params['params']['hidden_0']['kernel']
    out['neuron_gram_rank'], out['neuron_gram_dim'] = homogeneous.neuron_gram_rank(kernel)
    out['neuron_gram_rank_span_x'], out['neuron_gram_dim_span_x'] = (
        homogeneous.neuron_gram_rank(kernel, x))
  return params, out


def planted_target(theta, apply_vec, x_true, labels, duals, kind: str) -> Array:
  """sum_i lambda_i grad g_i(theta; x_i) at the TRUE data with the training duals (oracle).

  An exactly satisfied KKT system at a net whose neurons stay generic: it isolates the
  identifiability question from how far training is from its KKT point.
  """
  if kind == 'binary':
    lam = jnp.abs(duals[:, 0])
    return kkt.explained(x_true, lam, labels, theta, apply_vec=apply_vec, kind='binary')
  return kkt.explained(x_true, duals, labels, theta, apply_vec=apply_vec, kind='general')


def kkt_layer_mask(attack, params) -> Optional[Array]:
  """`attack.kkt.layers`: 'all' (every KKT equation, Haim et al. as written) or comma-separated
  layer names ('hidden_0,head'): only those layers' equations enter the fit (None for 'all')."""
  spec = attack.kkt.layers
  if spec in (None, '', 'all'):
    return None
  names = [s.strip() for s in str(spec).split(',') if s.strip()]
  try:
    return kkt.layer_mask(params, names)
  except kkt.KKTError as e:
    raise errors.ExperimentError(str(e)) from None


def constraint_args_for(a, n: int, params, radius: float, dtype) -> Dict[str, Any]:
  """What the attack's constraint reads of one victim: the sphere prior's radius and, with
  attack.kkt.candidate_subspace 'first_layer' (explicit duals), the basis B (d, k) of the top-k
  right singular subspace of W_1 (k = attack.kkt.candidate_subspace_rank or n = data.n; `a`: the
  attack section)."""
  args: Dict[str, Any] = {'radius': radius}
  if (a.kkt.candidate_subspace == 'first_layer' and kkt_labels(a) is not None
      and a.kkt.lambda_solve != 'eliminate'):
    rank = a.kkt.candidate_subspace_rank or n
    basis, svals = kkt.first_layer_subspace(params['params']['hidden_0']['kernel'], rank)
    args['basis'] = basis.astype(dtype)
    logging.info('candidate subspace: rank %d of W_1, singular value gap s_k/s_(k+1) = %.3g',
                 rank, float(svals[rank - 1] / max(float(svals[min(rank, len(svals) - 1)]),
                                                   1e-300)))
  return args


def attack_constraint(attack, kind: str, args: Dict[str, Any]):
  """The projection after every step, from the `attack` section and `constraint_args_for` (whose
  values may be traced: a sweep builds one constraint per vmapped victim): the sphere (prior
  'sphere') for the projection objective; none for eliminated duals (the sphere is a
  reparametrisation there); else x onto the prior and the duals onto [lambda_min, inf)
  (`kkt.make_constraint`), inside span(B) when a basis is given."""
  k = attack.kkt
  if kkt_labels(attack) is None:
    return (optimize.sphere_constraint(args['radius']) if k.prior == 'sphere'
            else (lambda z: z))
  if k.lambda_solve == 'eliminate':
    return lambda z: z
  constraint = kkt.make_constraint(kind, k.prior, args['radius'], k.lambda_min,
                                   k.lambda_constraint)
  return kkt.subspace_constraint(constraint, args['basis']) if 'basis' in args else constraint


def build_attack(attack, n: int, seed: int, net, params0, params, kind: str, num_classes: int,
                 d: int, radius: float, key: Array, dtype,
                 planted: Optional[Tuple[Array, Array, Array]] = None,
                 constraint_args: Optional[Dict[str, Any]] = None) -> Attack:
  """The attack of the attack section's objective: objective, initial state, constraint,
  decode, and the sample splitter (keyed by `seed`) as its refiner when attack.split.mode !=
  'none'. `constraint_args`: `constraint_args_for(attack, n, params, radius, dtype)` when the
  caller has it (n: data.n)."""
  theta, apply_vec = kkt.flatten_model(net.apply, params)
  if attack.kkt.target == 'planted':
    target = planted_target(theta, apply_vec, *planted, kind)
  elif attack.kkt.target == 'delta':
    target = theta - kkt.flatten_model(net.apply, params0)[0]
  else:
    target = theta
  m = attack.n_candidates
  k_x, k_lam = jax.random.split(key)
  x0 = attack.kkt.candidate_init_scale * jax.random.normal(k_x, (m, d), dtype)
  if attack.kkt.prior == 'sphere':
    x0 = optimize.sphere_constraint(radius)(x0)
  out_dim = 1 if kind == 'binary' else num_classes

  kkt_kind = kkt_labels(attack)
  if kkt_kind is None:  # a loss on the candidates' parameter gradients
    objective = registry.lookup('objective', attack.objective).loss

    def feature_one(xj, prob):
      return jax.jacrev(lambda th: apply_vec(th, xj[None])[0])(prob['theta_eval'])  # (C, P)

    def loss_fn(x, prob):
      phi = jax.vmap(lambda xj: feature_one(xj, prob))(x).reshape(-1, theta.shape[0])
      return objective(phi, prob['theta'], attack.jitter)

    constraint = attack_constraint(attack, kind, {'radius': radius})
    problem = {'theta': target, 'theta_eval': theta}
    return _with_splitter(attack, seed,
                          splitting.projection_split_model(feature_one, attack.jitter),
                          problem=problem, loss_fn=loss_fn, x0=x0, constraint=constraint)

  labels = kkt.balanced_labels(m, kkt_kind, num_classes, dtype)
  kkt.check_labels(labels, kkt_kind, out_dim)
  problem = {'target': target, 'theta': theta, 'labels': labels}
  mask = kkt_layer_mask(attack, params)
  if mask is not None:  # only these layers' KKT equations (docs/kkt.md, "Trained networks")
    problem['mask'] = mask
    problem['target'] = target * mask
  if attack.kkt.residual_weights == 'gradient_rms':
    problem['weights'] = kkt.residual_weights(theta, apply_vec, d, radius,
                                              jax.random.fold_in(key, 0x3E16))
  if attack.kkt.lambda_solve == 'eliminate':
    # Variable projection: the duals are solved for in closed form inside the loss; the
    # sphere prior is a reparametrisation (no projection step: L-BFGS-friendly).
    r = radius if attack.kkt.prior == 'sphere' else None
    loss_fn = lambda state, prob: kkt.eliminated_loss(  # noqa: E731
        state, prob, apply_vec=apply_vec, kind=kkt_kind, out_dim=out_dim, radius=r)
    decode = (lambda s: kkt.on_sphere(s['x'], r)) if r is not None else (lambda s: s['x'])
    return _with_splitter(attack, seed, None, problem=problem, loss_fn=loss_fn, x0={'x': x0},
                          constraint=attack_constraint(attack, kkt_kind, {'radius': radius}),
                          decode=decode)
  if attack.kkt.lambda_init == 'lstsq':
    lam0 = kkt.lstsq_lambda(x0, labels, theta, problem['target'], apply_vec=apply_vec,
                            kind=kkt_kind, out_dim=out_dim, mask=mask)
  else:
    lam0 = jax.random.uniform(k_lam, kkt.lambda_shape(m, kkt_kind, out_dim), dtype)
  # Duals are optimised in units of their least-squares scale (one lr for x and lambda).
  lam_scale = jnp.maximum(jnp.mean(jnp.abs(kkt.lstsq_lambda(
      x0, labels, theta, problem['target'], apply_vec=apply_vec, kind=kkt_kind,
      out_dim=out_dim, mask=mask))),
                          jnp.finfo(dtype).tiny)
  problem['lam_scale'] = lam_scale
  lam0 = lam0 / lam_scale if attack.kkt.lambda_init == 'lstsq' else lam0
  if kkt_kind != 'general':
    lam0 = jnp.maximum(lam0, attack.kkt.lambda_min)
  opts = dict(apply_vec=apply_vec, kind=kkt_kind, **kkt.penalty_settings(attack.kkt))
  loss_fn = lambda state, prob: kkt.kkt_loss(state, prob, **opts)
  args = constraint_args or constraint_args_for(attack, n, params, radius, dtype)
  constraint = attack_constraint(attack, kkt_kind, args)
  if 'basis' in args:
    x0 = (x0 @ args['basis']) @ args['basis'].T
  return _with_splitter(attack, seed, splitting.kkt_split_model(apply_vec, kkt_kind),
                        problem=problem,
                        loss_fn=loss_fn, x0={'x': x0, 'lam': lam0.astype(dtype)},
                        constraint=constraint, decode=lambda s: s['x'])


def _with_splitter(attack, seed: int, split_model, **fields) -> Attack:
  """`Attack(**fields)`, refined by the sample splitter when attack.split.mode != 'none'."""
  refiner = None
  if attack.split.mode != 'none':
    refiner = splitting.Splitter(sections.Split.from_section(attack.split), split_model,
                                 fields['loss_fn'], fields['constraint'], seed=seed)
  return Attack(refiner=refiner, **fields)


def _loaded_victim(data_cfg, attack, model, d: int, out_dim: int, dtype):
  """(net, params0 or None, params, train info) of a saved HomogeneousMLP."""
  if model.hparams.get('out_dim') != out_dim:
    raise errors.ExperimentError(
        f'data.num_classes: objective {attack.objective!r} with '
        f'data.num_classes={data_cfg.num_classes} needs '
        f'{out_dim} output(s), but the model checkpoint has out_dim='
        f'{model.hparams.get("out_dim")}; accepted: data.num_classes / attack.objective '
        'matching the model')
  victims.check_flax_params(model, jnp.zeros((1, d), dtype))
  cast = lambda tree: jax.tree.map(lambda a: jnp.asarray(a, dtype), tree)  # noqa: E731
  params0 = None if model.initial is None else {'params': cast(model.initial)}
  return model.module(), params0, {'params': cast(model.trained)}, dict(
      model.info.get('train') or {})


def run_on_data(data_cfg, victim, attack, settings: reconstruct.Tail, workdir: str,
                x: Optional[Array], labels: Optional[Array], meta: Dict[str, Any], dtype,
                t0: Optional[float] = None, *, model=None,
                source: Optional[str] = None) -> Dict[str, Any]:
  """Train the victim on (x, labels) (or take `victim.name`, a saved HomogeneousMLP read from
  `source`; x may then be None: blind metrics), save it to WORKDIR/model, attack it, report
  (`settings`: the shared tail's, `reconstruct.tail`)."""
  t0 = time.time() if t0 is None else t0
  check_attack_config(data_cfg, victim, attack)
  kind, out_dim, _ = task(data_cfg, attack)
  if labels is not None:
    check_training_labels(labels, kind, data_cfg.num_classes)
  keys = runs.split_keys(settings.seed)
  if model is None:
    net, params0, params, train_info = train_victim(data_cfg, victim, attack, x, labels,
                                                    keys['model'])
    duals = train_info.pop('duals')
    planted = (x, labels, duals)
    model = model_ckpt.flax_model(
        net, jax.device_get(params['params']), jax.device_get(params0['params']),
        n=int(x.shape[0]), info={'train': jax.device_get(train_info)},
        data_description=victims.data_description(victims.data_record(settings.record), x, None,
                                                  meta))
  else:
    planted = None  # check_model_checkpoint refused attack.kkt.target='planted'
    net, params0, params, train_info = _loaded_victim(
        data_cfg, attack, model, data_cfg.d if x is None else x.shape[1], out_dim, dtype)
  victims.keep_model(workdir, model, source)
  logging.info('%s %s: %s', 'loaded' if source else 'trained', victim.activation, train_info)
  if x is not None:
    radius = float(np.median(np.linalg.norm(np.asarray(x), axis=1)))
  elif (model.data or {}).get('row_norm') is not None:
    radius = float(model.data['row_norm'])
  else:
    radius = float(np.sqrt(data_cfg.d))
    logging.warning('the model records no row norm of its data (data.row_norm): the sphere '
                    'prior uses sqrt(d) = %.3g', radius)
  d = data_cfg.d if x is None else x.shape[1]
  act, alpha = attack_activation(victim, attack)
  if (act, alpha) != (victim.activation, victim.act_alpha):  # other backward pass
    net = make_network(victim, out_dim, dtype, act, alpha)
  bundle = build_attack(attack, data_cfg.n, settings.seed, net, params0, params, kind,
                        data_cfg.num_classes, d, radius, keys['init'], dtype, planted=planted)
  return reconstruct.reconstruct_and_report(
      settings, workdir, bundle, x_true=x, y=labels, meta=meta, t0=t0, keys=keys,
      extra_metrics=dict(train_info, objective=attack.objective,
                         n_params=int(sum(np.size(p) for p in jax.tree.leaves(params)))),
      threat_model={'known': ['theta (trained parameters)', 'architecture and activation',
                              'n_candidates and the class balance', 'row norm (sphere prior)']
                             + (['theta_0'] if attack.kkt.target == 'delta' else [])
                             + (['ORACLE: target planted from the true data and training '
                                 'duals (identifiability study, not an attack)']
                                if attack.kkt.target == 'planted' else []),
                    'unknown': ['X (training inputs)', 'which label each input has']})


def load_images(data_cfg, attack, key: Array, dtype) -> Tuple[Array, Array, Dict[str, Any]]:
  """An image data set as (x, binary +-1 labels, meta); refuses labels that are not +-1."""
  try:
    x, labels, meta = data.load(data_cfg, key, dtype)
  except data.DataError as e:
    raise errors.ExperimentError(str(e)) from None
  kind, _, _ = task(data_cfg, attack)
  if kind == 'binary' and not np.all(np.isin(np.asarray(labels), (-1, 1))):
    raise errors.ExperimentError(
        f'data.classes: {data_cfg.classes!r} gives labels {meta.get("labels")!r}; the binary KKT '
        "attack needs two classes or binary_rule 'parity'")
  return x, jnp.asarray(labels, dtype), meta


def load_data(data_cfg, attack, key: Array, dtype) -> Tuple[Array, Array, Dict[str, Any]]:
  """The training set (x, labels, meta) of seed key `key`: rows on the sqrt(d)-sphere with
  balanced random class labels (data.name 'synthetic_sphere'), or an image data set
  (`load_images`)."""
  if data_cfg.name != data.SPHERE:
    return load_images(data_cfg, attack, key, dtype)
  kind, _, _ = task(data_cfg, attack)
  k_x, k_y = jax.random.split(key)
  x = data.sphere_rows(k_x, data_cfg.n, data_cfg.d, dtype)
  labels = balanced_labels(k_y, data_cfg.n, kind, data_cfg.num_classes, dtype)
  meta = {'name': data.SPHERE, 'image_shape': None,
          'row_norms': np.full(data_cfg.n, np.sqrt(data_cfg.d))}
  return x, labels, meta


def check_data_name(data_cfg) -> None:
  """One-line refusal of a data set the homogeneous MLP's pipeline does not load."""
  if data_cfg.name != data.SPHERE and data_cfg.name not in data.NATIVE:
    raise errors.ExperimentError(
        f'data.name: {data_cfg.name!r} with model homogeneous_mlp; accepted: '
        f"'synthetic_sphere', {', '.join(repr(k) for k in sorted(data.NATIVE))}")


def run(spec: sections.RunSpec, workdir: str, dtype, resuming: bool = False) -> Dict[str, Any]:
  """Synthetic sphere data with balanced random class labels (the regression targets are
  unused), or an image data set (`recon.data`; binary labels by `data.classes` / `data.binary_rule`,
  e.g. digits odd vs even); the victim is trained, or loaded (victim.checkpoint, or
  WORKDIR/model when resuming)."""
  t0 = time.time()
  data_cfg, victim, attack = spec.data, spec.victim, spec.attack
  check_attack_config(data_cfg, victim, attack)
  keys = runs.split_keys(spec.seed)
  load = lambda: load_data(data_cfg, attack, keys['data'], dtype)  # noqa: E731
  settings = reconstruct.tail(data_cfg, victim, attack, spec.run, spec.seed, spec.to_dict())

  source = victims.model_source(victim, workdir, resuming)
  if not source:
    return run_on_data(data_cfg, victim, attack, settings, workdir, *load(), dtype, t0)
  model = victims.load_model(source)
  x, labels, meta = victims.model_training_data(
      data_cfg, spec.run.dtype, victims.data_record(settings.record), model, load)
  return run_on_data(data_cfg, victim, attack, settings, workdir, x, labels, meta, dtype, t0,
                     model=model, source=source)


registry.register('pipeline', routes.KKT, registry.Pipeline(run=run, check=check_attack_config))
