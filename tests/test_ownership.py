"""recon/runtime/ownership.py: recon touches only what it wrote (the workdir manifest)."""
import json
import os
import random
import subprocess

import pytest

from configs import rf_synthetic
from recon import errors, main
from recon.runtime import io, ownership, runs


def _tiny(overrides=None):
  c = rf_synthetic.get_config()
  c.data.n, c.data.d, c.victim.p, c.attack.max_steps = 3, 4, 120, 50
  c.update_from_flattened_dict(overrides or {})
  return c


def _user_files(folder):
  """A user's things: notes, a photo folder, a symbolic link, a git repository."""
  (folder / 'photos').mkdir(parents=True)
  (folder / 'photos' / 'cat.jpg').write_bytes(b'\xff\xd8jpeg')
  (folder / 'notes.txt').write_text('mine')
  (folder / '.hidden.abc123.tmp').write_text('looks like a temp, is the user\'s')
  os.symlink(str(folder / 'notes.txt'), str(folder / 'link'))
  return sorted(os.listdir(folder))


def test_claim_lists_the_top_level_entry_in_the_nearest_workdir(tmp_path):
  w = tmp_path / 'w'
  assert ownership.take(str(w)) is True
  io.write_json(str(w / 'a' / 'b' / 'c.json'), {})
  io.write_text(str(w / 'summary.json'), 'x')
  ownership.claim(str(w / 'checkpoints'))
  assert ownership.owned(str(w)) == {'a', 'summary.json', 'checkpoints'}
  # A nested workdir lists its own entries; the outer one lists the nested folder.
  assert ownership.take(str(w / 'n5')) is True
  io.write_text(str(w / 'n5' / 'sweep.json'), '{}')
  assert ownership.owned(str(w / 'n5')) == {'sweep.json'}
  assert 'n5' in ownership.owned(str(w))
  # Outside any workdir nothing is recorded.
  io.write_text(str(tmp_path / 'plain.txt'), 'x')
  assert not os.path.exists(tmp_path / ownership.MANIFEST)


def test_take_refuses_a_folder_with_entries_recon_did_not_write(tmp_path):
  w = tmp_path / 'w'
  before = _user_files(w)
  with pytest.raises(errors.ExperimentError, match=r'holds entries recon did not write '
                     r'\(\.hidden\.abc123\.tmp, link, notes\.txt, photos\)'):
    ownership.take(str(w))
  assert sorted(os.listdir(w)) == before
  # With a manifest, an unlisted entry is refused all the same.
  v = tmp_path / 'v'
  ownership.take(str(v))
  (v / 'mine.txt').write_text('x')
  with pytest.raises(errors.ExperimentError, match=r'\(mine\.txt\) that its manifest does not'):
    ownership.take(str(v))


@pytest.mark.parametrize('where', ['root', 'home', 'repository'])
def test_special_folders_are_refused(tmp_path, monkeypatch, where):
  if where == 'root':
    path = os.path.abspath(os.sep)
  elif where == 'home':
    monkeypatch.setenv('HOME', str(tmp_path))
    path = str(tmp_path)
  else:
    path = str(tmp_path / 'repo')
    os.makedirs(os.path.join(path, '.git'))
  with pytest.raises(errors.ExperimentError, match='workdir: .* is (the file system|the home|'
                     'the root of a repository)'):
    runs.check_workdir(path)


def test_stale_temps_are_removed_only_for_listed_names(tmp_path):
  w = tmp_path / 'w'
  ownership.take(str(w))
  ownership.claim(str(w / 'summary.json'))
  (w / '.summary.json.k2j3h4.tmp').write_text('partial')
  (w / '.model.abcdefgh.tmp').mkdir()  # 'model' is not listed: not recon's
  (w / '.notes.txt.abcdef.tmp').write_text('the user\'s')
  assert runs.remove_stale_temps(str(w)) == 1
  assert sorted(os.listdir(w)) == sorted([ownership.MANIFEST, '.model.abcdefgh.tmp',
                                          '.notes.txt.abcdef.tmp'])


def test_remove_unlinks_a_link_and_never_follows_it(tmp_path):
  target = tmp_path / 'precious'
  target.mkdir()
  (target / 'keep.txt').write_text('x')
  link = tmp_path / 'w_model'
  os.symlink(str(target), str(link))
  ownership.remove(str(link))
  assert not os.path.lexists(link) and (target / 'keep.txt').exists()


def test_overwrite_keeps_every_user_file_and_a_repository(tmp_path, capsys):
  """#74: overwrite on a folder holding a user's files and a git repository deletes nothing;
  it is refused in one line."""
  w = tmp_path / 'w'
  before = _user_files(w)
  subprocess.run(['git', 'init', '-q', str(w / 'project')], check=True)
  (w / 'project' / 'main.py').write_text('print(1)')
  before = sorted(os.listdir(w))
  project = sorted(os.listdir(w / 'project'))
  assert main.execute(_tiny({'run.overwrite': True}), str(w)) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and 'holds entries recon did not write' in err[0], err
  assert sorted(os.listdir(w)) == before
  assert sorted(os.listdir(w / 'project')) == project
  # A plain run is refused the same way: a run's outputs never mix with a user's files.
  assert main.execute(_tiny(), str(w)) == 2
  assert sorted(os.listdir(w)) == before


def test_an_empty_folder_is_used_and_a_refused_run_leaves_it_empty(tmp_path, capsys):
  w = tmp_path / 'w'
  w.mkdir()
  assert main.execute(_tiny({'attack.lr': -1.0}), str(w)) == 2
  assert os.listdir(w) == []
  assert main.execute(_tiny(), str(w)) == 0
  listed = ownership.owned(str(w))
  assert set(os.listdir(w)) - {ownership.MANIFEST} == listed


@pytest.mark.slow
def test_soak_user_files_survive_overwrite_resume_and_kills(tmp_path):
  """A seeded mix of runs (plain, overwrite, resume; half killed at their first checkpoint) on
  recon workdirs that sit beside a user's files, and on workdirs a user has added files to
  (notes, temp-shaped names, links, a git repository): no user file is lost, a workdir
  holding them is refused, and a recon workdir always holds only listed entries."""
  from recon.runtime import checkpoint  # pylint: disable=import-outside-toplevel
  rng = random.Random(7)
  real = checkpoint.RunCheckpointer.__call__
  user = {'notes.txt': 'n', '.summary.json.user.tmp.bak': 't', '.mine.x1y2z3.tmp': 'm'}
  for name, text in user.items():  # beside every workdir
    (tmp_path / name).write_text(text)
  codes = []
  for k in range(8):
    w = tmp_path / f'w{k}'
    assert main.execute(_tiny({'seed': k}), str(w)) == 0
    invaded = k % 2 == 1
    if invaded:  # the user adds files to a finished workdir
      for name, text in user.items():
        (w / name).write_text(text)
      os.symlink(str(tmp_path / 'notes.txt'), str(w / 'alias'))
      subprocess.run(['git', 'init', '-q', str(w / 'repo')], check=True)
    for trial in range(4):
      overrides = rng.choice([{'run.overwrite': True, 'seed': 100 + trial},
                              {'run.resume': True, 'seed': k}, {'run.resume': True}, {}])
      killed = rng.random() < 0.5

      def maybe_kill(self, *a, **kw):
        out = real(self, *a, **kw)
        if killed and self.saves:
          raise SystemExit(137)
        return out

      checkpoint.RunCheckpointer.__call__ = maybe_kill
      try:
        code = main.execute(_tiny(overrides), str(w))
      except SystemExit:
        code = 137
      finally:
        checkpoint.RunCheckpointer.__call__ = real
      codes.append(code)
      if invaded:
        assert code == 2, code
        assert all((w / n).read_text() == t for n, t in user.items())
        assert os.path.islink(w / 'alias') and os.path.isdir(w / 'repo' / '.git')
      else:
        assert code in (0, 2, 137), code
        assert not ownership.foreign(str(w)), ownership.foreign(str(w))
      assert all((tmp_path / n).read_text() == t for n, t in user.items())
  assert len(codes) == 32 and {0, 2, 137} <= set(codes), codes
