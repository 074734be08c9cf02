"""Hostile input files (issue #74, items 5-7), drawn at random sizes and fed to `recon.run`
in-process: model and data files that lie in their headers, inflate a thousandfold, hold
complex / integer / bool / float8 parameters, name one layer twice, have a zero-width or
transposed layer, and user modules that fail on import, in their forward pass or have no
parameters. Every case ends with exit status 2, exactly one line naming the field, no traceback,
no workdir left, and peak memory grows by at most MAX_RSS_MB (no file inflated before it was
sized)."""
import contextlib
import io
import json
import os
import random
import resource
import struct
import zipfile
from typing import Any, Callable, Dict, List, Tuple

import numpy as np
import pytest
from numpy.lib import format as npy_format
from safetensors.numpy import save_file

MAX_RSS_MB = 500


def raw_safetensors(path: str, tensors) -> None:
  """A safetensors file from {name: (dtype, shape, raw bytes)}: any dtype, any offsets."""
  header, body, offset = {}, b'', 0
  for name, (dtype, shape, raw) in tensors.items():
    header[name] = {'dtype': dtype, 'shape': list(shape),
                    'data_offsets': [offset, offset + len(raw)]}
    body, offset = body + raw, offset + len(raw)
  text = json.dumps(header).encode()
  with open(path, 'wb') as f:
    f.write(struct.pack('<Q', len(text)) + text + body)

Case = Tuple[Dict[str, Any], str]  # (config overrides, the field the error line must name)


def _liar_npz(path: str, name: str, shape, extra: Dict[str, np.ndarray]) -> None:
  with zipfile.ZipFile(path, 'w') as z:
    buf = io.BytesIO()
    npy_format.write_array_header_1_0(buf, {'descr': '<f8', 'fortran_order': False,
                                            'shape': tuple(shape)})
    z.writestr(name + '.npy', buf.getvalue() + b'\0' * 64)
    for key, value in extra.items():
      buf = io.BytesIO()
      np.save(buf, value)
      z.writestr(key + '.npy', buf.getvalue())


def _bomb_npz(path: str, name: str, rows: int, cols: int, extra) -> None:
  """A deflated member of zeros streamed in 16 MB pieces: ~1000x, never whole in memory."""
  with zipfile.ZipFile(path, 'w', zipfile.ZIP_DEFLATED) as z:
    with z.open(name + '.npy', 'w', force_zip64=True) as f:
      npy_format.write_array_header_1_0(f, {'descr': '<f8', 'fortran_order': False,
                                            'shape': (rows, cols)})
      left, chunk = rows * cols * 8, b'\0' * (1 << 24)
      while left > 0:
        f.write(chunk[:min(left, len(chunk))])
        left -= len(chunk)
    for key, value in extra.items():
      buf = io.BytesIO()
      np.save(buf, value)
      z.writestr(key + '.npy', buf.getvalue())


def _torch_state(rng: random.Random, d: int) -> Dict[str, np.ndarray]:
  h = rng.randint(4, 40)
  g = np.random.default_rng(rng.randint(0, 10 ** 6))
  return {'0.weight': g.normal(size=(h, d)).astype(np.float32),
          '0.bias': g.normal(size=(h,)).astype(np.float32),
          '2.weight': g.normal(size=(1, h)).astype(np.float32)}


def _model_cases(rng: random.Random, tmp: str, d: int) -> Dict[str, Callable[[], Case]]:
  torch = {'victim.name': 'torch_mlp', 'victim.format': 'safetensors'}
  rf = {'victim.name': 'random_features', 'victim.format': 'npz'}
  path = os.path.join(tmp, 'model')

  def dtype():
    state = _torch_state(rng, d)
    kind = rng.choice(['complex64', 'int8', 'bool', 'F8_E4M3', 'F8_E5M2', 'int64'])
    if kind.startswith('F8'):
      raw_safetensors(path, {k: (kind, v.shape, b'\0' * v.size) for k, v in state.items()})
    else:
      save_file({k: v.astype(kind) for k, v in state.items()}, path)
    return {**torch, 'victim.checkpoint': path}, 'victim.checkpoint'

  def names():
    state = _torch_state(rng, d)
    state['0' * rng.randint(2, 4) + '.weight'] = state['0.weight']
    save_file(state, path)
    return {**torch, 'victim.checkpoint': path}, 'victim.checkpoint'

  def width():
    state = _torch_state(rng, d)
    state['0.weight'], state['0.bias'] = np.zeros((0, d), np.float32), np.zeros(0, np.float32)
    state['2.weight'] = np.zeros((1, 0), np.float32)
    save_file(state, path)
    return {**torch, 'victim.checkpoint': path}, 'victim.checkpoint'

  def transposed():
    state = _torch_state(rng, d)
    state['0.weight'] = np.ascontiguousarray(state['0.weight'].T)
    if rng.random() < 0.5:
      del state['0.bias']
    save_file(state, path)
    return {**torch, 'victim.checkpoint': path}, 'victim.checkpoint'

  def st_liar():
    raw_safetensors(path, {'0.weight': ('F32', (10 ** rng.randint(5, 7), 10 ** 6), b'\0' * 64)})
    return {**torch, 'victim.checkpoint': path}, 'victim.checkpoint'

  def rf_liar():
    _liar_npz(path, 'V', (10 ** rng.randint(6, 9), 10 ** 4), {'theta': np.ones(4)})
    return {**rf, 'victim.checkpoint': path}, 'victim.checkpoint'

  def rf_bomb():
    rows = rng.randint(100_000, 250_000)  # 0.8-2 GB of zeros, about 1000x deflated
    _bomb_npz(path, 'V', rows, 1000, {'theta': np.ones(rows)})
    return {**rf, 'victim.checkpoint': path}, 'victim.checkpoint'

  return {'dtype': dtype, 'names': names, 'width': width, 'transposed': transposed,
          'st_liar': st_liar, 'rf_liar': rf_liar, 'rf_bomb': rf_bomb}


def _data_cases(rng: random.Random, tmp: str, good_model: str) -> Dict[str, Callable[[], Case]]:
  path = os.path.join(tmp, 'data.npz')
  torch = {'victim.name': 'torch_mlp', 'victim.format': 'safetensors',
           'victim.checkpoint': good_model}

  def data_liar():
    _liar_npz(path, 'x', (10 ** rng.randint(6, 9), 10 ** rng.randint(3, 6)), {})
    return {**torch, 'data.path': path}, 'config.data.path'

  def data_bomb():
    _bomb_npz(path, 'x', rng.randint(100_000, 250_000), 1000, {})
    return {**torch, 'data.path': path}, 'config.data.path'

  return {'data_liar': data_liar, 'data_bomb': data_bomb}


MODULES = {
    'import_raises': "raise RuntimeError('boom')\n",
    'syntax': 'def f(:\n  pass\n',
    'exits': 'import sys\nsys.exit(0)\n',
    'forward_raises': ('import flax.linen as nn\nclass MLP(nn.Module):\n  @nn.compact\n'
                       "  def __call__(self, x):\n    raise ValueError('no')\n"),
    'no_params': ('import flax.linen as nn\nclass MLP(nn.Module):\n  @nn.compact\n'
                  '  def __call__(self, x):\n    return x.sum(-1, keepdims=True)\n'),
}


def _module_case(rng: random.Random, tmp: str, serial: int) -> Case:
  from flax import serialization  # pylint: disable=import-outside-toplevel
  kind = rng.choice(sorted(MODULES))
  name = f'soak_{kind}_{serial}'
  with open(os.path.join(tmp, name + '.py'), 'w') as f:
    f.write(MODULES[kind])
  path = os.path.join(tmp, 'm.msgpack')
  with open(path, 'wb') as f:
    f.write(serialization.to_bytes({'Dense_0': {'kernel': np.ones((8, 4), np.float32)}}))
  return ({'victim.name': 'flax_module', 'victim.format': 'msgpack',
           'victim.module': f'{name}:MLP', 'victim.checkpoint': path}, 'victim.module')


def run_case(overrides: Dict[str, Any], field: str, workdir: str) -> List[str]:
  """Problems of one case (empty when it was refused as promised)."""
  from configs import audit  # pylint: disable=import-outside-toplevel
  import recon  # pylint: disable=import-outside-toplevel
  c = audit.get_config()
  c.attack.max_steps = 5
  for key, value in overrides.items():
    section, name = key.split('.', 1)
    c[section][name] = value
  lines: List[str] = []
  err = io.StringIO()
  with contextlib.redirect_stderr(err):
    try:
      recon.run(c, workdir)
      rc = 0
    except recon.RunError as e:  # the CLI's one line and exit status
      rc = e.exit_code
      lines.append(str(e))
  problems = []
  if rc != 2:
    problems.append(f'exit {rc}')
  if len(lines) != 1 or not lines[0].startswith(field + ':'):
    problems.append(f'lines {lines[:2]!r} (expected one naming {field})')
  if 'Traceback' in err.getvalue():
    problems.append('a traceback')
  if os.path.exists(workdir):
    problems.append('workdir left behind')
  return problems


@pytest.mark.slow
def test_a_short_input_soak_holds_every_case(tmp_path, monkeypatch):
  rng = random.Random(1)
  tmp = str(tmp_path)
  monkeypatch.syspath_prepend(tmp)
  data = os.path.join(tmp, 'truth.npz')
  np.savez(data, x=np.random.default_rng(0).normal(size=(4, 8)))
  good = os.path.join(tmp, 'good.safetensors')
  save_file(_torch_state(rng, 8), good)
  rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
  problems, kinds = [], []
  for serial in range(12):
    makers = {**_model_cases(rng, tmp, 8), **_data_cases(rng, tmp, good)}
    kind = rng.choice(sorted(makers) + ['module'] * 2)
    overrides, field = (_module_case(rng, tmp, serial) if kind == 'module'
                        else makers[kind]())
    overrides.setdefault('data.path', data)
    found = run_case(overrides, field, os.path.join(tmp, f'w{serial}'))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024 - rss0
    if rss > MAX_RSS_MB:
      found.append(f'peak memory grew by {rss:.0f} MB')
    problems += [f'{kind} #{serial}: {p}' for p in found]
    kinds.append(kind)
  assert problems == [], problems
  assert len(set(kinds)) > 3, kinds
