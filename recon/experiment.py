"""config -> data -> trained model -> projection objective -> optimise -> metrics -> outputs.

The random-features pipeline is written as pure functions of a PRNG key
(`make_rf_problem`, `rf_loss`, `init_candidates`) so that `recon/sweep.py` can
vmap them over a grid; `run` is the single-run driver behind `recon.main`.
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import time
from typing import Any, Dict, Optional, Tuple

import chex
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from absl import logging

from recon import checkpoint
from recon import config as config_lib
from recon import data, features, io, metrics, optimize, plots, refine, restarts, splitting
from recon import precision  # issue #17: matmul precision, victim interpolation check
from recon.errors import ExperimentError  # re-exported: recon.experiment.ExperimentError
from recon.models import checkpoint as model_ckpt
from recon.models import random_features
from recon.objectives import projection, projection_streamed

Array = jax.Array


def set_dtype(name: str):
  """Returns the JAX dtype; float64 switches on `jax_enable_x64` (process-wide)."""
  if name == 'float64':
    if not jax.config.jax_enable_x64:
      jax.config.update('jax_enable_x64', True)
    return jnp.float64
  return jnp.float32


def resolve(config: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  """Validated copy with derived defaults filled in (n_candidates = n, 2n for MLPs, when None).

  With `model_checkpoint` set, the checkpoint's model fields replace the config's
  (see `apply_model_checkpoint`).
  """
  config_lib.validate(config)
  cfg = apply_model_checkpoint(ml_collections.ConfigDict(config.to_dict()))
  if cfg.get('n_candidates') is None and cfg.get('attacker_knows_n', True):
    with cfg.ignore_type():
      # KKT attacks use 2n candidates (Haim et al.); the projection loss on random features n.
      cfg.n_candidates = 2 * cfg.n if cfg.model == 'homogeneous_mlp' else cfg.n
  return cfg


def split_keys(seed_or_key) -> Dict[str, Array]:
  """The fixed key tree of a run: data, model (V), candidate initialisation."""
  key = jax.random.PRNGKey(seed_or_key) if np.ndim(seed_or_key) == 0 else seed_or_key
  k_data, k_model, k_init = jax.random.split(key, 3)
  return {'data': k_data, 'model': k_model, 'init': k_init}


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


def lean_residual(cfg: ml_collections.ConfigDict, dtype) -> str:
  """The streamed loss's residual mode; 'auto': 'stored' (keeps Z, m x p, 2 regenerations of V
  per step) when m*p*itemsize fits feature_memory_budget_mb, else 'two_pass' (3 per step)."""
  mode = cfg.get('feature_residual', 'two_pass')
  if mode != 'auto':
    return mode
  megabytes = cfg.n_candidates * cfg.p * jnp.dtype(dtype).itemsize / 2 ** 20
  return 'stored' if megabytes <= cfg.get('feature_memory_budget_mb', 1024.0) else 'two_pass'


def use_lean_features(cfg: ml_collections.ConfigDict, dtype) -> bool:
  """True when V must not be materialised: feature_mode 'lean', feature_shards > 1, or
  'auto' with p*d*itemsize above feature_memory_budget_mb."""
  mode = cfg.get('feature_mode', 'auto')
  if mode == 'lean' or cfg.get('feature_shards', 1) > 1:
    return True
  if mode == 'dense':
    return False
  megabytes = cfg.p * cfg.d * jnp.dtype(dtype).itemsize / 2 ** 20
  return megabytes > cfg.get('feature_memory_budget_mb', 1024.0)


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
                         rng: str = 'threefry') -> Dict[str, Array]:
  """Memory-lean `make_rf_problem`: V is regenerated chunk by chunk from keys['model'].

  Same key => same V, features and theta* as the dense path. Returns the attacker's
  view {key, p, theta (n_chunks, chunk), zero past p} plus `train_mse`.
  """
  phi = features.rf_features_chunked(keys['model'], x, activation, p, chunk, n_chunks, rng)
  theta = random_features.min_norm_solution(phi, y)
  return {'key': keys['model'], 'p': jnp.asarray(p, jnp.int32),
          'theta': theta.reshape(n_chunks, chunk),
          'train_mse': random_features.train_mse(phi, theta, y)}


def rf_lean_loss(*, activation: str, chunk: int, jitter: float, residual: str = 'two_pass',
                 mesh=None, rng: str = 'threefry'):
  """loss_fn(x_hat, lean_problem): the streamed projection loss (custom VJP, optional mesh)."""
  chunk_fn = lambda aux, x, c: features.rf_feature_chunk(  # noqa: E731
      aux['key'], x, c, chunk, activation, aux['p'], rng)
  pre = lambda aux, x, c: features.rf_preactivation_chunk(aux['key'], x, c, chunk, rng)  # noqa: E731
  post = lambda aux, z, c: features.rf_activate_chunk(z, c, chunk, activation, aux['p'])  # noqa: E731
  loss = projection_streamed.make_streamed_projection_loss(
      chunk_fn, jitter=jitter, residual=residual, mesh=mesh, split_fn=(pre, post))
  return lambda x, prob: loss(x, prob['theta'], {'key': prob['key'], 'p': prob['p']})


def rf_loss(x_hat: Array, problem: Dict[str, Array], *, activation: str,
            jitter: float) -> Array:
  """Projection loss of candidates x_hat against the trained random-features model."""
  phi_hat = features.rf_features(problem['v'], x_hat, activation, problem['mask'])
  return projection.projection_loss(phi_hat, problem['theta'], jitter)


def init_candidates(key: Array, n_candidates: int, d: int, dtype) -> Array:
  """Candidates ~ N(0, I) (projected onto the sphere by the constraint)."""
  return jax.random.normal(key, (n_candidates, d), dtype)


# Model fields a model checkpoint fixes (they replace the config's values).
MODEL_FIELDS = {'random_features': ('p', 'd', 'activation')}

# Flax architectures: (config.model values that run them, {hparam: config field}). The
# checkpoint's hparams replace those config fields (logged); a config.model outside the
# tuple is refused. HomogeneousMLP's `widths` sets width and depth (all widths equal).
FLAX_MODELS = {
    'TwoLayer': (('two_layer',), {'width': 'width', 'out_dim': 'num_classes',
                                  'activation': 'activation'}),
    'RandomFeatures': (('random_features_gd',), {'width': 'width', 'out_dim': 'num_classes',
                                                 'activation': 'activation'}),
    'ResNet': (('resnet',), {'width': 'width', 'out_dim': 'num_classes', 'depth': 'depth',
                             'activation': 'activation', 'pool': 'pool'}),
    'ViT': (('vit',), {'width': 'width', 'out_dim': 'num_classes', 'depth': 'depth',
                       'patch_size': 'patch_size', 'num_heads': 'num_heads',
                       'activation': 'activation', 'pool': 'pool'}),
    'HomogeneousMLP': (('homogeneous_mlp',), {'activation': 'activation', 'alpha': 'act_alpha',
                                              'init_scale': 'init_scale',
                                              'first_init_scale': 'first_init_scale'}),
}

# Config fields that determine a run's training data (data.load / the KKT labels): a
# saved model records them, and a config that agrees regenerates that data for scoring.
DATA_FIELDS = ('dataset', 'n', 'd', 'label_noise', 'planted_dim', 'classes', 'image_size',
               'grayscale', 'preprocess', 'seed', 'dtype', 'n_classes', 'objective')


def _flax_fields(cfg: ml_collections.ConfigDict, meta: Dict[str, Any],
                 path: str) -> Dict[str, Any]:
  """{config field: value} a Flax checkpoint fixes; one-line refusal on a wrong model."""
  arch = meta['architecture']
  models, fields = FLAX_MODELS[arch]
  if cfg.model not in models:
    raise ExperimentError(
        f'model: {cfg.model!r} but model_checkpoint {path} holds a {arch} '
        f'(flax:{arch}); accepted: model {" or ".join(repr(m) for m in models)} with this '
        'checkpoint')
  hp = meta['hparams']
  out = {field: hp[name] for name, field in fields.items() if name in hp}
  from recon import subspace_experiment  # pylint: disable=import-outside-toplevel
  if arch == 'TwoLayer' and subspace_experiment.uses_this_pipeline(cfg):
    out.pop('num_classes', None)
    if hp.get('out_dim', 1) != 1:
      raise ExperimentError(
          f'model_checkpoint: {path} holds a TwoLayer with out_dim={hp.get("out_dim")}; the '
          'subspace pipeline (config field subspace) attacks one output; accepted: out_dim 1, '
          'or a config without the subspace field (configs/two_layer.py)')
  if arch == 'HomogeneousMLP':
    widths = list(hp.get('widths') or [])
    if not widths or len(set(widths)) != 1:
      raise ExperimentError(f'model_checkpoint: {path} holds a HomogeneousMLP with widths '
                            f'{widths}; accepted: equal hidden widths (config width, depth)')
    out.update(width=widths[0], depth=len(widths))
    if out.get('act_alpha') is None:
      out.pop('act_alpha', None)
  data_meta = meta.get('data') or {}
  shape = data_meta.get('input_shape')
  if shape:
    out['d'] = int(np.prod(shape))
    if len(shape) == 3 and cfg.model in ('resnet', 'vit'):
      out['image_shape'] = tuple(int(s) for s in shape)
  return out


def apply_model_checkpoint(cfg: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  """Reads model_checkpoint's metadata (cheap, before compute) and adopts its model fields.

  random_features: the checkpoint's p, d, activation replace the config's; flax: its
  architecture must be the config's model (else a one-line refusal) and its hparams
  replace the matching config fields (width, num_classes, activation, depth, ...),
  its recorded input shape d (and image_shape). Its n (when stored) replaces n (and
  so the n_candidates default).
  """
  path = cfg.get('model_checkpoint')
  if not path:
    return cfg
  try:
    meta = model_ckpt.read_metadata(path)
  except model_ckpt.ModelCheckpointError as e:
    raise ExperimentError(str(e)) from None
  cfg = ml_collections.ConfigDict(cfg.to_dict())
  if meta['kind'] == 'flax':
    fields = _flax_fields(cfg, meta, path)
  else:
    if cfg.model not in ('random_features',):
      raise ExperimentError(f'model: {cfg.model!r} but model_checkpoint {path} holds a '
                            "'random_features' model; accepted: model 'random_features' with "
                            'this checkpoint')
    fields = {name: meta['hparams'][name] for name in MODEL_FIELDS['random_features']}
  with cfg.ignore_type():
    changed = []
    for name, value in fields.items():
      if cfg.get(name) != value and not (isinstance(value, tuple) and
                                         tuple(cfg.get(name) or ()) == value):
        changed.append(f'{name}={value!r}')
      cfg[name] = value
    if meta.get('n') is not None:
      cfg.n = meta['n']
  if changed:
    logging.info('model_checkpoint %s sets %s', path, ', '.join(changed))
  return cfg


def data_record(cfg: ml_collections.ConfigDict) -> Dict[str, Any]:
  """The config's data fields (DATA_FIELDS it has) as JSON values."""
  return json.loads(json.dumps(io._jsonable(  # pylint: disable=protected-access
      {k: cfg.get(k) for k in DATA_FIELDS if k in cfg})))


def data_description(cfg: ml_collections.ConfigDict, x: Array, input_shape,
                     meta: Dict[str, Any]) -> Dict[str, Any]:
  """What a saved model records of its training set (never the rows themselves)."""
  x = np.asarray(x)
  return {'input_shape': [int(s) for s in (input_shape or x.shape[1:])],
          'dtype': str(x.dtype), 'n': int(x.shape[0]),
          'row_norm': float(np.median(np.linalg.norm(x.reshape(x.shape[0], -1), axis=1))),
          'meta': json.loads(json.dumps(io._jsonable(  # pylint: disable=protected-access
              data.describe(meta)))),
          'config': data_record(cfg)}


def model_source(cfg: ml_collections.ConfigDict, workdir: str, resuming: bool) -> Optional[str]:
  """Where the model comes from: WORKDIR/model when resuming, else model_checkpoint (or None:
  train one)."""
  own = os.path.join(workdir, 'model')
  if resuming and os.path.isdir(own):
    return own
  return cfg.get('model_checkpoint') or None


def load_model(source: str) -> model_ckpt.ModelCheckpoint:
  try:
    model = model_ckpt.load(source)
  except model_ckpt.ModelCheckpointError as e:
    raise ExperimentError(str(e)) from None
  logging.info('loaded the %s model from %s', model.architecture or model.kind, source)
  return model


def keep_model(workdir: str, model: model_ckpt.ModelCheckpoint, source: Optional[str]) -> None:
  """Saves `model` to WORKDIR/model unless it was read from there."""
  own = os.path.join(workdir, 'model')
  if source is None or os.path.abspath(model_ckpt.model_dir(source)) != os.path.abspath(own):
    model_ckpt.save(own, model)


def check_flax_params(model: model_ckpt.ModelCheckpoint, sample: Array) -> None:
  """One-line ExperimentError unless the checkpoint's parameters fit its module on `sample`."""
  try:
    model_ckpt.check_params(model, sample)
  except model_ckpt.ModelCheckpointError as e:
    raise ExperimentError(str(e)) from None


def model_training_data(cfg: ml_collections.ConfigDict, model: model_ckpt.ModelCheckpoint,
                        load_fn) -> Tuple[Optional[Array], Optional[Array], Dict[str, Any]]:
  """(x, y, meta) of a loaded model's training set, for scoring only.

  The checkpoint's own `truth` if it has one; else the data regenerated by
  `load_fn()` when the checkpoint records the config's data fields (a model this
  code trained, attacked with the same data fields); else (None, None, the recorded
  data meta): blind metrics only.
  """
  desc = model.data or {}
  if model.truth is not None and model.truth.get('x') is not None:
    x, y, meta = model.truth['x'], model.truth.get('y'), dict(desc.get('meta') or {})
    return jnp.asarray(x, set_dtype(cfg.dtype)), y, meta
  if desc.get('config') is not None and desc['config'] == data_record(cfg):
    logging.info('the model records this config\'s data fields: its training data is '
                 'regenerated for scoring')
    return load_fn()
  logging.info('the model holds no training data and records other data fields: blind '
               'metrics only')
  return None, None, dict(desc.get('meta') or {})


def _prepare_run_workdir(workdir: str, cfg: ml_collections.ConfigDict) -> bool:
  """Applies the workdir rules before compute; returns True when resuming.

  A workdir holding a run (summary.json, checkpoints or a saved model) is refused
  unless resume=True (continue from its latest checkpoint; the config must agree
  in every result-changing field) or overwrite=True (its outputs are replaced).
  """
  resume, overwrite = cfg.get('resume', False), cfg.get('overwrite', False)
  if resume and overwrite:
    raise ExperimentError('resume, overwrite: both True; accepted: at most one of them')
  held = [name for name in ('summary.json', 'checkpoints', 'model')
          if os.path.exists(os.path.join(workdir, name))]
  steps = checkpoint.saved_steps(workdir)
  if resume and steps:
    saved = checkpoint.read_config(workdir)
    diff = checkpoint.config_differences(saved, cfg.to_dict())
    if diff:
      raise ExperimentError(
          f'resume: the config differs from the checkpointed run in {", ".join(diff)}; '
          'restore those values, or choose another --workdir')
    logging.info('resuming %s from step %d', workdir, steps[-1])
    return True
  # resume=True without a finished checkpoint (killed before or during the first save):
  # a fresh start.
  if held and not overwrite and not (resume and 'summary.json' not in held):
    what = ', '.join(held)
    kind, hint = (('a finished', '') if 'summary.json' in held else
                  ('an unfinished', 'pass --config.resume=True to continue it, '))
    raise ExperimentError(
        f'workdir: {workdir} already holds {kind} run ({what}); {hint}choose another '
        '--workdir or pass --config.overwrite=True to replace it')
  if overwrite:
    for name in ('checkpoints', 'model'):
      shutil.rmtree(os.path.join(workdir, name), ignore_errors=True)
  os.makedirs(workdir, exist_ok=True)
  return False


def rf_loss_fn(cfg: ml_collections.ConfigDict):
  """`loss(x_hat, problem)` of the random-features pipeline for this config."""
  return functools.partial(rf_loss, activation=cfg.activation, jitter=cfg.jitter)


def rf_extra_metrics(cfg: ml_collections.ConfigDict, train_mse: float) -> Dict[str, Any]:
  """The random-features numbers every report carries next to the reconstruction metrics."""
  return {'train_mse': train_mse, 'p': cfg.p, 'p_over_dn': cfg.p / (cfg.d * cfg.n),
          'p_over_n': cfg.p / cfg.n}


RF_THREAT_MODEL = {'known': ['V (random-features weights or their key)', 'theta* (trained)',
                             'n_candidates', 'activation'],
                   'unknown': ['X (training inputs)', 'y (labels)']}


def _prepare_workdir(workdir: str, overwrite: bool, marker: str = 'summary.json') -> None:
  done = os.path.join(workdir, marker)
  if os.path.exists(done) and not overwrite:
    raise ExperimentError(
        f'workdir: {workdir} already holds a finished run ({marker}); choose another '
        '--workdir or pass --config.overwrite=True')
  os.makedirs(workdir, exist_ok=True)


def initial_params_needed(cfg: ml_collections.ConfigDict) -> Optional[str]:
  """Why this config needs the model's initial parameters ('field: reason'), or None."""
  from recon import subspace_experiment  # pylint: disable=import-outside-toplevel
  if subspace_experiment.uses_this_pipeline(cfg):
    return ('subspace: the subspace pipeline attacks dW2 = W2(T) - W2(0) (and estimates the '
            'subspace from dW1, features at W1(0))')
  if cfg.model in config_lib.NETWORK_MODELS:
    if cfg.get('attacker_knows_init', True):
      return 'attacker_knows_init: True attacks theta = W_L(T) - W_L(0)'
    if cfg.get('jacobian_at', 'trained') != 'trained':
      return f'jacobian_at: {cfg.jacobian_at!r} evaluates features at the initial weights'
  if cfg.model == 'homogeneous_mlp' and cfg.get('kkt_target') == 'delta':
    return "kkt_target: 'delta' attacks theta(T) - theta(0)"
  return None


def check_model_checkpoint(cfg: ml_collections.ConfigDict) -> None:
  """Pipeline-specific refusals of a model_checkpoint, one line each, before any compute."""
  path = cfg.get('model_checkpoint')
  if not path:
    return
  from recon import subspace_experiment  # pylint: disable=import-outside-toplevel
  if cfg.model == 'random_features' and subspace_experiment.uses_this_pipeline(cfg):
    raise ExperimentError(
        'model_checkpoint: the random-features subspace / free-alpha pipeline trains its own '
        "model; accepted: model_checkpoint with subspace 'none', alpha_mode 'closed_form'")
  if cfg.model == 'homogeneous_mlp' and cfg.get('kkt_target') == 'planted':
    raise ExperimentError("kkt_target: 'planted' is an oracle built from the training run's "
                          "duals; accepted with model_checkpoint: 'theta', 'delta'")
  parts = model_ckpt.read_metadata(path)['parts']
  why = initial_params_needed(cfg)
  if 'initial' not in parts and why is not None:
    field, reason = why.split(': ', 1)
    raise ExperimentError(
        f'{field}: {reason}, but model_checkpoint {path} has no initial parameters (part '
        f"'initial'); accepted: a checkpoint with initial parameters"
        + (', or attacker_knows_init=False with jacobian_at=\'trained\''
           if field == 'attacker_knows_init' else
           ", or jacobian_at='trained'" if field == 'jacobian_at' else
           ", or kkt_target='theta'" if field == 'kkt_target' else ''))
  if subspace_experiment.uses_this_pipeline(cfg) and cfg.get('subspace') == 'known':
    # A saved model records a description of its data, never the planted basis.
    raise ExperimentError(
        "subspace: 'known' needs the training data's subspace, which a model checkpoint does "
        "not record; accepted with model_checkpoint: 'estimated', 'none'")


def run(config: ml_collections.ConfigDict, workdir: str) -> Dict[str, Any]:
  """Runs one reconstruction (dispatch on `config.model`); returns the summary."""
  cfg = resolve(config)
  from recon import subspace_experiment  # pylint: disable=import-outside-toplevel
  subspace_experiment.check(cfg)
  check_model_checkpoint(cfg)
  check_restarts(cfg)
  if cfg.model in config_lib.NETWORK_MODELS and not subspace_experiment.uses_this_pipeline(cfg):
    from recon import network_experiment  # pylint: disable=import-outside-toplevel
    network_experiment.check_config(cfg)
  resuming = _prepare_run_workdir(workdir, cfg)
  dtype = set_dtype(cfg.dtype)
  precision.apply_matmul_precision(cfg.get('matmul_precision'))  # every program of the run
  if subspace_experiment.uses_this_pipeline(cfg):
    return subspace_experiment.run(cfg, workdir, dtype, resuming=resuming)
  if cfg.model == 'random_features':
    return run_random_features(cfg, workdir, dtype, resuming=resuming)
  if cfg.model == 'homogeneous_mlp':
    from recon import kkt_experiment  # pylint: disable=import-outside-toplevel
    return kkt_experiment.run(cfg, workdir, dtype, resuming=resuming)
  if cfg.model in config_lib.NETWORK_MODELS:
    return network_experiment.run(cfg, workdir, dtype, resuming=resuming)
  raise ExperimentError(f'model: unknown name {cfg.model!r}; accepted: '
                        f'{", ".join(config_lib.MODELS)}')


def check_restarts(cfg: ml_collections.ConfigDict) -> None:
  """Refuses `n_restarts > 1` where the restarts would not be independent runs (before any
  output is written): L-BFGS (its line search couples the blocks), re-seeding, sample
  splitting, feature sharding, or a pipeline other than random features."""
  k = cfg.get('n_restarts', 1)
  if k == 1:
    return
  conflicts = []
  if cfg.get('model') != 'random_features' or cfg.get('subspace', 'none') != 'none':
    conflicts.append(f"model {cfg.get('model')!r}, subspace {cfg.get('subspace', 'none')!r}")
  if cfg.get('optimizer') == 'lbfgs':
    conflicts.append("optimizer 'lbfgs'")
  if cfg.get('reseed_every', 0):
    conflicts.append(f"reseed_every {cfg.get('reseed_every')}")
  if cfg.get('split', 'none') != 'none':
    conflicts.append(f"split {cfg.get('split')!r}")
  if cfg.get('feature_shards', 1) > 1:
    conflicts.append(f"feature_shards {cfg.get('feature_shards')}")
  if conflicts:
    raise ExperimentError(
        f"n_restarts: {k} restarts cannot run with {', '.join(conflicts)}; accepted: n_restarts "
        "1, or the random-features model (subspace 'none') with optimizer 'sgd' or 'adam', "
        "reseed_every 0, split 'none' and feature_shards 1")


def with_restarts(cfg: ml_collections.ConfigDict, loss_fn, problem, key: Array, n_candidates: int,
                  dtype) -> Tuple[Any, Array, Any]:
  """(loss_fn, x0, decode) of the attack: one candidate set, or `n_restarts` stacked ones
  (`recon.restarts`: value min_k L(X_k), the answer the block of lowest blind loss)."""
  init = lambda k: init_candidates(k, n_candidates, cfg.d, dtype)  # noqa: E731
  n_restarts = cfg.get('n_restarts', 1)
  if n_restarts == 1:
    return loss_fn, init(key), None
  return (restarts.stacked_loss(loss_fn), restarts.init_restarts(key, n_restarts, init),
          restarts.BestRestart(loss_fn, problem))


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
    raise ExperimentError("model_checkpoint: a random_features model needs extras 'v_key' "
                          "or 'v'; accepted: see the README section Reliability")
  return {'v': v, 'mask': jnp.ones((p,), dtype),
          'theta': jnp.asarray(model.trained['theta'], dtype)}


@functools.partial(jax.jit, static_argnames=('activation',))
def _fit_rf(v: Array, x: Array, y: Array, activation: str) -> Tuple[Array, Array]:
  phi = features.rf_features(v, x, activation)
  theta = random_features.min_norm_solution(phi, y)
  return theta, random_features.train_mse(phi, theta, y)


def train_random_features(cfg: ml_collections.ConfigDict, keys: Dict[str, Array],
                          dtype) -> Tuple[model_ckpt.ModelCheckpoint, Dict[str, Any]]:
  """Loads the data and fits theta* = Phi^+ y; (the model with its training set, data meta)."""
  x_true, y, meta = data.load(cfg, keys['data'], dtype)
  rng = cfg.get('weight_rng', 'threefry')
  v = _random_weights(keys['model'], cfg.p, cfg.d, dtype, rng)
  theta, train_mse = _fit_rf(v, x_true, y, cfg.activation)
  train_mse = float(train_mse)
  logging.info('trained random features: n=%d d=%d p=%d (p/dn=%.3g) train_mse=%.3g',
               cfg.n, cfg.d, cfg.p, cfg.p / (cfg.d * cfg.n), train_mse)
  return model_ckpt.ModelCheckpoint(
      kind='random_features', hparams={'p': cfg.p, 'd': cfg.d, 'activation': cfg.activation,
                                       'weight_rng': rng},
      trained={'theta': theta}, extras={'v_key': keys['model']},
      truth={'x': x_true, 'y': y}, n=cfg.n,
      info={'train_mse': train_mse, 'dataset': cfg.dataset, 'seed': cfg.seed}), meta


def _rf_splitter(cfg: ml_collections.ConfigDict, lean: bool):
  """The sample-splitting refiner of the random-features pipeline (None when split='none')."""
  if cfg.get('split', 'none') == 'none':
    return None
  if lean or cfg.get('reseed_every', 0):
    raise ExperimentError(
        f"split: {cfg.split!r} needs dense features and no re-seeding (got feature mode "
        f"{'lean' if lean else 'dense'}, reseed_every {cfg.get('reseed_every', 0)}); accepted: "
        "split 'none', or feature_mode 'dense' with reseed_every 0")
  split_cfg = splitting.config_from(cfg)
  try:
    splitting.check_config(split_cfg, cfg.activation)
  except splitting.SplitError as e:
    raise ExperimentError(str(e)) from None
  feature_one = lambda xj, prob: features.rf_features(prob['v'], xj[None], cfg.activation,
                                                      prob['mask'])[0]
  return splitting.Splitter(split_cfg, splitting.projection_split_model(feature_one, cfg.jitter),
                            rf_loss_fn(cfg), optimize.sphere_constraint(float(np.sqrt(cfg.d))))


def run_random_features_lean(cfg: ml_collections.ConfigDict, workdir: str, dtype,
                             resuming: bool = False) -> Dict[str, Any]:
  """Memory-lean random features: V is regenerated chunk by chunk from its key, never stored."""
  t0 = time.time()
  if cfg.get('model_checkpoint'):
    raise ExperimentError('model_checkpoint: attacking a saved model uses dense features; '
                          "accepted: feature_mode 'dense' (or 'auto' under the memory budget)")
  _rf_splitter(cfg, lean=True)  # refuses splitting here
  keys = split_keys(cfg.seed)
  x_true, y, meta = data.load(cfg, keys['data'], dtype)
  shards = cfg.get('feature_shards', 1)
  try:
    mesh = projection_streamed.feature_mesh(shards) if shards > 1 else None
  except ValueError as e:
    raise ExperimentError(str(e)) from None
  chunk, n_chunks = lean_layout(cfg.p, cfg.get('feature_chunk', 4096), shards)
  rng = cfg.get('weight_rng', 'threefry')
  problem = jax.jit(lambda k, x, y: make_rf_problem_lean(
      k, x, y, p=cfg.p, activation=cfg.activation, chunk=chunk,
      n_chunks=n_chunks, rng=rng))(keys, x_true, y)
  residual = lean_residual(cfg, dtype)
  loss_fn = rf_lean_loss(activation=cfg.activation, chunk=chunk, jitter=cfg.jitter,
                         residual=residual, mesh=mesh, rng=rng)
  feature_fn = lambda x: features.rf_features_chunked(  # noqa: E731
      problem['key'], x, cfg.activation, cfg.p, chunk, rng=rng)[:, :cfg.p]
  gram_fn = jax.jit(lambda x: projection_streamed.streamed_gram(
      lambda aux, xx, c: features.rf_feature_chunk(aux, xx, c, chunk, cfg.activation, cfg.p,
                                                   rng),
      x, n_chunks, problem['key']))
  logging.info('memory-lean features: V (%.0f MB, %s) regenerated in %d chunks of %d rows on '
               '%d device(s); residual %s', cfg.p * cfg.d * jnp.dtype(dtype).itemsize / 2 ** 20,
               rng, n_chunks, chunk, shards, residual)
  train_mse = float(problem.pop('train_mse'))
  logging.info('trained random features: n=%d d=%d p=%d (p/dn=%.3g) train_mse=%.3g',
               cfg.n, cfg.d, cfg.p, cfg.p / (cfg.d * cfg.n), train_mse)
  loss_fn, x0, decode = with_restarts(cfg, loss_fn, problem, keys['init'], cfg.n_candidates,
                                      dtype)
  return reconstruct_and_report(
      cfg, workdir, x_true=x_true, y=y, meta=meta, problem=problem, loss_fn=loss_fn,
      x0=x0, constraint=optimize.sphere_constraint(float(np.sqrt(cfg.d))),
      feature_fn=feature_fn, gram_fn=gram_fn, t0=t0, keys=keys, resume=resuming,
      extra_metrics=dict(rf_extra_metrics(cfg, train_mse), memory_lean=True,
                         **precision.check_victim(train_mse, y, cfg.n, cfg.p, cfg.dtype)),
      threat_model=RF_THREAT_MODEL, decode=decode)


def run_random_features(cfg: ml_collections.ConfigDict, workdir: str, dtype,
                        resuming: bool = False) -> Dict[str, Any]:
  """Random-features model: fit theta* = Phi^+ y, reconstruct X from (V, theta*).

  The model comes from `model_checkpoint` if set, from WORKDIR/model when
  resuming, else it is trained; it is saved to WORKDIR/model before the attack,
  and the attack always reads it back from that saved form (V from its key).
  Above the feature memory budget (or with feature_mode='lean' / feature_shards > 1)
  the memory-lean path runs instead (`run_random_features_lean`).
  """
  if use_lean_features(cfg, dtype):
    return run_random_features_lean(cfg, workdir, dtype, resuming)
  t0 = time.time()
  keys = split_keys(cfg.seed)
  own = os.path.join(workdir, 'model')
  if resuming and os.path.isdir(own):
    source = own
  else:
    source = cfg.get('model_checkpoint') or None
  if source:
    model = model_ckpt.load(source)
    logging.info('loaded the random-features model from %s', source)
    # Our own saved model: the data description (image shape, pixel scale) comes from the
    # config's data set; a foreign model brings none.
    meta = data.load(cfg, keys['data'], dtype)[2] if source == own else {}
  else:
    model, meta = train_random_features(cfg, keys, dtype)
  if source is None or os.path.abspath(model_ckpt.model_dir(source)) != os.path.abspath(own):
    model_ckpt.save(own, model)
  problem = rf_problem(model, dtype)
  truth = model.truth or {}
  x_true = None if truth.get('x') is None else jnp.asarray(truth['x'], dtype)
  y = truth.get('y')
  feature_fn = lambda x: features.rf_features(problem['v'], x, cfg.activation)
  gram_fn = jax.jit(lambda x: (lambda f: f @ f.T)(feature_fn(x)))
  loss_fn, x0, decode = with_restarts(cfg, rf_loss_fn(cfg), problem, keys['init'],
                                      cfg.n_candidates, dtype)
  extra = {'p': cfg.p, 'p_over_dn': cfg.p / (cfg.d * cfg.n), 'p_over_n': cfg.p / cfg.n,
           'memory_lean': False}
  if 'train_mse' in model.info:
    extra['train_mse'] = model.info['train_mse']
    if y is not None:  # issue #17: warn and record when a p >= n victim does not interpolate
      extra.update(precision.check_victim(extra['train_mse'], y, cfg.n, cfg.p, cfg.dtype))
  return reconstruct_and_report(
      cfg, workdir, x_true=x_true, y=y, meta=meta, problem=problem, loss_fn=loss_fn,
      x0=x0, constraint=optimize.sphere_constraint(float(np.sqrt(cfg.d))),
      feature_fn=feature_fn, gram_fn=gram_fn, t0=t0, keys=keys, resume=resuming,
      refiner=_rf_splitter(cfg, lean=False), extra_metrics=extra,
      threat_model=RF_THREAT_MODEL, decode=decode)


def chunk_fn(cfg: ml_collections.ConfigDict, loss_fn, optimizer, constraint):
  """`(state, problem, stop_step) -> state`: `optimize.run_chunk` bound to the config.

  Pure and unjitted, so a caller can jit it (one run) or jit(vmap(...)) it (a sweep).
  """
  return lambda s, prob, stop: optimize.run_chunk(
      s, prob, stop, loss_fn=loss_fn, optimizer=optimizer, constraint=constraint,
      tol=cfg.tol, max_steps=cfg.max_steps)


def make_optimizer(cfg: ml_collections.ConfigDict, lr=None, momentum=None):
  """The config's Optax optimiser (name, lr, momentum, lr schedule; L-BFGS memory);
  `lr`/`momentum` override the config's (a sweep passes traced per-point values)."""
  return optimize.make_optimizer(
      cfg.optimizer, cfg.lr if lr is None else lr, cfg.momentum if momentum is None else momentum,
      schedule=cfg.get('lr_schedule', 'constant'),
      decay_steps=cfg.get('lr_decay_steps') or cfg.max_steps,
      final_ratio=cfg.get('lr_final_ratio', 0.05), memory_size=cfg.get('lbfgs_memory', 10),
      linesearch_steps=cfg.get('lbfgs_linesearch_steps', 20))


def score(x_true: np.ndarray, x_hat: np.ndarray, *, threshold: float, final_loss: float,
          steps: int, status: int, phi_true=None, phi_hat=None) -> Dict[str, Any]:
  """Metrics of one finished run (host side): matching errors, feature residual, loss, status."""
  x_true = np.asarray(x_true)
  x_hat = np.asarray(x_hat)
  result = metrics.reconstruction_metrics(x_true, x_hat, threshold)
  if phi_true is not None:
    result['feature_residual'] = metrics.feature_residual(np.asarray(phi_true),
                                                          np.asarray(phi_hat))
  result.update({
      'projection_loss': final_loss,
      'final_loss': final_loss,
      'steps': int(steps),
      'status': optimize.STATUS_NAMES[int(status)],
      'n': int(x_true.shape[0]), 'd': int(np.prod(x_true.shape[1:])),
      'n_candidates': int(x_hat.shape[0]),
  })
  return result


COUNTING_NOTE = (
    'Hungarian matching on the sign-invariant relative distance; recovered = matched distance '
    '< recovered_threshold; if n_candidates < n the uncovered samples enter recon_error with '
    'their nearest-candidate distance; if n_candidates > n the extra candidates are '
    'n_unmatched_candidates, of which n_duplicates lie within the threshold of a true sample.')
BLIND_NOTE = ('no ground truth: the model checkpoint holds no training set, so only the blind '
              'metrics (loss, steps, status) are reported')


def write_plots(workdir: str, x_true: np.ndarray, aligned: np.ndarray, meta: Dict[str, Any],
                history: Dict[str, Any], result: Dict[str, Any],
                ssim_filter: Optional[int] = None) -> None:
  """DIR/loss_curve.png always; DIR/grid.png (truth over matched reconstruction) for images.

  Reconstructions are mapped to pixels with their matched sample's row norm
  (`data.to_pixels`), so both rows of the grid are at the data's true scale, drawn on
  meta['pixel_range'] (default: the true images' min..max).
  """
  plots.loss_curve(os.path.join(workdir, 'loss_curve.png'), history['step'], history['loss'],
                   title=f'{meta.get("name", "")}: loss vs step ({result["status"]})')
  shape = meta.get('image_shape')
  if shape is None:
    return
  ssim = metrics.ssim_pairs(x_true, aligned, shape, result.get('ssim_filter_size', ssim_filter))
  true_px = data.to_pixels(x_true, meta)
  value_range = meta.get('pixel_range') or (float(true_px.min()), float(true_px.max()))
  if not value_range[1] > value_range[0]:
    value_range = (value_range[0], value_range[0] + 1.0)
  plots.image_grid(os.path.join(workdir, 'grid.png'), true_px, data.to_pixels(aligned, meta),
                   shape, ssim, value_range=value_range)


def reconstruct_and_report(cfg: ml_collections.ConfigDict, workdir: str, *,
                           x_true: Optional[Array], y: Optional[Array],
                           meta: Optional[Dict[str, Any]] = None, problem: Any, loss_fn,
                           x0: Array, constraint, feature_fn=None, gram_fn=None,
                           t0: Optional[float] = None,
                           extra_metrics: Optional[Dict[str, Any]] = None,
                           threat_model: Optional[Dict[str, Any]] = None,
                           decode=None, refiner=None, keys: Optional[Dict[str, Array]] = None,
                           resume: Optional[bool] = None) -> Dict[str, Any]:
  """Shared tail of every pipeline: optimise `loss_fn(x, problem)` from x0, score, write.

  `feature_fn(x) -> (rows, p)` (optional) gives `feature_residual`; `gram_fn(x) -> (m, m)`
  (optional) gives `gram_condition` of the final candidates (warns when the solve loses
  precision). `decode(params)` (optional) maps the optimised variables (e.g. subspace
  coordinates, or a pytree with free coefficients) to input-space candidates for the
  metrics; default identity. `cfg.reseed_every > 0` re-seeds collapsed candidates
  (`recon.refine`; the optimised variables must be one (m, k) array). Writes
  summary.json (config, metrics, threat model, loss history, data description),
  reconstruction.npz (true rows, matched candidates, all candidates), loss_curve.png
  and, for image data (meta['image_shape'] set), grid.png plus SSIM/PSNR metrics.
  `refiner(x, problem, step, history) -> None | (x, problem)` (e.g.
  `recon.splitting.Splitter`) may replace the variables and the problem between
  chunks; the optimiser state is then reset (its `summary()` goes into the metrics).

  Checkpoints the state (and `keys`) to WORKDIR/checkpoints/ every
  checkpoint_every_steps / checkpoint_every_seconds and when the run stops;
  `resume` (default: config.resume and a checkpoint exists) restarts from the
  latest one, history included. With `x_true=None` (no ground truth, e.g. a
  model checkpoint without its training set) only the blind metrics are
  reported (loss, steps, status), only the loss curve is drawn, and the summary
  says so.
  """
  t0 = time.time() if t0 is None else t0
  meta = meta or {}
  image_shape = meta.get('image_shape')
  ssim_filter = cfg.get('ssim_filter_size', None)
  if image_shape is not None and ssim_filter is not None and ssim_filter > min(image_shape[:2]):
    raise ExperimentError(f'config.ssim_filter_size: invalid value {ssim_filter} for images of '
                          f'shape {tuple(image_shape)}; accepted: None (auto) or an int in '
                          f'1..{min(image_shape[:2])}')
  optimizer = make_optimizer(cfg)
  state = optimize.init_state(x0, optimizer, loss_fn, problem, constraint)
  current = {'problem': problem}
  chunk_jit = jax.jit(chunk_fn(cfg, loss_fn, optimizer, constraint))
  chunk = lambda s, stop: chunk_jit(s, current['problem'], stop)  # noqa: E731
  ckpt_defaults = checkpoint.DEFAULTS
  checkpointer = checkpoint.RunCheckpointer(
      workdir, cfg.to_dict(), keys=keys,
      every_seconds=cfg.get('checkpoint_every_seconds', ckpt_defaults['checkpoint_every_seconds']),
      every_steps=cfg.get('checkpoint_every_steps', ckpt_defaults['checkpoint_every_steps']),
      keep=cfg.get('checkpoint_keep', ckpt_defaults['checkpoint_keep']))
  if resume is None:
    resume = bool(cfg.get('resume', False)) and bool(checkpoint.saved_steps(workdir))
  if resume and refiner is not None:
    raise ExperimentError('resume: a run with sample splitting changes its problem between '
                          'chunks and cannot be resumed; accepted: split \'none\'')
  reseeder = None
  if cfg.get('reseed_every', 0):
    if not (len(jax.tree.leaves(x0)) == 1 and np.ndim(x0) == 2):
      raise ExperimentError('reseed_every: re-seeding needs the optimised variables to be one '
                            '(n_candidates, k) array; accepted here: 0')
    reseeder = refine.Reseeder(
        jax.random.fold_in(jax.random.PRNGKey(cfg.get('seed', 0)), 0x5EED), loss_fn, problem,
        constraint, optimizer, every=cfg.reseed_every,
        threshold=cfg.get('reseed_threshold', 0.95),
        n_proposals=cfg.get('reseed_proposals', 64))
  resumed_from = None
  if resume:
    state, history, resumed_from = checkpointer.restore(state)
    grew = int(state.status) == optimize.MAX_STEPS and int(state.step) < cfg.max_steps
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
    logging.info('resumed from the checkpoint at step %d (loss %.3e)', resumed_from,
                 float(state.loss))
  else:
    history = [(0, float(state.loss))]

  decode = decode if decode is not None else (lambda params: params)
  has_truth = x_true is not None
  x_true_np = np.asarray(x_true) if has_truth else None

  def log_progress(s):
    err = (f'  recon_error '
           f'{metrics.per_sample_errors(x_true_np, np.asarray(decode(s.x))).mean():.4f}'
           if has_truth else '')
    logging.info('step %7d  loss %.3e%s  (%.0fs)', int(s.step), float(s.loss), err,
                 time.time() - t0)

  progress = optimize.ProgressLogger(log_progress, cfg.log_every_seconds)

  def on_chunk(s):
    history.append((int(s.step), float(s.loss)))
    stopped = int(s.status) != optimize.RUNNING or int(s.step) >= cfg.max_steps
    checkpointer(s, history, stopped,
                 aux={'reseed': reseeder.state_dict()} if reseeder is not None else None)
    progress(s)
    if refiner is None or int(s.status) != optimize.RUNNING or int(s.step) >= cfg.max_steps:
      return None
    out = refiner(s.x, current['problem'], int(s.step), history)
    if out is None:
      return None
    new_x, current['problem'] = out
    fresh = optimize.init_state(new_x, optimizer, loss_fn, current['problem'], lambda z: z)
    history.append((int(s.step), float(fresh.loss)))
    return fresh._replace(step=s.step)

  if reseeder is not None:
    compiled_chunk = chunk
    chunk = lambda s, stop: reseeder(compiled_chunk(s, stop))  # noqa: E731

  state = optimize.drive(state, chunk, max_steps=cfg.max_steps, chunk_steps=cfg.chunk_steps,
                         on_chunk=on_chunk)
  checkpointer.close()
  progress(state, force=True)
  status = optimize.STATUS_NAMES[int(state.status)]

  problem = current['problem']
  x_hat = np.asarray(decode(state.x))
  final_loss = float(loss_fn(state.x, problem))
  if has_truth:
    result = score(x_true_np, x_hat, threshold=cfg.recovered_threshold, final_loss=final_loss,
                   steps=int(state.step), status=int(state.status),
                   phi_true=None if feature_fn is None else feature_fn(x_true),
                   phi_hat=None if feature_fn is None else feature_fn(
                       jnp.asarray(x_hat, x_true.dtype)))
    result['ground_truth'] = True
    aligned = metrics.aligned_candidates(x_true_np, x_hat)
    if image_shape is not None:
      result.update(metrics.image_metrics(
          x_true_np, x_hat, image_shape,
          threshold=cfg.get('ssim_threshold', metrics.SSIM_THRESHOLD), filter_size=ssim_filter))
  else:
    result = {'projection_loss': final_loss, 'final_loss': final_loss,
              'steps': int(state.step), 'status': status, 'ground_truth': False,
              'n_candidates': int(x_hat.shape[0])}
  if gram_fn is not None:
    result['gram_condition'] = projection.check_condition(
        np.asarray(gram_fn(jnp.asarray(x_hat, x0.dtype))),
        cfg.get('jitter', projection.DEFAULT_JITTER))
  if reseeder is not None:
    result['reseeded'] = reseeder.stats.reseeded
    result['reseed_rejected'] = reseeder.stats.rejected
  result.update(extra_metrics or {})
  if refiner is not None and hasattr(refiner, 'summary'):
    result['splitting'] = refiner.summary()
  if hasattr(decode, 'summary'):
    result['restarts'] = decode.summary()
  result['wall_seconds'] = time.time() - t0
  result['matmul_precision'] = precision.current_matmul_precision()  # as compiled (issue #17)
  if status == 'nonfinite':
    logging.error('the loss or its gradient became non-finite at step %d; the outputs hold '
                  'the last finite candidates', int(state.step))
  summary = {
      'config': cfg.to_dict(),
      'metrics': result,
      'threat_model': threat_model or {},
      'counting': COUNTING_NOTE if has_truth else BLIND_NOTE,
      'history': {'step': [h[0] for h in history], 'loss': [h[1] for h in history]},
      'resumed_from_step': resumed_from,
      'device': str(jax.devices()[0].platform),
      'data': data.describe(meta),
  }
  arrays = {'x_candidates': x_hat}
  if has_truth:
    arrays.update(x_true=x_true_np, x_matched=aligned)
  if y is not None:
    arrays['y'] = np.asarray(y)
  io.write_npz(os.path.join(workdir, 'reconstruction.npz'), **arrays)
  if has_truth:
    write_plots(workdir, x_true_np, aligned, meta, summary['history'], result, ssim_filter)
  else:
    plots.loss_curve(os.path.join(workdir, 'loss_curve.png'), summary['history']['step'],
                     summary['history']['loss'], title=f'loss vs step ({status}, no ground truth)')
  io.write_json(os.path.join(workdir, 'summary.json'), summary)  # last: marks a finished run
  if has_truth:
    logging.info('recon_error %.4f  frac_recovered %.2f  dist_abs %.4f  loss %.3e  '
                 '(%s after %d steps, %.1fs) -> %s', result['recon_error'],
                 result['frac_recovered'], result['dist_abs'], final_loss, status,
                 result['steps'], result['wall_seconds'], workdir)
  else:
    logging.info('no ground truth: blind metrics only; loss %.3e (%s after %d steps, %.1fs) '
                 '-> %s', final_loss, status, result['steps'], result['wall_seconds'], workdir)
  return summary
