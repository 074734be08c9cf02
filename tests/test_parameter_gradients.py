"""Last-layer Jacobian features: closed forms, span property, projection loss at the truth."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon import data
from recon.models import features, networks, train
from recon.objectives import projection
from recon.objectives import parameter_gradients as pg


def _setup(model, x, key=0):
  variables = model.init(jax.random.PRNGKey(key), x[:1])
  others = {k: v for k, v in variables.items() if k != 'params'}
  apply = lambda p, z: model.apply({'params': p, **others}, z)
  return variables['params'], others, apply


@pytest.mark.slow  # ~7 CPU-s
def test_two_layer_jacobian_is_hidden_features_per_class():
  x, _ = data.synthetic_sphere(jax.random.PRNGKey(0), 4, 6)
  width, c = 7, 3
  model = networks.TwoLayer(width, c, 'relu_tanh')
  params, _, apply = _setup(model, x)
  jac = pg.last_layer_jacobian(apply, params, x)
  h = features.ACTIVATIONS['relu_tanh'](x @ params['hidden']['kernel'])  # (n, width)
  # Row (i, c) is h_i in class c's block of vec(W2) (W2 kernel: (width, C), row-major).
  closed = jnp.einsum('nj,ck->ncjk', h, jnp.eye(c)).reshape(4 * c, width * c)
  assert jac.shape == (4 * c, width * c)
  np.testing.assert_allclose(jac, closed, rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # ~5 CPU-s
def test_random_features_jacobian_is_rf_features():
  x, _ = data.synthetic_sphere(jax.random.PRNGKey(1), 5, 4)
  model = networks.RandomFeatures(9, 1, 'relu')
  params, others, apply = _setup(model, x)
  jac = pg.last_layer_jacobian(apply, params, x)
  np.testing.assert_allclose(jac, features.rf_features(others['constants']['v'], x, 'relu'),
                             rtol=1e-5, atol=1e-6)


@pytest.mark.slow  # ~8 CPU-s
def test_image_rows_are_reshaped_inside_the_feature_map():
  x, _ = data.synthetic_sphere(jax.random.PRNGKey(2), 3, 16)
  model = networks.ResNet(3, 2, depth=1)
  variables = model.init(jax.random.PRNGKey(0), x[:1].reshape(1, 4, 4, 1))
  apply = lambda p, z: model.apply({'params': p}, z)
  jac = pg.last_layer_jacobian(apply, variables['params'], x, input_shape=(4, 4, 1))
  assert jac.shape == (3 * 2, 4 * 4 * 3 * 2)
  # Linear head: the Jacobian does not depend on the head's value.
  zeroed = dict(variables['params'], head={'kernel': jnp.zeros_like(
      variables['params']['head']['kernel'])})
  np.testing.assert_allclose(
      pg.last_layer_jacobian(apply, zeroed, x, input_shape=(4, 4, 1)), jac, atol=1e-6)


@pytest.mark.slow  # 4-11 CPU-s a model (Jacobians of ResNet/ViT)
@pytest.mark.parametrize('name', ['two_layer', 'random_features_gd', 'resnet', 'vit'])
def test_projection_loss_zero_for_targets_in_the_span(name):
  """theta = J(X)^T a is explained exactly by the true inputs, not by random ones."""
  n, d = 3, 16
  x, _ = data.synthetic_sphere(jax.random.PRNGKey(3), n, d)
  shape = (4, 4, 1) if name in ('resnet', 'vit') else None
  model = {'two_layer': networks.TwoLayer(40, 2, 'relu_tanh'),
           'random_features_gd': networks.RandomFeatures(80, 2, 'relu_tanh'),
           'resnet': networks.ResNet(4, 2, depth=1),
           'vit': networks.ViT(8, 2, depth=1, pool='flatten')}[name]
  variables = model.init(jax.random.PRNGKey(0), x[:1].reshape((1,) + (shape or (d,))))
  others = {k: v for k, v in variables.items() if k != 'params'}
  apply = lambda p, z: model.apply({'params': p, **others},
                                   z.reshape((z.shape[0],) + shape) if shape else z)
  params = variables['params']
  theta = pg.last_layer_jacobian(apply, params, x).T @ jax.random.normal(
      jax.random.PRNGKey(4), (n * 2,))
  problem = {'params': params, 'theta': theta}
  loss = jax.jit(lambda z: pg.jacobian_projection_loss(z, problem, apply_fn=apply, layer='head'))
  other, _ = data.synthetic_sphere(jax.random.PRNGKey(5), n, d)
  assert float(loss(x)) < 1e-4
  assert float(loss(other)) > 0.1
  if name == 'two_layer':  # (differentiating through jacrev is slow to compile for the rest)
    assert np.all(np.isfinite(np.asarray(jax.grad(loss)(other))))


@pytest.mark.slow  # ~8 CPU-s: trains a net
def test_projection_loss_small_at_truth_after_training():
  """GD-trained two-layer net: W2(T) - W2(0) is (nearly) in the span of the trained features."""
  x, y = data.synthetic_sphere(jax.random.PRNGKey(6), 4, 5)
  model = networks.TwoLayer(200, 2, 'relu_tanh')
  params0, _, apply = _setup(model, x)
  targets = train.make_targets('mse', y, 2)
  lr = train.auto_learning_rate(apply, params0, x)
  params_t, info = train.train(apply, params0, x, targets, loss='mse',
                               optimizer=train.make_optimizer(lr), max_steps=2000, tol=1e-6)
  assert info['reached_tol']
  theta = pg.layer_delta(params_t, params0, 'head')
  jac = lambda z: pg.last_layer_jacobian(apply, params_t, z)
  other, _ = data.synthetic_sphere(jax.random.PRNGKey(7), 4, 5)
  assert float(projection.projection_loss(jac(x), theta)) < 1e-3
  assert float(projection.projection_loss(jac(other), theta)) > 0.1
  # Without the initial weights the target carries W2(0), which is not in the span.
  theta_t = pg.layer_delta(params_t, None, 'head')
  assert float(projection.projection_loss(jac(x), theta_t)) > 0.1


def test_layer_delta_and_size():
  params0 = {'head': {'kernel': jnp.ones((3, 2))}, 'hidden': {'kernel': jnp.ones((2, 3))}}
  params_t = {'head': {'kernel': 3 * jnp.ones((3, 2))}, 'hidden': {'kernel': jnp.ones((2, 3))}}
  np.testing.assert_allclose(pg.layer_delta(params_t, params0, 'head'), 2 * np.ones(6))
  np.testing.assert_allclose(pg.layer_delta(params_t, None, 'head'), 3 * np.ones(6))
  assert pg.layer_size(params0, 'head') == 6


def test_unknown_layer_is_one_line_error():
  params = {'head': {'kernel': jnp.ones((3, 2))}, 'hidden': {'kernel': jnp.ones((2, 3))}}
  with pytest.raises(pg.UnknownLayerError) as e:
    pg.layer_vector(params, 'classifier')
  msg = str(e.value)
  assert '\n' not in msg and "'classifier'" in msg and 'head, hidden' in msg


def test_stacked_jacobian_concatenates_rows():
  x, _ = data.synthetic_sphere(jax.random.PRNGKey(8), 3, 5)
  model = networks.TwoLayer(6, 2)
  p0, _, apply = _setup(model, x, key=0)
  p1, _, _ = _setup(model, x, key=1)
  stacked = pg.stacked_jacobian(apply, (p0, p1), x)
  np.testing.assert_allclose(stacked, jnp.concatenate(
      [pg.last_layer_jacobian(apply, p0, x), pg.last_layer_jacobian(apply, p1, x)]))
  np.testing.assert_allclose(pg.stacked_jacobian(apply, p0, x),
                             pg.last_layer_jacobian(apply, p0, x))


class _BiasHead(__import__('flax').linen.Module):
  """An ordinary MLP with biases whose last Dense is the head (a user's model)."""
  classes: int

  @__import__('flax').linen.compact
  def __call__(self, x):
    nn = __import__('flax').linen
    return nn.Dense(self.classes, name='head')(nn.relu(nn.Dense(24, name='hidden')(x)))


@pytest.mark.slow  # two models x their Jacobians and gradients (~7 s a case)
@pytest.mark.parametrize('classes', [1, 3])
@pytest.mark.parametrize('points', ['trained', 'stacked', 'average'])
def test_head_rows_give_the_dense_loss_and_gradient(classes, points):
  x, _ = data.synthetic_sphere(jax.random.PRNGKey(0), 5, 6)
  xh, _ = data.synthetic_sphere(jax.random.PRNGKey(1), 5, 6)
  for model in (networks.TwoLayer(16, classes, 'relu_tanh'), _BiasHead(classes)):
    params, _, apply = _setup(model, x)
    params1, _, _ = _setup(model, x, key=7)
    assert pg.linear_head_outputs(apply, params, x) == classes
    at = params if points == 'trained' else (params, params1)
    theta = pg.layer_delta(params1, params, 'head')
    dense = lambda z: projection.projection_loss(  # noqa: E731
        pg.stacked_jacobian(apply, at, z, average=points == 'average'), theta, 1e-6)
    rows = lambda z: projection.projection_loss(  # noqa: E731
        pg.head_rows(apply, at, z, average=points == 'average'),
        pg.head_target(theta, classes), 1e-6)
    assert float(rows(xh)) == pytest.approx(float(dense(xh)), rel=1e-4)
    np.testing.assert_allclose(jax.grad(rows)(xh), jax.grad(dense)(xh), rtol=1e-3, atol=1e-6)


def test_a_head_that_is_not_linear_in_its_outputs_keeps_the_dense_rows():
  x, _ = data.synthetic_sphere(jax.random.PRNGKey(0), 4, 6)
  model = networks.TwoLayer(8, 2, 'relu_tanh')
  params, _, apply = _setup(model, x)
  squashed = lambda p, z: jnp.tanh(apply(p, z)) * jnp.arange(1.0, 3.0)  # noqa: E731
  assert pg.linear_head_outputs(squashed, params, x) is None
  assert pg.linear_head_outputs(apply, params, x, layer='hidden') is None  # not the head
