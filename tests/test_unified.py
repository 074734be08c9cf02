"""Tests of the unified objective (recon/objectives/unified.py) and pytree optimisation."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon.config import choices
from recon.models import features
from recon.attack import optimiser as optimize
from recon.objectives import projection, unified


def _problem(key, m=5, p=40):
  kf, kt = jax.random.split(key)
  return jax.random.normal(kf, (m, p)), jax.random.normal(kt, (p,))


def test_closed_form_alpha_equals_projection_loss():
  f, t = _problem(jax.random.PRNGKey(0))
  alpha_star = np.linalg.lstsq(np.asarray(f, np.float64).T, np.asarray(t, np.float64),
                               rcond=None)[0]
  joint = unified.unified_loss(jnp.asarray(alpha_star, jnp.float32), f, t)
  closed = projection.projection_loss(f, t)
  np.testing.assert_allclose(joint, closed, rtol=1e-4)
  np.testing.assert_allclose(unified.closed_form_loss(f, t), closed, rtol=1e-6)
  # Any other alpha explains less of t.
  for s in range(5):
    other = alpha_star + 0.1 * np.random.default_rng(s).normal(size=alpha_star.shape)
    assert unified.unified_loss(jnp.asarray(other, jnp.float32), f, t) > closed


def test_joint_alpha_optimised_by_gradient_descent_reaches_closed_form():
  f, t = _problem(jax.random.PRNGKey(1))
  opt = optimize.make_optimizer('adam', 0.05)
  alpha = jnp.zeros(f.shape[0])
  state = opt.init(alpha)
  grad = jax.grad(unified.unified_loss)

  def step(_, carry):
    a, s = carry
    upd, s = opt.update(grad(a, f, t), s, a)
    return a + upd, s

  alpha, _ = jax.jit(lambda c: jax.lax.fori_loop(0, 1500, step, c))((alpha, state))
  np.testing.assert_allclose(unified.unified_loss(alpha, f, t), projection.projection_loss(f, t),
                             rtol=1e-3)


def test_candidate_loss_joint_at_optimal_alpha_matches_closed_form():
  key = jax.random.PRNGKey(2)
  v = features.random_weights(key, 60, 8)
  x = jax.random.normal(jax.random.fold_in(key, 1), (4, 8))
  problem = {'weights_trained': v, 'weights_initial': 1.1 * v,
             'target': jax.random.normal(jax.random.fold_in(key, 2), (60,))}
  feat = lambda xx, w: features.rf_features(w, xx, 'relu_tanh')
  for at in choices.GRADIENT_AT:
    closed = unified.candidate_loss(x, problem, feature_fn=feat, gradient_at=at)
    init = unified.init_candidates(x, problem, alpha_mode='joint', feature_fn=feat, gradient_at=at)
    joint = unified.candidate_loss(init, problem, feature_fn=feat, gradient_at=at)
    np.testing.assert_allclose(joint, closed, rtol=1e-3)
  # 'both' is the trapezoid (J_T + J_0) / 2, between the two endpoints' features.
  f, _ = unified.features_and_target(x, problem, feature_fn=feat, gradient_at='both')
  np.testing.assert_allclose(f, 0.5 * (feat(x, v) + feat(x, 1.1 * v)), rtol=1e-6)


def test_subspace_coordinates_are_lifted_through_the_basis():
  u, _ = jnp.linalg.qr(jax.random.normal(jax.random.PRNGKey(3), (10, 3)))
  z = jax.random.normal(jax.random.PRNGKey(4), (2, 3))
  np.testing.assert_allclose(unified.candidate_x(z, {'basis': u}), z @ u.T, rtol=1e-6)
  np.testing.assert_allclose(unified.candidate_x({'x': z, 'alpha': 0}, {}), z)


def test_head_jacobian_rows_match_autodiff():
  h = jax.random.normal(jax.random.PRNGKey(5), (3, 4))
  w2 = jax.random.normal(jax.random.PRNGKey(6), (4, 2))
  jac = jax.jacobian(lambda w: h @ w)(w2)  # (3, 2, 4, 2)
  np.testing.assert_allclose(unified.head_jacobian_rows(h, 2), jac.reshape(6, 8), atol=1e-6)
  assert unified.head_jacobian_rows(h, 1) is h


@pytest.mark.slow  # ~5 CPU-s
def test_optimizer_loop_runs_on_a_pytree_of_candidates_and_alpha():
  key = jax.random.PRNGKey(7)
  v = features.random_weights(key, 50, 6)
  x_true = optimize.sphere_constraint(np.sqrt(6))(jax.random.normal(key, (3, 6)))
  phi = features.rf_features(v, x_true, 'relu_tanh')
  problem = {'weights_trained': v, 'weights_initial': v,
             'target': phi.T @ jnp.array([1.0, -0.5, 0.3])}
  feat = lambda xx, w: features.rf_features(w, xx, 'relu_tanh')
  loss_fn = lambda c, prob: unified.candidate_loss(c, prob, feature_fn=feat, gradient_at='trained')
  sphere = optimize.sphere_constraint(np.sqrt(6))
  x0 = sphere(jax.random.normal(jax.random.fold_in(key, 1), (3, 6)))
  init = unified.init_candidates(x0, problem, alpha_mode='joint', feature_fn=feat,
                                 gradient_at='trained')
  opt = optimize.make_optimizer('adam', 0.01)
  constraint = optimize.field_constraint(sphere)
  state = optimize.init_state(init, opt, loss_fn, problem, constraint)
  end = optimize.run_chunk(state, problem, jnp.asarray(200), loss_fn=loss_fn, optimizer=opt,
                           constraint=constraint, tol=0.0, max_steps=200)
  assert int(end.step) == 200 and float(end.loss) < float(state.loss)
  np.testing.assert_allclose(jnp.linalg.norm(end.x['x'], axis=1), np.sqrt(6), rtol=1e-5)
  assert end.x['alpha'].shape == (3,)


def test_bad_mode_names_raise():
  f, t = _problem(jax.random.PRNGKey(8))
  with pytest.raises(ValueError, match='gradient_at'):
    unified.stack(f, f, t, 'middle')
  with pytest.raises(ValueError, match='alpha_mode'):
    unified.init_candidates(f, {}, alpha_mode='free', feature_fn=None, gradient_at='trained')
