"""Models saved outside recon: the auditor's own Flax module, a PyTorch MLP's state_dict,
a random-features model's arrays.

Two victims are registered here (the third format belongs to the built-in victim
'random_features'):

  flax_module  any Flax module named by `victim.module = 'package.module:ClassName'` and
               built with `victim.module_kwargs`; its params read from `victim.checkpoint`
               in `victim.format` 'orbax' (a directory written by orbax) or 'msgpack'
               (`flax.serialization.to_bytes` / `msgpack_serialize`), optionally wrapped as
               {'params': ...}; the initial params likewise from `victim.init_checkpoint`.
  torch_mlp    an `nn.Sequential` of `nn.Linear` layers with one activation between them,
               whose `state_dict()` was saved with safetensors (`victim.format`
               'safetensors'); read with `safetensors.numpy`, so torch is never imported.
               Layer `i` of the Sequential ('i.weight' (out, in), 'i.bias') becomes the
               Dense collection 'layer_i' with kernel = weight^T: the Flax forward pass is
               x -> W_k s(... s(W_0 x + b_0) ...) + b_k, PyTorch's exactly (GELU is the
               erf form, nn.GELU()'s default).
  random_features with `victim.format` 'npz': f(x) = sigma(V x)^T theta from an .npz holding
               'V' (p, d) (or 'v') and 'theta' (p,) (or (p, 1)); sigma is
               `victim.activation`; p and d are read from V. V drawn anywhere, by any
               generator: the attack and its certificate use V as given.

Nothing in a model file is executed: a Flax class is imported only from the config's
`victim.module` (code the auditor names), the arrays are read as numbers (orbax and
msgpack restore without pickle, safetensors holds raw tensors), every file is sized from its
headers (recon/data/headers.py) before its arrays are read, parameters must be real floating
point (float16, bfloat16, float32, float64), and every shape is checked
against the module before compute, each failure one line naming the key and the shape
expected. The attacked layer is `victim.layer` (default: the last parameter collection, the
head of an ordinary MLP).
"""
from __future__ import annotations

import functools
import importlib
import os
import zipfile
from typing import Any, Dict, Optional, Tuple

import flax.linen as nn
import jax
import numpy as np

from recon import registry
from recon.data import headers
from recon.models import param_checks
from recon.models.torch_state import (  # noqa: F401  (their home before the split)
    TORCH_ACTIVATIONS, TorchMLP, numpy_forward, read_state_dict, torch_mlp)

FLAX_FORMATS = ('orbax', 'msgpack')


ForeignModelError = param_checks.ForeignModelError


def import_class(target: Optional[str]) -> type:
  """The class named by 'package.module:ClassName' (the auditor's own code)."""
  if not target or ':' not in target:
    raise ForeignModelError(f'victim.module: {target!r}; accepted: \'package.module:ClassName\' '
                            "naming a flax.linen.Module subclass importable from the working "
                            'directory or the Python path')
  module_name, _, attr = target.partition(':')
  try:
    module = importlib.import_module(module_name)
  except ImportError as e:
    raise ForeignModelError(f'victim.module: cannot import {module_name!r} ({param_checks.first_line(e)}); '
                            'accepted: a module on the Python path (PYTHONPATH, or the working '
                            'directory)') from None
  except (Exception, SystemExit) as e:  # pylint: disable=broad-except  (the user's code)
    raise ForeignModelError(f'victim.module: importing {module_name!r} raised '
                            f'{param_checks.cause(e)}; accepted: a module that imports cleanly (it is the '
                            "auditor's own code, run as is)") from None
  obj = module
  for part in attr.split('.'):
    obj = getattr(obj, part, None)
    if obj is None:
      raise ForeignModelError(f'victim.module: {module_name!r} has no {attr!r}; accepted: '
                              "'package.module:ClassName' of a flax.linen.Module subclass")
  if not (isinstance(obj, type) and issubclass(obj, nn.Module)):
    raise ForeignModelError(f'victim.module: {target!r} is not a flax.linen.Module subclass; '
                            'accepted: a Flax module class')
  return obj


def build_flax_module(victim) -> nn.Module:
  """victim.module(**victim.module_kwargs)."""
  cls = import_class(victim.module)
  kwargs = dict(victim.module_kwargs or {})
  kwargs = {k: tuple(v) if isinstance(v, list) else v for k, v in kwargs.items()}
  try:
    return cls(**kwargs)
  except TypeError as e:
    raise ForeignModelError(f'victim.module_kwargs: {e} for {victim.module}; accepted: the '
                            "class's constructor arguments") from None
  except (Exception, SystemExit) as e:  # pylint: disable=broad-except  (the user's code)
    raise ForeignModelError(f'victim.module: {victim.module}(**victim.module_kwargs) raised '
                            f"{param_checks.cause(e)}; accepted: a module whose constructor runs") from None


def _split_variables(tree: Any) -> Tuple[Any, Dict[str, Any]]:
  """(params, other collections) from what users save: Flax variables {'params': p,
  'batch_stats': ...} or the params tree p itself."""
  if isinstance(tree, dict) and 'params' in tree and all(
      isinstance(v, dict) for v in tree.values()):
    return tree['params'], {k: v for k, v in tree.items() if k != 'params'}
  return tree, {}


def _as_numpy(tree: Any) -> Any:
  return jax.tree.map(np.asarray, tree)


def _refuse_dtypes(path: str, named: Dict[str, str], field: str) -> None:
  problem = param_checks.dtype_problem(named)
  if problem is not None:
    raise ForeignModelError(f'{field}: {path} {problem}; accepted: {param_checks.ACCEPTED} '
                            '(real floating point)')


def _checked_variables(tree: Any, path: str, field: str) -> Tuple[Any, Dict[str, Any]]:
  """(params, other collections) as NumPy, every parameter real floating point."""
  params, others = _split_variables(tree)
  params = _as_numpy(params)
  _refuse_dtypes(path, {k: param_checks.dtype_name(v)
                        for k, v in param_checks.leaf_names(params).items()}, field)
  return params, _as_numpy(others)


def read_params(path: str, fmt: str, field: str = 'victim.checkpoint') -> Any:
  """The params tree saved at `path` in `fmt` ('orbax' directory or 'msgpack' file)."""
  return read_variables(path, fmt, field)[0]


def read_variables(path: str, fmt: str,
                   field: str = 'victim.checkpoint') -> Tuple[Any, Dict[str, Any]]:
  """(params, other variable collections) saved at `path` in `fmt`."""
  if fmt == 'orbax':
    if not os.path.isdir(path):
      why = headers.what_is(path) or 'is a file, not a directory'
      raise ForeignModelError(f'{field}: {path} {why}; accepted with victim.format '
                              "'orbax': a directory written by orbax (e.g. "
                              'ocp.StandardCheckpointer().save(path, params))')
    import orbax.checkpoint as ocp  # pylint: disable=import-outside-toplevel
    found, too_big = param_checks.orbax_entries(path)
    if too_big is not None:
      raise ForeignModelError(f'{field}: {path} {too_big}; accepted: a params tree that fits in '
                              'memory')
    del found  # the dtypes are checked on the params once restored (other collections aside)
    try:
      tree = ocp.PyTreeCheckpointer().restore(os.path.abspath(path))
    except Exception as e:  # pylint: disable=broad-except  (any unreadable folder)
      raise ForeignModelError(f'{field}: {path} is not a readable orbax checkpoint '
                              f'({type(e).__name__}: {str(e).splitlines()[0][:200]}); accepted: '
                              'a params tree saved by orbax') from None
    return _checked_variables(tree, path, field)
  if fmt == 'msgpack':
    why = headers.what_is(path) or param_checks.file_fits(path)
    if why is not None:
      raise ForeignModelError(f'{field}: {path} {why}; accepted with victim.format '
                              "'msgpack': a file written by flax.serialization.to_bytes(params)")
    from flax import serialization  # pylint: disable=import-outside-toplevel
    with open(path, 'rb') as f:
      raw = f.read()
    try:
      tree = serialization.msgpack_restore(raw)
    except Exception as e:  # pylint: disable=broad-except
      raise ForeignModelError(f'{field}: {path} is not a flax msgpack file ({type(e).__name__}'
                              f'{param_checks.looks_like(path)}); accepted: '
                              'flax.serialization.to_bytes(params)') from None
    if not isinstance(tree, dict):
      raise ForeignModelError(f'{field}: {path} holds a {type(tree).__name__}, not a params '
                              'tree; accepted: flax.serialization.to_bytes(params)')
    return _checked_variables(tree, path, field)
  raise ForeignModelError(f'victim.format: {fmt!r} holds no Flax params; accepted: '
                          f'{", ".join(FLAX_FORMATS)}')


def module_params(module: nn.Module, sample: jax.Array) -> Any:
  """The shapes of the params `module` creates on `sample` (its init and forward pass, traced);
  one line naming victim.module when the user's code raises or creates no parameters."""
  name = getattr(module, '__module__', '') + ':' + type(module).__name__
  try:
    variables = jax.eval_shape(module.init, jax.random.PRNGKey(0), sample)
  except (Exception, SystemExit) as e:  # pylint: disable=broad-except  (the user's code)
    raise ForeignModelError(f'victim.module: {name} raised {param_checks.cause(e)} in its init / forward '
                            f'pass on inputs of shape {tuple(sample.shape[1:])}; accepted: a '
                            'module that runs on the data\'s rows (data.d / data.image_shape)'
                            ) from None
  params = variables.get('params') if isinstance(variables, dict) else None
  if not jax.tree.leaves(params):
    raise ForeignModelError(f'victim.module: {name} creates no parameters on inputs of shape '
                            f'{tuple(sample.shape[1:])}; accepted: a module with parameters '
                            "(the collection 'params', e.g. nn.Dense layers)")
  return params


def check_params_fit(module: nn.Module, params: Any, sample: jax.Array, field: str) -> None:
  """One line naming the first key whose shape differs from what `module` creates."""
  want = module_params(module, sample)
  flat_want = {'/'.join(str(getattr(k, 'key', k)) for k in path): leaf.shape
               for path, leaf in jax.tree_util.tree_flatten_with_path(want)[0]}
  flat_have = {'/'.join(str(getattr(k, 'key', k)) for k in path): np.shape(leaf)
               for path, leaf in jax.tree_util.tree_flatten_with_path(params)[0]}
  for key, shape in flat_want.items():
    if key not in flat_have:
      raise ForeignModelError(f'{field}: missing parameter {key!r} of shape {tuple(shape)}; '
                              f'the file has {", ".join(sorted(flat_have)) or "nothing"}')
    if tuple(flat_have[key]) != tuple(shape):
      raise ForeignModelError(f'{field}: parameter {key!r} has shape {tuple(flat_have[key])}; '
                              f'accepted: {tuple(shape)} (the module on inputs of shape '
                              f'{tuple(sample.shape[1:])})')
  extra = sorted(set(flat_have) - set(flat_want))
  if extra:
    raise ForeignModelError(f'{field}: parameters {", ".join(extra[:5])} are not in the module; '
                            'accepted: exactly the params tree the module creates')
  for key, leaf in jax.tree_util.tree_flatten_with_path(params)[0]:
    if not np.all(np.isfinite(np.asarray(leaf))):
      name = '/'.join(str(getattr(k, 'key', k)) for k in key)
      raise ForeignModelError(f'{field}: parameter {name!r} holds non-finite values; accepted: '
                              'finite weights')


# -- A random-features model from arrays ------------------------------------------------

RF_EXPECTED = ("an .npz holding 'V' of shape (p, d) and 'theta' of shape (p,), e.g. "
               'np.savez(path, V=V, theta=theta)')


def _rf_keys(path: str, refuse) -> Tuple[str, Dict[str, headers.Entry]]:
  """(V's key, {key: Entry}) from the .npz's headers alone: keys, dtypes, shapes and sizes
  checked before a byte of an array is inflated."""
  kind = headers.sniff(path)
  if kind == 'npy':
    raise refuse('is a single .npy array')
  if kind != 'npz':
    raise refuse('holds pickled data (refused: a model file never runs code)' if kind == 'pickle'
                 else f'is not a NumPy .npz file{param_checks.looks_like(path)}')
  try:
    found = headers.entries(path, 'npz')
  except headers.HeaderError as e:
    raise refuse(str(e)) from None
  v_key = 'V' if 'V' in found else 'v' if 'v' in found else None
  if v_key is None or 'theta' not in found:
    raise refuse(f"has keys {', '.join(sorted(found)) or 'none'}")
  for name in (v_key, 'theta'):
    if found[name].kind == 'O':
      raise refuse(f"holds an object array in '{name}' (refused: allow_pickle=False)")
    if found[name].dtype not in headers.FLOAT_DTYPES:
      raise refuse(f"has '{name}' of dtype {found[name].dtype} (expected real floating point: "
                   f'{param_checks.ACCEPTED})')
  v, theta = found[v_key].shape, found['theta'].shape
  if len(v) != 2 or 0 in v:
    raise refuse(f"has '{v_key}' of shape {v} (expected (p, d))")
  if theta not in ((v[0],), (v[0], 1)):
    raise refuse(f"has 'theta' of shape {theta} (expected ({v[0]},): one weight per row of "
                 f"'{v_key}')")
  return v_key, found


@functools.lru_cache(maxsize=2)
def _read_rf(path: str, stamp: Tuple[int, int], field: str) -> Tuple[np.ndarray, np.ndarray]:
  del stamp  # the cache key: a changed file is read again
  refuse = lambda what: ForeignModelError(  # noqa: E731
      f'{field}: {path} {what}; accepted with victim.format \'npz\': {RF_EXPECTED}')
  v_key, _ = _rf_keys(path, refuse)
  try:
    with np.load(path, allow_pickle=False) as loaded:
      v, theta = loaded[v_key], loaded['theta']
  except (ValueError, OSError, zipfile.BadZipFile, EOFError) as e:
    raise refuse(f'is a damaged .npz ({type(e).__name__}: '
                 f'{param_checks.first_line(e)[:80]})') from None
  for name, a in ((v_key, v), ('theta', theta)):
    if not np.all(np.isfinite(a)):
      raise refuse(f"has non-finite values in '{name}'")
  return v, theta.reshape(-1)


def random_features_shape(path: str, field: str = 'victim.checkpoint') -> Tuple[int, int]:
  """(p, d) of a random-features model saved as arrays, from the .npz's headers (nothing
  inflated: the memory estimate sees p and d before the arrays are read)."""
  path = _rf_path(path, field)
  refuse = lambda what: ForeignModelError(  # noqa: E731
      f'{field}: {path} {what}; accepted with victim.format \'npz\': {RF_EXPECTED}')
  v_key, found = _rf_keys(path, refuse)
  p, d = found[v_key].shape
  return int(p), int(d)


def _rf_path(path: str, field: str) -> str:
  why = headers.what_is(path)
  if why is not None:
    raise ForeignModelError(f'{field}: {path} {why}; accepted with victim.format '
                            f"'npz': {RF_EXPECTED}")
  return os.path.abspath(path)


def read_random_features(path: str,
                         field: str = 'victim.checkpoint') -> Tuple[np.ndarray, np.ndarray]:
  """(V (p, d), theta (p,)) of a random-features model saved as arrays; one-line refusals."""
  path = _rf_path(path, field)
  st = os.stat(path)
  return _read_rf(path, (st.st_mtime_ns, st.st_size), field)


def _no_training(victim, num_classes):
  raise ForeignModelError('victim.checkpoint: required for victim torch_mlp (recon does not '
                          'train PyTorch models); accepted: a safetensors state_dict')


registry.register('victim', 'flax_module', registry.Victim(
    pipeline='networks', build=lambda victim, num_classes: build_flax_module(victim),
    image_input=None))
registry.register('victim', 'torch_mlp', registry.Victim(
    pipeline='networks', build=_no_training))
