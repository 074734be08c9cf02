"""The network pipeline end to end: reconstruction above the threshold, threat model, errors."""
import importlib.util
import json
import os

import numpy as np
import pytest

from recon.config import validate as config_lib
from recon import errors, pipelines

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _config_module(name):
  spec = importlib.util.spec_from_file_location(
      f'_cfg_{name}', os.path.join(_ROOT, 'configs', f'{name}.py'))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


two_layer, resnet, vit, rf_logistic = (_config_module(n) for n in
                                       ('two_layer', 'resnet', 'vit', 'rf_logistic'))


def _tiny(overrides=None):
  cfg = two_layer.get_config()
  cfg.data.n, cfg.data.d, cfg.victim.width, cfg.data.num_classes = 3, 4, 300, 2  # p_L = 600 = 50 dn (lazy)
  cfg.attack.max_steps, cfg.run.chunk_steps, cfg.run.log_every_seconds = 600, 300, 1e9
  cfg.update_from_flattened_dict(overrides or {})
  return cfg


@pytest.mark.slow  # ~14 CPU-s
def test_two_layer_above_threshold_reconstructs(tmp_path):
  summary = pipelines.run(_tiny(), str(tmp_path))
  m = summary['metrics']
  assert m['train_reached_tol'] and m['p_L'] == 600 and m['p_L_over_dn'] == 50
  assert m['recon_error'] < 0.05 and m['frac_recovered'] == 1.0, m
  assert m['projection_loss_at_truth'] < 1e-3
  tm = summary['threat_model']
  assert tm['attacker_knows_init'] and tm['target'] == 'theta = vec(W_head(T) - W_head(0))'
  assert any('initial weights' in k for k in tm['known'])
  with open(os.path.join(tmp_path, 'summary.json')) as f:
    assert json.load(f)['metrics']['train_steps'] == m['train_steps']


@pytest.mark.slow  # ~10 CPU-s: compiles a two-layer run
def test_unreached_tolerance_is_reported(tmp_path):
  cfg = _tiny({'victim.train.max_steps': 2, 'victim.train.tol': 1e-12, 'attack.max_steps': 2,
               'attack.knows_init': False})
  summary = pipelines.run(cfg, str(tmp_path))
  m = summary['metrics']
  assert not m['train_reached_tol'] and m['train_steps'] == 2
  assert 'initial weights unknown' in summary['threat_model']['target']
  assert any('initial weights' in k for k in summary['threat_model']['unknown'])
  assert 'did NOT reach victim.train.tol' in m['train_note']


@pytest.mark.parametrize('make,overrides,error,needle', [
    (two_layer.get_config, {'victim.name': 'mlp3'}, config_lib.ConfigError, 'config.victim.name'),
    (two_layer.get_config, {'victim.train.loss': 'hinge'}, config_lib.ConfigError,
     'config.victim.train.loss'),
    (two_layer.get_config, {'victim.layer': 'classifier'}, errors.ExperimentError,
     "no parameter collection 'classifier'"),
    (two_layer.get_config, {'victim.train.lr': 1e6}, errors.ExperimentError, 'non-finite'),
    (rf_logistic.get_config, {'data.num_classes': 2}, errors.ExperimentError, 'num_classes'),
    (two_layer.get_config, {'victim.train.loss': 'cross_entropy', 'data.num_classes': 1},
     errors.ExperimentError, 'num_classes'),
    (resnet.get_config, {'data.image_shape': (4, 4, 2)}, errors.ExperimentError, 'd=16'),
    (resnet.get_config, {'data.image_shape': None}, errors.ExperimentError, 'image_shape'),
    (vit.get_config, {'data.image_shape': (2, 8, 1), 'victim.patch_size': 4}, errors.ExperimentError,
     'patch_size'),
    (vit.get_config, {'victim.num_heads': 3}, errors.ExperimentError, 'num_heads'),
    (two_layer.get_config, {'attack.knows_n': False}, errors.ExperimentError,
     'n_candidates'),
    (two_layer.get_config, {'attack.knows_init': False, 'attack.jacobian_at': 'init_and_trained'},
     errors.ExperimentError, 'jacobian_at'),
    (vit.get_config, {'victim.head_init': 'ones'}, config_lib.ConfigError, 'config.victim.head_init'),
    (two_layer.get_config, {'attack.restarts': 2, 'attack.optimizer': 'lbfgs'}, errors.ExperimentError,
     "optimizer 'lbfgs'"),
])
def test_bad_input_is_one_line_error(tmp_path, make, overrides, error, needle):
  cfg = make()
  with cfg.ignore_type():
    for path, value in overrides.items():
      config_lib.set_path(cfg, path, value)
  with pytest.raises(error) as e:
    pipelines.run(cfg, str(tmp_path))
  assert needle in str(e.value) and '\n' not in str(e.value)


@pytest.mark.parametrize('make', [two_layer.get_config, resnet.get_config, vit.get_config,
                                  rf_logistic.get_config])
def test_configs_validate(make):
  config_lib.validate(make())


@pytest.mark.parametrize('make', [two_layer.get_config, resnet.get_config, vit.get_config,
                                  rf_logistic.get_config])
def test_network_configs_escalate_on_a_plateau(make):
  assert 'escalate' in make().attack.rescue


@pytest.mark.slow  # ~20 CPU-s: a two-layer run plus the escalator's programs (~10 s of compile)
def test_network_run_escalates_and_reports_it(tmp_path):
  # The network loss at the truth is not 0, so tol=1e-12 is never reached: the loss plateaus
  # above it and the escalator tries (a trial is kept only if it halves the loss).
  cfg = _tiny({'data.n': 2, 'data.d': 4, 'victim.width': 80, 'attack.max_steps': 300,
               'run.chunk_steps': 50, 'attack.tol': 1e-12, 'attack.escalate.every': 50,
               'attack.escalate.window': 100, 'attack.escalate.trial_steps': 50,
               'attack.escalate.restart_steps': 100})
  m = pipelines.run(cfg, str(tmp_path))['metrics']
  assert m['escalations_tried'] >= 1, m
  for k in ('escalations_accepted', 'escalation_restarts', 'escalation_restarts_kept'):
    assert k in m
  assert m['steps'] <= cfg.attack.max_steps and m['projection_loss'] > 0


def test_feature_points_lie_on_the_straight_line(monkeypatch):
  import jax.numpy as jnp  # pylint: disable=g-import-not-at-top
  from recon.pipelines import networks as pn  # pylint: disable=g-import-not-at-top
  p0 = {'body': jnp.zeros(3), 'head': jnp.ones(2)}
  pt = {'body': jnp.full(3, 2.0), 'head': jnp.full(2, 3.0)}
  assert pn.feature_points('trained', p0, pt) is pt
  for name in ('midpoint', 'init_and_trained'):
    points = pn.feature_points(name, p0, pt)
    assert len(points) == 2 and points[0] is p0 and points[1] is pt
  # Every name the config schema admits has its points (and no other name is offered).
  assert set(pn.JACOBIAN_POINTS) == set(config_lib.FIELDS['attack.jacobian_at'].choices)
  monkeypatch.setitem(pn.JACOBIAN_POINTS, 'quarter', (0.0, 0.25, 1.0))
  q = pn.feature_points('quarter', p0, pt)[1]
  assert jnp.allclose(q['body'], 0.5) and jnp.allclose(q['head'], 1.5)
  with pytest.raises(errors.ExperimentError, match='jacobian_at: unknown'):
    pn.feature_points('bogus', p0, pt)


@pytest.mark.slow  # ~15 CPU-s: a two-layer run with 3 stacked candidate sets
def test_network_restarts_report_the_blind_choice(tmp_path):
  """n_restarts=3 on a trained net: 3 candidate sets at once (escalation off), the answer
  the set of lowest projection loss, recorded in metrics['restarts']."""
  cfg = _tiny({'attack.restarts': 3, 'attack.max_steps': 300, 'victim.head_init': 'zeros'})
  summary = pipelines.run(cfg, str(tmp_path))
  m = summary['metrics']
  rs = m['restarts']
  assert rs['n_restarts'] == 3 and rs['chosen'] == int(np.argmin(rs['losses']))
  assert len(set(rs['losses'])) == 3  # three different starts
  np.testing.assert_allclose(m['projection_loss'], min(rs['losses']), rtol=1e-3, atol=1e-7)
  assert m.get('escalations_tried', 0) == 0
  assert np.load(os.path.join(tmp_path, 'reconstruction.npz'))['x_candidates'].shape == (3, 4)


def test_the_reported_width_is_the_attacked_layers_fan_in():
  """#69: a loaded model's width is read off its head, not victim.width's default."""
  import numpy as np  # pylint: disable=import-outside-toplevel
  from recon.pipelines import networks as net_pipeline  # pylint: disable=import-outside-toplevel
  params = {'Dense_0': {'kernel': np.zeros((16, 800)), 'bias': np.zeros(800)},
            'Dense_1': {'kernel': np.zeros((800, 1)), 'bias': np.zeros(1)}}
  assert net_pipeline.attacked_fan_in(params, 'Dense_1') == 800
  assert net_pipeline.attacked_fan_in(params, 'Dense_0') == 16
  assert net_pipeline.attacked_fan_in(params, 'Conv_9') is None
