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
  assert c.attack.subspace in ('known', 'none') and c.data.planted_dim == 2


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
  old = dict(pt)
  assert recovery_law.relabel_old_paper(old)['method'] == recovery_law.OLD_PAPER
  assert recovery_law.relabel_old_paper(dict(pt, port='faithful'))['method'] == 'paper'


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


def test_width_at_95_is_the_start_of_the_last_run_of_successes():
  rows = [dict(p=p, recovery_rate=r) for p, r in ((1, 0.0), (2, 1.0), (4, 0.9), (8, 1.0),
                                                  (16, 0.95))]
  assert recovery_law.width_at(rows, 0.95)['p'] == 8
  assert recovery_law.width_at(rows[:3], 0.95) is None


def test_misses_list_every_unrecovered_seed_above_4dn_with_its_smallest_share():
  def rec(method, ratio, recovered, shares):
    k = len(recovered)
    return dict(method=method, activation='relu', d=8, k=None, search='full', n=8, p=ratio * 64,
                p_over_dn=ratio, per_seed=dict(
                    seed=list(range(k)), recovered=recovered, certified=recovered,
                    frac_recovered=[1.0 if r else 0.875 for r in recovered],
                    final_loss=[1e-10 if r else 1e-8 for r in recovered], min_share=shares,
                    rows_pinned=[8 if r else 7 for r in recovered]))
  records = [rec('default', 10, [True, False, True], [0.2, 0.001, 0.05]),
             rec('default', 2, [False], [0.3]),  # below 4 dn: not listed
             rec('paper', 10, [False], [0.3])]  # another method: not listed
  text = '\n'.join(recovery_law.misses(records, 0.01))
  assert '| relu | 8 |  | full | 10 | 1 | 0.875 | 1e-08 | 1.0e-03 | 7 of 8 | no | - |' in text
  assert text.count('| relu | 8 |') == 1
  assert '2 of 2 recovered (1.000)' in text  # the seed with share 0.001 is set apart
  assert recovery_law.misses([rec('default', 2, [False], [0.3])], 0.01) == []


def test_the_precision_rung_column_and_summary_count_what_the_rung_did():
  ps = dict(seed=[0, 1, 2, 3], recovered=[True, False, True, False],
            certified=[True, False, True, False], frac_recovered=[1.0, 0.75, 1.0, 0.875],
            final_loss=[1e-8, 4e-5, 1e-10, 1e-8], min_share=[2e-4, 0.1, 0.2, 3e-4],
            rows_pinned=[8, 6, 8, 7], polished=[1, 1, None, 0],
            polished_loss=[1e-14, 4e-5, None, 1e-9], flipped=[0, 2, None, 0])
  records = [dict(method='default', activation='relu', d=8, k=None, search='full', n=8, p=640,
                  p_over_dn=10, per_seed=ps)]
  text = '\n'.join(recovery_law.rung_summary(records))
  assert 'kept on 3 uncertified runs; it flipped (relu) or replaced a row in 2, of which 1 ended' in text
  assert '1 certified' in text
  assert recovery_law.polished_cell(ps, 1) == '1, 2 flipped (float64 loss 4e-05)'
  assert recovery_law.polished_cell(ps, 3) == 'none (float64 loss 1e-09)'
  assert recovery_law.polished_cell(ps, 2) == '-'
  assert recovery_law.polished_cell({'seed': [0]}, 0) == '-'  # older records: no column
  assert recovery_law.rung_summary([dict(records[0], method='paper')]) == []


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


def test_the_law_in_n_lists_the_plain_loss_beside_the_default():
  def rec(method, act, n, ratio, rate):
    return dict(method=method, activation=act, d=16, k=None, search='full', n=n, p=ratio * 16 * n,
                p_over_dn=ratio, first_seed=100, seeds=20, recovery_rate=rate,
                certified_rate=rate, median_seconds=1.0, median_steps=100, load=[1.0, 2.0])
  records = [rec('default', 'relu', 8, 4, 1.0), rec('default', 'relu', 32, 4, 0.95),
             rec('plain', 'relu', 32, 4, 0.0), rec('previous', 'relu', 32, 4, 0.5)]
  text = '\n'.join(recovery_law.law_in_n(records))
  assert '| relu | 32 | 20 | 0.95 |' in text
  assert '| relu, plain loss | 32 | 20 | 0 |' in text
  assert 'previous' not in text and '0.50' not in text
  assert recovery_law.METHODS['plain'] == {'attack.sign_quotient': 'off'}
  assert recovery_law.METHODS['previous']['attack.sign_quotient'] == 'off'
  assert '†' not in text  # every record on the CPU (no device field: the CPU)
  gpu = dict(rec('default', 'relu', 100, 10, 1.0), device='1 x gpu', load=[0.0, 9.0],
             machine='1 x NVIDIA H200 (gpu); host: x')
  text = '\n'.join(recovery_law.law_in_n(records + [rec('default', 'relu', 100, 4, 1.0), gpu]))
  assert '| relu | 100 | 1.0–2.0 | 1.0 s, 100 | 1.0 s, 100 † |' in text  # the GPU's load left out
  assert '† on 1 x NVIDIA H200 (gpu); host: x (the others on the CPU' in text
  assert recovery_law.on_accelerator(gpu) and not recovery_law.on_accelerator(
      dict(gpu, device='1 x cpu'))
  assert '‡' not in text
  again = dict(gpu, recertify_seconds=394.6)  # its rung re-derived on a CPU afterwards
  text = '\n'.join(recovery_law.law_in_n(records + [again]))
  assert '1.0 s, 100 † ‡ |' in text
  assert 'relu n = 100, 10 dn: 395 s there' in text


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
  assert recovery_law.law_in_n([rec, dict(rec, n=8)]) == []  # the law in n is synthetic only
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


def test_the_miss_analysis_counts_clustered_rows_mirror_traps_and_collapsed_candidates():
  import numpy as np  # pylint: disable=import-outside-toplevel
  e = np.eye(4) * 2.0
  x_true = np.stack([e[0], e[0] + 0.05 * e[1], e[2], e[3]])  # rows 0 and 1 are clustered
  x_hat = np.stack([e[0], -e[2], e[3] + 0.01 * e[0], e[3]])  # row 2 trapped at its mirror image
  m = recovery_law.miss_analysis(x_true, x_hat)
  # One candidate near rows 0 and 1: the matching gives it to one of them only.
  assert m == {'back_clustered': 1, 'clustered': 2, 'back_isolated': 1, 'isolated': 2,
               'mirror_rows': 1, 'collapsed_candidates': 2}


def test_candidates_on_antipodal_or_neighbouring_rows_are_neither_traps_nor_collapsed():
  """Standardised patches come in near-antipodal pairs (x_1 = -x_0) and near neighbours (x_3
  within 0.05 of x_2): every row recovered is no trap and no collapse, though a candidate
  sits at -x_0 and two candidates within 0.1 of each other."""
  import numpy as np  # pylint: disable=import-outside-toplevel
  e = np.eye(4) * 2.0
  x_true = np.stack([e[0], -e[0] + 0.01 * e[1], e[2], e[2] + 0.05 * e[3]])
  m = recovery_law.miss_analysis(x_true, x_true.copy())
  assert m == {'back_clustered': 2, 'clustered': 2, 'back_isolated': 2, 'isolated': 2,
               'mirror_rows': 0, 'collapsed_candidates': 0}
  # The same rows with candidate 1 moved onto candidate 0's row: row 1 is lost, the two
  # candidates collapse, and no candidate is a trap (the one at -x_1 is on row 0).
  x_hat = x_true.copy()
  x_hat[1] = e[0] + 0.02 * e[3]
  m = recovery_law.miss_analysis(x_true, x_hat)
  assert m['back_isolated'] == 1 and m['collapsed_candidates'] == 2 and m['mirror_rows'] == 0


def test_photo_points_list_their_steps_and_the_sphere_control_at_the_same_size():
  per = dict(seed=[1000, 1001], frac_recovered=[0.8, 0.9], final_loss=[1e-4, 2e-4],
             steps=[60000, 60000], certified=[False, False])
  photo = dict(method='default', activation='relu_tanh', d=48, k=None, search='full', n=32,
               p=15360, data='photo_patches', p_over_dn=10.0, seeds=2, median_seconds=300.0,
               max_steps=60000, per_seed=per, seed_list=[1000, 1001])
  sphere = dict(photo, data='synthetic_sphere', max_steps=20000, median_steps=17000.0,
                per_seed=dict(per, frac_recovered=[1.0, 1.0], certified=[True, False]))
  other = dict(sphere, n=8, p=3840)  # not the photo point's size: no control row
  text = '\n'.join(recovery_law.real_data([photo, sphere, other]))
  assert '| relu_tanh | 48 | 32 | 10 | 1000 | 0.80 | 0.0001 | 60000 / 60000 | no |' in text
  assert ('| relu_tanh | 48 | 32 | 10 | 2 (1000-1001) | 1.00, 1.00 | 1 of 2 | 17000 / 20000 '
          '| 300 |') in text
  assert text.count('| relu_tanh | 48 | 8 |') == 0


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
