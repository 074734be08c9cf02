"""KKT objective, homogeneous MLPs, bad input (tiny sizes, float64)."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from recon.config import sections
from recon.config import validate as config_lib
from recon import data
from recon.models import homogeneous, train
from recon.objectives import kkt


# attack.kkt's defaults without the candidates' prior: the bare KKT fit (and the dual bound).
NO_PRIOR = sections.Kkt(prior='none')
FIT = dict(lambda_min=NO_PRIOR.lambda_min, lr=1e-2)  # fit_lambda's duals: lambda >= 0, Adam 1e-2


@pytest.fixture(autouse=True)
def _float64():
  """These tests run in float64 (the KKT fit is squared); the switch is undone after each."""
  jax.config.update('jax_enable_x64', True)
  yield


def _trained(activation='cubic', n=4, d=3, width=12, steps=4000, lr=0.2):
  x = data.sphere_rows(jax.random.PRNGKey(0), n, d, jnp.float64)
  y = jnp.asarray([1.0, -1.0] * (n // 2))
  net = homogeneous.HomogeneousMLP(widths=(width,), activation=activation, init_scale=0.3,
                                   param_dtype=jnp.float64)
  p0 = net.init(jax.random.PRNGKey(1), x)
  p, info = train.train(net.apply, p0, x, y, loss='logistic', optimizer=optax.sgd(lr),
                        max_steps=steps, duals_lr=lr, chunk_steps=steps)
  return net, p0, p, x, y, info


@pytest.mark.slow  # ~13 CPU-s
def test_kkt_loss_true_data_far_below_random_after_polish():
  net, _, p, x, y, _ = _trained()
  p, info = homogeneous.polish_max_margin(net.apply, p, x, y, 'binary', max_iter=100)
  assert info['min_constraint'] > -1e-5
  theta, apply_vec = kkt.flatten_model(net.apply, p)
  prob = {'target': theta, 'theta': theta, 'labels': y}
  loss = lambda xx, lam: float(kkt.kkt_loss({'x': xx, 'lam': lam}, prob, apply_vec=apply_vec,
                                            kind='binary', **kkt.penalty_settings(NO_PRIOR)))
  lam = kkt.fit_lambda(x, y, prob, apply_vec=apply_vec, kind='binary', out_dim=1, steps=300,
                       **FIT)
  assert np.all(np.asarray(lam) >= 0)
  x_rand = data.sphere_rows(jax.random.PRNGKey(9), *x.shape, jnp.float64)
  lam_r = kkt.fit_lambda(x_rand, y, prob, apply_vec=apply_vec, kind='binary', out_dim=1,
                         steps=300, **FIT)
  true_loss, rand_loss = loss(x, lam), loss(x_rand, lam_r)
  assert true_loss < 1e-6
  assert rand_loss > 1e3 * true_loss


@pytest.mark.slow  # ~7 CPU-s: trains a victim
def test_kkt_loss_unpolished_gd_still_favours_true_data():
  net, _, p, x, y, _ = _trained()
  theta, apply_vec = kkt.flatten_model(net.apply, p)
  prob = {'target': theta, 'theta': theta, 'labels': y}
  lam = kkt.fit_lambda(x, y, prob, apply_vec=apply_vec, kind='binary', out_dim=1, steps=300,
                       **FIT)
  x_rand = data.sphere_rows(jax.random.PRNGKey(9), *x.shape, jnp.float64)
  lam_r = kkt.fit_lambda(x_rand, y, prob, apply_vec=apply_vec, kind='binary', out_dim=1,
                         steps=300, **FIT)
  f = lambda xx, lm: float(kkt.kkt_loss({'x': xx, 'lam': lm}, prob, apply_vec=apply_vec,
                                        kind='binary', **kkt.penalty_settings(NO_PRIOR)))
  assert f(x, lam) < 0.5 * f(x_rand, lam_r)


@pytest.mark.slow  # ~7 CPU-s
def test_general_form_with_training_duals_is_exact_for_one_step():
  net, p0, p, x, y, info = _trained(steps=1, lr=0.05)
  theta, apply_vec = kkt.flatten_model(net.apply, p)
  theta0, _ = kkt.flatten_model(net.apply, p0)
  prob = {'target': theta - theta0, 'theta': theta0, 'labels': jnp.zeros(4)}
  val = float(kkt.kkt_loss({'x': x, 'lam': info['duals']}, prob, apply_vec=apply_vec,
                           kind='general', **kkt.penalty_settings(NO_PRIOR)))
  assert val < 1e-12
  x_rand = data.sphere_rows(jax.random.PRNGKey(9), *x.shape, jnp.float64)
  lam_r = kkt.fit_lambda(x_rand, y, prob, apply_vec=apply_vec, kind='general', out_dim=1,
                         steps=0, **FIT)  # general duals: least squares only
  rand = float(kkt.kkt_loss({'x': x_rand, 'lam': lam_r}, prob, apply_vec=apply_vec,
                            kind='general', **kkt.penalty_settings(NO_PRIOR)))
  assert rand > 1e-4


@pytest.mark.slow  # ~8 CPU-s
def test_multiclass_margin_form_matches_manual_gradient():
  net = homogeneous.HomogeneousMLP(widths=(5,), out_dim=3, activation='cubic',
                                   param_dtype=jnp.float64)
  x = data.sphere_rows(jax.random.PRNGKey(0), 4, 3, jnp.float64)
  p = net.init(jax.random.PRNGKey(1), x)
  theta, apply_vec = kkt.flatten_model(net.apply, p)
  labels = jnp.asarray([0.0, 1.0, 2.0, 1.0])
  lam = jnp.asarray([0.5, 1.0, 2.0, 0.1])
  got = kkt.explained(x, lam, labels, theta, apply_vec=apply_vec, kind='multiclass')
  want = 0
  for i in range(4):
    def margin(th, i=i):
      out = apply_vec(th, x[i:i + 1])[0]
      yi = int(labels[i])
      return out[yi] - jnp.max(jnp.delete(out, yi))
    want = want + lam[i] * jax.grad(margin)(theta)
  np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-10, atol=1e-12)


def test_constraint_projects_lambda_and_sphere():
  proj = kkt.make_constraint('binary', 'sphere', 2.0, 0.1, 'projection')
  out = proj({'x': jnp.ones((3, 4)), 'lam': jnp.asarray([-1.0, 0.05, 3.0])})
  np.testing.assert_allclose(np.linalg.norm(out['x'], axis=1), 2.0)
  np.testing.assert_allclose(out['lam'], [0.1, 0.1, 3.0])


@pytest.mark.parametrize('labels,kind,classes,match', [
    ([1, 0, -1], 'binary', 1, 'binary'),
    ([0, 3], 'multiclass', 3, r'0\.\.2'),
    ([0, 1.5], 'multiclass', 3, 'classes'),
])
def test_bad_labels_one_line(labels, kind, classes, match):
  with pytest.raises(kkt.KKTError, match=match) as e:
    kkt.check_labels(np.asarray(labels), kind, classes)
  assert '\n' not in str(e.value)


def test_bad_lambda_min():
  with pytest.raises(kkt.KKTError, match='lambda_min'):
    kkt.check_lambda_min(-0.1)


def test_smooth_relu_and_homogeneity():
  from recon.models import features
  r = features.make_activation('relu_smooth', 10.0)
  z = jnp.asarray([-1.0, 0.3])
  np.testing.assert_allclose(r(z), [0.0, 0.3])
  np.testing.assert_allclose(jax.grad(r)(0.3), jax.nn.sigmoid(3.0), rtol=1e-6)
  assert float(jax.grad(jax.grad(r))(0.3)) > 0
  assert not features.has_second_derivative('relu')
  assert features.has_second_derivative('relu_smooth')
  net = homogeneous.HomogeneousMLP(widths=(4, 3), activation='quadratic',
                                   param_dtype=jnp.float64)
  x = jnp.ones((1, 2), jnp.float64)
  p = net.init(jax.random.PRNGKey(0), x)
  deg = homogeneous.degree_in_params('quadratic', 2)  # ((1)*2 + 1)*2 + 1 = 7
  assert deg == 7
  p2 = jax.tree.map(lambda a: 2 * a, p)
  np.testing.assert_allclose(net.apply(p2, x), 2.0 ** deg * net.apply(p, x), rtol=1e-10)


def test_config_rejects_negative_lambda_min_and_split_budget():
  import importlib.util
  from recon.config import validate as config_lib
  spec = importlib.util.spec_from_file_location('kkt_cfg', 'configs/kkt_synthetic.py')
  mod = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(mod)
  c = mod.get_config()
  config_lib.validate(c)
  for field, value in (('lambda_min', -0.5), ('split_budget', -1)):
    bad = mod.get_config()
    setattr(bad, field, value)
    with pytest.raises(config_lib.ConfigError, match=field):
      config_lib.validate(bad)


def _planted_cubic(n=3, d=4, width=12, activation='cubic'):
  """A generic two-layer net (width >= d(d+1)/2) and an exactly satisfied KKT system."""
  x = data.sphere_rows(jax.random.PRNGKey(0), n, d, jnp.float64)
  y = jnp.asarray([1.0, -1.0, 1.0][:n])
  net = homogeneous.HomogeneousMLP(widths=(width,), activation=activation, init_scale=1.0,
                                   param_dtype=jnp.float64)
  p = net.init(jax.random.PRNGKey(1), x)
  theta, apply_vec = kkt.flatten_model(net.apply, p)
  lam = jnp.asarray([0.7, 1.1, 0.5][:n])
  target = kkt.explained(x, lam, y, theta, apply_vec=apply_vec, kind='binary')
  return x, y, theta, apply_vec, {'target': target, 'theta': theta, 'labels': y}


@pytest.mark.slow  # ~12 CPU-s
def test_eliminated_loss_is_the_minimum_over_free_lambda():
  x, y, theta, apply_vec, prob = _planted_cubic()
  x_rand = data.sphere_rows(jax.random.PRNGKey(7), *x.shape, jnp.float64)
  opts = dict(apply_vec=apply_vec, kind='binary', out_dim=1)
  elim_fn = jax.jit(lambda xx, pr: kkt.eliminated_loss({'x': xx}, pr, **opts))
  direct_fn = jax.jit(lambda xx, lam: kkt.kkt_loss({'x': xx, 'lam': lam}, prob,
                                                   apply_vec=apply_vec, kind='binary',
                                                   **kkt.penalty_settings(NO_PRIOR)))
  elim = float(elim_fn(x_rand, prob))
  lam = kkt.eliminated_lambda(x_rand, prob, **opts)
  np.testing.assert_allclose(elim, float(direct_fn(x_rand, lam)), rtol=1e-8)
  assert elim > 1e-3  # random rows do not explain the target
  assert float(direct_fn(x_rand, 1.1 * lam)) > elim
  # Row norms do not matter (cubic columns scale as |x|^3; lambda absorbs them).
  np.testing.assert_allclose(float(elim_fn(2.5 * x_rand, prob)), elim, rtol=1e-8)
  assert float(elim_fn(x, prob)) < 1e-25
  # Weighted equations keep the exact zero.
  prob_w = dict(prob, weights=kkt.residual_weights(theta, apply_vec, 4, 2.0,
                                                   jax.random.PRNGKey(3)))
  assert float(elim_fn(x, prob_w)) < 1e-25
  assert float(elim_fn(x_rand, prob_w)) > 1e-3


@pytest.mark.slow  # ~7 CPU-s
def test_lbfgs_attack_recovers_planted_cubic_exactly_with_n_candidates():
  from recon import metrics
  from recon.attack import optimiser as optimize
  x, _, theta, apply_vec, prob = _planted_cubic()
  radius = 2.0
  prob['weights'] = kkt.residual_weights(theta, apply_vec, 4, radius, jax.random.PRNGKey(3))
  loss_fn = lambda s, pr: kkt.eliminated_loss(s, pr, apply_vec=apply_vec, kind='binary',  # noqa
                                              out_dim=1, radius=radius)
  x0 = {'x': x + 0.05 * jax.random.normal(jax.random.PRNGKey(4), x.shape, jnp.float64)}
  opt = optimize.make_optimizer('lbfgs', 1.0)
  state = optimize.init_state(x0, opt, loss_fn, prob, lambda z: z)
  chunk = jax.jit(lambda s, stop: optimize.run_chunk(
      s, prob, stop, loss_fn=loss_fn, optimizer=opt, constraint=lambda z: z, tol=1e-26,
      max_steps=400))
  state = optimize.drive(state, chunk, max_steps=400, chunk_steps=100)
  assert float(state.loss) < 1e-20
  x_hat = np.asarray(kkt.on_sphere(state.x['x'], radius))
  assert metrics.reconstruction_metrics(np.asarray(x), x_hat)['recon_error'] < 1e-6


@pytest.mark.slow  # ~10 CPU-s
def test_weight_decay_stationary_point_satisfies_kkt_exactly():
  x = data.sphere_rows(jax.random.PRNGKey(0), 4, 3, jnp.float64)
  y = jnp.asarray([1.0, -1.0, 1.0, -1.0])
  net = homogeneous.HomogeneousMLP(widths=(8,), activation='cubic', init_scale=1.0,
                                   param_dtype=jnp.float64)
  p0 = net.init(jax.random.PRNGKey(1), x)
  p, info = homogeneous.train_stationary(net.apply, p0, x, y, loss='logistic',
                                         weight_decay=1e-2, max_steps=3000)
  assert info['grad_norm'] < 1e-10
  theta, apply_vec = kkt.flatten_model(net.apply, p)
  mu = info['duals']  # (n, 1), free-sign: theta = sum_i mu_i grad f(x_i)
  explained = kkt.explained(x, mu, y, theta, apply_vec=apply_vec, kind='general')
  assert float(jnp.linalg.norm(theta - explained) / jnp.linalg.norm(theta)) < 1e-9
  np.testing.assert_array_equal(np.sign(np.asarray(mu[:, 0])), np.asarray(y))  # logistic
  with pytest.raises(ValueError, match='weight_decay'):
    homogeneous.train_stationary(net.apply, p0, x, y, loss='logistic', weight_decay=0.0)


def test_neuron_gram_rank():
  d = 3
  w = np.asarray(jax.random.normal(jax.random.PRNGKey(0), (d, 10)))
  assert homogeneous.neuron_gram_rank(w) == (6, 6)
  same = np.repeat(w[:, :1], 10, axis=1) * np.arange(1, 11)  # one direction
  assert homogeneous.neuron_gram_rank(same) == (1, 6)
  x = np.asarray(jax.random.normal(jax.random.PRNGKey(1), (2, d)))
  assert homogeneous.neuron_gram_rank(w, x) == (3, 3)  # Sym^2 of the 2-dim span of x


def test_kkt_victims_need_two_classes_or_more():
  from recon import errors
  from recon.pipelines import victims
  from recon.pipelines import kkt as ke
  from configs import kkt_synthetic
  c = kkt_synthetic.get_config()
  c.data.num_classes = 1  # valid for a network's scalar output, not for the KKT labels
  with pytest.raises(errors.ExperimentError, match=r'^data\.num_classes: 1 .* accepted: >= 2'):
    r = victims.resolve(c)
    ke.task(r.data, r.attack)


def test_eliminate_rejects_split_lambda_min_and_box():
  from recon import errors
  from recon.pipelines import victims
  from recon.pipelines import kkt as ke
  from configs import kkt_identifiability
  for field, value, match in (('attack.split.mode', 'every', 'split'),
                              ('attack.kkt.lambda_min', 0.5, 'lambda_min'),
                              ('attack.kkt.prior', 'box', 'prior')):
    c = kkt_identifiability.get_config()
    config_lib.set_path(c, field, value)
    if field == 'attack.split.mode':
      c.attack.kkt.residual_weights = 'none'
    with pytest.raises(errors.ExperimentError, match=match):
      r = victims.resolve(c)
      ke.check_attack_config(r.data, r.victim, r.attack)
  c = kkt_identifiability.get_config()
  c.attack.split.mode = 'every'
  c.attack.kkt.lambda_solve = 'optimize'
  with pytest.raises(errors.ExperimentError, match='split'):
    r = victims.resolve(c)
    ke.check_attack_config(r.data, r.victim, r.attack)


def test_multiclass_max_margin_polish_traces_and_separates():
  # The per-pair constraints f_y - f_j >= 1 index with the labels: they must be static so the
  # constraint function can be jitted (a boolean mask of traced values cannot).
  jax.config.update('jax_enable_x64', True)
  x = data.sphere_rows(jax.random.PRNGKey(0), 6, 3, jnp.float64)
  labels = jnp.asarray([0, 1, 2, 0, 1, 2])
  net = homogeneous.HomogeneousMLP(widths=(40,), activation='relu', init_scale=0.5, out_dim=3,
                                   param_dtype=jnp.float64)
  p0 = net.init(jax.random.PRNGKey(1), x)
  p, info = train.train(net.apply, p0, x, labels, loss='cross_entropy', optimizer=optax.sgd(0.5),
                        max_steps=400, duals_lr=0.5, chunk_steps=400)
  _, info = homogeneous.polish_max_margin(net.apply, p, x, labels, 'multiclass', max_iter=50)
  assert 'min_constraint' in info or info['message'] == 'training set not separated'
