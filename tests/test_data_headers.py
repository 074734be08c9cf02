"""Array files sized from their headers before they are read (recon/data/headers.py): a header
that claims 10^12 elements, an .npz that inflates a thousandfold, a safetensors header whose
offsets disagree with the file, each refused in one line without reading the arrays."""
import io
import json
import os
import struct
import zipfile

import numpy as np
import pytest
from numpy.lib import format as npy_format

from recon import main
from recon.data import auditor, headers
from recon.data.base import DataError
from recon.models import foreign


def lying_npz(path, name, shape, extra=None):
  """An .npz whose member `name` claims `shape` (float64) but holds 64 bytes."""
  with zipfile.ZipFile(path, 'w') as z:
    buf = io.BytesIO()
    npy_format.write_array_header_1_0(buf, {'descr': '<f8', 'fortran_order': False,
                                            'shape': shape})
    z.writestr(name + '.npy', buf.getvalue() + b'\0' * 64)
    for key, value in (extra or {}).items():
      buf = io.BytesIO()
      np.save(buf, value)
      z.writestr(key + '.npy', buf.getvalue())


def zeros_npz(path, name, shape, extra=None):
  """A compressed .npz of zeros: a few KB on disk that inflate to shape's float64 bytes."""
  arrays = {name: np.zeros(shape), **(extra or {})}
  np.savez_compressed(path, **arrays)


def raw_safetensors(path, tensors):
  """A safetensors file from {name: (dtype, shape, raw bytes)}, written by hand (any dtype,
  any offsets)."""
  header, body, offset = {}, b'', 0
  for name, (dtype, shape, raw) in tensors.items():
    header[name] = {'dtype': dtype, 'shape': list(shape),
                    'data_offsets': [offset, offset + len(raw)]}
    body, offset = body + raw, offset + len(raw)
  text = json.dumps(header).encode()
  with open(path, 'wb') as f:
    f.write(struct.pack('<Q', len(text)) + text + body)


@pytest.fixture
def no_loading(monkeypatch):
  """np.load raises: a refusal must come from the headers, before any array is read."""
  def refuse(*args, **kwargs):
    raise AssertionError('np.load called before the headers were checked')
  monkeypatch.setattr(np, 'load', refuse)


def test_entries_read_shapes_and_dtypes_without_the_arrays(tmp_path):
  np.savez(tmp_path / 'a.npz', x=np.ones((3, 4), np.float32), y=np.arange(3))
  got = headers.entries(str(tmp_path / 'a.npz'), 'npz')
  assert got['x'].shape == (3, 4) and got['x'].dtype == 'float32' and got['x'].nbytes == 48
  assert got['y'].kind == 'i'
  np.save(tmp_path / 'a.npy', np.ones((2, 5)))
  assert headers.entries(str(tmp_path / 'a.npy'), 'npy')[''].shape == (2, 5)
  kinds = {'a.npz': 'npz', 'a.npy': 'npy'}
  (tmp_path / 'p.bin').write_bytes(__import__('pickle').dumps({'x': 1}))
  raw_safetensors(tmp_path / 's.bin', {'w': ('F32', (1,), b'\0' * 4)})
  kinds.update({'p.bin': 'pickle', 's.bin': 'safetensors'})
  for name, kind in kinds.items():
    assert headers.sniff(str(tmp_path / name)) == kind, name


def test_a_header_of_a_trillion_elements_is_refused_before_reading(tmp_path, no_loading):
  lying_npz(tmp_path / 'liar.npz', 'x', (10 ** 6, 10 ** 6))
  with pytest.raises(headers.HeaderError, match=r"claims 7.45e\+03 GB of arrays .*'x' "
                                                r'\(1000000, 1000000\) float64'):
    headers.entries(str(tmp_path / 'liar.npz'), 'npz')
  with pytest.raises(DataError, match='config.data.path: .*claims .* of arrays') as e:
    auditor.read(str(tmp_path / 'liar.npz'))
  assert '\n' not in str(e.value)
  lying_npz(tmp_path / 'rf.npz', 'V', (10 ** 6, 10 ** 6), extra={'theta': np.ones(3)})
  with pytest.raises(foreign.ForeignModelError, match="victim.checkpoint: .*claims"):
    foreign.read_random_features(str(tmp_path / 'rf.npz'))


def test_an_npz_that_inflates_a_thousandfold_is_refused_before_inflating(tmp_path, monkeypatch,
                                                                         no_loading):
  monkeypatch.setattr(headers, 'INFLATION_FLOOR', 2 ** 20)  # the bomb in 8 MB, not 2 GB
  zeros_npz(tmp_path / 'bomb.npz', 'x', (1000, 1000), extra={'y': np.zeros(1000)})
  assert os.path.getsize(tmp_path / 'bomb.npz') < 8e6 / 100
  with pytest.raises(DataError, match=r"'x' of shape \(1000, 1000\) \(float64\) that inflates "
                                      r'to 7.63 MB from .* on disk \(more than 100x'):
    auditor.read(str(tmp_path / 'bomb.npz'))
  zeros_npz(tmp_path / 'rf.npz', 'V', (1000, 1000), extra={'theta': np.ones(1000)})
  with pytest.raises(foreign.ForeignModelError, match="'V' of shape .* that inflates"):
    foreign.random_features_shape(str(tmp_path / 'rf.npz'))


def test_sizes_under_the_host_memory_and_the_ratio_pass():
  small = {'x': headers.Entry((10, 10), 'float64', 'f', 800, 10)}  # under the floor
  headers.check_sizes(small, available=10 ** 9)
  with pytest.raises(headers.HeaderError, match='host has 100 bytes of memory available'):
    headers.check_sizes(small, available=100)


def test_a_safetensors_header_must_agree_with_the_file(tmp_path):
  raw_safetensors(tmp_path / 'big.safetensors', {'0.weight': ('F32', (10 ** 6, 10 ** 6),
                                                              b'\0' * 64)})
  with pytest.raises(headers.HeaderError, match=r"'0.weight' of shape \(1000000, 1000000\).*"
                                                'damaged or truncated'):
    headers.entries(str(tmp_path / 'big.safetensors'), 'safetensors')
  raw_safetensors(tmp_path / 'odd.safetensors', {'w': ('Q9', (1,), b'\0')})
  with pytest.raises(headers.HeaderError, match="unknown dtype 'Q9'"):
    headers.entries(str(tmp_path / 'odd.safetensors'), 'safetensors')


def test_paths_that_are_not_files_are_named_for_what_they_are(tmp_path):
  os.mkfifo(tmp_path / 'fifo')
  os.symlink(tmp_path / 'gone', tmp_path / 'dangling')
  (tmp_path / 'dir').mkdir()
  for name, words in (('missing', 'does not exist'), ('dir', 'is a directory'),
                      ('dangling', 'dangling symbolic link'), ('fifo', 'not a regular file')):
    assert words in headers.what_is(str(tmp_path / name)), name
  np.save(tmp_path / 'ok.npy', np.ones(2))
  assert headers.what_is(str(tmp_path / 'ok.npy')) is None


@pytest.mark.parametrize('maker', ['liar', 'bomb'])
def test_hostile_data_files_exit_2_in_one_line_leaving_nothing(maker, tmp_path, capsys,
                                                               monkeypatch):
  from configs import rf_synthetic  # pylint: disable=import-outside-toplevel
  monkeypatch.setattr(headers, 'INFLATION_FLOOR', 2 ** 20)
  path = tmp_path / 'x.npz'
  if maker == 'liar':
    lying_npz(path, 'x', (10 ** 6, 10 ** 6), extra={'y': np.zeros(10 ** 6)})
  else:
    zeros_npz(path, 'x', (1000, 1000), extra={'y': np.zeros(1000)})
  c = rf_synthetic.get_config()
  c.data.name, c.data.path, c.data.n, c.data.d = 'file', str(path), None, None
  assert main.execute(c, str(tmp_path / 'w')) == 2
  err = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
  assert len(err) == 1 and err[0].startswith('error: config.data.path:'), err
  assert not (tmp_path / 'w').exists()
