"""A PyTorch MLP's state_dict from safetensors, read without torch (victim 'torch_mlp').

An `nn.Sequential` of `nn.Linear` layers with one activation between them, whose
`state_dict()` was saved with safetensors: its header is read first (names, dtypes, shapes,
sizes: recon/data/headers.py), the tensors with `safetensors.numpy` only when it passes.
Layer `i` of the Sequential ('i.weight' (out, in), 'i.bias') becomes the Dense collection
'layer_i' with kernel = weight^T: the Flax forward pass is x -> W_k s(... s(W_0 x + b_0) ...)
+ b_k, PyTorch's exactly (GELU is the erf form, nn.GELU()'s default). Refused in one line
each: a dtype outside float16 / bfloat16 / float32 / float64, two names for one parameter
('0.weight' and '00.weight'), a layer of width 0, a weight stored (in, out) (named as
transposed, with the layout PyTorch uses), a broken chain of widths, non-finite values.
"""
from __future__ import annotations

import re
from typing import Any, Dict, Optional, Tuple

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np

from recon.data import headers
from recon.models import param_checks
from recon.models.param_checks import ForeignModelError

TORCH_ACTIVATIONS = ('relu', 'tanh', 'gelu')
_first_line, _looks_like = param_checks.first_line, param_checks.looks_like


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


SAFETENSORS_EXPECTED = ("accepted with victim.format 'safetensors': "
                        'safetensors.torch.save_file(model.state_dict(), path) of float weights '
                        f'({param_checks.ACCEPTED})')


def read_state_dict(path: str, field: str = 'victim.checkpoint') -> Dict[str, np.ndarray]:
  """{name: array} of a safetensors file, read without torch: its header first (names,
  dtypes, shapes and sizes, recon/data/headers.py), the tensors only when it passes."""
  refuse = lambda what: ForeignModelError(f'{field}: {path} {what}; {SAFETENSORS_EXPECTED}')  # noqa: E731
  why = headers.what_is(path)
  if why is not None:
    raise refuse(why)
  kind = headers.sniff(path)
  if kind != 'safetensors':
    raise refuse(f'is not a safetensors file{_looks_like(path) or " (no JSON header)"}')
  try:
    found = headers.entries(path, 'safetensors')
  except headers.HeaderError as e:
    raise refuse(str(e)) from None
  problem = param_checks.dtype_problem({k: e.dtype for k, e in found.items()})
  if problem is not None:
    raise refuse(problem)
  _refuse_ambiguous(found, refuse)
  from safetensors import SafetensorError  # pylint: disable=import-outside-toplevel
  from safetensors.numpy import load_file  # pylint: disable=import-outside-toplevel
  try:
    return load_file(path)
  except (SafetensorError, OSError, ValueError, TypeError, AttributeError) as e:
    raise refuse(f'is not a readable safetensors file ({type(e).__name__}: '
                 f'{_first_line(e)})') from None


def _refuse_ambiguous(names, refuse) -> None:
  """Two names for one parameter ('0.weight' and '00.weight': both layer 0's weight)."""
  seen: Dict[Tuple[int, str], str] = {}
  for name in names:
    match = _KEY.match(name)
    if match is None:
      continue
    key = (int(match.group(1)), match.group(2))
    if key in seen:
      raise refuse(f'has both {seen[key]!r} and {name!r}, which name the same parameter (layer '
                   f'{key[0]}\'s {key[1]}: one name per parameter)')
    seen[key] = name


def _transposed_message(index: int, weight: np.ndarray, first: bool, field: str) -> str:
  out_f, in_f = weight.shape  # as stored; the layer is in_f -> out_f read the other way
  d = f'; d = {out_f}' if first else ''
  return (f"{field}: key '{index}.weight' has shape {tuple(weight.shape)}, which looks "
          f'transposed (a {out_f} -> {in_f} layer{d}); accepted: (out_features, in_features) = '
          f"({in_f}, {out_f}), as PyTorch's nn.Linear stores it (weight.T if it was saved as "
          '(in, out))')


def _transposed(index: int, entry: Dict[str, np.ndarray], fan_in: Optional[int],
                previous: Optional[Tuple[int, np.ndarray, bool]], field: str) -> Optional[str]:
  """The refusal of a weight stored (in, out) instead of PyTorch's (out, in), when its bias,
  the layer before or the layer after tells (else None): this layer's, or the previous one's
  when this layer reads the previous weight's second dimension."""
  weight, bias = entry['weight'], entry.get('bias')
  out_f, in_f = weight.shape
  if out_f != in_f and bias is not None and bias.shape == (in_f,) and fan_in in (None, out_f):
    return _transposed_message(index, weight, fan_in is None, field)
  if out_f != in_f and fan_in is not None and fan_in == out_f:
    return _transposed_message(index, weight, False, field)
  if previous is not None and in_f != fan_in:
    prev_index, prev, prev_first = previous
    if prev.shape[1] == in_f and prev.shape[0] != prev.shape[1]:
      return _transposed_message(prev_index, prev, prev_first, field)
  return None


def _layers(state: Dict[str, np.ndarray], field: str) -> Dict[int, Dict[str, np.ndarray]]:
  """{Sequential index: {'weight': ..., 'bias': ...}} of a state_dict's keys."""
  _refuse_ambiguous(state, lambda what: ForeignModelError(f'{field}: the state_dict {what}'))
  layers: Dict[int, Dict[str, np.ndarray]] = {}
  for key, value in state.items():
    match = _KEY.match(key)
    if match is None:
      raise ForeignModelError(f'{field}: key {key!r} is not a Linear layer of an nn.Sequential; '
                              "accepted: keys '<index>.weight' and '<index>.bias'")
    layers.setdefault(int(match.group(1)), {})[match.group(2)] = np.asarray(value)
  if not layers:
    raise ForeignModelError(f'{field}: no tensors; accepted: an MLP state_dict')
  return layers


def _check_layer(index: int, entry: Dict[str, np.ndarray],
                 previous: Optional[Tuple[int, np.ndarray, bool]], field: str) -> None:
  """One Linear layer's weight (out, in), bias (out,), finite, non-zero widths."""
  weight, bias = entry.get('weight'), entry.get('bias')
  if weight is None or weight.ndim != 2:
    raise ForeignModelError(f"{field}: key '{index}.weight' missing or not 2-D (shape "
                            f'{None if weight is None else weight.shape}); accepted: '
                            '(out_features, in_features)')
  if 0 in weight.shape:
    raise ForeignModelError(f"{field}: key '{index}.weight' has shape {tuple(weight.shape)}, a "
                            'layer of width 0; accepted: (out_features, in_features), both >= 1')
  fan_in = None if previous is None else previous[1].shape[0]
  transposed = _transposed(index, entry, fan_in, previous, field)
  if transposed is not None:
    raise ForeignModelError(transposed)
  out_f, in_f = weight.shape
  if fan_in is not None and in_f != fan_in:
    raise ForeignModelError(f"{field}: key '{index}.weight' has in_features {in_f} but the "
                            f'layer before outputs {fan_in}; accepted: a chain of Linear layers')
  if bias is not None and bias.shape != (out_f,):
    raise ForeignModelError(f"{field}: key '{index}.bias' has shape {bias.shape}; accepted: "
                            f'({out_f},)')
  for name, arr in entry.items():
    dtype = param_checks.dtype_name(arr)
    if dtype not in headers.FLOAT_DTYPES:
      raise ForeignModelError(f"{field}: key '{index}.{name}' has dtype {dtype}; accepted: "
                              f'{param_checks.ACCEPTED}')
    if not np.all(np.isfinite(arr)):
      raise ForeignModelError(f"{field}: key '{index}.{name}' holds non-finite values; "
                              'accepted: finite weights')


def torch_mlp(state: Dict[str, np.ndarray], activation: str,
              field: str = 'victim.checkpoint') -> Tuple[TorchMLP, Dict[str, Any], int]:
  """(module, Flax params, input dimension d) of an nn.Sequential MLP's state_dict."""
  if activation not in TORCH_ACTIVATIONS:
    raise ForeignModelError(f'victim.activation: {activation!r} for torch_mlp; accepted: '
                            f'{", ".join(TORCH_ACTIVATIONS)} (the nn.ReLU / nn.Tanh / nn.GELU '
                            'between the Linear layers)')
  layers = _layers(state, field)
  indices = tuple(sorted(layers))
  params, widths, biases, previous = {}, [], [], None
  for index in indices:
    entry = layers[index]
    _check_layer(index, entry, previous, field)
    weight, bias = entry['weight'], entry.get('bias')
    layer = {'kernel': np.ascontiguousarray(weight.T)}
    if bias is not None:
      layer['bias'] = bias
    params[f'layer_{index}'] = layer
    widths.append(weight.shape[0])
    biases.append(bias is not None)
    previous = (index, weight, previous is None)
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
