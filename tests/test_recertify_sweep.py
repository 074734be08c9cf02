"""scripts/recertify_sweep.py: a finished sweep's records re-derived from its saved candidates
(the certificate, the rung, the scores) equal the sweep's own; the descent is not re-run; bad
folders are refused in one line."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

import recon
from recon import main
from recon.sweep import grid as sweep
from conftest import subprocess_env
from tests.test_reliability import _untimed
from tests.test_sweep import tiny_config

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope='module')
def finished(tmp_path_factory):
  """One finished tiny sweep (4 points) that both tests read; neither writes into it."""
  c = tiny_config({'victim.p': (6, 40), 'seed': (0, 1)})
  w = tmp_path_factory.mktemp('recertify') / 'sweep'
  assert main.execute(c, str(w)) == 0
  return w


def test_records_re_derived_from_the_candidates_equal_the_sweeps_own(finished, tmp_path,
                                                                     monkeypatch):
  w = finished
  monkeypatch.setattr(sweep.optimize, 'drive', lambda *a, **k: pytest.fail('descent re-run'))
  out = recon.recertify(str(w), str(tmp_path / 'again'))
  old = json.loads((w / 'sweep.json').read_text())
  new = json.loads((tmp_path / 'again' / 'sweep.json').read_text())
  assert len(out['records']) == len(new['records']) == 4
  plain = [bool(r['polish'].get('kept')) for r in old['records']]
  assert [r['input_polished'] for r in new['records']] == plain
  assert any(plain) and not all(plain)  # both kinds in this sweep
  drop = lambda r: {k: v for k, v in r.items() if k not in ('certificate', 'input_polished')}  # noqa: E731
  for a, b, polished in zip(_untimed(old['records']), _untimed(new['records']), plain):
    if not polished:  # the same candidates, the same post-processing: the same record
      assert drop(a) == drop(b) and a['certificate']['reasons'] == b['certificate']['reasons']
    else:  # the polished set judged as it stands: the same rows back, the rung not needed
      assert b['frac_recovered'] == a['frac_recovered'] and b['certified'] == a['certified']
      assert b['final_loss'] < a['final_loss'] and not b['polish']['applied']
  assert new['machine'] == f"descent: {old['machine']}; certificate and rung: {old['machine']}"
  assert new['recertified_from'] == str(w) and new['recertify_seconds'] > 0
  assert new['groups'][0]['seconds'] == old['groups'][0]['seconds']
  with np.load(w / 'sweep.npz') as a, np.load(tmp_path / 'again' / 'sweep.npz') as b:
    assert sorted(a.files) == sorted(b.files)
    assert all(np.allclose(a[k], b[k], atol=1e-6) for k in a.files)


def test_a_folder_without_a_sweep_or_a_taken_target_is_refused(finished, tmp_path):
  with pytest.raises(recon.RunError, match='no finished sweep') as e:
    recon.recertify(str(tmp_path / 'none'), str(tmp_path / 'out'))
  assert e.value.exit_code == 2
  w = finished
  with pytest.raises(recon.RunError, match='already holds a sweep'):
    recon.recertify(str(w), str(w))
  # The script: one line on stderr, exit status 2.
  proc = subprocess.run([sys.executable, '-m', 'scripts.recertify_sweep',
                         f'--from_dir={tmp_path / "none"}', f'--to_dir={tmp_path / "o"}'],
                        cwd=ROOT, env=subprocess_env(), capture_output=True, text=True,
                        timeout=300, check=False)
  assert proc.returncode == 2, proc.stderr
  assert proc.stderr.strip().splitlines()[-1].startswith('error: recertify: no finished sweep')
