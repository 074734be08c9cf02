"""Atomic writes (recon.runtime.io) on their own: what each writer leaves, the mode it
gives, what a crash mid-write leaves (the previous file, no temporary), JSON of NumPy and
non-finite values. The run-level failure tests are in tests/test_reliability.py."""
import json
import os
import zipfile

import numpy as np
import pytest

from recon.runtime import io, ownership


@pytest.fixture
def umask_027():
  old = os.umask(0o027)
  yield
  os.umask(old)


class _Rec:
  def to_dict(self):
    return {'kind': 'rec', 'v': np.float32(0.5)}


def test_json_of_numpy_tuples_non_finite_and_to_dict_objects(tmp_path):
  obj = {1: (np.int64(3), np.arange(2)), 'f': [float('inf'), -float('inf'), float('nan'), 1.5],
         'a': np.array([[1.0, np.inf]]), 'g': np.float64('nan'), 'r': _Rec(), 'n': None,
         's': 'text', 'b': True}
  path = tmp_path / 'x.json'
  io.write_json(str(path), obj)
  text = path.read_text()
  assert text.endswith('}\n') and text.startswith('{\n  "1": [')  # indent 2, keys as written
  assert list(json.loads(text)) == ['1', 'f', 'a', 'g', 'r', 'n', 's', 'b']
  expect = {'1': [3, [0, 1]], 'f': ['inf', '-inf', 'nan', 1.5], 'a': [[1.0, 'inf']],
            'g': 'nan', 'r': {'kind': 'rec', 'v': 0.5}, 'n': None, 's': 'text', 'b': True}
  assert io.read_json(str(path)) == expect
  assert io.normalized(obj) == expect
  assert type(io.read_json(str(path))['1'][0]) is int


def test_each_writer_leaves_exactly_its_content_and_no_temporary(tmp_path):
  io.write_text(str(tmp_path / 'a.txt'), 'héllo\n')
  io.write_bytes(str(tmp_path / 'b.bin'), b'\x00\xff')
  x = np.arange(6.0).reshape(2, 3)
  io.write_npz(str(tmp_path / 'c.npz'), x=x, y=[1, 2])
  io.write_npz_compressed(str(tmp_path / 'd.npz'), z=np.zeros(4000))
  assert (tmp_path / 'a.txt').read_bytes() == 'héllo\n'.encode()
  assert (tmp_path / 'b.bin').read_bytes() == b'\x00\xff'
  with np.load(tmp_path / 'c.npz') as f:
    assert sorted(f.files) == ['x', 'y']
    np.testing.assert_array_equal(f['x'], x)
    np.testing.assert_array_equal(f['y'], [1, 2])
  with np.load(tmp_path / 'd.npz') as f:
    np.testing.assert_array_equal(f['z'], np.zeros(4000))
  with zipfile.ZipFile(tmp_path / 'c.npz') as z:
    assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_STORED}
  with zipfile.ZipFile(tmp_path / 'd.npz') as z:
    assert {i.compress_type for i in z.infolist()} == {zipfile.ZIP_DEFLATED}
  assert os.path.getsize(tmp_path / 'd.npz') < 1000  # 32 kB of zeros, compressed
  assert sorted(os.listdir(tmp_path)) == ['a.txt', 'b.bin', 'c.npz', 'd.npz']


def test_a_writer_creates_missing_folders(tmp_path):
  io.write_text(str(tmp_path / 'a' / 'b' / 'c.txt'), 'x')
  assert (tmp_path / 'a' / 'b' / 'c.txt').read_text() == 'x'


def test_outputs_get_open_s_mode_under_the_umask(tmp_path, umask_027):
  io.write_text(str(tmp_path / 'a.txt'), 'x')
  io.write_json(str(tmp_path / 'a.json'), {})
  for name in ('a.txt', 'a.json'):
    assert os.stat(tmp_path / name).st_mode & 0o777 == 0o640, name


def test_umask_is_read_without_changing_it(umask_027):
  assert io.umask() == 0o027
  assert os.umask(0o027) == 0o027


def test_umask_is_read_from_proc_without_setting_it(monkeypatch, umask_027):
  """Where /proc allows, umask() never sets the mask, even for a moment (another thread may
  be creating a file then)."""
  calls = []
  monkeypatch.setattr(io.os, 'umask', lambda m: calls.append(m) or 0o027)
  assert io.umask() == 0o027 and calls == []


def test_umask_without_proc_falls_back_and_restores_it(monkeypatch, umask_027):
  def no_proc(*a, **k):
    raise OSError('no /proc')

  monkeypatch.setattr(io, 'open', no_proc, raising=False)
  assert io.umask() == 0o027
  assert os.umask(0o027) == 0o027  # restored


def test_a_crash_mid_write_leaves_the_previous_file_and_no_temporary(tmp_path):
  path = tmp_path / 'out.txt'
  io.write_text(str(path), 'previous')

  def crash(f):
    f.write(b'half of the new')
    raise KeyboardInterrupt  # a BaseException, not only an Exception

  with pytest.raises(KeyboardInterrupt):
    io._atomic_write(str(path), crash)
  assert path.read_text() == 'previous'
  assert os.listdir(tmp_path) == ['out.txt']


def test_the_temporary_lies_beside_the_target_named_after_it(tmp_path, monkeypatch):
  """Same folder (the rename is atomic only within one file system), '.NAME.XXXX.tmp'
  (what ownership's stale-temporary cleanup recognises)."""
  seen = []
  real = os.replace

  def spy(src, dst):
    seen.append((src, dst))
    return real(src, dst)

  monkeypatch.setattr(io.os, 'replace', spy)
  io.write_text(str(tmp_path / 'sub' / 'r.json'), '{}')
  (src, dst), = seen
  assert os.path.dirname(src) == str(tmp_path / 'sub') and dst == str(tmp_path / 'sub' / 'r.json')
  name = os.path.basename(src)
  assert name.startswith('.r.json.') and name.endswith('.tmp')
  assert ownership._TEMP.fullmatch(name).group('name') == 'r.json'


def test_a_write_is_synced_before_the_rename(tmp_path, monkeypatch):
  order = []
  real_fsync, real_replace = os.fsync, os.replace
  monkeypatch.setattr(io.os, 'fsync', lambda fd: (order.append('fsync'), real_fsync(fd))[1])
  monkeypatch.setattr(io.os, 'replace', lambda a, b: (order.append('replace'), real_replace(a, b))[1])
  io.write_bytes(str(tmp_path / 'x'), b'data')
  assert order == ['fsync', 'replace']


def test_a_write_in_a_workdir_is_claimed_in_its_manifest_first(tmp_path):
  w = tmp_path / 'w'
  w.mkdir()
  ownership._write(str(w), set())
  io.write_json(str(w / 'summary.json'), {'a': 1})
  io.write_text(str(w / 'model' / 'x.txt'), 'x')
  assert ownership.owned(str(w)) == {'summary.json', 'model'}
  io.claim(str(w / 'checkpoints'))
  assert ownership.owned(str(w)) == {'summary.json', 'model', 'checkpoints'}
  assert not (w / 'checkpoints').exists()


def test_a_figure_is_written_as_png_at_its_dpi(tmp_path):
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  fig = plt.figure(figsize=(2, 1))
  try:
    with matplotlib.rc_context({'savefig.format': 'svg'}):  # a user's matplotlibrc: still PNG
      io.write_figure(str(tmp_path / 'f.png'), fig, dpi=30)
    io.write_figure(str(tmp_path / 'g.png'), fig)
  finally:
    plt.close(fig)
  data = (tmp_path / 'f.png').read_bytes()
  assert data[:8] == b'\x89PNG\r\n\x1a\n'
  width, height = int.from_bytes(data[16:20], 'big'), int.from_bytes(data[20:24], 'big')
  assert (width, height) == (60, 30)
  g = (tmp_path / 'g.png').read_bytes()
  assert (int.from_bytes(g[16:20], 'big'), int.from_bytes(g[20:24], 'big')) == (200, 100)
