"""scripts/recovery_law.py at tiny size: grid, one point end to end, rendering, appending."""
import json
import os

import pytest

from recon.runtime import io
from scripts import recovery_law


def _calibration(tmp_path, monkeypatch, activation, n, d, lr):
  path = str(tmp_path / 'paper_baseline.json')
  io.write_json(path, {'calibration': [{'activation': activation, 'n': n, 'd': d, 'lr': lr}]})
  monkeypatch.setattr(recovery_law, 'PAPER_CALIBRATION', path)


def test_grid_covers_methods_activations_and_subspace_rows():
  pts = recovery_law.points(recovery_law.PRESETS['reduced'], ['default', 'paper'],
                            ['relu'], subspace=True)
  assert {p['method'] for p in pts} == {'default', 'paper'}
  assert any(p['k'] == 2 and p['search'] == 'subspace' for p in pts)
  assert all(p['p'] >= 1 for p in pts)
  default = [p for p in pts if p['method'] == 'default']
  c = recovery_law.config_for(dict(default[-1]), seeds=3, max_steps=10)
  assert tuple(c.sweep.seed) == (0, 1, 2)  # the seeds run as one vectorised sweep
  assert c.attack.subspace.mode in ('known', 'none') and c.data.planted_dim == 2


def test_the_paper_method_is_the_reference_port_at_its_blind_lr(tmp_path, monkeypatch):
  pt = dict(method='paper', activation='relu', d=8, k=None, search='full', n=4, p=320)
  with pytest.raises(ValueError, match='no blind lr'):
    monkeypatch.setattr(recovery_law, 'PAPER_CALIBRATION', str(tmp_path / 'none.json'))
    recovery_law.config_for(pt, seeds=2, max_steps=10)
  _calibration(tmp_path, monkeypatch, 'relu', 4, 8, 5.0)
  c = recovery_law.config_for(pt, seeds=2, max_steps=10)
  a = c.attack
  assert (a.optimizer, a.lr, a.schedule, a.tol) == ('sgd', 5.0, 'constant', 1e-7)
  assert c.victim.activation == 'relu_leaky_backward'
  assert a.rescue == ()
  # The budget: 10x the default's steps at the same point, at least --max_steps.
  default = dict(pt, method='default', median_steps=3000.0)
  assert recovery_law.paper_budget(pt, [default], 20000) == 30000
  assert recovery_law.paper_budget(pt, [dict(default, median_steps=500.0)], 20000) == 20000
  assert recovery_law.paper_budget(pt, [], 20000) == 200000


@pytest.mark.slow
def test_one_point_runs_renders_and_is_skipped_when_present(tmp_path, monkeypatch):
  _calibration(tmp_path, monkeypatch, 'relu_tanh', 2, 3, 2.0)
  pt = dict(method='paper', activation='relu_tanh', d=3, k=None, search='full', n=2, p=60)
  rec = recovery_law.run_point(pt, seeds=2, max_steps=200)
  for f in recovery_law.FIELDS:
    assert f in rec
  assert rec['false_certified'] <= rec['seeds'] and 0 <= rec['recovery_rate'] <= 1
  assert len(rec['per_seed']['certified']) == 2 and rec['per_seed']['seed'] == [0, 1]
  assert all(0 <= v <= 1 for v in rec['per_seed']['min_share'])  # scoring only
  assert rec['false_pinned_rows'] == 0
  out = str(tmp_path / 'law')
  recovery_law.render([rec], out)
  assert os.path.exists(out + '.png')
  assert '| paper | relu_tanh | 3 |' in open(out + '.md').read()
  assert recovery_law.point_key(rec) == recovery_law.point_key(dict(pt))
  path = str(tmp_path / 'law.json')
  recovery_law.write_records(path, [rec, rec])
  assert len(io.read_json(path)['records']) == 2  # one record per line, valid JSON


def test_a_long_point_shows_its_progress_and_nothing_else():
  import logging as std_logging  # pylint: disable=import-outside-toplevel

  def line(msg, level=std_logging.INFO):
    return std_logging.LogRecord('absl', level, __file__, 1, msg, None, None)

  assert recovery_law.progress_only(line('sweep default: step %d, 3/10 points stopped' % 400))
  assert recovery_law.progress_only(line('precision rung: rows re-searched 24 of 24 (vmapped)'))
  assert recovery_law.progress_only(line('precision rung: loss 7.9e-06 -> 1.4e-13 in float64'))
  assert not recovery_law.progress_only(line('trained random features: n=100 d=16 p=6400'))
  assert recovery_law.progress_only(line('escalation: step 3000, 24 weak row(s) over 2 run(s)'))
  assert not recovery_law.progress_only(line('precision rung: rows 1-24 of 24, Adam step 100'))
  assert recovery_law.progress_only(line('victim does not interpolate', std_logging.WARNING))
  # ... and the sweep writes those lines (a 1e9-second interval once silenced a 50-minute point).
  pt = dict(method='default', activation='relu', d=16, k=None, search=None, n=8, p=512)
  assert recovery_law.config_for(pt, 2, 100).run.log_every_seconds <= 60


def test_photo_patch_points_keep_p_over_dn_and_configure_the_bundled_patches():
  pts = recovery_law.points(dict(recovery_law.PRESETS['in_n'], n=100), ['default'],
                            ['relu'], subspace=False)
  photo = recovery_law.photo_points(pts, image_size=4)
  assert len(photo) == len(pts) and {p['d'] for p in photo} == {48}
  assert [p['p'] / (48 * 100) for p in photo] == pytest.approx(
      [p['p'] / (16 * 100) for p in pts], rel=1e-3)
  ten = [p for p in photo if p['p'] == 48000][0]
  assert recovery_law.point_key(ten) != recovery_law.point_key(dict(ten, data='synthetic_sphere'))
  c = recovery_law.config_for(dict(ten, first_seed=100), seeds=2, max_steps=10)
  assert (c.data.name, c.data.image_size, c.data.d, c.victim.p) == ('photo_patches', 4, 48, 48000)
  assert tuple(c.sweep.seed) == (100, 101)
  with pytest.raises(ValueError, match='not 3 s'):
    recovery_law.config_for(dict(ten, d=50), seeds=1, max_steps=10)
  rec = dict(ten, p_over_dn=10.0, p_over_kn=None, seeds=2, recovery_rate=1.0,
             certified_rate=1.0, false_certified=0, median_seconds=1.0, device='1 x cpu')
  assert recovery_law.data_label(rec) == '48 (photo patches)'
  assert recovery_law.data_label(dict(rec, data='synthetic_sphere', d=16)) == '16'
  assert list(recovery_law.curves([rec]))[0][0] == 'default/photo_patches'


@pytest.mark.slow  # ~18 s: one tiny point, twice
def test_a_point_in_a_work_dir_keeps_its_sweep_and_is_read_back(tmp_path):
  pt = dict(method='default', activation='relu_tanh', d=3, k=None, search='full', n=2, p=60,
            first_seed=100)
  rec = recovery_law.run_point(pt, seeds=2, max_steps=50, work_dir=str(tmp_path))
  folder = tmp_path / recovery_law.point_dir(pt)
  assert (folder / 'sweep.json').is_file() and '.' not in recovery_law.point_dir(
      dict(pt, p=0.5))
  sweep = json.loads((folder / 'sweep.json').read_text())
  assert sweep['config']['run']['checkpoint_every_seconds'] == recovery_law.CHECKPOINT_SECONDS
  again = recovery_law.run_point(pt, seeds=2, max_steps=50, work_dir=str(tmp_path))
  assert again['per_seed'] == rec['per_seed'] and again['seed_list'] == [100, 101]


def test_memory_budget_gb_sets_the_sweeps_and_the_rungs_budget(monkeypatch):
  """--memory_budget_gb replaces run.sweep_memory_budget_gb of the point's sweep (the padded
  group's cap and the precision rung's, recon.certify.rung.rung_max_entries); default: the config's."""
  seen = []

  class Stop(Exception):
    pass

  def fake_run(c, workdir):
    seen.append(c.run.sweep_memory_budget_gb)
    raise Stop

  monkeypatch.setattr(recovery_law.recon, 'run', fake_run)
  pt = dict(method='default', activation='relu_tanh', d=16, k=None, search='full', n=8, p=1280)
  for budget in (None, 12.0):
    with pytest.raises(Stop):
      recovery_law.run_point(pt, 1, 10, memory_budget_gb=budget)
  assert seen == [8.0, 12.0]
