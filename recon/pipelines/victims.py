"""The victim model: where it comes from, what a saved one fixes, what it records.

`resolve` gives a run's config with a saved model's fields adopted
(`apply_model_checkpoint`: the fields each registered victim's saved model fixes,
recon/registry.py); `model_source` / `load_model` / `keep_model` read and keep
WORKDIR/model; `data_description` and `model_training_data` are what a saved model
records of its training set (`DATA_FIELDS`) and how a run gets that set back for
scoring; `check_model_checkpoint` refuses a saved model a pipeline cannot attack.
"""
from __future__ import annotations

import functools
import json
import operator
import os
from typing import Any, Dict, Optional, Tuple

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from absl import logging

from recon.config import routes
from recon.config import validate as config_lib
from recon import data, registry
from recon.runtime import io, runs
from recon.errors import ExperimentError
from recon.models import foreign
from recon.models import saved as model_ckpt

Array = jax.Array


def resolve(config: Any, validated: bool = False
            ) -> ml_collections.ConfigDict:
  """Validated copy with the one default that depends on other fields filled in:
  attack.n_candidates None is n (2n for MLPs) when the attacker knows n. `validated`: the
  caller has run `config.validate` on `config` already (`recon.execution`), so it is not run
  twice.

  With `victim.checkpoint` set, the checkpoint's model fields replace the config's
  (see `apply_model_checkpoint`).
  """
  if not validated:
    config_lib.validate(config)
  cfg = apply_model_checkpoint(ml_collections.ConfigDict(config.to_dict()))
  # data.name 'file': the auditor's file checked against n, d (the checkpoint's, when set).
  data.resolve_file(cfg.data, cfg.victim, cfg.pipeline)
  if cfg.attack.n_candidates is None and cfg.attack.knows_n:
    with cfg.ignore_type():
      # KKT attacks use 2n candidates (Haim et al.); the projection loss n.
      per_sample = registry.lookup('victim', cfg.victim.name).candidates_per_sample
      cfg.attack.n_candidates = per_sample * cfg.data.n
  return cfg


# Config fields that determine a run's training data (data.load / the KKT labels): a
# saved model records them (model.json's data.config, under these names: the file format
# predates the config's sections), and a config that agrees regenerates that data for scoring.
DATA_FIELDS = {'dataset': 'data.name', 'n': 'data.n', 'd': 'data.d',
               'label_noise': 'data.label_noise', 'planted_dim': 'data.planted_dim',
               'classes': 'data.classes', 'image_size': 'data.image_size',
               'grayscale': 'data.grayscale', 'preprocess': 'data.preprocess', 'seed': 'seed',
               'dtype': 'run.dtype', 'n_classes': 'data.num_classes',
               'objective': 'attack.objective'}


def _flax_fields(victim: Any, attack: Any,
                 meta: Dict[str, Any], path: str) -> Dict[str, Any]:
  """{config field: value} a Flax checkpoint fixes; one-line refusal on a wrong model."""
  arch = meta['architecture']
  models = registry.victims_with_architecture(arch)
  if victim.name not in models:
    raise ExperimentError(
        f'victim.name: {victim.name!r} but victim.checkpoint {path} holds a {arch} '
        f'(flax:{arch}); accepted: model {" or ".join(repr(m) for m in models)} with this '
        'checkpoint')
  entry = registry.lookup('victim', victim.name)
  hp = meta['hparams']
  out = {field: hp[name] for name, field in entry.checkpoint_fields.items() if name in hp}
  if arch == 'TwoLayer' and routes.uses_subspace_pipeline(attack):
    out.pop('data.num_classes', None)
    if hp.get('out_dim', 1) != 1:
      raise ExperimentError(
          f'victim.checkpoint: {path} holds a TwoLayer with out_dim={hp.get("out_dim")}; the '
          "subspace pipeline (attack.objective 'unified') attacks one output; accepted: "
          "out_dim 1, or attack.objective 'projection' (configs/two_layer.py)")
  if entry.from_checkpoint is not None:
    try:
      out.update(entry.from_checkpoint(hp))
    except registry.RegistryError as e:
      raise ExperimentError(f'{e} ({path})') from None
  if 'victim.act_alpha' in out and out['victim.act_alpha'] is None:
    out.pop('victim.act_alpha')
  data_meta = meta.get('data') or {}
  shape = data_meta.get('input_shape')
  if shape:
    out['data.d'] = int(np.prod(shape))
    if len(shape) == 3 and entry.image_input:
      out['data.image_shape'] = tuple(int(s) for s in shape)
  return out


# The victims that read models saved outside recon, and the formats each reads (every other
# victim reads 'recon' only); the first two are networks whose initial params may be given too.
FOREIGN = {'flax_module': foreign.FLAX_FORMATS, 'torch_mlp': ('safetensors',),
           'random_features': ('recon', 'npz')}
WITH_INIT = ('flax_module', 'torch_mlp')


def check_format(v: Any) -> None:
  """The victim section's format agrees with its name, and a model saved outside recon is
  given."""
  formats = FOREIGN.get(v.name, ('recon',))
  if v.format not in formats:
    raise ExperimentError(f'victim.format: {v.format!r} with victim.name {v.name!r}; accepted: '
                          f'{", ".join(repr(f) for f in formats)}')
  if v.format != 'recon' and not v.checkpoint:
    raise ExperimentError(f'victim.checkpoint: required for victim.name {v.name!r} with '
                          f'victim.format {v.format!r} (recon attacks your saved model; to train '
                          'a module here, register it: docs/extending.md); accepted: a path')
  if v.name == 'flax_module' and not v.module:
    raise ExperimentError("victim.module: required for victim.name 'flax_module'; accepted: "
                          "'package.module:ClassName'")
  if v.init_checkpoint and not v.checkpoint:
    raise ExperimentError('victim.init_checkpoint: set without victim.checkpoint; accepted: '
                          'None, or both')
  if v.init_checkpoint and v.name not in WITH_INIT:
    raise ExperimentError(f'victim.init_checkpoint: a recon model holds its own initial '
                          f'parameters; accepted with victim.name {v.name!r}: None')


def apply_model_checkpoint(cfg: ml_collections.ConfigDict) -> ml_collections.ConfigDict:
  """Reads victim.checkpoint's metadata (cheap, before compute) and adopts its model fields.

  random_features: the checkpoint's p, d, activation replace the config's; flax: its
  architecture must be the config's model (else a one-line refusal) and its hparams
  replace the matching config fields (width, data.num_classes, activation, depth, ...),
  its recorded input shape d (and data.image_shape). Its n (when stored) replaces n (and
  so the attack.n_candidates default).
  """
  path = cfg.victim.checkpoint
  check_format(cfg.victim)
  if not path:
    return cfg
  if cfg.victim.format == 'safetensors':  # a PyTorch MLP fixes d
    _, _, d = foreign.torch_mlp(foreign.read_state_dict(path), cfg.victim.activation)
    if d != cfg.data.d:
      logging.info('victim.checkpoint %s sets data.d=%d', path, d)
    cfg = ml_collections.ConfigDict(cfg.to_dict())
    cfg.data.d = d
    return cfg
  if cfg.victim.format == 'npz':  # a random-features model's arrays fix p and d
    p, d = foreign.random_features_shape(path)  # V's header: nothing inflated yet
    cfg = ml_collections.ConfigDict(cfg.to_dict())
    changed = [f'{field}={value}' for field, value in (('victim.p', p), ('data.d', d))
               if config_lib.get_path(cfg, field) != value]
    cfg.victim.p, cfg.data.d = p, d
    if changed:
      logging.info('victim.checkpoint %s sets %s', path, ', '.join(changed))
    return cfg
  if cfg.victim.format != 'recon':
    return cfg  # a Flax params tree records nothing else: the config describes the model
  try:
    meta = model_ckpt.read_metadata(path)
  except model_ckpt.ModelCheckpointError as e:
    raise ExperimentError(str(e)) from None
  cfg = ml_collections.ConfigDict(cfg.to_dict())
  if meta['kind'] == 'flax':
    fields = _flax_fields(cfg.victim, cfg.attack, meta, path)
  else:
    if cfg.victim.name != meta['kind']:
      raise ExperimentError(f'victim.name: {cfg.victim.name!r} but victim.checkpoint {path} '
                            f"holds a {meta['kind']!r} model; accepted: model {meta['kind']!r} "
                            'with this checkpoint')
    fields = {field: meta['hparams'][name] for name, field in
              registry.lookup('victim', meta['kind']).checkpoint_fields.items()}
  with cfg.ignore_type():
    changed = []
    for field, value in fields.items():
      old = config_lib.get_path(cfg, field)
      if old != value and not (isinstance(value, tuple) and tuple(old or ()) == value):
        changed.append(f'{field}={value!r}')
      config_lib.set_path(cfg, field, value)
    if meta.get('n') is not None:
      cfg.data.n = meta['n']
  if changed:
    logging.info('victim.checkpoint %s sets %s', path, ', '.join(changed))
  return cfg


def data_record(values: Dict[str, Any]) -> Dict[str, Any]:
  """The data fields (DATA_FIELDS) of a config's record (`RunSpec.to_dict()`) as JSON values,
  by their recorded names."""
  return json.loads(json.dumps(io._jsonable(  # pylint: disable=protected-access
      {name: functools.reduce(operator.getitem, path.split('.'), values)
       for name, path in DATA_FIELDS.items()})))


def same_data(recorded: Dict[str, Any], current: Dict[str, Any]) -> bool:
  """True when a saved model's recorded data fields all agree with this run's `data_record`
  (a model saved before a field was recorded lacks it: that field had today's default)."""
  return all(current.get(name) == value for name, value in recorded.items())


def data_description(record: Dict[str, Any], x: Array, input_shape,
                     meta: Dict[str, Any]) -> Dict[str, Any]:
  """What a saved model records of its training set (never the rows themselves); `record`:
  the run's `data_record`."""
  x = np.asarray(x)
  return {'input_shape': [int(s) for s in (input_shape or x.shape[1:])],
          'dtype': str(x.dtype), 'n': int(x.shape[0]),
          'row_norm': float(np.median(np.linalg.norm(x.reshape(x.shape[0], -1), axis=1))),
          'meta': json.loads(json.dumps(io._jsonable(  # pylint: disable=protected-access
              data.describe(meta)))),
          'config': record}


def model_source(victim: Any, workdir: str,
                 resuming: bool) -> Optional[str]:
  """Where the model comes from: WORKDIR/model when resuming, else the victim section's
  checkpoint (or None: train one)."""
  own = os.path.join(workdir, 'model')
  if resuming and os.path.isdir(own):
    return own
  return victim.checkpoint or None


def load_model(source: str) -> model_ckpt.ModelCheckpoint:
  try:
    model = model_ckpt.load(source)
  except model_ckpt.ModelCheckpointError as e:
    raise ExperimentError(str(e)) from None
  logging.info('loaded the %s model from %s', model.architecture or model.kind, source)
  return model


def load_victim(victim: Any, data_cfg: Any,
                source: str) -> model_ckpt.ModelCheckpoint:
  """The model at `source`: a recon.model/1 folder (victim.format 'recon', or the workdir's own
  copy when resuming), or a model saved outside recon (recon/models/foreign.py)."""
  if victim.format == 'recon' or source != victim.checkpoint:
    return load_model(source)
  v = victim
  if v.format == 'npz':
    weights, theta = foreign.read_random_features(source)
    logging.info('loaded a random-features model (p=%d, d=%d, activation %s) from %s',
                 weights.shape[0], weights.shape[1], v.activation, source)
    return model_ckpt.ModelCheckpoint(
        kind='random_features',
        hparams={'p': int(weights.shape[0]), 'd': int(weights.shape[1]),
                 'activation': v.activation},
        trained={'theta': theta}, extras={'v': weights},
        info={'source': source, 'format': v.format})
  if v.format == 'safetensors':
    state = foreign.read_state_dict(source)
    module, params, d = foreign.torch_mlp(state, v.activation)
    initial = None
    if v.init_checkpoint:
      _, initial, _ = foreign.torch_mlp(foreign.read_state_dict(
          v.init_checkpoint, 'victim.init_checkpoint'), v.activation, 'victim.init_checkpoint')
    others: Dict[str, Any] = {}
    hparams = {'widths': list(module.widths), 'activation': v.activation, 'd': d}
  else:
    module = foreign.build_flax_module(v)
    params, others = foreign.read_variables(source, v.format)
    initial = (foreign.read_params(v.init_checkpoint, v.format, 'victim.init_checkpoint')
               if v.init_checkpoint else None)
    hparams = dict(v.module_kwargs or {})
  shape = tuple(data_cfg.image_shape) if data_cfg.image_shape else (data_cfg.d,)
  sample = jnp.zeros((1,) + shape, jnp.float32)
  foreign.check_params_fit(module, params, sample, 'victim.checkpoint')
  if initial is not None:
    foreign.check_params_fit(module, initial, sample, 'victim.init_checkpoint')
  logging.info('loaded %s from %s (victim.format %r)', v.module or 'a PyTorch MLP', source,
               v.format)
  return model_ckpt.ModelCheckpoint(
      kind='flax', hparams=hparams, trained=params, initial=initial,
      extras={'collections': others} if others else None,
      architecture=v.module or 'TorchMLP', flax_module=module,
      info={'source': source, 'format': v.format})


def keep_model(workdir: str, model: model_ckpt.ModelCheckpoint, source: Optional[str]) -> None:
  """Saves `victim.name` to WORKDIR/model unless it was read from there."""
  own = os.path.join(workdir, 'model')
  if model.flax_module is not None:
    return  # a model saved outside recon: a resume reads the auditor's file again
  if source is None or os.path.abspath(model_ckpt.model_dir(source)) != os.path.abspath(own):
    model_ckpt.save(own, model)


def check_flax_params(model: model_ckpt.ModelCheckpoint, sample: Array) -> None:
  """One-line ExperimentError unless the checkpoint's parameters fit its module on `sample`."""
  try:
    model_ckpt.check_params(model, sample)
  except model_ckpt.ModelCheckpointError as e:
    raise ExperimentError(str(e)) from None


# What a loaded model's run keeps of the data section's meta when it has no ground truth.
SHAPE_META = ('name', 'image_shape', 'preprocess')


def no_truth_reason(name: str) -> str:
  """Why a model saved outside recon has no ground truth with data.name `name`."""
  return (f"no ground truth: data.name {name!r} is data recon generates or selects itself, not "
          f"the loaded model's training set; a loaded model is scored only against the training "
          f"data the auditor gives (data.name 'file' with data.path), so no record is counted as "
          f"recovered or not (blind metrics: loss, certificate, candidates)")


def model_training_data(data_cfg: Any, dtype: str,
                        record: Dict[str, Any], model: model_ckpt.ModelCheckpoint,
                        load_fn) -> Tuple[Optional[Array], Optional[Array], Dict[str, Any]]:
  """(x, y, meta) of a loaded model's training set, for scoring only (`data_cfg`: the data
  section, `dtype`: run.dtype, `record`: the run's `data_record`).

  The auditor's file when data.name is 'file' (recon/data/auditor.py); else the checkpoint's
  own `truth` if it has one; else the data regenerated by
  `load_fn()` when the checkpoint records the config's data fields (a model this
  code trained, attacked with the same data fields); else (None, None, the recorded
  data meta): blind metrics only. A model saved outside recon is scored only against the
  auditor's file: data recon generates or selects itself (synthetic_sphere, a bundled set's
  subset) is not its training set, so with any other data.name there is no ground truth
  (meta['no_truth'] says why; summary.json's `counting`).
  """
  desc = model.data or {}
  if data_cfg.name == data.auditor.NAME:  # the auditor's own training set (data.path)
    return load_fn()
  if model.flax_module is not None:  # a model saved outside recon: only the auditor's file
    meta = load_fn()[2]  # the data's shape (image_shape), never its rows as the truth
    reason = no_truth_reason(data_cfg.name)
    logging.warning('%s', reason)
    return None, None, {**{k: meta[k] for k in SHAPE_META if k in meta}, 'no_truth': reason}
  if model.truth is not None and model.truth.get('x') is not None:
    x, y, meta = model.truth['x'], model.truth.get('y'), dict(desc.get('meta') or {})
    return jnp.asarray(x, runs.set_dtype(dtype)), y, meta
  if desc.get('config') is not None and same_data(desc['config'], record):
    logging.info('the model records this config\'s data fields: its training data is '
                 'regenerated for scoring')
    return load_fn()
  logging.info('the model holds no training data and records other data fields: blind '
               'metrics only')
  return None, None, dict(desc.get('meta') or {})


def initial_params_needed(victim: Any,
                          attack: Any) -> Optional[str]:
  """Why the victim and attack sections need the model's initial parameters ('field: reason'),
  or None."""
  if routes.uses_subspace_pipeline(attack):
    return ('attack.subspace.mode: the subspace pipeline attacks dW2 = W2(T) - W2(0) (and '
            'estimates the subspace from dW1, features at W1(0))')
  if routes.victim_pipeline(victim.name) == routes.NETWORKS:
    if attack.knows_init:
      return 'attack.knows_init: True attacks theta = W_L(T) - W_L(0)'
    if attack.jacobian_at != 'trained':
      return (f'attack.jacobian_at: {attack.jacobian_at!r} evaluates features at the '
              'initial weights')
  if registry.lookup('victim', victim.name).homogeneous and attack.kkt.target == 'delta':
    return "attack.kkt.target: 'delta' attacks theta(T) - theta(0)"
  return None


def check_victim(victim: Any) -> None:
  """The registered victim's own cross-field checks of the victim section (one line)."""
  check = registry.lookup('victim', victim.name).check
  message = check(victim) if check is not None else None
  if message:
    raise ExperimentError(message)


def check_model_checkpoint(victim: Any,
                           attack: Any) -> None:
  """Pipeline-specific refusals of a victim.checkpoint (the victim and attack sections), one
  line each, before any compute."""
  path = victim.checkpoint
  if not path:
    return
  entry = registry.lookup('victim', victim.name)
  if entry.features == 'random' and routes.uses_subspace_pipeline(attack):
    raise ExperimentError(
        'victim.checkpoint: the random-features subspace / free-alpha pipeline trains its own '
        "model; accepted: victim.checkpoint with attack.subspace.mode 'none', alpha_mode "
        "'closed_form'")
  if entry.homogeneous and attack.kkt.target == 'planted':
    raise ExperimentError("attack.kkt.target: 'planted' is an oracle built from the training run's "
                          "duals; accepted with victim.checkpoint: 'theta', 'delta'")
  why = initial_params_needed(victim, attack)
  if victim.format != 'recon':
    if why is not None and not victim.init_checkpoint:
      field, reason = why.split(': ', 1)
      raise ExperimentError(
          f'{field}: {reason}, but victim.init_checkpoint is not set; accepted: the initial '
          'parameters in victim.init_checkpoint, or attack.knows_init=False with '
          "attack.jacobian_at='trained' (configs/audit.py)")
    return
  parts = model_ckpt.read_metadata(path)['parts']
  if 'initial' not in parts and why is not None:
    field, reason = why.split(': ', 1)
    raise ExperimentError(
        f'{field}: {reason}, but victim.checkpoint {path} has no initial parameters (part '
        f"'initial'); accepted: a checkpoint with initial parameters"
        + (', or attack.knows_init=False with attack.jacobian_at=\'trained\''
           if field == 'attack.knows_init' else
           ", or attack.jacobian_at='trained'" if field == 'attack.jacobian_at' else
           ", or attack.kkt.target='theta'" if field == 'attack.kkt.target' else ''))
  if routes.uses_subspace_pipeline(attack) and attack.subspace.mode == 'known':
    # A saved model records a description of its data, never the planted basis.
    raise ExperimentError(
        "attack.subspace.mode: 'known' needs the training data's subspace, which a model "
        "checkpoint does not record; accepted with victim.checkpoint: 'estimated', 'none'")
