"""Trained models on disk: a metadata JSON plus an orbax pytree, one folder per model.

Layout of a model folder (e.g. WORKDIR/model/):

    model.json   {"format": "recon.model/1", "kind": ..., "architecture": ..., "hparams": {...},
                  "parts": [...], "n": ..., "dtype": ..., "info": {...}, "data": {...}}
    arrays/      orbax pytree {"trained": ..., "initial": ..., "extras": ..., "truth": ...}

`kind` is 'random_features' (trained = {'theta'}, extras = {'v_key'}; V is
regenerated from its key, V_ij ~ N(0, 1/d)) or 'flax' (trained and initial =
Flax params of `architectures()[architecture](**hparams)`: the Flax classes of the
registered victims, recon/registry.py; extras['collections']
holds the module's other variable collections, e.g. RandomFeatures' fixed V).
`initial`, `extras` and `truth` ({'x', 'y'}: the training set, when known) are
optional; `parts` lists the ones present. `data` (optional, JSON) describes the
training set without holding it: per-example `input_shape`, `dtype`, `n`,
`row_norm` (median row norm), `meta` (e.g. image shape, normalisation) and
`config` (the data fields of the run that trained it, so that run's data can be
regenerated from a config for scoring). A folder is written to a temporary sibling and renamed,
so a crash leaves the previous model or none, never half of one.
"""
from __future__ import annotations

import dataclasses
import json
import os
import shutil
import tempfile
from typing import Any, Callable, Dict, Optional, Tuple

import jax
import numpy as np
import orbax.checkpoint as ocp

import jax.numpy as jnp

from recon.config import choices
from recon.models import features, param_checks
from recon.runtime import io as recon_io
from recon import registry
from recon.errors import ReconError
# The built-in architectures register themselves with their victims (recon/registry.py).
from recon.models import homogeneous, networks  # noqa: F401  pylint: disable=unused-import

FORMAT = 'recon.model/1'
KINDS = ('random_features', 'flax')
PARTS = ('trained', 'initial', 'extras', 'truth')



def architectures() -> Dict[str, Callable[..., Any]]:
  """{class name: Flax class} a checkpoint can name: the registered victims' architectures;
  hparams are the module's constructor arguments."""
  return registry.architectures()


class ModelCheckpointError(ReconError, ValueError):
  """A model folder that cannot be read; the message is one line."""


@dataclasses.dataclass
class ModelCheckpoint:
  """A trained model, its initial parameters and (optionally) its training set."""
  kind: str
  hparams: Dict[str, Any]
  trained: Any
  initial: Any = None
  extras: Optional[Dict[str, Any]] = None
  truth: Optional[Dict[str, Any]] = None  # {'x': (n, ...), 'y': (n, ...)} when known
  architecture: Optional[str] = None  # flax only: a key of architectures()
  n: Optional[int] = None  # training-set size, when known (sets n_candidates' default)
  info: Dict[str, Any] = dataclasses.field(default_factory=dict)
  data: Optional[Dict[str, Any]] = None  # description of the training set (JSON), no arrays
  # A model read from outside recon (recon/models/foreign.py): its module, built from the
  # config; such a model is never written in this format.
  flax_module: Any = None

  def module(self):
    """The Flax module of a 'flax' checkpoint."""
    if self.kind != 'flax':
      raise ModelCheckpointError(f'model kind {self.kind!r} has no Flax module')
    if self.flax_module is not None:
      return self.flax_module
    kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in self.hparams.items()}
    if isinstance(kwargs.get('param_dtype'), str):
      kwargs['param_dtype'] = jnp.dtype(kwargs['param_dtype'])
    try:
      return architectures()[self.architecture](**kwargs)
    except TypeError as e:
      raise ModelCheckpointError(f'hparams: {e} for architecture {self.architecture!r}') from None

  def collections(self) -> Dict[str, Any]:
    """The module's variable collections other than 'params' (e.g. {'constants': {'v'}})."""
    return dict((self.extras or {}).get('collections') or {})


def _json_value(value: Any) -> Any:
  """A module hyper-parameter as JSON (tuples as lists, dtypes by name)."""
  if isinstance(value, (tuple, list)):
    return [_json_value(v) for v in value]
  if isinstance(value, (bool, int, float, str)) or value is None:
    return value
  try:
    return jnp.dtype(value).name
  except TypeError:
    raise ModelCheckpointError(f'hparams: cannot store {value!r} in model.json; accepted: '
                               'numbers, strings, tuples, dtypes') from None


def _is_dtype(value: Any) -> bool:
  try:
    jnp.dtype(value)
    return True
  except TypeError:
    return False


def flax_hparams(module) -> Tuple[str, Dict[str, Any]]:
  """(architecture, constructor arguments as JSON) of a registered Flax module.

  Callable fields (initialisers) are left out when they hold their default; they
  only matter for `init`, never for `apply`.
  """
  name = type(module).__name__
  if architectures().get(name) is not type(module):
    raise ModelCheckpointError(f'architecture: unknown {name!r}; accepted: '
                               f'{", ".join(sorted(architectures()))}')
  out = {}
  for field in dataclasses.fields(module):
    if field.name in ('parent', 'name') or not field.init:
      continue
    value = getattr(module, field.name)
    if callable(value) and not _is_dtype(value):
      if value is not field.default:
        raise ModelCheckpointError(f'hparams: {name}.{field.name} is not its default; accepted: '
                                   'modules whose callable fields (initialisers) are defaults')
      continue  # an initialiser: used by init only, never by apply
    out[field.name] = _json_value(value)
  return name, out


def flax_model(module, trained: Any, initial: Any = None, *, collections: Optional[
    Dict[str, Any]] = None, data_description: Optional[Dict[str, Any]] = None,
               n: Optional[int] = None, info: Optional[Dict[str, Any]] = None,
               truth: Optional[Dict[str, Any]] = None) -> 'ModelCheckpoint':
  """A 'flax' ModelCheckpoint of `module` (architecture and hparams read off the module).

  trained / initial: the 'params' collections; collections: the others (if any);
  data_description: see the module docstring (at least {'input_shape': per-example shape}).
  """
  architecture, hparams = flax_hparams(module)
  extras = {'collections': collections} if collections else None
  return ModelCheckpoint(kind='flax', architecture=architecture, hparams=hparams,
                         trained=trained, initial=initial, extras=extras, truth=truth, n=n,
                         info=dict(info or {}), data=data_description)


def check_params(model: 'ModelCheckpoint', sample: Any) -> None:
  """Raises a one-line ModelCheckpointError unless trained (and initial) have the tree and
  shapes that the checkpoint's module initialises on `sample` (one input batch)."""
  module = model.module()
  shapes = jax.eval_shape(module.init, jax.random.PRNGKey(0), sample)
  want = jax.tree.map(lambda a: tuple(a.shape), shapes['params'])
  for part in ('trained', 'initial'):
    tree = getattr(model, part)
    if tree is None:
      continue
    got = jax.tree.map(lambda a: tuple(np.shape(a)), tree)
    if got != want:
      raise ModelCheckpointError(
          f'victim.checkpoint: {part} parameters do not fit a {model.architecture} with '
          f'hparams {model.hparams} on inputs of shape {tuple(sample.shape[1:])}; accepted: '
          'the tree and shapes the module initialises')
  for name, tree in shapes.items():
    if name != 'params' and name not in model.collections():
      raise ModelCheckpointError(
          f"victim.checkpoint: extras['collections'] lacks {name!r}, which a "
          f'{model.architecture} needs; accepted: the module\'s variable collections')


def _arrays(tree: Any) -> Any:
  return jax.tree.map(np.asarray, tree)


def _json_default(obj: Any) -> Any:
  """Arrays and NumPy / JAX scalars in info / data as plain JSON values."""
  return np.asarray(obj).tolist()


def model_dir(path: str) -> str:
  """`path` itself if it holds model.json, else path/model (a run's workdir)."""
  if os.path.isfile(os.path.join(path, 'model.json')):
    return path
  return os.path.join(path, 'model')


def save(path: str, model: ModelCheckpoint) -> None:
  """Writes `model` to the folder `path` (replacing an existing model there)."""
  if model.kind not in KINDS:
    raise ModelCheckpointError(f'kind: unknown {model.kind!r}; accepted: {", ".join(KINDS)}')
  if model.kind == 'flax' and model.architecture not in architectures():
    raise ModelCheckpointError(f'architecture: unknown {model.architecture!r}; accepted: '
                               f'{", ".join(sorted(architectures()))}')
  tree = {k: _arrays(getattr(model, k)) for k in PARTS if getattr(model, k) is not None}
  leaves = jax.tree.leaves(tree['trained'])
  meta = {
      'format': FORMAT, 'kind': model.kind, 'architecture': model.architecture,
      'hparams': dict(model.hparams), 'parts': sorted(tree), 'n': model.n,
      'dtype': str(leaves[0].dtype) if leaves else None, 'info': model.info,
  }
  if model.data is not None:
    meta['data'] = model.data
  path = os.path.abspath(path)
  parent = os.path.dirname(path)
  recon_io.claim(path)  # a run's workdir lists what it writes (recon/runtime/ownership.py)
  os.makedirs(parent, exist_ok=True)
  prefix = '.' + os.path.basename(path) + '.'
  for stale in os.listdir(parent):  # left by a save that was killed
    if stale.startswith(prefix) and stale.endswith('.tmp'):
      shutil.rmtree(os.path.join(parent, stale), ignore_errors=True)
  tmp = tempfile.mkdtemp(dir=parent, prefix=prefix, suffix='.tmp')
  try:
    os.chmod(tmp, 0o777 & ~recon_io.umask())  # mkdtemp's 0700, not the user's umask
    # Synchronous (StandardCheckpointer's format without its background threads): a failed
    # write (a full disk) raises here, once, instead of in threads that outlive the run.
    with ocp.Checkpointer(ocp.StandardCheckpointHandler()) as checkpointer:
      checkpointer.save(os.path.join(tmp, 'arrays'), args=ocp.args.StandardSave(tree))
    with open(os.path.join(tmp, 'model.json'), 'w') as f:
      json.dump(meta, f, indent=2, default=_json_default)
      f.write('\n')
    if os.path.exists(path):
      shutil.rmtree(path)
    os.replace(tmp, path)
  except BaseException:
    shutil.rmtree(tmp, ignore_errors=True)
    raise


def read_metadata(path: str) -> Dict[str, Any]:
  """model.json of the model at `path` (a model folder or a run's workdir); cheap."""
  path = os.path.abspath(os.path.expanduser(path))
  folder = model_dir(path)
  file = os.path.join(folder, 'model.json')
  if not os.path.isfile(file):
    raise ModelCheckpointError(f'victim.checkpoint: no model.json in {path!r} or {folder!r}; '
                               'accepted: a model folder written by recon (see docs)')
  try:
    with open(file, encoding='utf-8') as f:
      meta = json.load(f)
  except (OSError, UnicodeDecodeError, ValueError) as e:  # JSONDecodeError is a ValueError
    first = (str(e).splitlines() or [''])[0][:120]
    raise ModelCheckpointError(f'victim.checkpoint: {file} is not readable JSON '
                               f'({type(e).__name__}: {first}); accepted: the model.json of '
                               f'a {FORMAT} model folder written by recon') from None
  if not isinstance(meta, dict):
    raise ModelCheckpointError(f'victim.checkpoint: {file} holds a JSON {type(meta).__name__}, '
                               f'not an object; accepted: a {FORMAT} model.json')
  if meta.get('format') != FORMAT or meta.get('kind') not in KINDS:
    raise ModelCheckpointError(f'victim.checkpoint: {file} is not a {FORMAT} model '
                               f'(format {meta.get("format")!r}, kind {meta.get("kind")!r})')
  missing = [k for k, t in (('hparams', dict), ('parts', list)) if not isinstance(meta.get(k), t)]
  if missing or 'trained' not in meta['parts']:
    raise ModelCheckpointError(f'victim.checkpoint: {file} lacks '
                               f'{", ".join(missing) or "the trained parameters"}; accepted: '
                               f'a {FORMAT} model.json with hparams (an object) and parts (a '
                               'list incl. trained)')
  if meta['kind'] == 'flax' and meta.get('architecture') not in architectures():
    raise ModelCheckpointError(
        f'victim.checkpoint: architecture {meta.get("architecture")!r} unknown; accepted: '
        f'{", ".join(sorted(architectures()))}')
  check_metadata(meta, file)
  return meta


def _count(value: Any) -> bool:
  """True for a JSON integer >= 1 (not a bool)."""
  return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def check_metadata(meta: Dict[str, Any], file: str) -> None:
  """One-line ModelCheckpointError unless model.json's fields have the types the code reads:
  parts a subset of PARTS, n null or an integer >= 1; random features: hparams p, d integers
  >= 1, activation one of `features.ACTIVATIONS`, weight_rng one of `choices.WEIGHT_RNGS`."""
  def refuse(key: str, value: Any, accepted: str):
    raise ModelCheckpointError(f'victim.checkpoint: {file}: {key} is {value!r}; accepted: '
                               f'{accepted}')
  bad = [p for p in meta['parts'] if p not in PARTS]
  if bad:
    refuse('parts', meta['parts'], f'a list of {", ".join(PARTS)} incl. trained')
  if meta.get('n') is not None and not _count(meta['n']):
    refuse('n', meta['n'], 'null or an integer >= 1 (the training-set size)')
  if meta['kind'] != 'random_features':
    return
  hp = meta['hparams']
  for key in ('p', 'd'):
    if not _count(hp.get(key)):
      refuse(f'hparams.{key}', hp.get(key), 'an integer >= 1')
  if hp.get('activation') not in features.ACTIVATIONS:
    refuse('hparams.activation', hp.get('activation'),
           ', '.join(sorted(features.ACTIVATIONS)))
  if hp.get('weight_rng', 'threefry') not in choices.WEIGHT_RNGS:
    refuse('hparams.weight_rng', hp.get('weight_rng'), ', '.join(choices.WEIGHT_RNGS))


def _shape_of(tree: Any, key: str) -> Optional[Tuple[int, ...]]:
  value = (tree or {}).get(key) if isinstance(tree, dict) else None
  return None if value is None else tuple(np.shape(value))


def check_arrays(model: 'ModelCheckpoint', where: str) -> None:
  """One-line ModelCheckpointError unless the arrays fit model.json and are finite.

  Random features: trained['theta'] of shape (p,); extras['v'] (p, d) or extras['v_key'] (a
  PRNG key, 2 or 4 uint32 words); truth x (n, d) and y (n,) when present, n = model.json's n
  when it records one. Every kind: every float array of trained / initial / extras / truth
  finite (a NaN or inf parameter makes the attack meaningless). Flax trees are checked
  against their module by `check_params` once the input shape is known."""
  def refuse(key: str, got: Any, accepted: str):
    raise ModelCheckpointError(f'victim.checkpoint: {where}: {key} is {got}; accepted: {accepted}')
  if model.kind == 'random_features':
    p, d = model.hparams['p'], model.hparams['d']
    if not isinstance(model.trained, dict) or 'theta' not in model.trained:
      keys = sorted(model.trained) if isinstance(model.trained, dict) else type(model.trained)
      refuse('trained', f'missing theta (keys {keys})', f"trained['theta'] of shape ({p},)")
    if _shape_of(model.trained, 'theta') != (p,):
      refuse("trained['theta']", f'of shape {_shape_of(model.trained, "theta")}',
             f'shape ({p},) (hparams.p)')
    extras = model.extras if isinstance(model.extras, dict) else {}
    if 'v' in extras and _shape_of(extras, 'v') != (p, d):
      refuse("extras['v']", f'of shape {_shape_of(extras, "v")}', f'shape ({p}, {d}) (hparams p, d)')
    if 'v' not in extras and _shape_of(extras, 'v_key') not in ((2,), (4,)):
      refuse("extras['v_key']", f'of shape {_shape_of(extras, "v_key")}',
             "a PRNG key of shape (2,) (or extras['v'] of shape (p, d))")
    truth = model.truth if isinstance(model.truth, dict) else None
    if truth is not None:
      x_shape, y_shape = _shape_of(truth, 'x'), _shape_of(truth, 'y')
      n = model.n if model.n is not None else (x_shape or (0,))[0]
      if x_shape != (n, d):
        refuse("truth['x']", f'of shape {x_shape}', f'shape ({n}, {d}) (n, hparams.d)')
      if y_shape is None or y_shape[:1] != (n,):
        refuse("truth['y']", f'of shape {y_shape}', f'shape ({n},) (n)')
  for part in ('trained', 'initial'):  # parameters: real floating point only
    problem = param_checks.tree_dtype_problem(getattr(model, part))
    if problem is not None:
      refuse(part, problem.replace('has parameter', 'parameter'), param_checks.ACCEPTED)
  for part in PARTS:
    for path, leaf in jax.tree_util.tree_flatten_with_path(getattr(model, part))[0]:
      a = np.asarray(leaf)
      if np.issubdtype(a.dtype, np.inexact) and not np.all(np.isfinite(a)):
        name = part + jax.tree_util.keystr(path)
        refuse(name, f'non-finite ({int(np.sum(~np.isfinite(a)))} of {a.size} entries NaN/inf)',
               'finite values')


def load(path: str) -> ModelCheckpoint:
  """Reads the model at `path` (a model folder or a run's workdir); arrays as NumPy."""
  path = os.path.abspath(os.path.expanduser(path))  # orbax needs absolute paths
  meta = read_metadata(path)
  arrays = os.path.join(model_dir(path), 'arrays')
  if not os.path.isdir(arrays):
    raise ModelCheckpointError(f'victim.checkpoint: no arrays/ folder next to model.json in '
                               f'{model_dir(path)!r}; accepted: a folder written by save()')
  _, too_big = param_checks.orbax_entries(arrays)  # sized from orbax's metadata first
  if too_big is not None:
    raise ModelCheckpointError(f'victim.checkpoint: {arrays} {too_big}; accepted: a model '
                               'that fits in memory')
  try:
    tree = ocp.StandardCheckpointer().restore(arrays)
  except Exception as e:  # pylint: disable=broad-except
    first = (str(e).splitlines() or [''])[0][:200]
    raise ModelCheckpointError(f'victim.checkpoint: cannot read {arrays!r} '
                               f'({type(e).__name__}: {first})') from None
  if not isinstance(tree, dict):
    raise ModelCheckpointError(f'victim.checkpoint: {arrays!r} holds a {type(tree).__name__}; '
                               f'accepted: a tree {{{", ".join(PARTS)}}} written by save()')
  tree = _arrays(tree)
  model = ModelCheckpoint(kind=meta['kind'], hparams=meta['hparams'], architecture=meta.get(
      'architecture'), n=meta.get('n'), info=meta.get('info') or {}, data=meta.get('data'),
                          **{k: tree.get(k) for k in PARTS})
  check_arrays(model, arrays)
  return model
