"""The leak-width prediction (recon/audit/threshold.py, recon/audit/leak_width.py)."""
import json
import math
import os

import numpy as np
import pytest

import recon
from recon import data, errors
from recon.audit import threshold as leak_width
from recon.audit import leak_width as lw_pipeline


def _synthetic_success(c, beta, ratios, per_ratio, seed=0):
  rng = np.random.default_rng(seed)
  r = np.repeat(ratios, per_ratio)
  prob = 1 / (1 + np.exp(-beta * (np.log(r) - math.log(c))))
  return r, (rng.random(len(r)) < prob).astype(float)


def test_the_fit_recovers_a_known_threshold_and_its_interval_covers_it():
  ratios = np.array([0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0])
  r, s = _synthetic_success(1.7, 4.0, ratios, 300)
  fit = leak_width.bootstrap_threshold(r, s, r, n_boot=100, seed=0)
  assert abs(fit['c'] / 1.7 - 1) < 0.08 and 2.5 < fit['beta'] < 6
  assert fit['c_ci'][0] < 1.7 < fit['c_ci'][1] and fit['c_ci'][1] / fit['c_ci'][0] < 1.3
  # A threshold twice as large is found twice as large.
  r2, s2 = _synthetic_success(3.4, 4.0, ratios * 2, 300, seed=1)
  assert abs(leak_width.fit_threshold(r2, s2)['c'] / 3.4 - 1) < 0.08


def test_a_clean_gap_gives_a_threshold_inside_it_and_one_outcome_is_refused():
  r = np.repeat([0.5, 1.0, 2.0, 4.0], 5)
  fit = leak_width.fit_threshold(r, r >= 2.0)
  assert 1.0 < fit['c'] < 2.0
  with pytest.raises(ValueError, match='same outcome'):
    leak_width.fit_threshold(r, np.ones_like(r))
  with pytest.raises(ValueError, match='does not grow'):
    leak_width.fit_threshold(r, r <= 1.0)


def test_the_trend_fit_recovers_a_known_drift_of_c_with_n():
  rng = np.random.default_rng(2)
  ratios, ns, success = [], [], []
  for n in (4, 8, 16):
    c = 1.2 * n ** 0.3
    for r in (0.5, 0.75, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0):
      prob = 1 / (1 + np.exp(-5.0 * (np.log(r) - np.log(c))))
      ratios += [r] * 200
      ns += [n] * 200
      success += list(rng.random(200) < prob)
  fit = leak_width.bootstrap_trend(ratios, ns, success, list(zip(ns, ratios)), n_boot=30)
  assert abs(fit['gamma'] - 0.3) < 0.06 and abs(math.exp(fit['mu0']) / 1.2 - 1) < 0.15
  at = leak_width.trend_at(fit, 64)
  assert abs(at['c'] / (1.2 * 64 ** 0.3) - 1) < 0.15 and at['c_ci'][0] < at['c'] < at['c_ci'][1]
  with pytest.raises(ValueError, match='one shadow n'):
    leak_width.fit_trend([1.0, 2.0], [8, 8], [0, 1])


def test_the_prediction_is_the_margin_to_c_D_n():
  fit = {'c': 2.0, 'mu': math.log(2.0), 'beta': 5.0, 'c_ci': [1.5, 2.5],
         'boot_mu': [math.log(1.8), math.log(2.2)], 'boot_beta': [5.0, 5.0]}
  out = leak_width.predict(fit, n=100, dim=16, p=6400)
  assert out['p_star'] == pytest.approx(3200) and out['margin'] == pytest.approx(2.0)
  assert out['predicted_recovery'] > 0.95 and out['p_star_ci'] == pytest.approx([2400, 4000])
  assert leak_width.predict(fit, n=100, dim=16, p=1600)['predicted_recovery'] < 0.05
  assert leak_width.recovery_probability(2.0, math.log(2.0), 5.0) == pytest.approx(0.5)


def test_pca_finds_the_dimension_of_a_planted_subspace():
  rng = np.random.default_rng(0)
  basis = np.linalg.qr(rng.normal(size=(12, 3)))[0]
  x = rng.normal(size=(40, 3)) @ basis.T + 1e-4 * rng.normal(size=(40, 12))
  est = leak_width.estimate_dim(x, 0.99)
  assert (est['k'], est['d'], est['n']) == (3, 12, 40)
  assert len(est['explained_variance_ratio']) == 12 and est['cumulative'][2] > 0.99
  assert leak_width.estimate_dim(rng.normal(size=(200, 6)), 0.99)['k'] == 6


def test_the_dimension_comes_from_the_file_by_pca(tmp_path):
  rng = np.random.default_rng(1)
  x = rng.normal(size=(30, 2)) @ np.linalg.qr(rng.normal(size=(8, 2)))[0].T
  np.savez(tmp_path / 'train.npz', x=x)  # no labels: the prediction reads the rows only
  c = recon.get_config('leak_width', {'data.name': 'file', 'data.path': str(tmp_path / 'train.npz'),
                                      'data.n': None, 'data.d': None})
  assert not data.trains_victim(c.victim, c.pipeline)
  data.resolve_file(c.data, c.victim, c.pipeline)
  dim = lw_pipeline.dimension(c.data, c.victim, c.leak_width)
  assert (dim['mode'], dim['D'], dim['d'], c.data.n) == ('pca', 2, 8, 30)


def _dimension(c):
  return lw_pipeline.dimension(c.data, c.victim, c.leak_width)


def _shadow(c, dim):
  """The shadows' config (a dict) of the auditor's `c`."""
  return lw_pipeline.shadow_config(c.to_dict(), c.data, c.victim, c.attack, dim)


def _file_config(tmp_path, x, **extra):
  np.savez(tmp_path / 'train.npz', x=x)
  c = recon.get_config('leak_width', {'data.name': 'file', 'data.path': str(tmp_path / 'train.npz'),
                                      'data.n': None, 'data.d': None, **extra})
  data.resolve_file(c.data, c.victim, c.pipeline)
  return c


def test_pca_at_the_row_count_ceiling_falls_back_to_d_and_says_why(tmp_path):
  """#69: 6 rows of d = 16 hold at most 5 directions; k = 5 measures the row count."""
  x = np.random.default_rng(2).normal(size=(6, 16))
  dim = _dimension(_file_config(tmp_path, x))
  assert dim['D'] == 16 and dim['k'] == 5 and 'too few to show a subspace' in dim['why']
  # A true 2-dim subspace in 30 rows is kept, and the shadows search inside it.
  y = np.random.default_rng(3).normal(size=(30, 2)) @ np.linalg.qr(
      np.random.default_rng(4).normal(size=(16, 2)))[0].T
  c = _file_config(tmp_path, y)
  dim = _dimension(c)
  assert dim['D'] == 2 and 'search inside it' in dim['why']
  shadow = _shadow(c, dim)
  assert (shadow['data']['name'], shadow['data']['planted_dim'], shadow['attack']['subspace']['mode']) == (
      'synthetic_subspace', 2, 'known')
  # A two-layer net's shadows cannot search a subspace: D = d, said so.
  c2 = _file_config(tmp_path, y, **{'victim.name': 'two_layer'})
  assert _dimension(c2)['D'] == 16


def test_one_outcome_gives_the_bound_the_runs_measured():
  runs = [{'ratio': r, 'success': False} for r in (0.5, 1.0, 3.0)]
  b = leak_width.bound(runs, n=6, dim=16, p=800)
  assert b['kind'] == 'lower' and b['p_star_bound'] == pytest.approx(3.0 * 16 * 6)
  assert 'p* > 288' in b['statement'] and 'above that bound' in b['statement']
  ok = [{'ratio': r, 'success': True} for r in (0.5, 1.0, 3.0)]
  b = leak_width.bound(ok, n=6, dim=16, p=800)
  assert b['kind'] == 'upper' and b['p_star_bound'] == pytest.approx(0.5 * 16 * 6)
  assert 'p* <= 48' in b['statement'] and 'at or above' in b['statement']
  assert leak_width.bound(runs + ok, n=6, dim=16, p=800) is None


@pytest.mark.slow  # ~10 s: four tiny shadows
def test_a_prediction_whose_shadows_all_fail_reports_a_bound_not_an_error(tmp_path):
  c = recon.get_config('leak_width', {
      'data.n': 12, 'data.d': 4, 'victim.p': 600, 'victim.activation': 'relu',
      'leak_width.shadow_n': (3,), 'leak_width.ratios': (0.25, 0.5),
      'leak_width.shadow_seeds': (1000, 1001), 'leak_width.bootstrap': 10,
      'leak_width.model': 'constant', 'attack.max_steps': 200})
  result = recon.run(c, str(tmp_path / 'w'))
  assert result.metrics['p_star'] is None and result.metrics['bound'] == 'lower'
  assert result.metrics['p_star_bound'] == pytest.approx(0.5 * 4 * 12)
  out = json.loads((tmp_path / 'w' / 'leak_width.json').read_text())
  assert out['fit'] is None and out['prediction']['kind'] == 'lower'


@pytest.mark.parametrize('act, n, mode, shadows', [
    ('relu', 100, 'auto', 'on'),  # n > d: the model's attack is quotiented, so are the shadows
    ('relu', 12, 'auto', 'off'),  # n <= d: the plain loss throughout
    ('relu', 100, 'off', 'off'), ('relu', 8, 'on', 'on'), ('relu_tanh', 100, 'auto', 'off')])
def test_shadows_run_the_sign_quotient_the_model_would_get(act, n, mode, shadows):
  c = recon.get_config('leak_width', {'data.n': n, 'data.d': 16, 'victim.activation': act,
                                      'attack.sign_quotient': mode})
  assert _shadow(c, _dimension(c))['attack']['sign_quotient'] == shadows


@pytest.mark.parametrize('overrides, line', [
    ({'victim.name': 'resnet'}, r"^config.victim.name: 'resnet' with pipeline leak_width; "
                                r'accepted: random_features, two_layer'),
    ({'victim.activation': 'tanh'}, r"^config.victim.activation: 'tanh' .*accepted: relu, "
                                    'relu_tanh'),
    ({'victim.name': 'two_layer', 'victim.train.loss': 'cross_entropy'},
     r"^config.victim.train.loss: 'cross_entropy' .*accepted: 'mse'"),
    ({'leak_width.ratios': (1.0,)}, r'^config.leak_width.ratios / shadow_seeds: fewer than 2'),
    ({'leak_width.shadow_n': (8, 1)}, r'^config.leak_width.shadow_n: invalid value .*ints >= 2'),
    ({'leak_width.dim': 'pca'}, r"^config.leak_width.dim: 'pca' with data.name "
                                "'synthetic_sphere'"),
    ({'leak_width.dim': 'k'}, r"^config.leak_width.dim: invalid value 'k'; accepted: one of "
                              "'auto', 'd', 'pca'"),
    ({'leak_width.shadow_n': (8,)}, r"^config.leak_width.model: 'trend' with one shadow size"),
    ({'leak_width.shadow_seeds': (1000, 1001, 1000)},
     r"^config.leak_width.shadow_seeds: 1000 given more than once"),
    ({'leak_width.ratios': (1e9, 2.0)}, r"^config.leak_width.ratios: .*numbers in \(0, 1e6\)"),
    ({'pipeline': 'nope'}, r"^config.pipeline: invalid value 'nope'; accepted: one of .*"
                           "'leak_width'"),
    ({'sweep.seed': (0, 1)}, r"^config.sweep: axes set with pipeline 'leak_width'"),
])
def test_bad_input_is_one_line_naming_the_field(tmp_path, overrides, line):
  with pytest.raises(recon.RunError, match=line) as e:
    recon.run(recon.get_config('leak_width', overrides), str(tmp_path / 'w'))
  assert e.value.exit_code == 2 and not (tmp_path / 'w').exists()


@pytest.mark.slow  # ~30 s: it compiles a sweep
def test_a_tiny_prediction_writes_leak_width_json_and_png(tmp_path):
  c = recon.get_config('leak_width', {
      'data.n': 12, 'data.d': 4, 'victim.p': 600, 'victim.activation': 'relu',
      'leak_width.shadow_n': (3,), 'leak_width.ratios': (0.25, 16.0),
      'leak_width.shadow_seeds': (1000, 1001), 'leak_width.bootstrap': 10,
      'leak_width.model': 'constant', 'attack.max_steps': 1000})
  result = recon.run(c, str(tmp_path / 'w'))
  out = json.loads((tmp_path / 'w' / 'leak_width.json').read_text())
  assert (tmp_path / 'w' / 'leak_width.png').stat().st_size > 0
  assert {r['seed'] for r in out['runs']} == {1000, 1001} and len(out['runs']) == 4
  assert [p['ratio'] for p in out['points']] == [0.25, 16.0]
  assert out['points'][0]['recovery_rate'] == 0.0 and out['points'][1]['recovery_rate'] > 0
  pred = out['prediction']
  assert pred['p'] == 600 and pred['p_star'] == pytest.approx(out['fit']['c'] * 4 * 12)
  assert result.metrics['margin'] == pytest.approx(600 / pred['p_star'])


@pytest.mark.slow  # ~40 s: two compiled groups of two-layer victims
def test_two_layer_shadows_run_as_one_sweep_per_n(tmp_path):
  c = recon.get_config('leak_width', {
      'data.n': 12, 'data.d': 8, 'data.num_classes': 2, 'victim.name': 'two_layer',
      'victim.width': 400, 'attack.jacobian_at': 'init_and_trained',
      'leak_width.shadow_n': (4,), 'leak_width.ratios': (0.25, 10.0),
      'leak_width.shadow_seeds': (1000, 1001), 'leak_width.bootstrap': 10,
      'leak_width.model': 'constant', 'attack.max_steps': 3000})
  result = recon.run(c, str(tmp_path / 'w'))
  out = json.loads((tmp_path / 'w' / 'leak_width.json').read_text())
  # One sweep at n = 4: widths 4 and 160 (width x 2 classes = r d n), each a compiled group.
  shadows = json.loads((tmp_path / 'w' / 'shadows' / 'n4' / 'sweep.json').read_text())
  assert [g['static'] for g in shadows['groups']] == [{'width': 4}, {'width': 160}]
  assert sorted((r['ratio'], r['width'], r['seed']) for r in out['runs']) == [
      (0.25, 4, 1000), (0.25, 4, 1001), (10.0, 160, 1000), (10.0, 160, 1001)]
  assert [p['recovery_rate'] for p in out['points']] == [0.0, 1.0]
  assert result.metrics['margin'] == pytest.approx(800 / out['prediction']['p_star'])


def test_the_direct_measurement_can_come_from_the_recovery_law(tmp_path):
  """scripts/leak_width.py --direct_from: the recovery law's per-seed outcomes at (activation, d,
  n) on fresh seeds, default method, full space; every other record is left out."""
  from scripts import leak_width as script  # its flags are defined only when run as a script
  per_seed = lambda seeds, ok: {'seed': seeds, 'recovered': ok, 'certified': ok,  # noqa: E731
                                'steps': [20000] * len(seeds)}
  base = {'method': 'default', 'activation': 'relu_tanh', 'd': 16, 'n': 100, 'k': None,
          'first_seed': 100, 'median_seconds': 80.0}
  records = [
      {**base, 'p_over_dn': 2.0, 'p': 3200, 'per_seed': per_seed([100, 101], [False, False])},
      {**base, 'p_over_dn': 4.0, 'p': 6400, 'per_seed': per_seed([100, 101], [True, False])},
      {**base, 'p_over_dn': 4.0, 'p': 6400, 'first_seed': 0, 'per_seed': per_seed([0], [True])},
      {**base, 'p_over_dn': 4.0, 'p': 6400, 'method': 'previous', 'per_seed': per_seed([100], [True])},
      {**base, 'p_over_dn': 4.0, 'p': 1024, 'n': 32, 'per_seed': per_seed([100], [True])},
      {**base, 'p_over_dn': 4.0, 'p': 6400, 'activation': 'relu', 'per_seed': per_seed([100], [True])},
      {**base, 'p_over_dn': 4.0, 'p': 6400, 'data': 'photo_patches',
       'per_seed': per_seed([100], [True])},
  ]
  path = tmp_path / 'law.json'
  path.write_text(json.dumps({'records': records}))
  got = script.direct_from_law(str(path), 'relu_tanh', 16, 100)
  assert [(r['ratio'], r['seed'], r['success'], r['p']) for r in got] == [
      (2.0, 100, False, 3200), (2.0, 101, False, 3200), (4.0, 100, True, 6400),
      (4.0, 101, False, 6400)]
  assert leak_width.rates(got)[1]['recovery_rate'] == 0.5
  with pytest.raises(SystemExit, match='no default-method records at relu_tanh, d=16, n=500'):
    script.direct_from_law(str(path), 'relu_tanh', 16, 500)


@pytest.mark.slow  # ~15 s: one tiny shadow sweep
def test_shadows_finished_in_a_work_dir_are_read_back_and_another_config_refused(tmp_path):
  """scripts/leak_width.py --work_dir run again (to take a new direct measurement) reads the
  finished shadow sweeps back instead of refusing their workdir; shadows of another attack there
  are refused in one line."""
  c = recon.get_config('leak_width', {'data.n': 6, 'data.d': 4, 'victim.activation': 'relu_tanh',
                                       'attack.max_steps': 200})
  args = ([3], [0.25, 16.0], [1000, 1001], str(tmp_path / 'shadows'))
  first = recon.leak_width_shadows(c, *args)
  again = recon.leak_width_shadows(c, *args)
  assert again['records'] == first['records'] and len(first['records']) == 4
  c.attack.lr = 0.01
  with pytest.raises(errors.ReconError, match='holds shadows of another config .*attack.lr'):
    recon.leak_width_shadows(c, *args)


def _fake_sweeps(calls, success):
  """A stand-in for the shadows' sweeps (`run_or_read`): records for the grid each asks for,
  success(n, ratio in the sweep's p / (d n), seed) -> frac_recovered; group i's seconds 10 (i+1)."""
  def fake(shadows, workdir):
    calls.append((shadows, workdir))
    sw, groups, records = shadows['sweep'], [], []
    d = shadows['data']['d']
    ns = (sw.get('data') or {}).get('n') or (shadows['data']['n'],)
    axis = sw['victim'].get('p_over_dn') or sw['victim'].get('width')
    for g, n in enumerate(ns):
      groups.append({'seconds': 10.0 * (g + 1), 'n_points': len(axis) * len(sw['seed'])})
      for a in axis:
        for s in sw['seed']:
          records.append({'n': n, 'p_over_dn': a, 'width': a, 'p': int(round(a * d * n)),
                          'seed': s, 'frac_recovered': success(n, a, s), 'certified': False,
                          'steps': 100 + s % 7, 'group': g})
    return {'groups': groups, 'records': records}
  return fake


def test_random_features_shadows_scale_the_ratio_to_the_subspace_and_read_back_records(
    tmp_path, monkeypatch):
  """D < d: the sweep's p / (d n) is r D / d; each record's ratio is read back in p / (D n),
  its seconds its group's share, success only at frac_recovered = 1."""
  calls = []
  monkeypatch.setattr(lw_pipeline, 'run_or_read', _fake_sweeps(
      calls, lambda n, a, s: 1.0 if a >= 0.5 else 0.999))
  c = recon.get_config('leak_width', {'data.d': 16})
  base = _shadow(c, {'d': 16, 'D': 4, 'mode': 'pca'})
  recs = lw_pipeline.shadow_records_rf(base, {'d': 16, 'D': 4}, (4, 6), (1.0, 2.0, 3.0),
                                       (1000, 1001), str(tmp_path / 's'))
  (shadows, workdir), = calls
  assert workdir == str(tmp_path / 's') and shadows['run']['resume'] is True
  assert list(shadows['sweep']['data']['n']) == [4, 6]
  assert list(shadows['sweep']['seed']) == [1000, 1001]
  np.testing.assert_allclose(shadows['sweep']['victim']['p_over_dn'], [0.25, 0.5, 0.75])
  assert len(recs) == 12 and [r['n'] for r in recs] == [4] * 6 + [6] * 6
  np.testing.assert_allclose([r['ratio'] for r in recs[:6]], [1, 1, 2, 2, 3, 3])
  assert [r['success'] for r in recs[:6]] == [False, False, True, True, True, True]
  assert [r['seconds'] for r in recs] == [10.0 / 6] * 6 + [20.0 / 6] * 6
  assert [r['steps'] for r in recs[:2]] == [100 + 1000 % 7, 100 + 1001 % 7]


def test_two_layer_shadows_run_one_sweep_per_n_at_the_widths_of_the_ratios(tmp_path, monkeypatch):
  calls = []
  monkeypatch.setattr(lw_pipeline, 'run_or_read', _fake_sweeps(
      calls, lambda n, w, s: 1.0 if w >= 40 else 0.0))
  c = recon.get_config('leak_width', {'victim.name': 'two_layer', 'data.d': 16,
                                      'data.num_classes': 2})
  dim = {'d': 16, 'D': 16, 'mode': 'd'}
  recs = lw_pipeline.shadow_records_two_layer(_shadow(c, dim), dim, (4, 6), (0.5, 2.0),
                                              (1000, 1001), str(tmp_path))
  assert [w for _, w in calls] == [str(tmp_path / 'n4'), str(tmp_path / 'n6')]
  assert [list(s['sweep']['victim']['width']) for s, _ in calls] == [[16, 64], [24, 96]]
  assert [(r['n'], r['ratio'], r['width'], r['p'], r['seed'], r['success']) for r in recs[:4]] == [
      (4, 0.5, 16, 32, 1000, False), (4, 0.5, 16, 32, 1001, False),
      (4, 2.0, 64, 128, 1000, True), (4, 2.0, 64, 128, 1001, True)]
  assert {r['seconds'] for r in recs[:4]} == {10.0 / 4} and not any(r['certified'] for r in recs)


def test_the_shadows_config_is_the_auditors_on_synthetic_data_without_its_files():
  c = recon.get_config('leak_width', {'data.d': 16, 'run.checkpoint_every_seconds': 120.0,
                                      'run.log_every_seconds': 5.0})
  full = _shadow(c, {'d': 16, 'D': 16})
  assert full['data']['name'] == 'synthetic_sphere' and full['data']['path'] is None
  assert full['data']['preprocess'] == 'sphere' and full['pipeline'] is None
  assert full['run']['checkpoint_every_seconds'] == 0.0 and full['run']['log_every_seconds'] == 30.0
  assert full['run']['overwrite'] is False and full['run']['resume'] is False
  assert full['victim']['checkpoint'] is None and full['attack']['n_candidates'] is None
  sub = _shadow(c, {'d': 16, 'D': 5})
  assert sub['data']['name'] == 'synthetic_subspace' and sub['data']['planted_dim'] == 5
  assert sub['attack']['subspace']['mode'] == 'known' and sub['attack']['subspace']['dim'] is None


def test_the_cost_line_counts_runs_and_compiled_groups_per_family():
  c = recon.get_config('leak_width', {'leak_width.shadow_n': (4, 8), 'leak_width.ratios': (0.5, 2.0, 3.0),
                                      'leak_width.shadow_seeds': (1, 2), 'attack.max_steps': 500})
  dim = {'D': 10, 'd': 16}
  line = lw_pipeline.cost_line(c.victim, c.attack, c.leak_width, dim)
  assert line.startswith('leak width: 12 shadow runs (2 sizes x 3 ratios x 2 seeds) in 2 compiled '
                         'group(s), the largest p = 240, each up to attack.max_steps = 500 steps')
  c.victim.name = 'two_layer'
  assert 'in 6 compiled group(s)' in lw_pipeline.cost_line(c.victim, c.attack, c.leak_width, dim)


@pytest.mark.parametrize('field, values, ok', [('shadow_n', (2, 5), True),
                                                ('shadow_seeds', (), False),
                                                ('ratios', (), False)])
def test_the_smallest_shadow_size_is_2_and_an_empty_axis_is_refused(field, values, ok):
  c = recon.get_config('leak_width', {f'leak_width.{field}': values})
  if ok:
    lw_pipeline.check(c.data, c.victim, c.leak_width)
  else:
    with pytest.raises(errors.ExperimentError, match=rf'^config.leak_width.{field}: invalid '):
      lw_pipeline.check(c.data, c.victim, c.leak_width)


def _tiny_prediction(tmp_path, monkeypatch, success, **overrides):
  calls = []
  monkeypatch.setattr(lw_pipeline, 'run_or_read', _fake_sweeps(calls, success))
  c = recon.get_config('leak_width', {
      'data.n': 12, 'data.d': 4, 'victim.p': 600, 'leak_width.shadow_n': (4, 6),
      'leak_width.ratios': (0.5, 1.0, 2.0, 4.0), 'leak_width.shadow_seeds': (1000, 1001, 1002),
      'leak_width.bootstrap': 10, **overrides})
  result = recon.run(c, str(tmp_path))
  return result, json.loads((tmp_path / 'leak_width.json').read_text())


def test_a_prediction_from_shadows_writes_its_fit_trend_and_runs(tmp_path, monkeypatch):
  """The whole pipeline on stand-in shadows (no attack run): the trend fit, the prediction at
  the auditor's n, every run recorded; the bootstrap seeded by the run's seed."""
  success = lambda n, a, s: 1.0 if a >= 2.0 or (a >= 1.0 and s != 1000) else 0.0  # noqa: E731
  seeds = []
  for name in ('bootstrap_threshold', 'bootstrap_trend'):
    real = getattr(leak_width, name)
    monkeypatch.setattr(leak_width, name, lambda *a, _f=real, _n=name, **k: (
        seeds.append((_n, k['seed'])), _f(*a, **k))[1])
  result, out = _tiny_prediction(tmp_path / 'a', monkeypatch, success, seed=7)
  # Both bootstraps are the run's seed's: a rerun gives the same intervals.
  assert seeds == [('bootstrap_threshold', 7), ('bootstrap_trend', 7)]
  m = result.metrics
  assert m['model'] == 'trend' and m['D'] == 4 and m['p_star'] > 0
  assert m['c'] == out['fit_trend']['at_n']['c'] and m['c_ci'] == out['fit_trend']['at_n']['c_ci']
  assert len(m['c_ci']) == 2 and m['c_ci'][0] <= m['c'] <= m['c_ci'][1]
  assert m['margin'] == pytest.approx(600 / m['p_star'])
  assert out['shadow_n'] == [4, 6] and out['ratios'] == [0.5, 1.0, 2.0, 4.0]
  assert out['shadow_seeds'] == [1000, 1001, 1002] and len(out['runs']) == 24
  assert out['fit'] is not None and 'boot_mu' not in out['fit'] and 'boot' not in out['fit_trend']
  assert 0 <= out['wall_seconds'] < 600 and out['prediction']['p'] == 600
  assert os.path.isfile(tmp_path / 'a' / 'leak_width.png')


def test_shadows_of_one_outcome_write_the_bound(tmp_path, monkeypatch):
  result, out = _tiny_prediction(tmp_path, monkeypatch, lambda n, a, s: 0.0,
                                 **{'leak_width.model': 'constant'})
  m = result.metrics
  assert m['p_star'] is None and m['bound'] == 'lower' and m['D'] == 4
  assert m['p_star_bound'] == pytest.approx(4.0 * 4 * 12) and m['model'] == 'constant'
  assert m['statement'] == out['prediction']['statement'] and 'p* > 192' in m['statement']
  assert out['fit'] is None and len(out['runs']) == 24 and 0 <= out['wall_seconds'] < 600
  assert json.loads((tmp_path / 'summary.json').read_text())['config']['data']['n'] == 12
