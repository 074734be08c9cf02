"""Networks trained by GD, reconstructed from their last layer.

config -> data -> Flax model (two_layer / resnet / vit / random_features_gd) ->
full-batch Optax GD on mse / logistic / cross_entropy -> theta = vec(W_L(T) - W_L(0))
-> features J(X_hat) = d f(X_hat) / d vec(W_L) at the trained weights (per-class
rows) -> the shared projection loss ||P_perp theta||^2 / ||theta||^2 ->
`recon.pipelines.reconstruct.reconstruct_and_report`.

Threat model (explicit fields): the attacker always knows every trained weight
(the layers below the head define the features) and the architecture; it knows
W_L(0) iff `attack.knows_init` (otherwise the target is theta = vec(W_L(T)),
whose random initial part is not in the span) and n iff `attack.knows_n`
(otherwise `attack.n_candidates` must be given). Labels are never used by the attack.

`jacobian_at='trained'` (the paper's) evaluates the features at the trained
weights only; `'init_and_trained'` stacks the rows at W(0) and W(T), whose span
also covers the drift of the penultimate features during training (ViT/ResNet
showcases: projection loss at the true data 9e-3 -> 4e-5), and `'midpoint'`
averages them (the trapezoid rule of the GD path; 9e-3 -> 8e-4 on the ViT).
"""
from __future__ import annotations

import dataclasses
import math
import time
from typing import Any, Dict, Optional, Tuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from recon.config import routes, sections
from recon.config import validate as config_lib
from recon import data, errors, registry
from recon.models import defences, networks, train
from recon.models import saved as model_ckpt
from recon.attack import driver, restarts
from recon.attack import optimiser as optimize
from recon.pipelines import reconstruct, victims
from recon.runtime import runs
from recon.attack.plan import Attack
from recon.objectives import parameter_gradients


def attacked_fan_in(params: Any, layer: str) -> Optional[int]:
  """The width feeding the attacked layer, read off its kernel (fan-in, first axis): the
  model's own, not victim.width's default, for a loaded model too. None without a kernel."""
  kernel = (params.get(layer) or {}).get('kernel') if hasattr(params, 'get') else None
  return None if kernel is None or np.ndim(kernel) < 2 else int(np.shape(kernel)[0])

def _fail(message: str):
  raise errors.ExperimentError(message)


def network_image_shape(data_cfg: sections.Data, victim: sections.Victim,
                        meta: Optional[Dict[str, Any]] = None,
                        d: Optional[int] = None) -> Optional[Tuple[int, ...]]:
  """The NHWC image shape of an input row: meta['image_shape'], else config.data.image_shape.

  Must hold d entries (d: the loaded rows' length, else config.data.d).
  """
  d = data_cfg.d if d is None else d
  shape = (meta or {}).get('image_shape') or data_cfg.image_shape
  entry = registry.lookup('victim', victim.name)
  if shape is None:
    if entry.image_input:
      _fail(f'data.image_shape: required for model {victim.name!r} with dataset '
            f'{data_cfg.name!r}; accepted: (height, width, channels) with '
            'height*width*channels = d')
    return None
  shape = tuple(shape)
  try:
    networks.check_image_shape(shape, victim.patch_size if entry.patched else None)
  except ValueError as e:
    _fail(str(e))
  if math.prod(shape) != d:
    _fail(f'data.image_shape: {shape} has {math.prod(shape)} entries but d={d}; accepted: '
          'height*width*channels = d')
  return shape


def build_model(victim: sections.Victim, num_classes: int):
  """The Flax module of the registered victim `victim.name`, from the victim section, with
  `num_classes` (data.num_classes) outputs."""
  build = registry.lookup('victim', victim.name).build
  if build is None:
    _fail(f'victim.name: {victim.name!r} builds no network; accepted: '
          f'{", ".join(n for n, v in registry.items("victim") if v.build is not None)}')
  return build(victim, num_classes)


def last_layer_called(module, sample) -> str:
  """The top-level parameter collection of the last module the forward pass calls (the
  output layer of an ordinary network): `victim.layer`'s default. Read from the call order,
  since a params tree's keys come back sorted from every tree operation."""
  order = []

  def record(next_fun, args, kwargs, context):
    path = context.module.scope.path if context.module.scope is not None else ()
    if context.method_name == '__call__' and path:
      order.append(path[0])
    return next_fun(*args, **kwargs)

  with nn.intercept_methods(record):
    params = jax.eval_shape(module.init, jax.random.PRNGKey(0), sample)['params']
  called = [name for name in order if name in params]
  if not called:
    _fail('victim.layer: the model has no parameter collection; accepted: a model with a '
          'linear output layer')
  return called[-1]


def input_shape_of(victim: sections.Victim, image_shape):
  """The per-row input shape the module sees: the image shape for image victims (and for
  victims that take one when data.image_shape is set), else None."""
  image_input = registry.lookup('victim', victim.name).image_input
  return image_shape if image_input or image_input is None else None


def check_config(data_cfg: sections.Data, victim: sections.Victim,
                 attack: sections.Attack) -> None:
  """Cross-field checks of the data, victim and attack sections (before any compute); one-line
  ExperimentError on failure."""
  try:
    if not victim.checkpoint:  # a saved model is not trained here
      train.check_loss(victim.train.loss, data_cfg.num_classes)
  except train.TrainingSetupError as e:
    _fail(str(e))
  if not attack.knows_n and attack.n_candidates is None:
    _fail('attack.n_candidates: required when attack.knows_n=False (the attacker must guess n); '
          'accepted: int >= 1')
  if attack.jacobian_at != 'trained' and attack.knows_init is False:
    _fail(f'attack.jacobian_at: {attack.jacobian_at!r} needs the initial weights; accepted: '
          "'trained' when attack.knows_init=False")
  if data_cfg.name == data.SPHERE:
    network_image_shape(data_cfg, victim)


# attack.jacobian_at -> the weight points (fractions s of the straight line W(0) -> W(T)) whose
# head-Jacobian rows are the features; 'midpoint' averages its two points, the others stack.
# (Straight-line interior points, e.g. (0, 0.5, 1) stacked, are supported by
# `feature_points`; recon/config/validate.py admits only these three names.)
JACOBIAN_POINTS = {'trained': (1.0,), 'midpoint': (0.0, 1.0), 'init_and_trained': (0.0, 1.0)}


def feature_points(jacobian_at: str, params0, params_t):
  """The parameter set(s) the features are evaluated at (`JACOBIAN_POINTS`): params_t for
  'trained', else a tuple of W(s) = W(0) + s (W(T) - W(0)) for every layer."""
  points = JACOBIAN_POINTS.get(jacobian_at)
  if points is None:
    _fail(f'attack.jacobian_at: unknown {jacobian_at!r}; accepted: {", ".join(JACOBIAN_POINTS)}')
  if points == (1.0,):
    return params_t
  at = lambda s: params_t if s == 1.0 else params0 if s == 0.0 else jax.tree.map(  # noqa: E731
      lambda a, b: a + s * (b - a), params0, params_t)
  return tuple(at(s) for s in points)


def apply_with(model, input_shape):
  """apply(params, others, x (N, d)) -> (N, C): rows reshaped to input_shape, the module's
  other collections (batch statistics) given."""
  shape = tuple(input_shape) if input_shape is not None else None

  def apply(params, others, x):
    if shape is not None:
      x = x.reshape((x.shape[0],) + shape)
    return model.apply({'params': params, **others}, x)
  return apply


def make_apply(model, input_shape, others: Dict[str, Any]):
  """apply(params, x (N, d)) -> (N, C): `apply_with` with the collections closed over."""
  apply = apply_with(model, input_shape)
  return lambda params, x: apply(params, others, x)


# -- The attack of one victim, in pure parts: the single run calls them, a sweep vmaps them.

def linear_head(attack_cfg: sections.Attack, apply, params_t, others, key, d: int,
                dtype, layer: str):
  """The outputs of the attacked layer's linear head (`parameter_gradients.linear_head_outputs`,
  probed at 4 candidates from `key`) when the objective may read its penultimate rows
  (`registry.Objective.head_rows`, not with attack.init_in_span); else None."""
  if attack_cfg.init_in_span or not registry.lookup('objective', attack_cfg.objective).head_rows:
    return None
  return parameter_gradients.linear_head_outputs(
      lambda p, xb: apply(p, others, xb), params_t, driver.init_candidates(key, 4, d, dtype),
      layer=layer)


def victim_problem(attack_cfg: sections.Attack, layer: str, params0, params_t, others,
                   *, knows_init: bool, head=None) -> Dict[str, Any]:
  """One victim's attack problem, a pytree of its arrays: the weights its features are read at
  (`feature_points`), its other collections, theta = vec(W_L(T) - W_L(0)) (vec W_L(T) without
  knows_init) with W_L(0)'s direction removed and kept as 'init_dir' (attack.init_in_span: the
  adaptive attack against weight decay), against the linear head's outputs when `head`."""
  theta = parameter_gradients.layer_delta(params_t, params0 if knows_init else None, layer)
  problem = {'params': feature_points(attack_cfg.jacobian_at, params0, params_t),
             'others': others}
  if attack_cfg.init_in_span:
    problem['init_dir'] = parameter_gradients.layer_vector(params0, layer)
    theta = parameter_gradients.without_direction(theta, problem['init_dir'])
  problem['theta'] = theta if head is None else parameter_gradients.head_target(theta, head)
  return problem


def attack_functions(attack_cfg: sections.Attack, apply, layer: str, head=None):
  """(features(problem, x_hat), loss(x_hat, problem)) on a problem of `victim_problem`: the
  per-class Jacobian rows d f_c(x_j) / d vec(W_L) at the problem's weights (averaged for
  attack.jacobian_at 'midpoint', stacked otherwise; without 'init_dir'), and the objective
  attack.objective on them -- on the linear head's penultimate rows when `head` (the same
  value with a C-times smaller Gram, `parameter_gradients.head_rows`)."""
  average = attack_cfg.jacobian_at == 'midpoint'
  objective = registry.lookup('objective', attack_cfg.objective).loss
  jitter = attack_cfg.jitter

  def features(problem, xh):
    rows = parameter_gradients.stacked_jacobian(
        lambda p, xb: apply(p, problem['others'], xb), problem['params'], xh, layer=layer,
        average=average)
    return (rows if 'init_dir' not in problem else
            parameter_gradients.without_direction(rows, problem['init_dir']))

  def loss_fn(xh, problem):
    if head is None:
      return objective(features(problem, xh), problem['theta'], jitter)
    return objective(parameter_gradients.head_rows(
        lambda p, xb: apply(p, problem['others'], xb), problem['params'], xh, layer=layer,
        average=average), problem['theta'], jitter)
  return features, loss_fn


def victim_module(data_cfg: sections.Data, victim: sections.Victim, meta: Dict[str, Any],
                  d: int, key, dtype):
  """(module, image shape, input shape, a zero input, attacked layer) of the victim section
  for rows of length d; a missing layer refused from shapes alone (no compute), before any
  training."""
  image_shape = network_image_shape(data_cfg, victim, meta, d)
  input_shape = input_shape_of(victim, image_shape)
  model = build_model(victim, data_cfg.num_classes)
  sample = jnp.zeros((1,) + tuple(input_shape or (d,)), dtype)
  layer = victim.layer or last_layer_called(model, sample)
  try:
    parameter_gradients.check_layer(jax.eval_shape(model.init, key, sample)['params'], layer)
  except parameter_gradients.UnknownLayerError as e:
    _fail(str(e))
  return model, image_shape, input_shape, sample, layer


def init_victim(model, key, sample):
  """(W(0), the other collections) of the module: its initial parameters."""
  variables = model.init(key, sample)
  return variables['params'], {k: v for k, v in variables.items() if k != 'params'}


def train_lr_source(train_cfg: sections.Train) -> str:
  """Where the victim's GD step size comes from (victim.train.lr, or None: the automatic one)."""
  return 'config' if train_cfg.lr is not None else 'auto: 1 / lambda_max(J^T J / n) at init'


def train_network(data_cfg: sections.Data, victim: sections.Victim, seed: int,
                  keys: Dict[str, Any], x_true, y, meta: Dict[str, Any], dtype,
                  record: Dict[str, Any]):
  """Trains victim.name on the full batch; a ModelCheckpoint (initial and trained params,
  other collections, training info and the data description -- `record`, the run's
  `victims.data_record`, and what the rows show; not the data)."""
  n, d = x_true.shape
  model, _, input_shape, sample, layer = victim_module(data_cfg, victim, meta, d, keys['model'],
                                                      dtype)
  c = data_cfg.num_classes
  params0, others = init_victim(model, keys['model'], sample)
  apply = make_apply(model, input_shape, others)
  p_l = parameter_gradients.layer_size(params0, layer)

  targets = train.make_targets(victim.train.loss, y, c, dtype)
  lr = victim.train.lr
  lr_source = train_lr_source(victim.train)
  if lr is None:
    lr = train.auto_learning_rate(apply, params0, x_true)
  momentum, t = victim.train.momentum, victim.train
  logging.info('training %s (width %d, p_L %d = %.3g dn) on %s with lr %.3g (%s), momentum %g',
               victim.name, victim.width, p_l, p_l / (d * n), t.loss, lr, lr_source,
               momentum)
  t_train = time.time()
  params_t, info, mechanism = defences.train_network_params(victim.train, seed, apply, params0,
                                                            x_true, targets, lr)
  train_seconds = time.time() - t_train
  if not info['finite']:
    _fail(f'training: the {victim.train.loss} loss became non-finite after {info["steps"]} '
          f'steps at victim.train.lr={lr:.3g}; accepted: a smaller --config.victim.train.lr')
  train_note = (f'reached victim.train.tol={victim.train.tol:g} after {info["steps"]} steps'
                if info['reached_tol'] else
                f'did NOT reach victim.train.tol={victim.train.tol:g}: final loss '
                f'{info["final_loss"]:.3g} after the step budget '
                f'victim.train.max_steps={victim.train.max_steps}')
  (logging.info if info['reached_tol'] else logging.warning)('training %s', train_note)
  train_info = {
      'train_loss_name': victim.train.loss, 'train_lr': float(lr), 'train_lr_source': lr_source,
      'train_momentum': momentum, 'train_steps': info['steps'],
      'train_final_loss': info['final_loss'], 'train_reached_tol': info['reached_tol'],
      'train_tol': victim.train.tol, 'train_note': train_note, 'train_seconds': train_seconds}
  if defences.active(victim):
    if mechanism is not None:
      logging.info('DP-SGD: epsilon %.3g at delta %g (noise multiplier %.3g, clip %g, q %.3g, '
                   '%d steps, %s)', mechanism['epsilon'], mechanism['delta'],
                   mechanism['noise_multiplier'], mechanism['clip'], mechanism['sample_rate'],
                   mechanism['steps'], mechanism['accountant'])
    params_t = defences.release(victim, seed, params_t)
    train_info['defences'] = defences.describe(victim, mechanism)
  train_info['utility'] = defences.network_utility(
      data_cfg, victim.train.loss, seed, apply, params_t, x_true, targets, dtype)
  return model_ckpt.flax_model(
      model, jax.device_get(params_t), jax.device_get(params0),
      collections=jax.device_get(others) or None, n=n, info={'train': train_info},
      data_description=victims.data_description(record, x_true, input_shape, meta))


def run(spec: sections.RunSpec, workdir: str, dtype, resuming: bool = False) -> Dict[str, Any]:
  """Trains the network on the full batch (or loads it: victim.checkpoint, or WORKDIR/model
  when resuming), saves it to WORKDIR/model, then reconstructs its training set."""
  t0 = time.time()
  check_config(spec.data, spec.victim, spec.attack)
  keys = runs.split_keys(spec.seed)

  def load_data():
    x, y, meta = data.load(spec.data, keys['data'], dtype)
    return x.reshape(x.shape[0], -1), y, meta

  source = victims.model_source(spec.victim, workdir, resuming)
  record = victims.data_record(spec.to_dict())
  if source:
    model = victims.load_victim(spec.victim, spec.data, source)
    x_true, y, meta = victims.model_training_data(spec.data, spec.run.dtype, record, model,
                                                     load_data)
    if x_true is not None:
      x_true = x_true.reshape(x_true.shape[0], -1)
  else:
    x_true, y, meta = load_data()
    model = train_network(spec.data, spec.victim, spec.seed, keys, x_true, y, meta, dtype,
                          record)
  victims.keep_model(workdir, model, source)
  return attack(spec.data, spec.victim, spec.attack, spec.run, spec.seed, spec.to_dict(),
                workdir, model, x_true=x_true, y=y, meta=meta, keys=keys, dtype=dtype,
                t0=t0)


def initial_params_used(attack_cfg: sections.Attack, victim: sections.Victim,
                        initial_given: bool) -> bool:
  """`config_lib.knows_init` for this run (the attack section's setting, whether W(0) is
  given), said in one log line when W(0) is given but not used, or unset and not given."""
  used = config_lib.knows_init(attack_cfg.knows_init, initial_given)
  if initial_given and not used:
    logging.warning('attack.knows_init=False: the initial parameters%s are ignored; the attack '
                    'reads theta = W_L(T)', f' in {victim.init_checkpoint}'
                    if victim.init_checkpoint else '')
  elif attack_cfg.knows_init is None and not initial_given:
    logging.info('attack.knows_init unset and no initial parameters given (victim.init_checkpoint):'
                 ' the attack reads theta = W_L(T)')
  return used


def attack(data_cfg: sections.Data, victim: sections.Victim, attack_cfg: sections.Attack,
           run_cfg: sections.Run, seed: int, record: Dict[str, Any], workdir: str, model, *,
           x_true, y, meta: Dict[str, Any], keys: Dict[str, Any], dtype,
           t0: float) -> Dict[str, Any]:
  """Reconstructs the training set of a saved (or just trained) network `victim.name`
  (`record`: the run's config as a dict; it records whether the attack used W(0)).

  Needs model.trained; model.initial too when attack.knows_init or attack.jacobian_at !=
  'trained' (`recon.pipelines.victims.check_model_checkpoint` has refused the rest). x_true=None:
  blind metrics only.
  """
  desc = model.data or {}
  d = data_cfg.d if x_true is None else x_true.shape[1]
  if desc.get('input_shape') and math.prod(desc['input_shape']) != d:
    _fail(f'victim.checkpoint: the model was trained on inputs of shape '
          f'{tuple(desc["input_shape"])} but the data rows have d={d}; accepted: data of that '
          'shape')
  image_shape = network_image_shape(data_cfg, victim, meta, d)
  input_shape = input_shape_of(victim, image_shape)
  module = model.module()
  cast = lambda tree: jax.tree.map(lambda a: jnp.asarray(a, dtype), tree)  # noqa: E731
  sample = jnp.zeros((1,) + (input_shape or (d,)), dtype)
  victims.check_flax_params(model, sample)
  layer = victim.layer or last_layer_called(module, sample)
  try:
    parameter_gradients.check_layer(model.trained, layer)
  except parameter_gradients.UnknownLayerError as e:
    _fail(str(e))
  params_t = cast(model.trained)
  params0 = None if model.initial is None else cast(model.initial)
  others = cast(model.collections())
  apply = apply_with(module, input_shape)
  p_l = parameter_gradients.layer_size(params_t, layer)
  c = data_cfg.num_classes
  n = data_cfg.n

  knows_init = initial_params_used(attack_cfg, victim, params0 is not None)
  attack_cfg = dataclasses.replace(attack_cfg, knows_init=knows_init)  # what summary.json records
  record['attack']['knows_init'] = knows_init
  jacobian_at = attack_cfg.jacobian_at
  if attack_cfg.init_in_span and (not knows_init or params0 is None):
    _fail('attack.init_in_span: True needs the initial weights; accepted: False, or True '
          'with attack.knows_init=True')
  head = linear_head(attack_cfg, apply, params_t, others, keys['init'], d, dtype, layer)
  problem = victim_problem(attack_cfg, layer, params0, params_t, others, knows_init=knows_init,
                           head=head)
  features, loss_fn = attack_functions(attack_cfg, apply, layer, head)
  feature_fn = lambda xh: features(problem, xh)  # noqa: E731
  attack_loss, x0, decode = restarts.with_restarts(
      attack_cfg.restarts, loss_fn, problem, keys['init'],
      lambda k: driver.init_candidates(k, attack_cfg.n_candidates, d, dtype))

  known = ['architecture', 'all trained weights (the features below the head)',
           'the attacked layer ' + repr(layer)]
  unknown = ['X (training inputs)', 'y (labels: never used by the attack)',
             'the training hyper-parameters']
  (known if knows_init else unknown).append(f'initial weights W_{layer}(0)')
  (known if attack_cfg.knows_n else unknown).append('n (number of samples)')
  target = (f'theta = vec(W_{layer}(T) - W_{layer}(0))' if knows_init else
            f'theta = vec(W_{layer}(T)) (initial weights unknown: their random part is not in '
            'the span of the features, so the attack is expected to degrade)')
  if attack_cfg.init_in_span:
    target += (f' with the direction of W_{layer}(0) added to the span (attack.init_in_span: '
               'the adaptive attack against weight decay)')
  extra = {
      'model': victim.name, 'num_classes': c, 'p_L': p_l,
      # a loaded model's width is its own (the head's fan-in), not victim.width's default
      'width': attacked_fan_in(params_t, layer) if victim.checkpoint else victim.width,
      'p_L_over_dn': p_l / (d * n), 'n_params_total': int(sum(
          np.size(l) for l in jax.tree.leaves(params_t))),
      **(model.info.get('train') or {}),
      'image_shape': list(image_shape) if image_shape else None,
      'jacobian_at': jacobian_at, 'init_in_span': bool(attack_cfg.init_in_span),
      'head_rows': head is not None,
  }
  if x_true is not None:
    loss_at_truth = float(jax.jit(loss_fn)(x_true, problem))
    extra['projection_loss_at_truth'] = loss_at_truth
    logging.info('p_L/(dn) = %.3g; projection loss at the true data (diagnostic) %.3e',
                 p_l / (d * n), loss_at_truth)
  bundle = Attack(
      problem=problem, loss_fn=attack_loss, x0=x0,
      constraint=optimize.sphere_constraint(float(np.sqrt(d))), feature_fn=feature_fn,
      decode=decode)
  return reconstruct.reconstruct_and_report(
      reconstruct.tail(data_cfg, victim, attack_cfg, run_cfg, seed, record), workdir, bundle,
      x_true=x_true, y=y, meta=meta, t0=t0,
      extra_metrics=extra, keys=keys,
      threat_model={'known': known, 'unknown': unknown, 'target': target,
                    'features': f'per-class Jacobian rows d f_c(x) / d vec(W_{layer}) at the '
                                + {'init_and_trained': 'initial and the trained weights, '
                                   'stacked (2 * n_candidates * num_classes rows)',
                                   'midpoint': 'initial and the trained weights, averaged '
                                   '(n_candidates * num_classes rows)',
                                   'trained': 'trained weights (n_candidates * num_classes '
                                   'rows)'}[jacobian_at],
                    'attacker_knows_init': knows_init,
                    'attacker_knows_n': attack_cfg.knows_n})


registry.register('pipeline', routes.NETWORKS, registry.Pipeline(run=run, check=check_config))
