"""The mutation harness (scripts/mutations.py): its entries are current, and it always restores."""
import os
import re
import subprocess

import pytest

from scripts import mutations

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_entry_names_one_line_of_its_file_and_existing_tests():
  """A stale entry (its fragment edited away or duplicated) fails here, not mid-run."""
  ids = [m.id for m in mutations.MUTATIONS]
  assert len(ids) == len(set(ids))
  for m in mutations.MUTATIONS:
    assert mutations.locate(ROOT, m) > 0
    assert m.tests and all(os.path.isfile(os.path.join(ROOT, t)) for t in m.tests), m.id
    for node in m.slow:
      path, name = node.split('::')
      with open(os.path.join(ROOT, path), encoding='utf-8') as f:
        assert re.search(rf'^def {name}\(', f.read(), re.M), node


def _repo(tmp_path):
  subprocess.run(['git', 'init', '-q', str(tmp_path)], check=True)
  (tmp_path / 'mod.py').write_text('def f(a, b):\n  return a < b\n')
  git = ['git', '-C', str(tmp_path), '-c', 'user.name=t', '-c', 'user.email=t@t']
  subprocess.run(git + ['add', 'mod.py'], check=True)
  subprocess.run(git + ['commit', '-q', '-m', 'x'], check=True)
  return mutations.Mutation('lt_le', 'mod.py', 'return a < b', 'return a <= b', ('t.py',), 'x')


def test_a_mutation_is_applied_for_the_body_and_restored_even_when_it_raises(tmp_path):
  m = _repo(tmp_path)
  path = tmp_path / 'mod.py'
  before, mtime = path.read_bytes(), os.stat(path).st_mtime_ns
  with pytest.raises(KeyError):
    with mutations.applied(str(tmp_path), m) as line:
      assert line == 2 and 'return a <= b' in path.read_text()
      raise KeyError('interrupted')
  assert path.read_bytes() == before and os.stat(path).st_mtime_ns == mtime
  mutations.refuse_dirty(str(tmp_path), [m])  # clean again


def test_a_dirty_file_is_refused_and_a_stale_fragment_is_an_error(tmp_path):
  m = _repo(tmp_path)
  (tmp_path / 'mod.py').write_text('def f(a, b):\n  return a < b  # edited\n')
  with pytest.raises(RuntimeError, match='uncommitted'):
    mutations.refuse_dirty(str(tmp_path), [m])
  stale = mutations.Mutation('gone', 'mod.py', 'return a > b', 'return a >= b', ('t.py',), 'x')
  with pytest.raises(ValueError, match='0 times'):
    mutations.locate(str(tmp_path), stale)
