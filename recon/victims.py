"""The victim model: where it comes from, what a saved one fixes, what it records.

`resolve` gives a run's config with a saved model's fields adopted
(`apply_model_checkpoint`: `MODEL_FIELDS` for random features, `FLAX_MODELS` for
Flax architectures); `model_source` / `load_model` / `keep_model` read and keep
WORKDIR/model; `data_description` and `model_training_data` are what a saved model
records of its training set (`DATA_FIELDS`) and how a run gets that set back for
scoring; `check_model_checkpoint` refuses a saved model a pipeline cannot attack.
"""
from __future__ import annotations

import json
import os
from typing import Any, Dict, Optional, Tuple

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from absl import logging

from recon import config as config_lib
from recon import data, io, routes, runs
from recon.errors import ExperimentError
from recon.models import checkpoint as model_ckpt

Array = jax.Array


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
  if arch == 'TwoLayer' and routes.uses_subspace_pipeline(cfg):
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
    return jnp.asarray(x, runs.set_dtype(cfg.dtype)), y, meta
  if desc.get('config') is not None and desc['config'] == data_record(cfg):
    logging.info('the model records this config\'s data fields: its training data is '
                 'regenerated for scoring')
    return load_fn()
  logging.info('the model holds no training data and records other data fields: blind '
               'metrics only')
  return None, None, dict(desc.get('meta') or {})


def initial_params_needed(cfg: ml_collections.ConfigDict) -> Optional[str]:
  """Why this config needs the model's initial parameters ('field: reason'), or None."""
  if routes.uses_subspace_pipeline(cfg):
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
  if cfg.model == 'random_features' and routes.uses_subspace_pipeline(cfg):
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
  if routes.uses_subspace_pipeline(cfg) and cfg.get('subspace') == 'known':
    # A saved model records a description of its data, never the planted basis.
    raise ExperimentError(
        "subspace: 'known' needs the training data's subspace, which a model checkpoint does "
        "not record; accepted with model_checkpoint: 'estimated', 'none'")
