"""scripts/recovery_law.py at tiny size: grid, one point end to end, rendering, appending."""
import json
import os

import pytest

from recon import io
from scripts import recovery_law


def test_grid_covers_methods_activations_and_subspace_rows():
  pts = recovery_law.points(recovery_law.PRESETS['reduced'], ['default', 'paper'],
                            ['relu'], subspace=True)
  assert {p['method'] for p in pts} == {'default', 'paper'}
  assert any(p['k'] == 2 and p['search'] == 'subspace' for p in pts)
  assert all(p['p'] >= 1 for p in pts)
  c = recovery_law.config_for(dict(pts[-1]), seeds=3, max_steps=10)
  assert tuple(c.sweep.seed) == (0, 1, 2)  # the seeds run as one vectorised sweep
  assert c.subspace in ('known', 'none') and c.planted_dim == 2


@pytest.mark.slow
def test_one_point_runs_renders_and_is_skipped_when_present(tmp_path):
  pt = dict(method='paper', activation='relu_tanh', d=3, k=None, search='full', n=2, p=60)
  rec = recovery_law.run_point(pt, seeds=2, max_steps=200)
  for f in recovery_law.FIELDS:
    assert f in rec
  assert rec['false_certified'] <= rec['seeds'] and 0 <= rec['recovery_rate'] <= 1
  assert len(rec['per_seed']['certified']) == 2 and rec['per_seed']['seed'] == [0, 1]
  out = str(tmp_path / 'law')
  recovery_law.render([rec], out)
  assert os.path.exists(out + '.png')
  assert '| paper | relu_tanh | 3 |' in open(out + '.md').read()
  assert recovery_law.point_key(rec) == recovery_law.point_key(dict(pt))
  path = str(tmp_path / 'law.json')
  recovery_law.write_records(path, [rec, rec])
  assert len(io.read_json(path)['records']) == 2  # one record per line, valid JSON


def test_width_at_95_is_the_start_of_the_last_run_of_successes():
  rows = [dict(p=p, recovery_rate=r) for p, r in ((1, 0.0), (2, 1.0), (4, 0.9), (8, 1.0),
                                                  (16, 0.95))]
  assert recovery_law.width_at(rows, 0.95)['p'] == 8
  assert recovery_law.width_at(rows[:3], 0.95) is None
