import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon import data
from recon.models import features, random_features
from recon.objectives import projection


# The losses and their derivatives are jitted: op-by-op dispatch compiles every primitive
# separately, several times the CPU time of one compiled program.
def _problem(n=5, d=6, p=400, seed=0):
  x, y = data.synthetic_sphere(jax.random.PRNGKey(seed), n, d)
  v = jax.jit(features.random_weights, static_argnums=(1, 2))(jax.random.PRNGKey(seed + 7), p, d)
  theta = random_features.min_norm_solution(features.rf_features(v, x, 'relu_tanh'), y)
  loss = jax.jit(
      lambda xh: projection.projection_loss(features.rf_features(v, xh, 'relu_tanh'), theta))
  return x, loss


def test_zero_at_true_data_and_any_permutation():
  x, loss = _problem()
  assert float(loss(x)) < 1e-6
  for perm in ([4, 3, 2, 1, 0], [1, 0, 3, 2, 4]):
    assert float(loss(x[jnp.asarray(perm)])) < 1e-6


def test_clearly_positive_at_random_candidates():
  x, loss = _problem()
  x_rand = data.sphere_rows(jax.random.PRNGKey(99), *x.shape)
  assert float(loss(x_rand)) > 0.05
  assert float(loss(x_rand)) <= 1.0 + 1e-6


def test_matches_explicit_projector():
  phi = jax.random.normal(jax.random.PRNGKey(0), (3, 10))
  t = jax.random.normal(jax.random.PRNGKey(1), (10,))
  q, _ = np.linalg.qr(np.asarray(phi, np.float64).T)
  r = np.asarray(t, np.float64) - q @ (q.T @ np.asarray(t, np.float64))
  expected = r @ r / (np.asarray(t, np.float64) @ np.asarray(t, np.float64))
  np.testing.assert_allclose(float(projection.projection_loss(phi, t, jitter=0.0)), expected,
                             rtol=1e-4)


def test_duplicate_candidates_stay_finite():
  x, loss = _problem()
  xd = x.at[1].set(x[0])
  value, grad = jax.value_and_grad(loss)(xd)
  assert np.isfinite(float(value)) and bool(jnp.all(jnp.isfinite(grad)))


@pytest.mark.slow  # ~10 CPU-s (float64 finite differences)
def test_gradient_matches_finite_differences():
  with jax.enable_x64(True):
    x, y = data.synthetic_sphere(jax.random.PRNGKey(0), 4, 5, dtype=jnp.float64)
    v = features.random_weights(jax.random.PRNGKey(1), 300, 5, jnp.float64)
    theta = random_features.min_norm_solution(features.rf_features(v, x, 'tanh'), y)
    loss = jax.jit(
        lambda xh: projection.projection_loss(features.rf_features(v, xh, 'tanh'), theta))
    x0 = data.sphere_rows(jax.random.PRNGKey(5), 4, 5, jnp.float64)
    g = jax.jit(jax.grad(loss))(x0)
    direction = jax.random.normal(jax.random.PRNGKey(6), x0.shape, jnp.float64)
    h = 1e-5
    fd = (loss(x0 + h * direction) - loss(x0 - h * direction)) / (2 * h)
    np.testing.assert_allclose(float(jnp.sum(g * direction)), float(fd), rtol=1e-6)


def _autodiff_reference(features_, target, jitter):
  # The loss written plainly, differentiated by JAX through the Cholesky solve.
  r = projection.projection_residual(features_, target, jitter)
  return jnp.sum(r ** 2) / jnp.sum(target ** 2)


@pytest.mark.slow  # ~10 CPU-s
@pytest.mark.parametrize('jitter', [1e-6, 1e-2])
def test_closed_form_gradients_equal_autodiff(jitter):
  # The custom JVP (closed-form dL/dPhi, dL/dtheta, including the d eps / d Phi term of the
  # relative jitter) against reverse-mode autodiff of the plain formula, in float64.
  with jax.enable_x64(True):
    k1, k2 = jax.random.split(jax.random.PRNGKey(3))
    phi = jax.random.normal(k1, (6, 40), jnp.float64)
    theta = jax.random.normal(k2, (40,), jnp.float64)
    got = jax.jit(jax.grad(projection.projection_loss, argnums=(0, 1)),
                  static_argnums=2)(phi, theta, jitter)
    want = jax.jit(jax.grad(_autodiff_reference, argnums=(0, 1)),
                   static_argnums=2)(phi, theta, jitter)
    for g, w in zip(got, want):
      np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-8, atol=1e-12)
    np.testing.assert_allclose(float(projection.projection_loss(phi, theta, jitter)),
                               float(_autodiff_reference(phi, theta, jitter)), rtol=1e-12)


@pytest.mark.slow  # ~15 CPU-s: HVPs, eager vmapped grads
def test_hessian_vector_products_equal_autodiff():
  # Sample splitting differentiates the gradient again (jax.jvp of jax.grad): the custom
  # rule must be differentiable, giving the same HVP as the plain formula.
  with jax.enable_x64(True):
    x, y = data.synthetic_sphere(jax.random.PRNGKey(0), 4, 5, dtype=jnp.float64)
    v = features.random_weights(jax.random.PRNGKey(1), 200, 5, jnp.float64)
    theta = random_features.min_norm_solution(features.rf_features(v, x, 'tanh'), y)
    x0 = data.sphere_rows(jax.random.PRNGKey(5), 4, 5, jnp.float64)
    u = jax.random.normal(jax.random.PRNGKey(6), x0.shape, jnp.float64)
    hvps = []
    for fn in (projection.projection_loss, _autodiff_reference):
      loss = lambda xh, fn=fn: fn(features.rf_features(v, xh, 'tanh'), theta, 1e-6)
      hvps.append(jax.jit(lambda x, u, loss=loss: jax.jvp(jax.grad(loss), (x,), (u,))[1])(x0, u))
    np.testing.assert_allclose(np.asarray(hvps[0]), np.asarray(hvps[1]), rtol=1e-7, atol=1e-12)
    # and vmapped over candidate sets (sweeps)
    batch = jnp.stack([x0, -x0])
    g = jax.vmap(jax.grad(lambda xh: projection.projection_loss(
        features.rf_features(v, xh, 'tanh'), theta)))(batch)
    np.testing.assert_allclose(np.asarray(g[1]), np.asarray(jax.grad(lambda xh: _autodiff_reference(
        features.rf_features(v, xh, 'tanh'), theta, 1e-6))(-x0)), rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize('m, p, d, activation', [
    (6, 80, 4, 'relu_tanh'), pytest.param(20, 900, 8, 'relu', marks=pytest.mark.slow),
    (12, 12 * 9, 8, 'tanh')])  # p = m (d + 1)
def test_replacement_losses_equal_the_loss_of_each_replaced_set(m, p, d, activation):
  # Rank-two updates of one Cholesky against the full loss of every replaced set, at a
  # random set, at the truth with one row moved (the losses span 1e-1 .. 1e-9), and with a
  # proposal equal to another row (a duplicate: a singular Gram without the ridge).
  with jax.enable_x64(True):
    key = jax.random.PRNGKey(m)
    v = jax.random.normal(key, (p, d), jnp.float64) / np.sqrt(d)
    x_true = jax.random.normal(jax.random.fold_in(key, 1), (m, d), jnp.float64)
    theta = features.rf_features(v, x_true, activation).T @ jax.random.normal(
        jax.random.fold_in(key, 2), (m,), jnp.float64)
    rows_at = (0, 1, m - 1)

    @jax.jit  # one program for both sets (the same shapes): eager ops compile one by one
    def fast_and_exact(x, z):
      phi = features.rf_features(v, x, activation)
      basis = projection.replacement_basis(phi, theta)
      rows = features.rf_features(v, z, activation)
      return [(projection.replacement_losses(basis, j, rows),
               jax.vmap(lambda a, j=j: projection.projection_loss(phi.at[j].set(a), theta))(rows))
              for j in rows_at]

    for x in (jax.random.normal(jax.random.fold_in(key, 3), (m, d), jnp.float64),
              x_true.at[1].add(0.01)):
      z = jnp.concatenate([jax.random.normal(jax.random.fold_in(key, 4), (7, d), jnp.float64),
                           x_true[1:2], x[2:3]])
      for fast, exact in fast_and_exact(x, z):
        np.testing.assert_allclose(fast, exact, rtol=1e-5, atol=1e-12)
        assert int(jnp.argmin(fast)) == int(jnp.argmin(exact))


def _ill_conditioned(m=8, p=600, smallest=1e-3, seed=0):
  """(Phi (m, p) float32 with singular values 1 .. `smallest`, theta = Phi^T alpha + a known
  part off the span, that part's exact loss) — the Gram's condition number 1/smallest^2."""
  rng = np.random.default_rng(seed)
  u, _ = np.linalg.qr(rng.normal(size=(m, m)))
  w, _ = np.linalg.qr(rng.normal(size=(p, m + 1)))
  sigma = np.geomspace(1.0, smallest, m)
  phi = (u * sigma) @ w[:, :m].T
  alpha = u @ (rng.normal(size=m) / sigma)  # every direction carries a like part of theta
  off = 1e-3 * np.linalg.norm(phi.T @ alpha) * w[:, m]
  theta = phi.T @ alpha + off
  return (jnp.asarray(phi, jnp.float32), jnp.asarray(theta, jnp.float32),
          float(off @ off / (theta @ theta)))


def test_refinement_removes_the_ridge_floor():
  """With cond(G) = 1e6 the ridge (jitter 1e-6, eps = 1.7e-7 here) takes a part of the smallest
  directions: the loss of a target whose true loss is 1e-6 reads orders of magnitude higher;
  five refinement steps on the explicit float32 residual give the ridge-free loss back."""
  phi, theta, exact = _ill_conditioned()
  loss = jax.jit(projection.projection_loss, static_argnums=(2, 3))
  plain, refined = float(loss(phi, theta, 1e-6, 0)), float(loss(phi, theta, 1e-6, 5))
  assert plain > 100 * exact
  np.testing.assert_allclose(refined, exact, rtol=0.02)
  in_span = phi.T @ jnp.linalg.lstsq(phi.T, theta)[0]
  assert float(loss(phi, in_span, 1e-6, 5)) < 1e-3 * exact < float(loss(phi, in_span, 1e-6, 0))


def test_refined_gradients_equal_the_ridge_free_loss_gradients():
  """Refined to convergence, the closed-form rule differentiates the ridge-free loss
  ||P_perp theta||^2 / ||theta||^2 (autodiff through the explicit projector, float64)."""
  with jax.enable_x64(True):
    k1, k2 = jax.random.split(jax.random.PRNGKey(3))
    phi = jax.random.normal(k1, (6, 40), jnp.float64)
    theta = jax.random.normal(k2, (40,), jnp.float64)
    exact = lambda f, t: jnp.sum((t - f.T @ jnp.linalg.lstsq(f.T, t)[0]) ** 2) / jnp.sum(t ** 2)
    got = jax.jit(jax.grad(projection.projection_loss, argnums=(0, 1)),
                  static_argnums=(2, 3))(phi, theta, 1e-3, 8)
    want = jax.grad(exact, argnums=(0, 1))(phi, theta)
    for g, w in zip(got, want):
      np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6, atol=1e-12)
    theta2 = jnp.stack([theta, theta[::-1]], axis=1)  # the (p, C) target refines per column
    np.testing.assert_allclose(
        float(projection.projection_loss(phi, theta2, 1e-3, 8)),
        float(sum(exact(phi, theta2[:, c]) * jnp.sum(theta2[:, c] ** 2) for c in range(2))
              / jnp.sum(theta2 ** 2)), rtol=1e-9)
