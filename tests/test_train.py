"""Full-batch GD training: targets, losses, step size, tolerance and failure reporting."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.flatten_util import ravel_pytree

from recon import data
from recon.models import networks, train


def _two_layer(width=30, c=1, n=4, d=5, seed=0):
  x, y = data.synthetic_sphere(jax.random.PRNGKey(seed), n, d)
  model = networks.TwoLayer(width, c, 'relu_tanh')
  params = model.init(jax.random.PRNGKey(1), x)['params']
  return x, y, params, lambda p, z: model.apply({'params': p}, z)


def test_make_targets_shapes_and_values():
  y = jnp.array([0.3, -1.2, 2.0, 0.1, -0.5, 0.9])
  pm = train.make_targets('mse', y, 1)
  assert pm.shape == (6, 1) and set(np.unique(pm)) == {-1.0, 1.0}
  assert np.sum(pm == 1) == 3  # median split: balanced
  onehot = train.make_targets('mse', y, 3)
  assert onehot.shape == (6, 3) and np.all(onehot.sum(1) == 1) and np.all(onehot.sum(0) == 2)
  np.testing.assert_array_equal(train.make_targets('logistic', y, 1), pm.ravel())
  classes = train.make_targets('cross_entropy', y, 3)
  assert classes.dtype == jnp.int32 and sorted(np.asarray(classes)) == [0, 0, 1, 1, 2, 2]
  # Integer labels are classes already.
  np.testing.assert_array_equal(
      train.make_targets('cross_entropy', jnp.array([0, 2, 1, 2]), 3), [0, 2, 1, 2])


@pytest.mark.parametrize('loss,c,needle', [('logistic', 2, 'num_classes=1'),
                                           ('cross_entropy', 1, 'num_classes >= 2'),
                                           ('hinge', 1, "unknown name 'hinge'")])
def test_loss_output_mismatch_is_one_line_error(loss, c, needle):
  with pytest.raises(train.TrainingSetupError) as e:
    train.check_loss(loss, c)
  assert needle in str(e.value) and '\n' not in str(e.value)


@pytest.mark.slow  # ~6 CPU-s
def test_auto_learning_rate_matches_explicit_gauss_newton():
  x, _, params, apply = _two_layer(width=20, c=2)
  flat, unravel = ravel_pytree(params)
  jac = jax.jacrev(lambda f: apply(unravel(f), x).reshape(-1))(flat)
  lam = np.linalg.eigvalsh(np.asarray(jac @ jac.T, np.float64) / x.shape[0]).max()
  np.testing.assert_allclose(train.auto_learning_rate(apply, params, x), 1 / lam, rtol=2e-2)


@pytest.mark.slow  # ~8 CPU-s
def test_auto_learning_rate_shrinks_with_width():
  lrs = [train.auto_learning_rate(apply, params, x)
         for x, _, params, apply in (_two_layer(width=w) for w in (50, 500))]
  assert 5 < lrs[0] / lrs[1] < 20  # about 1 / width


@pytest.mark.parametrize('loss,c,tol', [('mse', 1, 1e-6), ('mse', 3, 1e-6),
                                        ('logistic', 1, 0.05), ('cross_entropy', 3, 0.05)])
def test_training_reaches_tolerance(loss, c, tol):
  x, y, params, apply = _two_layer(width=100, c=c, n=6)
  targets = train.make_targets(loss, y, c)
  lr = train.auto_learning_rate(apply, params, x)
  start = float(train.loss_value(loss, apply(params, x), targets))
  trained, info = train.train(apply, params, x, targets, loss=loss,
                              optimizer=train.make_optimizer(lr, 0.9), max_steps=20000, tol=tol,
                              chunk_steps=500)
  assert info['reached_tol'] and info['finite'], info
  assert info['final_loss'] <= tol < start
  np.testing.assert_allclose(
      float(train.loss_value(loss, apply(trained, x), targets)), info['final_loss'], rtol=1e-4)


@pytest.mark.slow  # ~7 CPU-s
def test_random_features_by_gd_trains_only_the_head():
  x, y = data.synthetic_sphere(jax.random.PRNGKey(2), 5, 4)
  model = networks.RandomFeatures(60, 1, 'relu_tanh')
  variables = model.init(jax.random.PRNGKey(0), x)
  assert set(variables['params']) == {'head'}
  apply = lambda p, z: model.apply({'params': p, 'constants': variables['constants']}, z)
  targets = train.make_targets('logistic', y, 1)
  lr = train.auto_learning_rate(apply, variables['params'], x)
  _, info = train.train(apply, variables['params'], x, targets, loss='logistic',
                        optimizer=train.make_optimizer(lr, 0.9), max_steps=5000, tol=0.1)
  assert info['reached_tol']


@pytest.mark.slow  # ~5 CPU-s
def test_budget_and_nonfinite_are_reported():
  x, y, params, apply = _two_layer()
  targets = train.make_targets('mse', y, 1)
  _, info = train.train(apply, params, x, targets, loss='mse',
                        optimizer=train.make_optimizer(1e-4), max_steps=7, tol=1e-9,
                        chunk_steps=3)
  assert info['steps'] == 7 and not info['reached_tol'] and info['finite']
  _, info = train.train(apply, params, x, targets, loss='mse',
                        optimizer=train.make_optimizer(1e4), max_steps=500, tol=1e-9)
  assert not info['finite'] and not info['reached_tol'] and info['steps'] < 500


@pytest.mark.parametrize('make,shape', [
    (lambda h: networks.TwoLayer(6, 2, 'relu', head_init=h), (5,)),
    (lambda h: networks.ResNet(3, 2, depth=1, head_init=h), (4, 4, 1)),
    (lambda h: networks.ViT(4, 2, depth=1, num_heads=1, head_init=h), (4, 4, 1)),
])
def test_zero_head_init_starts_at_zero_and_moves_only_the_head_first(make, shape):
  """head_init='zeros': W_L(0) = 0, f(x) = 0 at the start, and the first GD step moves only
  the head (the layers below get gradient W_L (.) = 0); 'fan_in' draws a non-zero head."""
  x = jax.random.normal(jax.random.PRNGKey(0), (3,) + shape)
  zero, fan_in = make('zeros'), make('fan_in')
  params = zero.init(jax.random.PRNGKey(1), x)['params']
  assert not np.any(np.asarray(params['head']['kernel']))
  np.testing.assert_array_equal(zero.apply({'params': params}, x), 0.0)
  assert np.any(np.asarray(fan_in.init(jax.random.PRNGKey(1), x)['params']['head']['kernel']))
  grads = jax.grad(lambda p: jnp.sum((zero.apply({'params': p}, x) - 1.0) ** 2))(params)
  assert np.any(np.asarray(grads['head']['kernel']))
  below = [g for k, g in grads.items() if k != 'head']
  assert all(not np.any(np.asarray(l)) for l in jax.tree.leaves(below))


def test_unknown_head_init_is_one_line_error():
  with pytest.raises(ValueError, match="head_init: unknown 'ones'; accepted: fan_in, zeros"):
    networks.TwoLayer(4, 1, head_init='ones').init(jax.random.PRNGKey(0), jnp.ones((1, 3)))


def test_per_example_losses_average_to_the_loss():
  out = jnp.array([[0.3, -1.0], [2.0, 0.5], [-0.2, 0.1]])
  for name, targets in (('mse', jnp.array([[1.0, 0.0], [0.0, 1.0], [1.0, 0.0]])),
                        ('cross_entropy', jnp.array([0, 1, 1]))):
    per = train.per_example_losses(name, out, targets)
    assert per.shape == (3,)
    np.testing.assert_allclose(jnp.mean(per), train.loss_value(name, out, targets), rtol=1e-6)
  assert float(train.accuracy('cross_entropy', out, jnp.array([0, 0, 1]))) == pytest.approx(1.0)
  assert float(train.accuracy('mse', out[:, :1], jnp.array([[1.0], [1.0], [1.0]]))) == (
      pytest.approx(2 / 3))


def test_private_training_without_noise_or_clipping_is_gd():
  """DP-SGD with sigma = 0, a clip no gradient reaches and q = 1 is full-batch GD, step for step."""
  from recon.models import privacy  # pylint: disable=import-outside-toplevel
  key = jax.random.PRNGKey(0)
  x = jax.random.normal(key, (5, 3))
  targets = jnp.sign(jax.random.normal(jax.random.PRNGKey(1), (5, 1)))
  params = {'w': 0.1 * jax.random.normal(jax.random.PRNGKey(2), (3, 1))}
  apply = lambda p, xs: jnp.tanh(xs @ p['w'])  # noqa: E731
  opt = privacy.dp_optimizer(0.3, clip=1e6, noise_multiplier=0.0, sample_rate=1.0,
                             key=jax.random.key(0))
  got, info = train.train(apply, params, x, targets, loss='mse', optimizer=opt, max_steps=25,
                          gradients='per_example', sample_rate=1.0, key=jax.random.key(1))
  want, _ = train.train(apply, params, x, targets, loss='mse', optimizer=train.make_optimizer(0.3),
                        max_steps=25, tol=0.0)
  assert info['steps'] == 25
  np.testing.assert_allclose(got['w'], want['w'], rtol=1e-5, atol=1e-7)
  # Weight decay is the decayed-weights term before the step.
  wd = train.make_optimizer(0.3, weight_decay=0.1)
  p1, _ = train.train(apply, params, x, targets, loss='mse', optimizer=wd, max_steps=1, tol=0.0)
  g = jax.grad(lambda p: train.loss_value('mse', apply(p, x), targets))(params)['w']
  np.testing.assert_allclose(p1['w'], params['w'] - 0.3 * (g + 0.1 * params['w']), rtol=1e-5)


def test_the_duals_account_for_the_whole_change_of_the_parameters():
  """duals_lr: theta_T - theta_0 = sum_t sum_i duals_t,i grad f(theta_t; x_i) holds exactly for a
  model linear in its parameters (f = <theta, x>: the gradient is x at every step), so
  theta_T - theta_0 = X^T duals."""
  x = jax.random.normal(jax.random.PRNGKey(0), (5, 3))
  y = jnp.sign(jax.random.normal(jax.random.PRNGKey(1), (5,)))
  apply = lambda p, xs: xs @ p['w']  # noqa: E731
  params = {'w': 0.1 * jax.random.normal(jax.random.PRNGKey(2), (3, 1))}
  got, info = train.train(apply, params, x, y, loss='logistic', optimizer=optax.sgd(0.5),
                          max_steps=300, duals_lr=0.5, chunk_steps=128)
  assert info['steps'] == 300 and info['finite'] and info['duals'].shape == (5, 1)
  np.testing.assert_allclose(got['w'] - params['w'], x.T @ info['duals'], rtol=1e-4, atol=1e-5)
  with pytest.raises(ValueError, match='^duals_lr: duals are accumulated for batch gradients'):
    train.train(apply, params, x, y, loss='logistic', optimizer=optax.sgd(0.5), max_steps=1,
                duals_lr=0.5, gradients='per_example')
