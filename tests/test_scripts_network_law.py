"""scripts/network_law.py at tiny size: records, skipping, rendering, images in the npz, shadows."""
import copy
import json
import os

import numpy as np
import pytest

from recon import data
from recon.runtime import io, runs
from scripts import network_law as nl

FIELDS = ('victim', 'loss', 'dataset', 'n', 'd', 'width', 'p_L', 'p_L_over_dn', 'seed',
          'train_loss', 'recon_error', 'frac_recovered', 'ssim_mean', 'jacobian_at', 'steps',
          'wall_seconds', 'device', 'escalate', 'escalations_tried', 'escalations_accepted',
          'escalation_restarts', 'escalation_restarts_kept', 'head_init', 'restart_losses')


def test_widths_and_p_l_per_kind():
  # p_L = width * (p_L per unit width); ratio 1 on digits 4x4 with n = 4 is dn = 64.
  assert nl.p_per_width('two_layer_mse', 'digits') == 1
  assert nl.p_per_width('two_layer_ce', 'digits') == 3
  assert nl.p_per_width('resnet', 'digits') == 16
  assert nl.p_per_width('vit', 'digits') == 4  # 2x2 patches of a 4x4 image
  assert nl.p_per_width('vit', 'lfw_faces') == 25  # 5x5: 1x1 patches
  cfg, width = nl.make_config('two_layer_ce', 'digits', 3.0, 0, 4, 10, {'lr': 0.02})
  assert width == 64 and cfg.data.num_classes == 3 and cfg.victim.train.loss == 'cross_entropy'
  assert cfg.attack.lr == 0.02 and cfg.data.classes == (0, 1, 2) and cfg.data.d == 16


def test_several_shadows_are_distinct_and_disjoint_from_the_victims():
  found = nl.shadow_seeds('two_layer_ce', 'digits', 4, (0, 1, 2), 3)
  cfg, _ = nl.make_config('two_layer_ce', 'digits', 1.0, 0, 4, 1, {})

  def idx(seed):
    return set(int(i) for i in data.load(cfg.data, runs.split_keys(seed)['data'])[2]['indices'])

  seeds = found['seeds']
  assert len(set(seeds)) == 3 and min(seeds) >= nl.SHADOW_SEED0
  victims = idx(0) | idx(1) | idx(2)
  assert all(not idx(s) & victims for s in seeds)


def test_attack_grids_offer_the_jacobian_points():
  two = nl.attack_grid('two_layer_ce')
  assert {g['jacobian_at'] for g in two} == set(nl.JACOBIAN_POINTS)
  assert {g['lr'] for g in two} == {0.05, 0.02} and len(two) == 6
  assert [g['jacobian_at'] for g in nl.attack_grid('vit')] == list(nl.JACOBIAN_POINTS)
  assert all('jacobian_at' not in g for g in nl.attack_grid('rf'))
  assert nl.shadow_count('vit') == 2 and nl.shadow_count('two_layer_mse') == nl.SHADOW_COUNT
  # Step budgets: the cheap two-layer nets and the ViT 12000 (MSE 40000), the rest 4000; an
  # explicit budget wins.
  assert nl.max_steps_for('two_layer_ce') == 12000 and nl.max_steps_for('vit') == 12000
  assert nl.max_steps_for('resnet') == nl.DEFAULT_MAX_STEPS == 4000
  assert nl.max_steps_for('two_layer_mse') == 40000
  assert nl.max_steps_for('rf') == nl.DEFAULT_MAX_STEPS and nl.max_steps_for('two_layer_ce', 30) == 30


def test_zero_head_vit_is_the_vit_with_w_l0_zero_and_stacked_restarts():
  # The same architecture, widths and calibration grid as 'vit', with head_init='zeros' (a
  # victim field) and n_restarts=4 in every attack setting; the plain ViT keeps one set.
  base, w0 = nl.make_config('vit', 'digits', 10.0, 0, 4, 10, nl.attack_grid('vit')[2])
  zero, w1 = nl.make_config('vit_zero_head', 'digits', 10.0, 0, 4, 10,
                            nl.attack_grid('vit_zero_head')[2])
  assert w0 == w1 == 160 and nl.p_per_width('vit_zero_head', 'lfw_faces') == 25
  assert (base.victim.head_init, zero.victim.head_init) == ('fan_in', 'zeros')
  assert (base.attack.restarts, zero.attack.restarts) == (1, 4)
  assert zero.victim.patch_size == base.victim.patch_size
  assert zero.victim.num_heads == base.victim.num_heads == 1
  grid = nl.attack_grid('vit_zero_head')
  assert [g['jacobian_at'] for g in grid[:3]] == list(nl.JACOBIAN_POINTS)
  assert all(g['n_restarts'] == 4 for g in grid[:3])
  members = grid[3]['portfolio']
  assert len(grid) == 4 and members == nl.optimiser_portfolio('vit_zero_head')
  assert {(m['n_restarts'], m['lr_schedule']) for m in members} == {
      (4, 'constant'), (4, 'cosine'), (1, 'constant'), (1, 'cosine')}
  assert all(m['jacobian_at'] == 'init_and_trained' for m in members)
  assert nl.shadow_count('vit_zero_head') == 2 and nl.max_steps_for('vit_zero_head') == 12000


def test_calibration_picks_the_lowest_mean_shadow_error_and_never_runs_a_victim(monkeypatch):
  # Fake runs: the error depends on the setting and the seed; 'midpoint' at lr 0.02 is best on
  # average although 'trained' at lr 0.05 is best on the first shadow alone.
  ran = []

  def fake_run_one(victim, dataset, ratio, seed, n, max_steps, setting, escalate=True):
    ran.append(seed)
    first = seed == shadows[0]
    err = {('trained', 0.05): 0.01 if first else 0.5, ('midpoint', 0.02): 0.02}.get(
        (setting['jacobian_at'], setting['lr']), 0.3)
    return {'recon_error': err, 'projection_loss': 1e-3, 'wall_seconds': 1.0}

  shadows = nl.shadow_seeds('two_layer_mse', 'digits', 4, (0, 1, 2), 3)['seeds']
  monkeypatch.setattr(nl, 'run_one', fake_run_one)
  cal = nl.calibrate('two_layer_mse', 'digits', 4, 10, (0, 1, 2))
  assert cal['chosen'] == {'lr': 0.02, 'jacobian_at': 'midpoint'}
  assert cal['shadow']['seeds'] == shadows and set(ran) == set(shadows)
  assert len(ran) == 3 * len(nl.attack_grid('two_layer_mse'))
  assert not set(ran) & {0, 1, 2}
  trial = next(t for t in cal['trials'] if t['setting'] == {'lr': 0.05, 'jacobian_at': 'trained'})
  assert trial['shadow_recon_errors'] == [0.01, 0.5, 0.5]
  assert abs(trial['shadow_recon_error'] - 1.01 / 3) < 1e-12


def test_a_point_or_calibration_with_another_budget_is_rerun_and_replaced(tmp_path, monkeypatch):
  # Fake runs: a point present with the kind's budget is skipped; one run with another budget
  # is run again and its record replaced (not duplicated); so is the calibration.
  ran, calibrated = [], []

  def fake_run_one(victim, dataset, ratio, seed, n, max_steps, setting, escalate=True):
    ran.append((seed, max_steps))
    return {'victim': victim, 'dataset': dataset, 'ratio_target': ratio, 'seed': seed, 'n': n,
            'escalate': 'auto', 'attack': {'max_steps': max_steps}, 'recon_error': 0.1,
            'p_L_over_dn': ratio, 'width': 1, 'frac_recovered': 1.0, 'train_loss': 0.0,
            'escalations_accepted': 0, 'escalations_tried': 0, 'escalation_restarts_kept': 0,
            'escalation_restarts': 0, 'wall_seconds': 1.0,
            'x_true': np.full((4, 16), seed), 'x_matched': np.full((4, 16), max_steps)}

  def fake_calibrate(victim, dataset, n, max_steps, victim_seeds, escalate=True):
    calibrated.append(max_steps)
    return {'max_steps': max_steps, 'chosen': {'lr': 0.05}, 'calibrated': True}

  monkeypatch.setattr(nl, 'run_one', fake_run_one)
  monkeypatch.setattr(nl, 'calibrate', fake_calibrate)
  out = str(tmp_path / 'law')
  nl.run_points(out, ['vit'], ['digits'], [10.0], [0, 1], n=4, max_steps=4000)
  assert ran == [(0, 4000), (1, 4000)] and calibrated == [4000]
  nl.run_points(out, ['vit'], ['digits'], [10.0], [0, 1], n=4, max_steps=4000)
  assert len(ran) == 2 and calibrated == [4000]  # same budget: skipped
  res = nl.run_points(out, ['vit'], ['digits'], [10.0], [1], n=4, max_steps=None)
  assert ran[2:] == [(1, 12000)] and calibrated == [4000, 12000]
  steps = sorted((r['seed'], r['attack']['max_steps']) for r in res['records'])
  assert steps == [(0, 4000), (1, 12000)]  # seed 1 replaced, seed 0 (not asked) kept
  assert io.read_json(out + '.json')['calibration']['vit/digits/n4']['max_steps'] == 12000
  # The images live in the npz, one entry per point: the replaced point's are the new run's.
  assert not any(f in r for r in io.read_json(out + '.json')['records'] for f in nl.ARRAY_FIELDS)
  stored = nl.read_arrays(out + '.npz')
  assert len(stored) == 2
  back = {r['seed']: r for r in nl.load(out + '.json')['records']}
  assert back[1]['x_matched'][0, 0] == 12000 and back[0]['x_matched'][0, 0] == 4000
  assert back[1]['x_true'][0, 0] == 1 and back[0]['x_true'].shape == (4, 16)


REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMMITTED = ('results/network_law', 'results/network_law_no_escalation',
             'results/network_law_tuning_seeds')


def _json_records(path):
  with open(path) as f:
    return json.load(f)['records']


def _tiny_res(images=True):
  """Three records of the committed grid (two groups, 4x16 and 4x25 images) with new images."""
  recs = _json_records(os.path.join(REPO, 'results/network_law.json'))
  picked = [copy.deepcopy(r) for r in recs
            if (r['victim'], r['dataset']) in {('rf', 'digits'), ('two_layer_mse', 'lfw_faces')}
            and float(r['ratio_target']) == 16.0 and r['seed'] in nl.SEEDS[:2]][:3]
  assert {r['dataset'] for r in picked} == {'digits', 'lfw_faces'}
  rng = np.random.default_rng(0)
  for r in picked:
    for f in nl.ARRAY_FIELDS:
      r.pop(f, None)
      if images:
        r[f] = np.round(rng.normal(size=(r['n'], r['d'])), 4)
  return {'records': picked, 'calibration': {}}


def _no_arrays_in_json(path):
  with open(path) as f:
    text = f.read()
  records = json.loads(text)['records']
  assert records and not any(f in r for r in records for f in nl.ARRAY_FIELDS)
  # No nested list of numbers anywhere in a record (an image under another name).
  assert not any(isinstance(v, list) and v and isinstance(v[0], list)
                 for r in records for v in r.values())


def test_images_go_to_the_npz_not_the_json_and_the_grid_finds_them(tmp_path):
  res = _tiny_res()
  path = str(tmp_path / 'law.json')
  nl.save(path, res)
  _no_arrays_in_json(path)
  assert os.path.exists(str(tmp_path / 'law.npz'))
  assert sorted(nl.read_arrays(str(tmp_path / 'law.npz'))) == sorted(
      nl.record_key(r) for r in res['records'])
  back = nl.load(path)
  for a, b in zip(res['records'], back['records']):
    for f in nl.ARRAY_FIELDS:
      assert b[f].dtype == np.float64 and np.array_equal(a[f], b[f])
  rows = nl.grid_records(back)
  assert len(rows) == 2 and all(r[3]['x_true'].shape == (r[3]['n'], r[3]['d']) for r in rows)
  assert all(f in res['records'][0] for f in nl.ARRAY_FIELDS)  # save leaves `res` whole


def test_the_grid_fails_loudly_without_the_npz(tmp_path):
  path = str(tmp_path / 'law.json')
  nl.save(path, _tiny_res())
  os.remove(str(tmp_path / 'law.npz'))
  with pytest.raises(KeyError, match='x_true'):
    nl.grid_records(nl.load(path))
  nl.save(path, _tiny_res(images=False))  # records without images: an empty npz, no error
  assert nl.read_arrays(str(tmp_path / 'law.npz')) == {}


def test_render_draws_the_grid_from_the_npz(tmp_path):
  out = str(tmp_path / 'law')
  nl.save(out + '.json', _tiny_res())
  nl.render(out, 4)
  assert '## rf on digits' in open(out + '.md').read() and os.path.getsize(out + '.png') > 0


def test_render_reads_a_nan_loss_as_written_to_the_json(tmp_path):
  # A width-1 ViT (LayerNorm over one channel: a constant net) records projection losses
  # 'nan', as the JSON writes non-finite floats; the md shows nan instead of failing.
  out = str(tmp_path / 'law')
  res = _tiny_res()
  for r in res['records']:
    r['projection_loss'] = r['projection_loss_at_truth'] = float('nan')
  nl.save(out + '.json', res)
  assert nl.load(out + '.json')['records'][0]['projection_loss'] == 'nan'
  nl.render(out, 4)
  assert '| nan |' in open(out + '.md').read()


@pytest.mark.parametrize('out', COMMITTED)
def test_committed_results_keep_their_images_in_the_npz(out):
  path = os.path.join(REPO, out + '.json')
  _no_arrays_in_json(path)
  res = nl.load(path)
  assert all(isinstance(r.get(f), np.ndarray) and r[f].shape == (r['n'], r['d'])
             for r in res['records'] for f in nl.ARRAY_FIELDS)
  assert nl.grid_records(res)


def test_the_reported_seeds_are_fresh_and_disjoint_from_every_shadow():
  # The committed table reports exactly SEEDS: none of them a tuning seed, and no image of a
  # reported victim is an image of any calibration's shadow victims (whose training sets chose
  # the attack settings).
  res = io.read_json(os.path.join(REPO, 'results/network_law.json'))
  assert {r['seed'] for r in res['records']} == set(nl.SEEDS)
  assert res['seeds']['reported'] == list(nl.SEEDS)
  assert res['seeds']['tuning'] == list(nl.TUNING_SEEDS)
  assert not set(nl.SEEDS) & set(nl.TUNING_SEEDS)
  for key, cal in res['calibration'].items():
    victim, dataset, n = key.split('/')[:3]
    cfg, _ = nl.make_config(victim, dataset, nl.CALIBRATION_RATIO, 0, int(n[1:]), 1, {})

    def idx(seed):
      return set(int(i) for i in data.load(cfg.data, runs.split_keys(seed)['data'])[2]['indices'])

    shadows = cal['shadow'].get('seeds') or [cal['shadow']['seed']]
    taken = set().union(*(idx(s) for s in shadows))
    assert not any(idx(s) & taken for s in nl.SEEDS), key
  tuning = io.read_json(os.path.join(REPO, 'results/network_law_tuning_seeds.json'))
  assert {r['seed'] for r in tuning['records']} == set(nl.TUNING_SEEDS)


@pytest.mark.slow
def test_tiny_run_appends_skips_and_renders(tmp_path):
  out = str(tmp_path / 'law')
  res = nl.run_points(out, ['two_layer_mse', 'rf'], ['digits'], [4.0], [0], n=2, max_steps=30,
                      do_calibrate=False)
  assert len(res['records']) == 2
  for r in res['records']:
    assert all(k in r for k in FIELDS), r.keys()
    assert r['n'] == 2 and r['d'] == 16 and abs(r['p_L_over_dn'] - 4.0) < 0.1
  assert not res['calibration']['rf/digits/n2']['calibrated']
  assert all(r['escalate'] == 'auto' and r['attack']['escalate'] == 'auto'
             for r in res['records'])
  again = nl.run_points(out, ['two_layer_mse'], ['digits'], [4.0], [0], n=2, max_steps=30,
                        do_calibrate=False)
  assert len(again['records']) == 2  # already present: skipped
  _no_arrays_in_json(out + '.json')
  assert all(r['x_true'].shape == (2, 16) for r in nl.load(out + '.json')['records'])
  nl.render(out, 2)
  md = io.read_text(out + '.md') if hasattr(io, 'read_text') else open(out + '.md').read()
  assert '## two_layer_mse on digits' in md and 'not calibrated' in md
  assert 'Missing points' in md and os.path.getsize(out + '.png') > 0


def test_a_portfolio_keeps_the_member_of_lowest_projection_loss(monkeypatch):
  # Fake member runs: the loss (blind) and the error (truth) disagree in order, and one loss is
  # non-finite; the answer is the lowest finite loss, never the lowest error.
  fake = {'a': (3e-4, 0.01), 'b': (2e-6, 0.30), 'c': (float('nan'), 0.001)}

  def run(victim, dataset, ratio, seed, n, max_steps, setting, escalate=True):
    loss, err = fake[setting['name']]
    return {'projection_loss': loss, 'recon_error': err, 'steps': 7, 'wall_seconds': 2.0,
            'name': setting['name']}

  monkeypatch.setattr(nl, 'run_one', run)
  setting = {'portfolio': [{'name': 'a'}, {'name': 'b'}, {'name': 'c'}]}
  members = [run('vit', 'digits', 10.0, 0, 4, 10, m) for m in setting['portfolio']]
  best = nl.best_of(setting, members)
  assert best['name'] == 'b' and best['wall_seconds'] == 6.0
  assert [m['setting']['name'] for m in best['portfolio']] == ['a', 'b', 'c']
  assert [m['recon_error'] for m in best['portfolio']] == [0.01, 0.30, 0.001]
  with pytest.raises(ValueError, match='portfolio of 3'):
    nl.best_of(setting, members[:2])
  assert nl._setting_text({'portfolio': [{'lr': 0.05}, {'lr': 0.02}]}) == (
      'the lowest projection loss of [lr 0.05 | lr 0.02]')
