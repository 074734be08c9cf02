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
msgpack restore without pickle, safetensors holds raw tensors), and every shape is checked
against the module before compute, each failure one line naming the key and the shape
expected. The attacked layer is `victim.layer` (default: the last parameter collection, the
head of an ordinary MLP).
"""
from __future__ import annotations

import functools
import importlib
import os
import re
import zipfile
from typing import Any, Dict, Optional, Tuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from recon import registry
from recon.errors import ExperimentError

FORMATS = ('recon', 'orbax', 'msgpack', 'safetensors', 'npz')
FLAX_FORMATS = ('orbax', 'msgpack')
TORCH_ACTIVATIONS = ('relu', 'tanh', 'gelu')


class ForeignModelError(ExperimentError):
  """A model file or module that cannot be used; the message is one line (exit status 2)."""


def import_class(spec: Optional[str]) -> type:
  """The class named by 'package.module:ClassName' (the auditor's own code)."""
  if not spec or ':' not in spec:
    raise ForeignModelError(f'victim.module: {spec!r}; accepted: \'package.module:ClassName\' '
                            "naming a flax.linen.Module subclass importable from the working "
                            'directory or the Python path')
  module_name, _, attr = spec.partition(':')
  try:
    module = importlib.import_module(module_name)
  except ImportError as e:
    raise ForeignModelError(f'victim.module: cannot import {module_name!r} ({e}); accepted: a '
                            'module on the Python path (PYTHONPATH, or the working directory)'
                            ) from None
  obj = module
  for part in attr.split('.'):
    obj = getattr(obj, part, None)
    if obj is None:
      raise ForeignModelError(f'victim.module: {module_name!r} has no {attr!r}; accepted: '
                              "'package.module:ClassName' of a flax.linen.Module subclass")
  if not (isinstance(obj, type) and issubclass(obj, nn.Module)):
    raise ForeignModelError(f'victim.module: {spec!r} is not a flax.linen.Module subclass; '
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


def _split_variables(tree: Any) -> Tuple[Any, Dict[str, Any]]:
  """(params, other collections) from what users save: Flax variables {'params': p,
  'batch_stats': ...} or the params tree p itself."""
  if isinstance(tree, dict) and 'params' in tree and all(
      isinstance(v, dict) for v in tree.values()):
    return tree['params'], {k: v for k, v in tree.items() if k != 'params'}
  return tree, {}


def _as_numpy(tree: Any) -> Any:
  return jax.tree.map(np.asarray, tree)


def read_params(path: str, fmt: str, field: str = 'victim.checkpoint') -> Any:
  """The params tree saved at `path` in `fmt` ('orbax' directory or 'msgpack' file)."""
  return read_variables(path, fmt, field)[0]


def read_variables(path: str, fmt: str,
                   field: str = 'victim.checkpoint') -> Tuple[Any, Dict[str, Any]]:
  """(params, other variable collections) saved at `path` in `fmt`."""
  if fmt == 'orbax':
    if not os.path.isdir(path):
      raise ForeignModelError(f'{field}: {path} is not a directory; accepted with victim.format '
                              "'orbax': a directory written by orbax (e.g. "
                              'ocp.StandardCheckpointer().save(path, params))')
    import orbax.checkpoint as ocp  # pylint: disable=import-outside-toplevel
    try:
      tree = ocp.PyTreeCheckpointer().restore(os.path.abspath(path))
    except Exception as e:  # pylint: disable=broad-except  (any unreadable folder)
      raise ForeignModelError(f'{field}: {path} is not a readable orbax checkpoint '
                              f'({type(e).__name__}: {str(e).splitlines()[0][:200]}); accepted: '
                              'a params tree saved by orbax') from None
    params, others = _split_variables(tree)
    return _as_numpy(params), _as_numpy(others)
  if fmt == 'msgpack':
    if not os.path.isfile(path):
      raise ForeignModelError(f'{field}: {path} is not a file; accepted with victim.format '
                              "'msgpack': a file written by flax.serialization.to_bytes(params)")
    from flax import serialization  # pylint: disable=import-outside-toplevel
    with open(path, 'rb') as f:
      raw = f.read()
    try:
      tree = serialization.msgpack_restore(raw)
    except Exception as e:  # pylint: disable=broad-except
      raise ForeignModelError(f'{field}: {path} is not a flax msgpack file ({type(e).__name__}); '
                              'accepted: flax.serialization.to_bytes(params)') from None
    if not isinstance(tree, dict):
      raise ForeignModelError(f'{field}: {path} holds a {type(tree).__name__}, not a params '
                              'tree; accepted: flax.serialization.to_bytes(params)')
    params, others = _split_variables(tree)
    return _as_numpy(params), _as_numpy(others)
  raise ForeignModelError(f'victim.format: {fmt!r} holds no Flax params; accepted: '
                          f'{", ".join(FLAX_FORMATS)}')


def check_params_fit(module: nn.Module, params: Any, sample: jax.Array, field: str) -> None:
  """One line naming the first key whose shape differs from what `module` creates."""
  want = jax.eval_shape(module.init, jax.random.PRNGKey(0), sample)['params']
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


# -- PyTorch MLPs from safetensors -------------------------------------------------------

_ACTS = {'relu': jax.nn.relu, 'tanh': jnp.tanh,
         'gelu': lambda z: jax.nn.gelu(z, approximate=False)}  # nn.GELU(): the erf form


class TorchMLP(nn.Module):
  """nn.Sequential(Linear, act, Linear, act, ..., Linear) in Flax: Dense collections named
  'layer_<index in the Sequential>', kernel = weight^T, the activation between layers."""
  widths: Tuple[int, ...]  # output width of each Linear, the last one is the head's
  indices: Tuple[int, ...]  # each Linear's index in the Sequential
  activation: str = 'relu'
  use_bias: Tuple[bool, ...] = ()

  @nn.compact
  def __call__(self, x):
    act = _ACTS[self.activation]
    biases = self.use_bias or (True,) * len(self.widths)
    for i, (width, index, bias) in enumerate(zip(self.widths, self.indices, biases)):
      x = nn.Dense(width, use_bias=bias, name=f'layer_{index}')(x)
      if i < len(self.widths) - 1:
        x = act(x)
    return x


_KEY = re.compile(r'^(\d+)\.(weight|bias)$')


def read_state_dict(path: str, field: str = 'victim.checkpoint') -> Dict[str, np.ndarray]:
  """{name: array} of a safetensors file, read without torch."""
  if not os.path.isfile(path):
    raise ForeignModelError(f'{field}: {path} is not a file; accepted with victim.format '
                            "'safetensors': safetensors.torch.save_file(model.state_dict(), path)")
  from safetensors import SafetensorError  # pylint: disable=import-outside-toplevel
  from safetensors.numpy import load_file  # pylint: disable=import-outside-toplevel
  try:
    return load_file(path)
  except (SafetensorError, OSError, ValueError) as e:
    raise ForeignModelError(f'{field}: {path} is not a safetensors file ({e}); accepted: '
                            'safetensors.torch.save_file(model.state_dict(), path)') from None


def torch_mlp(state: Dict[str, np.ndarray], activation: str,
              field: str = 'victim.checkpoint') -> Tuple[TorchMLP, Dict[str, Any], int]:
  """(module, Flax params, input dimension d) of an nn.Sequential MLP's state_dict."""
  if activation not in TORCH_ACTIVATIONS:
    raise ForeignModelError(f'victim.activation: {activation!r} for torch_mlp; accepted: '
                            f'{", ".join(TORCH_ACTIVATIONS)} (the nn.ReLU / nn.Tanh / nn.GELU '
                            'between the Linear layers)')
  layers: Dict[int, Dict[str, np.ndarray]] = {}
  for key, value in state.items():
    match = _KEY.match(key)
    if match is None:
      raise ForeignModelError(f'{field}: key {key!r} is not a Linear layer of an nn.Sequential; '
                              "accepted: keys '<index>.weight' and '<index>.bias'")
    layers.setdefault(int(match.group(1)), {})[match.group(2)] = np.asarray(value)
  if not layers:
    raise ForeignModelError(f'{field}: no tensors; accepted: an MLP state_dict')
  indices = tuple(sorted(layers))
  params, widths, biases, fan_in = {}, [], [], None
  for index in indices:
    entry = layers[index]
    weight = entry.get('weight')
    if weight is None or weight.ndim != 2:
      raise ForeignModelError(f"{field}: key '{index}.weight' missing or not 2-D (shape "
                              f'{None if weight is None else weight.shape}); accepted: '
                              '(out_features, in_features)')
    out_f, in_f = weight.shape
    if fan_in is not None and in_f != fan_in:
      raise ForeignModelError(f"{field}: key '{index}.weight' has in_features {in_f} but the "
                              f'layer before outputs {fan_in}; accepted: a chain of Linear layers')
    bias = entry.get('bias')
    if bias is not None and bias.shape != (out_f,):
      raise ForeignModelError(f"{field}: key '{index}.bias' has shape {bias.shape}; accepted: "
                              f'({out_f},)')
    for name, arr in entry.items():
      if not np.all(np.isfinite(arr)):
        raise ForeignModelError(f"{field}: key '{index}.{name}' holds non-finite values; "
                                'accepted: finite weights')
    layer = {'kernel': np.ascontiguousarray(weight.T)}
    if bias is not None:
      layer['bias'] = bias
    params[f'layer_{index}'] = layer
    widths.append(out_f)
    biases.append(bias is not None)
    fan_in = out_f
  d = layers[indices[0]]['weight'].shape[1]
  module = TorchMLP(tuple(widths), indices, activation, tuple(biases))
  return module, params, d


def numpy_forward(state: Dict[str, np.ndarray], activation: str, x: np.ndarray) -> np.ndarray:
  """PyTorch's forward pass of the state_dict's MLP in NumPy (a reference for tests)."""
  from scipy.special import erf  # pylint: disable=import-outside-toplevel
  acts = {'relu': lambda z: np.maximum(z, 0), 'tanh': np.tanh,
          'gelu': lambda z: 0.5 * z * (1 + erf(z / np.sqrt(2)))}
  indices = sorted({int(_KEY.match(k).group(1)) for k in state})
  for i, index in enumerate(indices):
    x = x @ state[f'{index}.weight'].T + state.get(f'{index}.bias', 0.0)
    if i < len(indices) - 1:
      x = acts[activation](x)
  return x


# -- A random-features model from arrays ------------------------------------------------

RF_EXPECTED = ("an .npz holding 'V' of shape (p, d) and 'theta' of shape (p,), e.g. "
               'np.savez(path, V=V, theta=theta)')


@functools.lru_cache(maxsize=2)
def _read_rf(path: str, stamp: Tuple[int, int], field: str) -> Tuple[np.ndarray, np.ndarray]:
  del stamp  # the cache key: a changed file is read again
  refuse = lambda what: ForeignModelError(  # noqa: E731
      f'{field}: {path} {what}; accepted with victim.format \'npz\': {RF_EXPECTED}')
  try:
    loaded = np.load(path, allow_pickle=False)
  except (ValueError, OSError, EOFError, zipfile.BadZipFile) as e:
    raise refuse('holds pickled data (refused: allow_pickle=False)' if 'pickle' in str(e)
                 else f'is not a NumPy .npz file ({type(e).__name__})') from None
  if isinstance(loaded, np.ndarray):
    raise refuse('is a single .npy array')
  try:
    with loaded:
      keys = set(loaded.files)
      v_key = 'V' if 'V' in keys else 'v' if 'v' in keys else None
      if v_key is None or 'theta' not in keys:
        raise refuse(f"has keys {', '.join(sorted(keys)) or 'none'}")
      v, theta = loaded[v_key], loaded['theta']
  except ValueError as e:  # object arrays need pickle
    raise refuse(f'holds an object array ({str(e).splitlines()[0][:80]})') from None
  except (OSError, zipfile.BadZipFile, EOFError) as e:
    raise refuse(f'is a damaged .npz ({type(e).__name__})') from None
  for name, a in ((v_key, v), ('theta', theta)):
    if a.dtype.kind not in 'fiu':
      raise refuse(f"has '{name}' of dtype {a.dtype} (expected real numbers)")
    if not np.all(np.isfinite(a)):
      raise refuse(f"has non-finite values in '{name}'")
  if v.ndim != 2 or 0 in v.shape:
    raise refuse(f"has '{v_key}' of shape {tuple(v.shape)} (expected (p, d))")
  if theta.ndim == 2 and theta.shape[1] == 1:
    theta = theta[:, 0]
  if theta.shape != (v.shape[0],):
    raise refuse(f"has 'theta' of shape {tuple(theta.shape)} (expected ({v.shape[0]},): one "
                 f"weight per row of '{v_key}')")
  return v, theta


def read_random_features(path: str,
                         field: str = 'victim.checkpoint') -> Tuple[np.ndarray, np.ndarray]:
  """(V (p, d), theta (p,)) of a random-features model saved as arrays; one-line refusals."""
  if not os.path.isfile(path):
    raise ForeignModelError(f'{field}: {path} is not a file; accepted with victim.format '
                            f"'npz': {RF_EXPECTED}")
  st = os.stat(path)
  return _read_rf(os.path.abspath(path), (st.st_mtime_ns, st.st_size), field)


def _no_training(victim, num_classes):
  raise ForeignModelError('victim.checkpoint: required for victim torch_mlp (recon does not '
                          'train PyTorch models); accepted: a safetensors state_dict')


registry.register('victim', 'flax_module', registry.Victim(
    pipeline='networks', build=lambda victim, num_classes: build_flax_module(victim),
    image_input=None))
registry.register('victim', 'torch_mlp', registry.Victim(
    pipeline='networks', build=_no_training))
