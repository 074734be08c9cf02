"""Tests of recon/sweep/grid.py: batched == unbatched, sharded == unsharded, bad input, outputs."""
import csv
import json
import os
import subprocess
import sys
import textwrap

import ml_collections
import numpy as np
import pytest

from configs import base, rf_synthetic
from recon.config import validate as config_lib
from recon import errors, pipelines
from recon.attack import memory
from recon.sweep import grid as sweep
from conftest import subprocess_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def tiny_config(axes=None):
  """A tiny random-features sweep over `axes` ({field path: values})."""
  c = rf_synthetic.get_config()
  c.data.n, c.data.d, c.victim.p, c.attack.lr = 3, 4, 20, 2.0
  c.attack.optimizer, c.attack.schedule, c.attack.tol = 'sgd', 'constant', 1e-7
  c.attack.max_steps, c.run.chunk_steps = 200, 100
  c.run.log_every_seconds = 1e9
  with c.ignore_type():  # a bad axis value is the validator's to refuse
    for path, values in (axes or {'victim.p': (6, 40), 'seed': (0, 1)}).items():
      config_lib.set_path(c.sweep, path, values)
  return c


def single_config(c, record):
  """The single run of a sweep's record (the sweep's axes cleared)."""
  single = ml_collections.ConfigDict(c.to_dict())
  single.sweep = base.sweep()
  single.update_from_flattened_dict({
      'victim.p': record['p'], 'seed': record['seed'], 'attack.lr': record['lr'],
      'victim.activation': record['activation'], 'attack.n_candidates': record['n_candidates']})
  return single


# Batched vs unbatched and 2 devices vs 1, in float64 (jax_enable_x64 is process-wide,
# so it runs in its own process) with two forced host devices. In float32 the
# trajectories agree to ~1e-6 until the loss reaches its float32 noise floor, after which
# runs that agree to rounding drift apart (see test_float32_batched_matches_single).
_SUBPROCESS = textwrap.dedent('''
    import json, sys
    import jax, ml_collections, numpy as np
    from absl import logging
    from recon import errors, pipelines
    from recon.sweep import grid as sweep
    from tests.test_sweep import tiny_config, single_config
    logging.set_verbosity(logging.WARNING)
    out = {'n_devices': len(jax.devices())}
    tmp = sys.argv[1]
    c = tiny_config()
    c.run.dtype = 'float64'
    one = sweep.run(c, tmp + '/one', devices=jax.devices()[:1])
    two = sweep.run(c, tmp + '/two')
    x_one = np.load(tmp + '/one/sweep.npz'); x_two = np.load(tmp + '/two/sweep.npz')
    out['shards'] = [one['groups'][0]['n_shards'], two['groups'][0]['n_shards']]
    out['sharded_dx'] = max(float(np.abs(x_one[k] - x_two[k]).max()) for k in x_one.files)
    out['sharded_records'] = [[a[k] for a in (r1, r2)] for r1, r2 in
                              zip(one['records'], two['records'])
                              for k in ('recon_error', 'steps', 'status')]
    out['single'] = []
    for r in one['records']:
      s = pipelines.run(single_config(c, r), tmp + '/single%d' % r['index'])['metrics']
      xs = np.load(tmp + '/single%d/reconstruction.npz' % r['index'])['x_candidates']
      out['single'].append({
          'dx': float(np.abs(xs - x_one['x_hat_%d' % r['index']]).max()),
          'batched': {k: r[k] for k in ('recon_error', 'frac_recovered', 'dist_abs',
              'feature_residual', 'projection_loss', 'train_mse', 'steps', 'status', 'p')},
          'single': {k: s[k] for k in ('recon_error', 'frac_recovered', 'dist_abs',
              'feature_residual', 'projection_loss', 'train_mse', 'steps', 'status', 'p')}})
    # An odd grid (3 points) is padded to 4 for 2 devices; its seeds 0, 1 are points of
    # the 1-device grid above (same widths, same padded width 40).
    c3 = tiny_config({'victim.p': (40,), 'seed': (0, 1, 2)})
    c3.run.dtype = 'float64'
    odd = sweep.run(c3, tmp + '/odd')
    ref = {r['seed']: r for r in one['records'] if r['p'] == 40}
    out['odd'] = {'batch': odd['groups'][0]['batch'], 'n': len(odd['records']),
                  'diff': max(abs(r['recon_error'] - ref[r['seed']]['recon_error'])
                              for r in odd['records'] if r['seed'] in ref)}
    print('RESULT' + json.dumps(out))
''')


@pytest.fixture(scope='module')
def two_device_run(tmp_path_factory):
  tmp = str(tmp_path_factory.mktemp('sharded'))
  env = subprocess_env(XLA_FLAGS='--xla_force_host_platform_device_count=2',
                       JAX_PLATFORMS='cpu')
  proc = subprocess.run([sys.executable, '-c', _SUBPROCESS, tmp], cwd=ROOT, env=env,
                        capture_output=True, text=True, timeout=600, check=False)
  assert proc.returncode == 0, proc.stderr[-3000:]
  line = [l for l in proc.stdout.splitlines() if l.startswith('RESULT')][-1]
  return json.loads(line[len('RESULT'):])


@pytest.mark.slow  # a 2-device subprocess (the float32 sweep below checks batched == single in-process)
def test_batched_points_equal_single_runs(two_device_run):
  assert len(two_device_run['single']) == 4
  for point in two_device_run['single']:
    # 1e-7: the precision rung polishes these runs in float64 from inputs that differ by
    # < 1e-9; its vmapped row search and Gauss-Newton amplify that by the Jacobian's
    # conditioning (sigma ratio ~1e-2), measured 1.7e-8.
    assert point['dx'] < 1e-7, point
    b, s = point['batched'], point['single']
    assert b['steps'] == s['steps'] and b['status'] == s['status'] and b['p'] == s['p']
    for k in ('recon_error', 'frac_recovered', 'dist_abs', 'feature_residual',
              'projection_loss', 'train_mse'):
      # abs 1e-7: these runs stop short of tol and the precision rung polishes them; its
      # row search and Gauss-Newton steps carry (and amplify) the < 1e-9 input differences.
      assert b[k] == pytest.approx(s[k], rel=1e-6, abs=1e-7), (k, point)
  # The grid is not degenerate: widths and seeds give different results.
  errors = [p['batched']['recon_error'] for p in two_device_run['single']]
  assert len(set(np.round(errors, 6))) == 4


@pytest.mark.slow  # a 2-device subprocess (the float32 sweep below checks batched == single in-process)
def test_sharded_equals_unsharded(two_device_run):
  assert two_device_run['n_devices'] == 2
  assert two_device_run['shards'] == [1, 2]
  assert two_device_run['sharded_dx'] < 1e-9
  for a, b in two_device_run['sharded_records']:
    assert a == pytest.approx(b, rel=1e-9) if isinstance(a, float) else a == b
  odd = two_device_run['odd']
  assert odd['batch'] == 4 and odd['n'] == 3 and odd['diff'] < 1e-9


@pytest.fixture(scope='module')
def float32_sweep(tmp_path_factory):
  tmp = tmp_path_factory.mktemp('float32')
  c = tiny_config({'victim.p_over_dn': (0.5, 2.0), 'seed': (1,),
                   'victim.activation': ('relu', 'relu_tanh')})
  c.attack.max_steps = 50
  return c, tmp, sweep.run(c, str(tmp / 'sweep'))


def test_float32_batched_matches_single(float32_sweep):
  # Before the float32 noise floor (50 steps), a padded batched point (p=6 padded to 24)
  # tracks its single run.
  c, tmp, result = float32_sweep
  arrays = np.load(tmp / 'sweep' / 'sweep.npz')
  r = result['records'][0]
  assert r['p'] == 6 and result['groups'][0]['p_total'] == 24
  s = pipelines.run(single_config(c, r), str(tmp / 'single'))['metrics']
  xs = np.load(tmp / 'single' / 'reconstruction.npz')['x_candidates']
  np.testing.assert_allclose(arrays['x_hat_0'], xs, atol=1e-4)
  assert r['recon_error'] == pytest.approx(s['recon_error'], abs=1e-4)
  assert r['train_mse'] == pytest.approx(s['train_mse'], rel=1e-3, abs=1e-9)
  assert r['steps'] == s['steps'] and r['status'] == s['status']


def test_outputs_written(float32_sweep):
  c, tmp, result = float32_sweep
  tmp_path = tmp / 'sweep'
  assert [g['static'] for g in result['groups']] == [{'activation': 'relu'},
                                                     {'activation': 'relu_tanh'}]
  with open(tmp_path / 'sweep.json') as f:
    saved = json.load(f)
  records = saved['records']
  assert len(records) == 4
  assert [r['index'] for r in records] == [0, 1, 2, 3]
  assert [r['p'] for r in records] == [6, 24, 6, 24]  # p = p_over_dn * d * n
  assert [r['activation'] for r in records] == ['relu', 'relu', 'relu_tanh', 'relu_tanh']
  for r in records:
    for k in ('recon_error', 'frac_recovered', 'dist_abs', 'feature_residual',
              'projection_loss', 'train_mse', 'steps', 'status', 'p', 'p_over_dn', 'seed'):
      assert k in r, k
    assert r['steps'] <= 50 and 0 <= r['frac_recovered'] <= 1
  with open(tmp_path / 'sweep.csv') as f:
    rows = list(csv.DictReader(f))
  assert len(rows) == 4 and float(rows[1]['recon_error']) == pytest.approx(
      records[1]['recon_error'])
  # A finished sweep is not overwritten silently.
  with pytest.raises(errors.ExperimentError, match='already holds'):
    sweep.run(c, str(tmp_path))


@pytest.mark.parametrize('axes, field, message', [
    ({'victim.depth': (1,)}, 'config.sweep.victim.depth', 'unknown sweep axis'),
    ({'victim.width': (10,)}, 'config.sweep.victim.width', 'accepted for random features'),
    ({'seed': ()}, 'config.sweep.seed', 'empty axis'),
    ({'attack.lr': (1.0, -2.0)}, 'config.sweep.attack.lr', 'invalid value -2.0'),
    ({'victim.activation': ('relu', 'nope')}, 'config.sweep.victim.activation', 'invalid value'),
    ({'victim.p': (10,), 'victim.p_over_dn': (1.0,)}, 'config.sweep.victim.p_over_dn', 'both'),
    ({'seed': 3}, 'config.sweep.seed', 'non-empty tuple'),
])
def test_bad_axes_are_one_line_errors(tmp_path, axes, field, message):
  c = tiny_config(axes)
  with pytest.raises(config_lib.ConfigError) as e:
    sweep.run(c, str(tmp_path / 'run'))
  text = str(e.value)
  assert text.startswith(field) and message in text and '\n' not in text
  assert not os.path.exists(tmp_path / 'run')  # nothing written, nothing compiled


def test_other_pipelines_are_refused(tmp_path):
  c = tiny_config({'seed': (0, 1)})
  with c.unlocked():
    c.data.name, c.data.planted_dim, c.attack.subspace.mode = 'synthetic_subspace', 2, 'known'
    c.attack.subspace.alpha_mode, c.attack.subspace.gradient_at = 'joint', 'trained'
  with pytest.raises(config_lib.ConfigError, match='^config.victim.name: sweeps run random '
                     'features, the networks and KKT pipelines'):
    sweep.run(c, str(tmp_path / 'run'))


def test_memory_budget(tmp_path):
  c = tiny_config({'victim.p': (10, 10 ** 6), 'seed': (0, 1)})
  c.run.sweep_memory_budget_gb = 0.1
  with pytest.raises(config_lib.ConfigError, match=r'^config.run.sweep_memory_budget_gb: .* GB > '
                     r'budget 0.1 GB') as e:
    sweep.run(c, str(tmp_path / 'run'))
  assert '\n' not in str(e.value)
  assert not os.path.exists(tmp_path / 'run')
  # The estimate grows with the padded width and the batch.
  small = memory.point_bytes(n=3, d=4, m=3, p_total=100, batch=2, itemsize=4)
  # Escalation's leave-one-out pass holds LOO_BATCH forward losses (n = 500, p = 32 000 ran out
  # of memory in its proposals before they went 16 slots at a time).
  from recon.attack.rescue import escalate  # pylint: disable=import-outside-toplevel
  assert (memory.point_bytes(n=3, d=4, m=3, p_total=100, batch=2, itemsize=4,
                             loo_batch=escalate.LOO_BATCH)
          - small) == 2 * 4 * escalate.LOO_BATCH * 3 * 3 * 100
  assert memory.point_bytes(n=3, d=4, m=3, p_total=200, batch=2, itemsize=4) > small
  assert memory.point_bytes(n=3, d=4, m=3, p_total=100, batch=4, itemsize=4) > small


def test_main_cli_bad_axis(tmp_path, capsys):
  # In-process: recon.main.execute is what the CLI runs after parsing the flags.
  from configs import rf_phase_transition  # pylint: disable=import-outside-toplevel
  from recon import main  # pylint: disable=import-outside-toplevel
  c = rf_phase_transition.get_config()
  c.sweep.seed = ()
  assert main.execute(c, f'{tmp_path}/x') == 2
  err = capsys.readouterr().err
  assert err.strip().splitlines()[-1].startswith('error: config.sweep.seed: empty axis'), err


@pytest.mark.slow  # a float64 sweep and its single runs
def test_cosine_schedule_sweep_over_lr_equals_single_runs(tmp_path):
  # lr is batched in the optimiser state and the cosine multiplies the update, so a sweep
  # over lr under a schedule is the single runs, point for point (float64).
  c = tiny_config({'attack.lr': (0.02, 0.05)})
  c.attack.optimizer, c.attack.schedule, c.attack.decay_steps = 'adam', 'cosine', 150
  c.run.dtype = 'float64'
  out = sweep.run(c, str(tmp_path / 'sweep'))
  xb = np.load(tmp_path / 'sweep' / 'sweep.npz')
  assert len(out['records']) == 2
  for r in out['records']:
    single = ml_collections.ConfigDict(c.to_dict())
    single.sweep = base.sweep()
    single.attack.lr = r['lr']
    s = pipelines.run(single, str(tmp_path / f"single{r['index']}"))
    xs = np.load(tmp_path / f"single{r['index']}" / 'reconstruction.npz')['x_candidates']
    np.testing.assert_allclose(xs, xb[f"x_hat_{r['index']}"], atol=1e-10)
    assert s['metrics']['steps'] == r['steps']
  # Different lrs give different runs (the batched lr is used, not a placeholder).
  assert np.abs(xb['x_hat_0'] - xb['x_hat_1']).max() > 1e-3


def test_lbfgs_is_refused_in_sweeps(tmp_path):
  c = tiny_config({'attack.lr': (0.5, 1.0)})
  c.attack.optimizer = 'lbfgs'
  with pytest.raises(config_lib.ConfigError, match="^config.attack.optimizer: 'lbfgs' is not supported"):
    sweep.run(c, str(tmp_path / 'x'))


def test_splitting_is_refused_in_sweeps(tmp_path):
  c = tiny_config({'attack.lr': (0.5, 1.0)})
  c.attack.split.mode = 'plateau'
  with pytest.raises(config_lib.ConfigError, match="^config.attack.split.mode: 'plateau' is not supported"):
    sweep.run(c, str(tmp_path / 'x'))
  assert not (tmp_path / 'x').exists()


def test_restarts_are_refused_in_sweeps(tmp_path):
  c = tiny_config({'attack.lr': (0.5, 1.0)})
  c.attack.restarts = 2
  with pytest.raises(config_lib.ConfigError, match="^config.attack.restarts: 2 is not supported"):
    sweep.run(c, str(tmp_path / 'x'))


@pytest.mark.slow
def test_known_subspace_points_escalate_and_carry_a_certificate(tmp_path):
  """subspace='known': candidates are coordinates in the planted basis (x_hat in its span);
  stuck points escalate (batched) and every record carries the blind certificate, never
  true on a missed row."""
  c = tiny_config({'seed': (0, 1, 2), 'victim.p': (4, 90)})
  with c.unlocked():
    c.data.name, c.data.planted_dim, c.attack.subspace.mode = 'synthetic_subspace', 3, 'known'
    s = c.attack.subspace
    s.alpha_mode, s.gradient_at, s.noise_floor = 'closed_form', 'trained', 1e-3
  c.data.d, c.attack.optimizer, c.attack.lr, c.attack.schedule, c.attack.max_steps = 8, 'adam', 0.05, 'cosine', 3000
  c.attack.decay_steps = 3000
  c.attack.escalate.every, c.attack.escalate.window, c.attack.escalate.trial_steps = 200, 400, 300
  out = sweep.run(c, str(tmp_path / 'run'))
  arrays = np.load(tmp_path / 'run' / 'sweep.npz')
  for r in out['records']:
    assert r['subspace'] == 'known' and isinstance(r['certified'], bool)
    assert 'reasons' in r['certificate']
    assert not (r['certified'] and r['frac_recovered'] < 1.0)
    x_hat, x_true = arrays[f'x_hat_{r["index"]}'], arrays[f'x_true_{r["index"]}']
    # x_true spans the planted 2-dim subspace; x_hat must lie in it too.
    u, sv, _ = np.linalg.svd(x_true.T, full_matrices=False)
    basis = u[:, :3]
    np.testing.assert_allclose(x_hat - x_hat @ basis @ basis.T, 0.0, atol=1e-4)
  wide = [r for r in out['records'] if r['p'] == 90]
  assert all(r['frac_recovered'] == 1.0 and r['certified'] for r in wide)  # p / kn = 10
  assert sum(r['escalations_accepted'] for r in wide) >= 1  # seeds 1, 2 stall without it
  narrow = [r for r in out['records'] if r['p'] == 4]  # p < k n: not isolated
  assert not any(r['certified'] for r in narrow)
