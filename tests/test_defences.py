"""Defences (recon/models/privacy.py, recon/models/defences.py): the DP-SGD mechanism, its
accountant, noise on the release, their config checks, and defended runs end to end."""
import json

import dp_accounting
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from configs import base, rf_synthetic
from recon.config import validate as config_lib
from recon import main
from recon.models import defences, privacy, train


def _aggregate(grads, *, clip, sigma, key=0, sample_rate=1.0):
  """One DP-SGD step at lr 1 from params 0 on per-example grads (n, k): -update."""
  opt = privacy.dp_optimizer(1.0, clip=clip, noise_multiplier=sigma, sample_rate=sample_rate,
                             key=jax.random.key(key))
  params = jnp.zeros(grads.shape[1:])
  updates, _ = opt.update(grads, opt.init(params), params)
  return -updates


def test_clipping_bounds_every_per_example_gradient():
  g = jnp.array([[30.0, 40.0, 0.0], [0.3, 0.0, 0.4], [0.0, 0.0, 2.0]])  # norms 50, 0.5, 2
  clip = 1.0
  for i in range(3):  # one example: the step is its clipped gradient
    step = _aggregate(g[i:i + 1], clip=clip, sigma=0.0)
    norm = float(jnp.linalg.norm(g[i]))
    assert float(jnp.linalg.norm(step)) <= clip + 1e-6
    np.testing.assert_allclose(step, g[i] * min(1.0, clip / norm), rtol=1e-6)
  # Together: the mean of the clipped gradients (the non-private trainer's scale at q = 1).
  expected = (g[0] / 50.0 + g[1] + g[2] / 2.0) / 3.0
  np.testing.assert_allclose(_aggregate(g, clip=clip, sigma=0.0), expected, rtol=1e-6)


def test_noise_std_is_sigma_times_clip_on_the_sum():
  n, k, sigma, clip = 4, 20000, 1.5, 0.7
  step = _aggregate(jnp.zeros((n, k)), clip=clip, sigma=sigma)
  # The noise is added to the sum of n clipped gradients, then divided by n.
  assert float(jnp.std(step * n)) == pytest.approx(sigma * clip, rel=0.03)
  # Poisson batches (q < 1) divide by the expected batch size q n.
  step_q = _aggregate(jnp.zeros((n, k)), clip=clip, sigma=sigma, sample_rate=0.5)
  assert float(jnp.std(step_q * n * 0.5)) == pytest.approx(sigma * clip, rel=0.03)


def test_epsilon_falls_with_sigma_and_matches_dp_accounting():
  eps = [privacy.epsilon(s, 1.0, 100, 1e-5) for s in (2.0, 5.0, 20.0)]
  assert eps[0] > eps[1] > eps[2] > 0
  acc = dp_accounting.rdp.RdpAccountant()
  acc.compose(dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(5.0), 100))
  assert eps[1] == pytest.approx(acc.get_epsilon(1e-5), rel=1e-9)
  sub = dp_accounting.rdp.RdpAccountant()
  sub.compose(dp_accounting.SelfComposedDpEvent(
      dp_accounting.PoissonSampledDpEvent(0.25, dp_accounting.GaussianDpEvent(5.0)), 100))
  assert privacy.epsilon(5.0, 0.25, 100, 1e-5) == pytest.approx(sub.get_epsilon(1e-5), rel=1e-9)
  assert privacy.epsilon(5.0, 0.25, 100, 1e-5) < eps[1]  # subsampling amplifies
  assert privacy.epsilon(0.0, 1.0, 100, 1e-5) == float('inf')
  assert privacy.epsilon(5.0, 1.0, 100, 1e-5, 'pld') <= eps[1] * 1.01  # PLD is tighter


def test_target_epsilon_becomes_the_noise_that_meets_it():
  for target in (1.0, 8.0):
    sigma = privacy.noise_multiplier_for(target, 1.0, 200, 1e-5)
    assert privacy.epsilon(sigma, 1.0, 200, 1e-5) == pytest.approx(target, rel=1e-3)
  dp = base.get_config().victim.train.dp
  dp.target_epsilon, dp.batch_size = 4.0, 2
  mech = privacy.resolve(dp, n=8, steps=50)
  assert mech['sample_rate'] == 0.25 and mech['epsilon'] == pytest.approx(4.0, rel=1e-3)
  assert mech['delta'] == 1e-5 and mech['accountant'] == 'rdp'


def test_release_noise_is_relative_and_off_at_zero():
  tree = {'a': jnp.ones((100, 100)) * 3.0, 'b': jnp.arange(5000.0)}
  assert privacy.add_release_noise(tree, 0.0, jax.random.PRNGKey(0)) is tree
  noised = privacy.add_release_noise(tree, 0.1, jax.random.PRNGKey(0))
  for name in tree:
    rel = float(jnp.linalg.norm(noised[name] - tree[name]) / jnp.linalg.norm(tree[name]))
    assert rel == pytest.approx(0.1, rel=0.05)


def _network_config(**overrides):
  c = rf_synthetic.get_config()
  c.update_from_flattened_dict({
      'victim.name': 'random_features_gd', 'data.n': 4, 'data.d': 4, 'victim.width': 64,
      'victim.train.max_steps': 40, 'attack.max_steps': 100, 'run.log_every_seconds': 1e9,
      'run.checkpoint_every_seconds': 0.0, **overrides})
  return c


def test_defaults_train_as_before():
  """Every defence off: the same optimiser and trainer as before the defences existed."""
  cfg = _network_config()
  assert not defences.active(cfg.victim)
  from recon.models import networks
  model = networks.RandomFeatures(16, 1, 'relu')
  x = jax.random.normal(jax.random.PRNGKey(1), (4, 4))
  variables = model.init(jax.random.PRNGKey(2), x)
  apply = lambda p, xs: model.apply({**variables, 'params': p}, xs)  # noqa: E731
  targets = train.make_targets('mse', jnp.arange(4.0), 1)
  got, _, mech = defences.train_network_params(cfg.victim.train, cfg.seed, apply, variables['params'], x,
                                              targets, 0.1)
  want, _ = train.train(apply, variables['params'], x, targets, loss='mse',
                        optimizer=train.make_optimizer(0.1), max_steps=40, tol=1e-6)
  assert mech is None
  jax.tree.map(lambda a, b: np.testing.assert_array_equal(np.asarray(a), np.asarray(b)), got, want)


def test_dp_needs_one_noise_source():
  cfg = _network_config(**{'victim.train.dp.mode': 'on'})
  with pytest.raises(config_lib.ConfigError, match='noise_multiplier, target_epsilon'):
    config_lib.validate(cfg)
  cfg.victim.train.dp.noise_multiplier = 1.0
  cfg.victim.train.dp.target_epsilon = 2.0
  with pytest.raises(config_lib.ConfigError, match='noise_multiplier and target_epsilon'):
    config_lib.validate(cfg)


@pytest.mark.parametrize('overrides, field', [
    ({'victim.name': 'random_features', 'victim.train.dp.mode': 'on',
      'victim.train.dp.noise_multiplier': 1.0}, 'victim.train.dp.mode'),
    ({'victim.name': 'homogeneous_mlp', 'victim.release_noise': 0.1}, 'victim.release_noise'),
    ({'victim.train.dp.mode': 'on', 'victim.train.dp.noise_multiplier': 1.0,
      'victim.train.dp.batch_size': 9}, 'victim.train.dp.batch_size'),
    ({'victim.release_noise': 0.1, 'victim.checkpoint': '/tmp/m'}, 'victim.checkpoint'),
    ({'victim.release_noise': 0.1, 'attack.objective': 'unified'}, 'attack.objective'),
])
def test_defences_refused_where_they_do_not_apply(overrides, field):
  cfg = _network_config(**overrides)
  with pytest.raises(config_lib.ConfigError, match=f'config.{field}'):
    config_lib.validate(cfg)


def test_release_noise_refused_in_a_sweep():
  cfg = rf_synthetic.get_config()
  cfg.victim.release_noise = 0.1
  cfg.sweep.seed = (0, 1)
  with pytest.raises(config_lib.ConfigError, match='config.sweep'):
    config_lib.validate(cfg)


@pytest.mark.slow
def test_dp_run_end_to_end_records_epsilon_and_utility(tmp_path):
  cfg = _network_config(**{'victim.train.dp.mode': 'on', 'victim.train.dp.target_epsilon': 8.0})
  assert main.execute(cfg, str(tmp_path / 'run')) == 0
  m = json.loads((tmp_path / 'run' / 'summary.json').read_text())['metrics']
  dp = m['defences']['dp']
  assert dp['epsilon'] == pytest.approx(8.0, rel=1e-3) and dp['delta'] == 1e-5
  assert dp['steps'] == 40 and dp['noise_multiplier'] > 0
  assert m['train_steps'] == 40
  for part in ('train', 'held_out'):
    assert np.isfinite(m['utility'][part]['loss'])
    assert 0.0 <= m['utility'][part]['accuracy'] <= 1.0
  assert m['utility']['held_out']['n'] == defences.HELD_OUT
  assert 'frac_recovered' in m


@pytest.mark.slow
@pytest.mark.parametrize('noise', [1e-2, 1e-1])
def test_noised_random_features_are_never_certified(tmp_path, noise):
  """theta* plus noise leaves the span of Phi(X): the loss floor rises above tol, so the
  certificate says 'not certified' (and never certifies rows that are wrong)."""
  c = rf_synthetic.get_config()
  c.update_from_flattened_dict({'data.n': 3, 'data.d': 4, 'victim.p': 120,
                                'attack.max_steps': 300, 'victim.release_noise': noise,
                                'run.log_every_seconds': 1e9,
                                'run.checkpoint_every_seconds': 0.0})
  assert main.execute(c, str(tmp_path / 'run')) == 0
  m = json.loads((tmp_path / 'run' / 'summary.json').read_text())['metrics']
  assert m['defences']['release_noise'] == noise
  assert m['certified'] is False
  assert m['utility']['train']['mse'] > 0 and m['utility']['held_out']['n'] > 0


# --- The adaptive attack against weight decay (attack.init_in_span) ------------------------


def test_removing_the_init_direction_is_one_more_free_feature_row():
  """||P_perp[J; u] theta||^2 = ||P_perp[J'] theta'||^2 with u removed from J and theta."""
  from recon.objectives import parameter_gradients, projection
  k = jax.random.split(jax.random.PRNGKey(3), 3)
  jac = jax.random.normal(k[0], (5, 40), jnp.float64 if jax.config.x64_enabled else None)
  u = jax.random.normal(k[1], (40,), jac.dtype)
  theta = jax.random.normal(k[2], (40,), jac.dtype) + 3.0 * u
  jp = parameter_gradients.without_direction(jac, u)
  tp = parameter_gradients.without_direction(theta, u)
  np.testing.assert_allclose(np.asarray(jp @ u), 0.0, atol=1e-4)
  np.testing.assert_allclose(float(tp @ u), 0.0, atol=1e-4)
  resid = lambda a, t: float(jnp.sum((t - a.T @ jnp.linalg.lstsq(a.T, t)[0]) ** 2))  # noqa: E731
  np.testing.assert_allclose(resid(jp, tp), resid(jnp.vstack([jac, u]), theta), rtol=1e-3)
  # A target in span(J) + u is explained exactly once u is removed (the projection loss, 0).
  target = jac.T @ jnp.arange(1.0, 6.0) - 0.7 * u
  assert float(projection.projection_loss(jac, target, 0.0)) > 1e-2
  assert float(projection.projection_loss(
      jp, parameter_gradients.without_direction(target, u), 0.0)) < 1e-8


def test_init_in_span_needs_a_networks_victim_with_its_init():
  for overrides in ({'attack.knows_init': False}, {'victim.name': 'random_features'}):
    cfg = _network_config(**{'attack.init_in_span': True, **overrides})
    with pytest.raises(config_lib.ConfigError, match='config.attack.init_in_span'):
      config_lib.validate(cfg)
  config_lib.validate(_network_config(**{'attack.init_in_span': True}))


@pytest.mark.slow
def test_weight_decay_leaves_the_init_outside_the_span_and_init_in_span_removes_it(tmp_path):
  """Random features trained by GD with decay: theta = W(T) - W(0) = -(1 - (1 - lr wd)^T) W(0)
  + Phi(X)^T a, so the loss at the true rows is far from 0 for the plain attack and ~0 once
  W(0) joins the span (the features are fixed: the identity is exact)."""
  at_truth = {}
  for adaptive in (False, True):
    cfg = _network_config(**{'victim.train.weight_decay': 0.5, 'attack.max_steps': 5,
                             'attack.init_in_span': adaptive})
    assert main.execute(cfg, str(tmp_path / f'run{adaptive}')) == 0
    m = json.loads((tmp_path / f'run{adaptive}' / 'summary.json').read_text())['metrics']
    assert m['init_in_span'] is adaptive
    at_truth[adaptive] = m['projection_loss_at_truth']
  assert at_truth[False] > 1e-2, at_truth
  assert at_truth[True] < 1e-6, at_truth


def test_a_run_without_dp_does_not_import_the_accountant():
  """dp_accounting (and the scipy.signal it pulls in) loads on first use, not with the
  pipelines: seconds of every cold start that a run without DP does not need."""
  import subprocess  # pylint: disable=import-outside-toplevel
  import sys  # pylint: disable=import-outside-toplevel
  from conftest import subprocess_env  # pylint: disable=import-outside-toplevel
  code = ('import sys, recon.pipelines, recon.models.privacy as p\n'
          'print("dp_accounting" in sys.modules)\n'
          'p.epsilon(1.0, 0.1, 10, 1e-5)\n'
          'print("dp_accounting" in sys.modules)\n')
  out = subprocess.run([sys.executable, '-c', code], env=subprocess_env(), capture_output=True,
                       text=True, timeout=300)
  assert out.stdout.split() == ['False', 'True'], out.stderr
