"""The random-features pipeline: fit theta* = Phi^+ y, reconstruct X from (V, theta*).

The model is f(x) = theta^T sigma(V x) with V (p x d, V_ij ~ N(0, 1/d)) fixed and
theta* = Phi^+ y the min-norm least-squares fit on the features Phi = sigma(V X^T)^T.
The attack minimises the projection loss (`recon.objectives.projection`)
  L(X_hat) = ||P_perp(Phi(X_hat)) theta*||^2 / ||theta*||^2
over candidates on the sqrt(d) sphere. The pieces are pure functions of a PRNG key
(`make_rf_problem`, `rf_loss`, `recon.attack.driver.init_candidates`) so that
`recon.sweep.grid` can vmap them over a grid; the memory-lean variants
(`make_rf_problem_lean`, `rf_lean_loss`) regenerate V chunk by chunk; `run` is the
single-run pipeline (dense or lean), with optional restarts and sample splitting.
"""
from __future__ import annotations

import functools
import os
import time
from typing import Any, Dict, Optional, Tuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from recon import data, registry
from recon.models import defences, features, random_features
from recon.models import min_norm as precision
from recon.models import saved as model_ckpt
from recon.runtime import distributed, runs
from recon.attack import driver, restarts, sign_quotient, splitting
from recon.attack import optimiser as optimize
from recon.config import routes, sections
from recon.pipelines import victims
from recon.attack.plan import Attack
from recon.errors import ExperimentError, NonFiniteError
from recon.objectives import projection, projection_streamed
from recon.pipelines.reconstruct import Tail, reconstruct_and_report, tail

Array = jax.Array


def make_rf_problem(keys: Dict[str, Array], x: Array, y: Array, *, p_total: int,
                    activation: str, mask: Optional[Array] = None,
                    rng: str = 'threefry') -> Dict[str, Array]:
  """Draws V (p_total x d), fits theta* = Phi^+ y on the (masked) features.

  Returns the attacker's view {v, mask, theta} plus `train_mse` (a pytree of arrays).
  With a 0/1 `mask` (a width padded to `p_total`) the padded columns of Phi are
  zero, the pseudo-inverse cut-off uses the unpadded width and theta is zero on the
  padding, so the first p entries equal the unpadded model's theta*.
  """
  d = x.shape[1]
  v = features.random_weights(keys['model'], p_total, d, x.dtype, rng)
  if mask is None:
    mask = jnp.ones((p_total,), x.dtype)
    n_features = None
  else:
    n_features = jnp.sum(mask)
  phi = features.rf_features(v, x, activation, mask)
  theta = random_features.min_norm_solution(phi, y, n_features) * mask
  return {'v': v, 'mask': mask, 'theta': theta,
          'train_mse': random_features.train_mse(phi, theta, y)}


def lean_residual(victim: sections.Victim, attack: sections.Attack, dtype) -> str:
  """The streamed loss's residual mode; 'auto': 'stored' (keeps Z, m x p, 2 regenerations of V
  per step) when m*p*itemsize fits victim.feature_memory_budget_mb, else 'two_pass' (3 per step)."""
  mode = victim.feature_residual
  if mode != 'auto':
    return mode
  megabytes = attack.n_candidates * victim.p * jnp.dtype(dtype).itemsize / 2 ** 20
  return 'stored' if megabytes <= victim.feature_memory_budget_mb else 'two_pass'


def use_lean_features(data_cfg: sections.Data, victim: sections.Victim, dtype) -> bool:
  """True when the loss streams the features: victim.feature_mode 'lean' (V regenerated) or
  'blocked' (V stored, streamed in row blocks), victim.feature_shards > 1, or 'auto' with
  p*d*itemsize above victim.feature_memory_budget_mb."""
  mode = victim.feature_mode
  if mode in ('lean', 'blocked') or victim.feature_shards > 1:
    return True
  if mode == 'dense':
    return False
  megabytes = victim.p * data_cfg.d * jnp.dtype(dtype).itemsize / 2 ** 20
  return megabytes > victim.feature_memory_budget_mb


def lean_layout(p: int, chunk: int, shards: int = 1) -> Tuple[int, int]:
  """(chunk, n_chunks): at most `chunk` features per chunk, n_chunks a multiple of shards.

  Chunks are balanced (each shard's ceil(p / shards) features in as few chunks as the
  requested width allows, split evenly), so padding past p stays below one feature per
  chunk: p = 10 000 in chunks of <= 4096 is 3 x 3334, not 3 x 4096.
  """
  per_shard = -(-p // shards)
  n_per_shard = -(-per_shard // max(1, chunk))
  chunk = max(1, -(-per_shard // n_per_shard))
  return chunk, n_per_shard * shards


def make_rf_problem_lean(keys: Dict[str, Array], x: Array, y: Array, *, p: int,
                         activation: str, chunk: int, n_chunks: int,
                         rng: str = 'threefry', resident: bool = False) -> Dict[str, Array]:
  """Memory-lean `make_rf_problem`: V is regenerated chunk by chunk from keys['model'].

  Same key => same V, features and theta* as the dense path. Returns the attacker's
  view {key, p, theta (n_chunks, chunk), zero past p} plus `train_mse`; `resident`: also V
  itself, (n_chunks * chunk, d) with its padding rows, for the loss to stream ('blocked').
  """
  phi = features.rf_features_chunked(keys['model'], x, activation, p, chunk, n_chunks, rng)
  theta = random_features.min_norm_solution(phi, y)
  out = {'key': keys['model'], 'p': jnp.asarray(p, jnp.int32),
         'theta': theta.reshape(n_chunks, chunk),
         'train_mse': random_features.train_mse(phi, theta, y)}
  if resident:
    out['v'] = features.random_weights(keys['model'], n_chunks * chunk, x.shape[1], x.dtype, rng)
  return out


def rf_lean_loss(*, activation: str, chunk: int, jitter: float, residual: str = 'two_pass',
                 mesh=None, rng: str = 'threefry', resident: bool = False):
  """loss_fn(x_hat, lean_problem): the streamed projection loss (custom VJP, optional mesh);
  `resident`: V's row blocks are read from the problem's stored V instead of regenerated."""
  if resident:
    pre = lambda aux, x, c: features.rf_rows_preactivation_chunk(aux['v'], x, c, chunk)  # noqa: E731
    source = 'v'
  else:
    pre = lambda aux, x, c: features.rf_preactivation_chunk(aux['key'], x, c, chunk, rng)  # noqa: E731
    source = 'key'
  post = lambda aux, z, c: features.rf_activate_chunk(z, c, chunk, activation, aux['p'])  # noqa: E731
  chunk_fn = lambda aux, x, c: post(aux, pre(aux, x, c), c)  # noqa: E731
  loss = projection_streamed.make_streamed_projection_loss(
      chunk_fn, jitter=jitter, residual=residual, mesh=mesh, split_fn=(pre, post))
  return lambda x, prob: loss(x, prob['theta'], {source: prob[source], 'p': prob['p']})


def rf_rows(x_hat: Array, problem: Dict[str, Array], *, activation: str
            ) -> Tuple[Array, Array]:
  """(rows, target) of the projection loss: Phi(x_hat) and theta*; with problem['quotient']
  (Q, `recon.attack.sign_quotient`) Psi = Phi (I - Q Q^T) and problem['theta_quotient'] =
  (I - Q Q^T) theta*, blind to every row's sign."""
  phi_hat = features.rf_features(problem['v'], x_hat, activation, problem['mask'])
  if 'quotient' in problem:
    return sign_quotient.project(phi_hat, problem['quotient']), problem['theta_quotient']
  return phi_hat, problem['theta']


def rf_loss(x_hat: Array, problem: Dict[str, Array], *, activation: str,
            jitter: float, refine: int = 0) -> Array:
  """Projection loss of candidates x_hat against the trained random-features model
  (`rf_rows`), its coefficients refined `refine` times (`attack.refine`)."""
  return projection.projection_loss(*rf_rows(x_hat, problem, activation=activation), jitter,
                                    refine)


def rf_loss_fn(victim: sections.Victim, attack: sections.Attack):
  """`loss(x_hat, problem)` of the random-features pipeline for these sections."""
  return functools.partial(rf_loss, activation=victim.activation, jitter=attack.jitter,
                           refine=attack.refine)


def rf_rows_fn(victim: sections.Victim):
  """`rows(x_hat, problem) -> (rows, target)` of `rf_loss_fn` (`recon.attack.plan.Attack`)."""
  return functools.partial(rf_rows, activation=victim.activation)


def rf_extra_metrics(data_cfg: sections.Data, victim: sections.Victim,
                     train_mse: float) -> Dict[str, Any]:
  """The random-features numbers every report carries next to the reconstruction metrics."""
  p, d, n = victim.p, data_cfg.d, data_cfg.n
  return {'train_mse': train_mse, 'p': p, 'p_over_dn': p / (d * n), 'p_over_n': p / n}


RF_THREAT_MODEL = {'known': ['V (random-features weights or their key)', 'theta* (trained)',
                             'n_candidates', 'activation'],
                   'unknown': ['X (training inputs)', 'y (labels)']}


def _init_fn(m: int, d: int, dtype):
  """key -> one (m = attack.n_candidates, d) starting set (`driver.init_candidates`)."""
  return lambda k: driver.init_candidates(k, m, d, dtype)


# V from its key; one compiled function for training and for attacking a saved model,
# so both see the same bits.
_random_weights = jax.jit(features.random_weights, static_argnums=(1, 2, 3, 4))


def rf_problem(model: model_ckpt.ModelCheckpoint, dtype) -> Dict[str, Array]:
  """The attacker's view {v, mask, theta} of a saved random-features model.

  V is regenerated from extras['v_key'] (V_ij ~ N(0, 1/d), `features.random_weights`),
  or taken as given from extras['v'] (p x d) for a model whose V was drawn elsewhere.
  """
  p, d = model.hparams['p'], model.hparams['d']
  extras = model.extras or {}
  if 'v' in extras:
    v = jnp.asarray(extras['v'], dtype)
    chex.assert_shape(v, (p, d))
  elif 'v_key' in extras:
    v = _random_weights(jnp.asarray(extras['v_key']), p, d, dtype,
                        model.hparams.get('weight_rng', 'threefry'))
  else:
    raise ExperimentError("victim.checkpoint: a random_features model needs extras 'v_key' "
                          "or 'v'; accepted: see docs/reliability.md, \"Random features\"")
  return {'v': v, 'mask': jnp.ones((p,), dtype),
          'theta': jnp.asarray(model.trained['theta'], dtype)}


def check_finite_victim(model: model_ckpt.ModelCheckpoint) -> None:
  """NonFiniteError (exit status 3) before the attack unless theta* and ||theta*||^2 (the
  loss's normaliser) are finite: labels near the dtype's range (e.g. data.label_noise
  1e300 in float64) overflow the fit, and every loss would be NaN from step 0."""
  theta = np.asarray(model.trained['theta'], np.float64)
  with np.errstate(over='ignore', invalid='ignore'):
    norm = float(np.sum(np.square(theta, dtype=np.float64)))
  if not np.all(np.isfinite(theta)) or not np.isfinite(norm) or norm > np.finfo(theta.dtype).max:
    raise NonFiniteError(
        "victim: the fitted theta* is not finite, or its squared norm overflows (the loss's "
        f'normaliser; ||theta*||^2 = {norm:.3g}); accepted: labels well inside the dtype\'s '
        'range (data.label_noise, data scale)')


@functools.partial(jax.jit, static_argnames=('activation',))
def _fit_rf(v: Array, x: Array, y: Array, activation: str) -> Tuple[Array, Array]:
  phi = features.rf_features(v, x, activation)
  theta = random_features.min_norm_solution(phi, y)
  return theta, random_features.train_mse(phi, theta, y)


def train_random_features(data_cfg: sections.Data, victim: sections.Victim, seed: int,
                          keys: Dict[str, Array],
                          dtype) -> Tuple[model_ckpt.ModelCheckpoint, Dict[str, Any]]:
  """Loads the data and fits theta* = Phi^+ y; (the model with its training set, data meta)."""
  x_true, y, meta = data.load(data_cfg, keys['data'], dtype)
  rng = victim.weight_rng
  v = _random_weights(keys['model'], victim.p, data_cfg.d, dtype, rng)
  theta, train_mse = _fit_rf(v, x_true, y, victim.activation)
  train_mse = float(train_mse)
  logging.info('trained random features: n=%d d=%d p=%d (p/dn=%.3g) train_mse=%.3g',
               data_cfg.n, data_cfg.d, victim.p, victim.p / (data_cfg.d * data_cfg.n),
               train_mse)
  info = {'train_mse': train_mse, 'dataset': data_cfg.name, 'seed': seed}
  if defences.active(victim):  # output perturbation of theta* (victim.release_noise)
    theta = defences.release(victim, seed, theta)
    info['defences'] = defences.describe(victim, None)
  predict = lambda xs: features.rf_features(v, xs, victim.activation) @ theta  # noqa: E731
  info['utility'] = defences.regression_utility(predict, x_true, y, data_cfg, seed, dtype)
  return model_ckpt.ModelCheckpoint(
      kind='random_features', hparams={'p': victim.p, 'd': data_cfg.d,
                                       'activation': victim.activation, 'weight_rng': rng},
      trained={'theta': theta}, extras={'v_key': keys['model']},
      truth={'x': x_true, 'y': y}, n=data_cfg.n, info=info), meta


def _rf_splitter(d: int, victim: sections.Victim, attack_cfg: sections.Attack, seed: int,
                 lean: bool):
  """The sample-splitting refiner of the random-features pipeline (None when split='none')."""
  if attack_cfg.split.mode == 'none':
    return None
  if lean:  # (re-seeding refuses splitting itself: recon.attack.rescue.chain)
    raise ExperimentError(
        f"attack.split.mode: {attack_cfg.split.mode!r} needs dense features (got feature mode "
        "'lean'); accepted: attack.split.mode 'none', or victim.feature_mode 'dense'")
  split_cfg = sections.Split.from_section(attack_cfg.split)
  try:
    splitting.check_config(split_cfg, victim.activation)
  except splitting.SplitError as e:
    raise ExperimentError(str(e)) from None
  def feature_one(xj, prob):
    phi = features.rf_features(prob['v'], xj[None], victim.activation, prob['mask'])[0]
    return sign_quotient.project(phi, prob['quotient']) if 'quotient' in prob else phi
  quotient = sign_quotient.active(attack_cfg.sign_quotient, victim.activation,
                                  attack_cfg.n_candidates, d)
  return splitting.Splitter(split_cfg,
                            splitting.projection_split_model(
                                feature_one, attack_cfg.jitter,
                                target_key='theta_quotient' if quotient else 'theta'),
                            rf_loss_fn(victim, attack_cfg),
                            optimize.sphere_constraint(float(np.sqrt(d))),
                            seed=seed)


def run_lean(data_cfg: sections.Data, victim: sections.Victim, attack_cfg: sections.Attack,
             settings: Tail, workdir: str, dtype, resuming: bool = False) -> Dict[str, Any]:
  """Memory-lean random features: V is regenerated chunk by chunk from its key, never stored
  (victim.feature_mode 'lean'), or stored and streamed in blocks of its rows ('blocked': one
  read of V per pass instead of its regeneration, GEMMs of the chunk's shape)."""
  t0 = time.time()
  resident = victim.feature_mode == 'blocked'
  if resident and victim.feature_shards > 1:
    raise ExperimentError(f'victim.feature_shards: {victim.feature_shards} with feature_mode '
                          "'blocked' (V is stored on one device); accepted: 1, or feature_mode "
                          "'lean'")
  if victim.checkpoint:
    raise ExperimentError('victim.checkpoint: attacking a saved model uses dense features; '
                          "accepted: feature_mode 'dense' (or 'auto' under the memory budget)")
  _rf_splitter(data_cfg.d, victim, attack_cfg, settings.seed, lean=True)  # refuses splitting here
  if attack_cfg.refine:
    raise ExperimentError(f'attack.refine: {attack_cfg.refine} with memory-lean features; '
                          "accepted: 0, or victim.feature_mode 'dense' (or 'auto' under the "
                          'memory budget)')
  if defences.active(victim):
    raise ExperimentError(f'victim.release_noise: {victim.release_noise} with memory-lean '
                          "features; accepted: 0, or victim.feature_mode 'dense' (or 'auto' "
                          'under the memory budget)')
  keys = runs.split_keys(settings.seed)
  x_true, y, meta = data.load(data_cfg, keys['data'], dtype)
  shards = victim.feature_shards
  try:
    mesh = projection_streamed.feature_mesh(shards) if shards > 1 else None
  except ValueError as e:
    raise ExperimentError(str(e)) from None
  chunk, n_chunks = lean_layout(victim.p, victim.feature_chunk, shards)
  rng = victim.weight_rng
  problem = jax.jit(lambda k, x, y: make_rf_problem_lean(
      k, x, y, p=victim.p, activation=victim.activation, chunk=chunk,
      n_chunks=n_chunks, rng=rng, resident=resident))(keys, x_true, y)
  residual = lean_residual(victim, attack_cfg, dtype)
  if sign_quotient.active(attack_cfg.sign_quotient, victim.activation,
                         attack_cfg.n_candidates, data_cfg.d):
    logging.info('sign quotient: not on memory-lean features (its basis is p x d, as V); the '
                 'plain projection loss, with its sign traps for n > d (docs/random_features.md)')
  loss_fn = rf_lean_loss(activation=victim.activation, chunk=chunk, jitter=attack_cfg.jitter,
                         residual=residual, mesh=mesh, rng=rng, resident=resident)
  feature_fn = features.rf_feature_map_lean(  # exact derivatives; blocks for the certificate
      problem['key'], features.exact_forward(victim.activation), victim.p, chunk,
      dtype, rng)
  gram_fn = jax.jit(lambda x: projection_streamed.streamed_gram(
      lambda aux, xx, c: features.rf_feature_chunk(aux, xx, c, chunk, victim.activation,
                                                   victim.p, rng),
      x, n_chunks, problem['key']))
  p, d, n = victim.p, data_cfg.d, data_cfg.n
  logging.info('%s features: V (%.0f MB, %s) %s in %d chunks of %d rows on %d device(s); '
               'residual %s', 'blocked' if resident else 'memory-lean',
               p * d * jnp.dtype(dtype).itemsize / 2 ** 20, rng,
               'stored, streamed' if resident else 'regenerated', n_chunks, chunk, shards,
               residual)
  train_mse = float(problem.pop('train_mse'))
  logging.info('trained random features: n=%d d=%d p=%d (p/dn=%.3g) train_mse=%.3g',
               n, d, p, p / (d * n), train_mse)
  # Across processes (recon/runtime/distributed.py) the attack's inputs become global arrays,
  # replicated over the mesh (every process computed the same ones from the seed).
  problem = distributed.replicate(problem, mesh)
  loss_fn, x0, decode = restarts.with_restarts(
      attack_cfg.restarts, loss_fn, problem, keys['init'],
      _init_fn(attack_cfg.n_candidates, data_cfg.d, dtype))
  x0 = distributed.replicate(x0, mesh)
  attack = Attack(problem=problem, loss_fn=loss_fn, x0=x0,
                  constraint=optimize.sphere_constraint(float(np.sqrt(data_cfg.d))),
                  feature_fn=feature_fn, gram_fn=gram_fn, decode=decode,
                  certify_theta=problem['theta'].reshape(-1)[:victim.p])
  return reconstruct_and_report(
      settings, workdir, attack, x_true=x_true, y=y, meta=meta, t0=t0, keys=keys, resume=resuming,
      extra_metrics=dict(rf_extra_metrics(data_cfg, victim, train_mse), memory_lean=not resident,
                         feature_blocks=resident,
                         sign_quotient_dims=0,
                         **precision.check_victim(train_mse, y, n, p, settings.run.dtype)),
      threat_model=RF_THREAT_MODEL)


def add_sign_quotient(problem: Dict[str, Any], attack: sections.Attack,
                      activation: str, dim: int, mask: Optional[Array] = None) -> bool:
  """With relu-like features and attack.sign_quotient active for attack.n_candidates in R^dim:
  the part of the attack that cannot see signs (recon/attack/sign_quotient.py) added to
  `problem` -- the basis Q of the sign-compensated span ('quotient', of the rows `mask`
  keeps) and (I - Q Q^T) theta ('theta_quotient'); returns whether it was. Pure (a sweep
  vmaps it)."""
  if not sign_quotient.active(attack.sign_quotient, activation, attack.n_candidates, dim):
    return False
  problem['quotient'] = sign_quotient.basis(problem['v'], activation, mask)
  problem['theta_quotient'] = sign_quotient.target(problem['theta'], problem['quotient'])
  return True


@functools.partial(jax.jit, static_argnames=('activation',))
def _dense_gram(v: Array, x: Array, activation: str) -> Array:
  """Phi(X) Phi(X)^T for a materialised V (taken as an argument: see `run`)."""
  phi = features.rf_features(v, x, activation)
  return phi @ phi.T


def run(spec: sections.RunSpec, workdir: str, dtype, resuming: bool = False) -> Dict[str, Any]:
  """Random-features model: fit theta* = Phi^+ y, reconstruct X from (V, theta*).

  The model comes from `victim.checkpoint` if set, from WORKDIR/model when
  resuming, else it is trained; it is saved to WORKDIR/model before the attack,
  and the attack always reads it back from that saved form (V from its key).
  Above the feature memory budget (or with victim.feature_mode='lean' / victim.feature_shards > 1)
  the memory-lean path runs instead (`run_lean`).
  """
  data_cfg, victim, attack_cfg = spec.data, spec.victim, spec.attack
  settings = tail(data_cfg, victim, attack_cfg, spec.run, spec.seed, spec.to_dict())
  if use_lean_features(data_cfg, victim, dtype):
    return run_lean(data_cfg, victim, attack_cfg, settings, workdir, dtype, resuming)
  t0 = time.time()
  keys = runs.split_keys(spec.seed)
  own = os.path.join(workdir, 'model')
  if resuming and os.path.isdir(own):
    source = own
  else:
    source = victim.checkpoint or None
  if source:
    # recon.model/1, or an .npz (victim.format)
    model = victims.load_victim(victim, data_cfg, source)
    # Our own saved model: the data description (image shape, pixel scale) comes from the
    # config's data set; a foreign model brings none.
    meta = data.load(data_cfg, keys['data'], dtype)[2] if source == own else {}
  else:
    model, meta = train_random_features(data_cfg, victim, spec.seed, keys, dtype)
  check_finite_victim(model)
  if source is None or os.path.abspath(model_ckpt.model_dir(source)) != os.path.abspath(own):
    model_ckpt.save(own, model)
  problem = rf_problem(model, dtype)
  truth = model.truth or {}
  if source and data_cfg.name == data.auditor.NAME:  # the auditor's file: the truth to score
    x_file, y_file, meta = data.load(data_cfg, keys['data'], dtype)
    truth = {'x': x_file, 'y': y_file}
  x_true = None if truth.get('x') is None else jnp.asarray(truth['x'], dtype)
  y = truth.get('y')
  feature_fn = features.rf_feature_map(problem['v'],
                                       features.exact_forward(victim.activation))
  certify_theta, quotient_dims = problem['theta'], 0
  if add_sign_quotient(problem, attack_cfg, victim.activation, data_cfg.d):
    feature_fn = sign_quotient.feature_fn(problem['v'], victim.activation,
                                          problem['quotient'])
    certify_theta = problem['theta_quotient']
    quotient_dims = int(problem['quotient'].shape[1])
  # V is an argument, never a closed-over constant (a captured V is compiled into the
  # program: 3.8 GB at (100, 3072, 307 200), minutes of compilation on a GPU).
  gram_fn = functools.partial(_dense_gram, problem['v'],
                              activation=features.exact_forward(victim.activation))
  loss_fn, x0, decode = restarts.with_restarts(
      attack_cfg.restarts, rf_loss_fn(victim, attack_cfg), problem, keys['init'],
      _init_fn(attack_cfg.n_candidates, data_cfg.d, dtype))
  p, d, n = victim.p, data_cfg.d, data_cfg.n
  extra = {'p': p, 'p_over_dn': p / (d * n), 'p_over_n': p / n, 'memory_lean': False,
           'sign_quotient_dims': quotient_dims}
  for name in ('defences', 'utility'):
    if name in model.info:
      extra[name] = model.info[name]
  if 'train_mse' in model.info:
    extra['train_mse'] = model.info['train_mse']
    if y is not None:  # warn and record when a p >= n victim does not interpolate
      extra.update(precision.check_victim(extra['train_mse'], y, n, p, spec.run.dtype))
  attack = Attack(problem=problem, loss_fn=loss_fn, x0=x0,
                  constraint=optimize.sphere_constraint(float(np.sqrt(data_cfg.d))),
                  feature_fn=feature_fn, gram_fn=gram_fn, decode=decode,
                  refiner=_rf_splitter(data_cfg.d, victim, attack_cfg, spec.seed, lean=False),
                  certify_theta=certify_theta,
                  quotient_dims=quotient_dims, rows_fn=rf_rows_fn(victim))
  return reconstruct_and_report(
      settings, workdir, attack, x_true=x_true, y=y, meta=meta, t0=t0, keys=keys, resume=resuming,
      extra_metrics=extra, threat_model=RF_THREAT_MODEL)


registry.register('pipeline', routes.RANDOM_FEATURES, registry.Pipeline(run=run))
