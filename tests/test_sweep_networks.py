"""Tests of recon/sweep/networks.py: a sweep of GD-trained networks equals their single runs."""
import os

import ml_collections
import numpy as np
import pytest

from configs import base, rf_synthetic, two_layer
from recon.config import validate as config_lib
from recon import pipelines
from recon.sweep import grid as sweep


def tiny_config(axes=None, max_steps=20):
  """A tiny two-layer sweep over `axes` ({field path: values})."""
  c = two_layer.get_config()
  c.data.n, c.data.d, c.victim.width = 3, 4, 24
  c.victim.train.max_steps = 500
  c.attack.max_steps, c.run.chunk_steps = max_steps, 20
  c.attack.rescue = ()
  c.run.log_every_seconds = 1e9
  with c.ignore_type():
    for path, values in (axes or {'victim.width': (12, 24), 'seed': (0, 1)}).items():
      config_lib.set_path(c.sweep, path, values)
  return c


@pytest.fixture(scope='module')
def swept(tmp_path_factory):
  tmp = tmp_path_factory.mktemp('sweep_networks')
  c = tiny_config()
  out = sweep.run(c, str(tmp / 'sweep'))
  singles = []
  for r in out['records']:
    s = ml_collections.ConfigDict(c.to_dict())
    s.sweep = base.sweep()
    s.seed, s.victim.width = r['seed'], r['width']
    wd = str(tmp / f'single{r["index"]}')
    singles.append((pipelines.run(s, wd)['metrics'],
                    np.load(os.path.join(wd, 'reconstruction.npz'))['x_candidates']))
  return out, np.load(str(tmp / 'sweep' / 'sweep.npz')), singles


@pytest.mark.slow  # compiles and runs an attack (over ~3 s)
def test_points_equal_single_runs(swept):
  out, arrays, singles = swept
  assert len(out['records']) == 4 and len(out['groups']) == 2  # one compiled group per width
  for r, (s, x_single) in zip(out['records'], singles):
    assert r['p_L'] == s['p_L'] == 2 * r['width']
    # The victim: the same GD steps (vmapped: float32 rounding apart).
    assert r['train_steps'] == s['train_steps'] and r['train_reached_tol'] == s['train_reached_tol']
    assert r['train_lr'] == pytest.approx(s['train_lr'], rel=1e-5)
    assert r['train_final_loss'] == pytest.approx(s['train_final_loss'], rel=1e-3)
    assert r['projection_loss_at_truth'] == pytest.approx(s['projection_loss_at_truth'], rel=1e-4)
    # The attack: 20 steps from the same start to the same candidates (sgd at lr 5 with
    # momentum amplifies rounding: one of these points drifts 4e-5 by step 20, 0.3 by 50).
    assert r['steps'] == s['steps'] == 20
    assert np.abs(arrays[f'x_hat_{r["index"]}'] - x_single).max() < 1e-3
    for k in ('recon_error', 'projection_loss', 'feature_residual'):
      assert r[k] == pytest.approx(s[k], rel=1e-3, abs=1e-5), k
  # Not degenerate: widths and seeds give different victims.
  assert len({round(r['train_lr'], 6) for r in out['records']}) == 4


@pytest.mark.slow  # compiles and runs an attack (over ~3 s)
def test_outputs_are_written(swept):
  out, arrays, _ = swept
  assert sorted(arrays.files) == sorted(f'{k}_{i}' for k in ('x_true', 'x_hat') for i in range(4))
  assert {r['width'] for r in out['records']} == {12, 24}
  assert out['axes'] == {'width': [12, 24], 'seed': [0, 1]}


@pytest.mark.parametrize('axes, setting, field', [
    ({'victim.p': (10, 20)}, {}, 'config.sweep.victim.p:'),
    ({'seed': (0, 1)}, {'victim.train.dp.mode': 'on', 'victim.train.dp.noise_multiplier': 1.0},
     'config.victim.train.dp.mode:'),
    ({'seed': (0, 1)}, {'victim.release_noise': 0.1}, 'config.sweep:'),
    ({'seed': (0, 1)}, {'attack.restarts': 2}, 'config.attack.restarts:'),
    # The subspace pipeline reads k off each victim's dW1: a shape per point.
    ({'seed': (0, 1)}, {'attack.objective': 'unified', 'attack.subspace.mode': 'estimated',
                        'victim.train.lr': 5e-3},
     'config.attack.objective:'),
    ({'seed': (0, 1)}, {'attack.subspace.mode': 'known', 'data.name': 'synthetic_subspace',
                        'data.planted_dim': 2,
                        'victim.train.lr': 5e-3},
     'config.attack.objective:'),
])
def test_what_does_not_vectorise_is_one_line(tmp_path, axes, setting, field):
  c = tiny_config(axes)
  c.update_from_flattened_dict(setting)
  with pytest.raises(config_lib.ConfigError) as e:
    sweep.run(c, str(tmp_path / 'run'))
  assert str(e.value).startswith(field) and '\n' not in str(e.value), str(e.value)
  assert not os.path.exists(tmp_path / 'run')


def test_random_features_refuse_a_width_axis(tmp_path):
  c = rf_synthetic.get_config()
  c.data.n, c.data.d = 3, 4
  c.sweep.victim.width = (10, 20)
  with pytest.raises(config_lib.ConfigError, match='^config.sweep.victim.width: '):
    sweep.run(c, str(tmp_path / 'run'))


@pytest.mark.slow  # compiles and runs an attack (over ~3 s)
def test_a_wide_two_layer_net_gives_back_every_row_at_every_seed(tmp_path):
  # p_L = width x classes = 320 = 10 d n: the attack of the leak-width prediction's two-layer
  # family (features at W(0) and W(T), Adam, cosine decay, escalation), three victims at once.
  c = tiny_config({'seed': (0, 1, 2)}, max_steps=3000)
  c.data.n, c.data.d, c.victim.width = 4, 8, 160
  c.victim.train.max_steps = 20000
  c.attack.update(optimizer='adam', lr=0.05, schedule='cosine', jacobian_at='init_and_trained',
                  rescue=('escalate',))
  c.run.chunk_steps = 500
  out = sweep.run(c, str(tmp_path / 'run'))
  assert [r['frac_recovered'] for r in out['records']] == [1.0, 1.0, 1.0]
  assert all(r['train_reached_tol'] and r['p_L_over_dn'] == 10.0 for r in out['records'])
