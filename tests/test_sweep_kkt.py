"""Tests of recon/sweep/kkt.py: a sweep of max-margin MLPs and their KKT attacks equals the
single runs."""
import os

import ml_collections
import numpy as np
import pytest

from configs import base, kkt_haim, kkt_synthetic
from recon.config import validate as config_lib
from recon import pipelines
from recon.sweep import grid as sweep


def tiny_config(axes=None, make=kkt_synthetic.get_config):
  """A short KKT sweep over `axes` ({field path: values})."""
  c = make()
  c.victim.train.polish = False  # the SLSQP polish runs single
  c.victim.train.max_steps, c.attack.max_steps = 400, 60
  c.run.chunk_steps, c.run.log_every_seconds = 30, 1e9
  with c.ignore_type():
    for path, values in (axes or {'seed': (0, 1), 'attack.lr': (0.01, 0.02)}).items():
      config_lib.set_path(c.sweep, path, values)
  return c


def single_runs(c, out, tmp):
  singles = []
  for r in out['records']:
    s = ml_collections.ConfigDict(c.to_dict())
    s.sweep = base.sweep()
    s.seed, s.attack.lr = r['seed'], r['lr']
    wd = str(tmp / f'single{r["index"]}')
    singles.append((pipelines.run(s, wd)['metrics'],
                    np.load(os.path.join(wd, 'reconstruction.npz'))['x_candidates']))
  return singles


@pytest.fixture(scope='module')
def swept(tmp_path_factory):
  tmp = tmp_path_factory.mktemp('sweep_kkt')
  c = tiny_config()
  out = sweep.run(c, str(tmp / 'sweep'))
  return out, np.load(str(tmp / 'sweep' / 'sweep.npz')), single_runs(c, out, tmp)


@pytest.mark.slow  # a sweep of four points and their four single runs (~18 s)
def test_points_equal_single_runs(swept):
  out, arrays, singles = swept
  assert len(out['records']) == 4 and len(out['groups']) == 1  # seeds x lrs: one program
  for r, (s, x_single) in zip(out['records'], singles):
    # The victim: the same GD steps with their duals (float64 here).
    assert r['train_steps'] == s['train_steps'] == 400
    assert r['train_loss'] == pytest.approx(s['train_loss'], rel=1e-9)
    assert r['normalized_margin'] == pytest.approx(s['normalized_margin'], rel=1e-9)
    assert r['n_params'] == s['n_params'] == 8 * 40 + 40
    # The attack: the same candidates and duals from the same start.
    assert r['steps'] == s['steps'] == 60
    assert np.abs(arrays[f'x_hat_{r["index"]}'] - x_single).max() < 1e-8
    for k in ('recon_error', 'final_loss'):
      assert r[k] == pytest.approx(s[k], rel=1e-8, abs=1e-12), k
  # Not degenerate: seeds give different victims, lrs different descents.
  assert len({round(r['train_loss'], 12) for r in out['records']}) == 2
  assert len({round(r['final_loss'], 12) for r in out['records']}) == 4


@pytest.mark.slow  # the sweep of test_points_equal_single_runs
def test_outputs_are_written(swept):
  out, arrays, _ = swept
  assert sorted(arrays.files) == sorted(f'{k}_{i}' for k in ('x_true', 'x_hat') for i in range(4))
  assert out['axes'] == {'seed': [0, 1], 'lr': [0.01, 0.02]}
  assert {r['objective'] for r in out['records']} == {'kkt_binary'}


@pytest.mark.slow  # trains two 64-wide depth-2 MLPs on digits and runs their attacks (~20 s)
def test_haim_setting_equals_single_runs(tmp_path):
  # Real images (each seed's subset has its own row norm), the first-layer candidate
  # subspace (a basis per victim), a layer subset of the KKT equations, relu_smooth, float32.
  def make():
    c = kkt_haim.get_config()
    c.data.n, c.victim.width = 10, 64
    return c
  c = tiny_config({'seed': (0, 1)}, make)
  out = sweep.run(c, str(tmp_path / 'sweep'))
  for r, (s, _) in zip(out['records'], single_runs(c, out, tmp_path)):
    for k in ('recon_error', 'final_loss', 'train_loss'):
      assert r[k] == pytest.approx(s[k], rel=1e-4), k


@pytest.mark.slow  # two victims polished by SLSQP, their attacks and single runs (~15 s)
def test_polished_victims_equal_single_runs(tmp_path):
  c = tiny_config({'seed': (0, 1)})
  c.victim.train.polish = True  # kkt_synthetic as shipped: on the host, victim by victim
  out = sweep.run(c, str(tmp_path / 'sweep'))
  for r, (s, _) in zip(out['records'], single_runs(c, out, tmp_path)):
    assert r['polish_success'] and s['polish_success']
    for k in ('normalized_margin', 'normalized_margin_gd', 'recon_error', 'final_loss'):
      assert r[k] == pytest.approx(s[k], rel=1e-8), k


@pytest.mark.parametrize('setting, field', [
    ({'victim.train.weight_decay': 1e-3}, 'config.victim.train.weight_decay:'),
    ({'attack.rescue': ('escalate',)}, 'config.attack.rescue:'),
    ({'attack.split.mode': 'every'}, 'config.attack.split.mode:'),
    ({'attack.optimizer': 'lbfgs'}, 'config.attack.optimizer:'),
    # The single run's own cross-field check.
    ({'attack.objective': 'projection', 'attack.kkt.prior': 'box'}, 'attack.kkt.prior:'),
])
def test_what_does_not_vectorise_is_one_line(tmp_path, setting, field):
  c = tiny_config({'seed': (0, 1)})
  with c.ignore_type():
    c.update_from_flattened_dict(setting)
  with pytest.raises(Exception) as e:
    sweep.run(c, str(tmp_path / 'run'))
  message = str(e.value)
  assert message.startswith(field) and '\n' not in message, message
  assert not os.path.exists(tmp_path / 'run')


def test_a_saved_model_is_refused(tmp_path):
  c = tiny_config({'seed': (0, 1)})
  single = ml_collections.ConfigDict(c.to_dict())
  single.sweep = base.sweep()
  single.attack.max_steps = 1
  pipelines.run(single, str(tmp_path / 'trained'))  # writes trained/model
  c.victim.checkpoint = str(tmp_path / 'trained' / 'model')
  with pytest.raises(config_lib.ConfigError, match='^config.victim.checkpoint: .* accepted: '):
    sweep.run(c, str(tmp_path / 'run'))


def test_a_random_features_width_axis_is_refused(tmp_path):
  c = tiny_config({'victim.p': (10, 20)})
  with pytest.raises(config_lib.ConfigError, match='^config.sweep.victim.p: '):
    sweep.run(c, str(tmp_path / 'run'))


@pytest.mark.parametrize('field, value', [('mode', 'estimated'), ('alpha_mode', 'joint')])
def test_a_subspace_attack_is_refused(tmp_path, field, value):
  # The KKT sweep is looked up by the victim's pipeline; a subspace search or a free alpha is
  # the subspace pipeline's, which a KKT sweep does not run.
  c = tiny_config({'seed': (0, 1)})
  c.attack.subspace[field] = value
  with pytest.raises(config_lib.ConfigError,
                     match=r'^config.attack.subspace.mode / attack.subspace.alpha_mode: .* '
                           r'accepted: '):
    sweep.run(c, str(tmp_path / 'run'))
