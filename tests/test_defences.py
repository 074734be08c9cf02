"""Defences (recon/models/privacy.py, recon/models/defences.py): the DP-SGD mechanism, its
accountant, noise on the release, their config checks, and defended runs end to end."""
import json
import logging

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


def test_a_pld_target_epsilon_is_met_by_the_pld_accountants_own_noise():
  """accountant 'pld' with a target epsilon: the PLD calibration (which once started at sigma
  1e-3, where the PLD needs tens of GiB) meets the target under PLD, with less noise than RDP
  needs for the same target, and resolve passes the accountant on."""
  dp = base.get_config().victim.train.dp
  dp.target_epsilon, dp.batch_size, dp.accountant = 2.0, 2, 'pld'
  mech = privacy.resolve(dp, n=8, steps=50)  # q = 0.25: one PLD calibration, its epsilon
  pld_sigma = mech['noise_multiplier']
  rdp_sigma = privacy.noise_multiplier_for(2.0, 0.25, 50, 1e-5)
  assert mech['accountant'] == 'pld' and rdp_sigma / 4 < pld_sigma < rdp_sigma
  assert mech['epsilon'] == pytest.approx(2.0, rel=1e-3)
  assert privacy.epsilon(pld_sigma, 0.25, 50, 1e-5) > 2.0  # under RDP it would not meet it


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


# --- What the mechanism did, not only the epsilon it reports (mutation testing by mutmut,
# scripts/mutations.py: each test kills mutants the end-to-end checks let live). ---

def _dp_train(n=4, d=2000, steps=1, **dp):
  t = base.get_config().victim.train
  t.max_steps, t.tol = steps, 0.0
  t.dp.mode, t.dp.clip, t.dp.noise_multiplier = 'on', 0.5, 0.0
  for k, v in dp.items():
    setattr(t.dp, k, v)
  x = jax.random.normal(jax.random.PRNGKey(1), (n, d)) / np.sqrt(d)
  apply = lambda params, z: z @ params  # noqa: E731
  return t, x, apply, jnp.zeros((d, 1))


def test_a_dp_victim_moves_at_most_lr_times_the_clip_bound_per_step():
  t, x, apply, p0 = _dp_train()
  far = jnp.full((4, 1), 1e4)  # every per-example gradient far above the clip bound
  params, info, mech = defences.train_network_params(t, 0, apply, p0, x, far, lr=0.1)
  assert mech['clip'] == 0.5 and mech['noise_multiplier'] == 0.0 and info['steps'] == 1
  moved = float(jnp.linalg.norm(params - p0))
  assert 0.1 * 0.5 * 0.25 < moved <= 0.1 * 0.5 * (1 + 1e-5)  # sum of 4 clipped / 4, x lr
  t.dp.mode = 'off'  # the same step without DP: the raw gradient, thousands of times longer
  plain, _, none = defences.train_network_params(t, 0, apply, p0, x, far, lr=0.1)
  assert none is None and float(jnp.linalg.norm(plain - p0)) > 100 * moved


@pytest.mark.parametrize('batch_size', [None, 2])
def test_a_dp_victims_noise_is_sigma_clip_over_the_expected_batch(batch_size):
  """Zero residuals (zero gradients): one step moves the parameters by lr times the noise
  alone, std lr sigma C / (q n), q = batch_size / n."""
  t, x, apply, p0 = _dp_train(noise_multiplier=3.0, batch_size=batch_size)
  params, info, mech = defences.train_network_params(t, 7, apply, p0, x, apply(p0, x), lr=0.1)
  q = 1.0 if batch_size is None else 0.5
  assert mech['sample_rate'] == q and mech['noise_multiplier'] == 3.0 and info['steps'] == 1
  assert mech['noise_source'] == 'config'
  assert float(jnp.std(params - p0)) == pytest.approx(0.1 * 3.0 * 0.5 / (q * 4), rel=0.05)
  again, _, _ = defences.train_network_params(t, 7, apply, p0, x, apply(p0, x), lr=0.1)
  other, _, _ = defences.train_network_params(t, 8, apply, p0, x, apply(p0, x), lr=0.1)
  assert bool(jnp.all(again == params)) and not bool(jnp.allclose(other, params))


def test_dp_runs_exactly_max_steps_whatever_the_loss():
  t, x, apply, p0 = _dp_train(steps=3, noise_multiplier=1.0)
  _, info, mech = defences.train_network_params(t, 0, apply, p0, x, apply(p0, x), lr=0.1)
  assert info['steps'] == 3 and mech['steps'] == 3


def test_any_one_defence_is_active():
  v = base.get_config().victim
  assert not defences.active(v)
  v.train.dp.mode = 'on'
  assert defences.active(v)
  v.train.dp.mode, v.train.weight_decay = 'off', 1e-3
  assert defences.active(v)
  v.train.weight_decay, v.release_noise = 0.0, 0.1
  assert defences.active(v)


def test_the_accountants_event_is_sampled_only_below_rate_one():
  full = privacy.dp_event(2.0, 1.0, 10)
  assert full == dp_accounting.SelfComposedDpEvent(dp_accounting.GaussianDpEvent(2.0), 10)
  sub = privacy.dp_event(2.0, 0.25, 10)
  assert sub == dp_accounting.SelfComposedDpEvent(
      dp_accounting.PoissonSampledDpEvent(0.25, dp_accounting.GaussianDpEvent(2.0)), 10)


def test_the_mechanism_record_names_its_noise_and_its_source():
  dp = base.get_config().victim.train.dp
  dp.noise_multiplier = 2.0
  mech = privacy.resolve(dp, n=8, steps=50)
  assert mech['noise_multiplier'] == 2.0 and mech['noise_source'] == 'config'
  assert mech['clip'] == 1.0 and mech['sample_rate'] == 1.0 and mech['batch_size'] == 8
  assert mech['epsilon'] == privacy.epsilon(2.0, 1.0, 50, 1e-5)


def test_release_noise_is_drawn_in_the_arrays_dtype_and_recorded_with_its_rule():
  with jax.enable_x64(True):
    leaf = jnp.linspace(1.0, 2.0, 4096, dtype=jnp.float64)
    key = jax.random.PRNGKey(3)
    noised = privacy.add_release_noise({'w': leaf}, 0.1, key)['w']
    scale = 0.1 * jnp.linalg.norm(leaf) / np.sqrt(leaf.size)
    expected = leaf + scale * jax.random.normal(jax.random.split(key, 1)[0], leaf.shape,
                                                jnp.float64)
    assert noised.dtype == jnp.float64
    np.testing.assert_allclose(np.asarray(noised), np.asarray(expected), rtol=1e-12)
  half = privacy.add_release_noise({'w': jnp.ones(256, jnp.bfloat16)}, 0.1, key)['w']
  assert half.dtype == jnp.bfloat16  # noise of the array's own dtype, not float32's
  assert privacy.describe_release(0.0) is None
  assert privacy.describe_release(0.1) == {
      'release_noise': 0.1,
      'release_noise_rule': 'W + N(0, (s ||W|| / sqrt(size W))^2) per released array'}


@pytest.mark.parametrize('mode', ['off', 'on'])
def test_weight_decay_shrinks_a_victim_at_zero_residual(mode):
  """Zero gradients of the loss: one step is the decay alone, theta (1 - lr wd), with or
  without DP-SGD (sigma 0)."""
  t, x, apply, _ = _dp_train()
  t.dp.mode, t.weight_decay, t.tol = mode, 0.5, -1.0  # tol < 0: the step is taken
  p0 = jnp.ones((x.shape[1], 1))
  params, info, _ = defences.train_network_params(t, 0, apply, p0, x, apply(p0, x), lr=0.1)
  assert info['steps'] == 1
  np.testing.assert_allclose(np.asarray(params), 0.95 * np.asarray(p0), rtol=1e-6)


def test_the_rdp_calibration_keeps_the_console_quiet(caplog):
  """At q < 1 the RDP accountant logs an absl warning per Renyi order whose series does not
  converge (~10 a calibration): the calls of privacy drop exactly those, and only while they run."""
  caplog.set_level(logging.WARNING)
  sigma = privacy.noise_multiplier_for(4.0, 0.25, 50, 1e-5)
  privacy.epsilon(sigma, 0.25, 50, 1e-5)
  assert not [r for r in caplog.records if 'failed to converge' in r.getMessage()]
  acc = dp_accounting.rdp.RdpAccountant()  # dp_accounting called directly still warns
  acc.compose(dp_accounting.PoissonSampledDpEvent(0.25, dp_accounting.GaussianDpEvent(1.0)))
  assert [r for r in caplog.records if 'failed to converge' in r.getMessage()]
