"""Sample splitting: splitting matrix vs dense Hessians, planted saddle, Lanczos, bad input."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon import data
from recon.models import features, homogeneous
from recon.attack import splitting
from recon.config import sections
from recon.objectives import kkt


@pytest.fixture(autouse=True)
def _float64():
  """These tests run in float64 (the KKT fit is squared); the switch is undone after each."""
  jax.config.update('jax_enable_x64', True)
  yield


def _kkt_case(m=3, d=3):
  net = homogeneous.HomogeneousMLP(widths=(6,), activation='cubic',
                                   param_dtype=jnp.float64)
  x = data.sphere_rows(jax.random.PRNGKey(0), m, d, jnp.float64)
  p = net.init(jax.random.PRNGKey(1), x)
  theta, apply_vec = kkt.flatten_model(net.apply, p)
  labels = jnp.asarray([1.0, -1.0, 1.0])[:m]
  state = {'x': x, 'lam': jnp.asarray([0.7, 1.3, 0.4])[:m]}
  problem = {'target': theta, 'theta': theta, 'labels': labels}
  loss = lambda s, pr: kkt.kkt_loss(s, pr, apply_vec=apply_vec, kind='binary',
                                    **kkt.penalty_settings(sections.Kkt(prior='none')))
  return state, problem, loss, splitting.kkt_split_model(apply_vec, 'binary'), apply_vec


@pytest.mark.slow  # ~14 CPU-s
def test_splitting_matrix_matches_dense_hessian():
  state, problem, _, model, apply_vec = _kkt_case()
  j = 1
  r = kkt.residual(state, problem, apply_vec=apply_vec, kind='binary')
  s = jnp.sum(problem['target'] ** 2)

  def scalar(xj):
    term = kkt.candidate_term(xj, state['lam'][j], problem['labels'][j], problem['theta'],
                              apply_vec=apply_vec, kind='binary')
    return -(2.0 / s) * jnp.vdot(r, term)

  dense = jax.hessian(scalar)(state['x'][j])
  got = splitting.splitting_matrix(model, state, problem, j)
  np.testing.assert_allclose(np.asarray(got), np.asarray(dense), rtol=1e-8, atol=1e-12)


@pytest.mark.slow  # ~8 CPU-s
def test_splitting_matrix_is_the_non_gauss_newton_part_of_the_x_hessian():
  """d^2 L / dx_j^2 = (2/s) J^T J + T_j for the data term ||r||^2 / s."""
  state, problem, loss, model, apply_vec = _kkt_case()
  j = 0
  s = jnp.sum(problem['target'] ** 2)

  def loss_j(xj):
    return loss({'x': state['x'].at[j].set(xj), 'lam': state['lam']}, problem)

  full = jax.hessian(loss_j)(state['x'][j])
  jac = jax.jacfwd(lambda xj: kkt.candidate_term(
      xj, state['lam'][j], problem['labels'][j], problem['theta'], apply_vec=apply_vec,
      kind='binary'))(state['x'][j])
  t = splitting.splitting_matrix(model, state, problem, j)
  np.testing.assert_allclose(np.asarray(full), np.asarray(2.0 / s * jac.T @ jac + t),
                             rtol=1e-7, atol=1e-10)


@pytest.mark.slow  # ~10 CPU-s
def test_split_changes_loss_by_half_eps_squared_vt_t_v():
  state, problem, loss, model, _ = _kkt_case()
  cfg = sections.Split(eig_method='dense')
  evals, evecs = splitting.smallest_eigenpairs(model, state, problem, cfg, jax.random.PRNGKey(0))
  j = int(np.argmin(evals))
  l0 = float(loss(state, problem))
  ratios = []
  for eps in (1e-2, 3e-3):
    s2, p2 = splitting.split_state(state, problem, model, jnp.asarray([j]), evecs[j][None], eps)
    assert s2['x'].shape[0] == 4 and float(s2['lam'][j]) == float(state['lam'][j]) / 2
    ratios.append((float(loss(s2, p2)) - l0) / (0.5 * eps ** 2 * float(evals[j])))
  assert abs(ratios[-1] - 1) < 1e-2
  assert abs(ratios[-1] - 1) < abs(ratios[0] - 1) + 1e-9


def _toy_model(k):
  """G(x) = (k x_0, x_0^2, x_1), target = (0, 1, 0): x = 0 is a local MINIMUM in x for k > sqrt 2."""
  target = jnp.asarray([0.0, 1.0, 0.0])
  g = lambda x: jnp.stack([k * x[0], x[0] ** 2, x[1]])

  def residual(state, problem):
    expl = jnp.sum(state['lam'][:, None] * jax.vmap(g)(state['x']), axis=0)
    return target - expl, jnp.asarray(1.0), state['lam']

  model = splitting.SplitModel(residual=residual,
                               contribution=lambda xj, c, f, pr: c * g(xj), per_candidate=())
  loss = lambda s, pr: jnp.sum(residual(s, pr)[0] ** 2)
  return model, loss


@pytest.mark.slow  # ~11 CPU-s
def test_planted_saddle_split_escapes_a_local_minimum():
  model, loss = _toy_model(k=2.0)
  state = {'x': jnp.zeros((1, 2)), 'lam': jnp.ones((1,))}
  grad = jax.grad(lambda x: loss({'x': x, 'lam': state['lam']}, {}))(state['x'])
  hess = jax.hessian(lambda x: loss({'x': x[None], 'lam': state['lam']}, {}))(state['x'][0])
  assert float(jnp.max(jnp.abs(grad))) == 0.0
  assert float(jnp.min(jnp.linalg.eigvalsh(hess))) >= 0  # plain GD is stuck here
  evals, evecs = splitting.smallest_eigenpairs(model, state, {}, sections.Split(),
                                               jax.random.PRNGKey(0))
  np.testing.assert_allclose(float(evals[0]), -4.0, rtol=1e-10)  # T = -2 * d^2 x0^2 = -4
  l0 = float(loss(state, {}))
  for eps in (0.1, 0.01):
    s2, _ = splitting.split_state(state, {}, model, jnp.asarray([0]), evecs[:1], eps)
    drop = float(loss(s2, {})) - l0
    assert drop < 0
    np.testing.assert_allclose(drop, 0.5 * eps ** 2 * -4.0, rtol=eps ** 2 + 1e-9)


def test_splitter_round_with_line_search_and_merge():
  model, loss = _toy_model(k=2.0)
  cfg = sections.Split(mode='every', every=1, budget=1, eps_min=1e-3, eps_max=1.0,
                       merge_tol=0.5)
  splitter = splitting.Splitter(cfg, model, loss, lambda z: z, seed=0)
  # Candidate norms are 0 here: the eps grid is relative to the median norm, so use x = (0, 1).
  state = {'x': jnp.asarray([[0.0, 1.0]]), 'lam': jnp.ones((1,))}
  out = splitter(state, {}, 5, [(0, 1.0), (5, 1.0)])
  assert out is not None
  s2, _ = out
  assert s2['x'].shape == (2, 2) and splitter.splits == 1
  assert float(loss(s2, {})) < float(loss(state, {}))
  assert splitter(s2, {}, 10, [(10, 0.5)]) is None  # budget spent, children far apart
  near = {'x': s2['x'].at[1].set(s2['x'][0] + 1e-3), 'lam': s2['lam']}
  merged = splitter(near, {}, 11, [(11, 0.5)])
  assert merged is not None and merged[0]['x'].shape == (1, 2)
  np.testing.assert_allclose(float(merged[0]['lam'][0]), 1.0)


def test_lanczos_matches_eigh():
  a = jax.random.normal(jax.random.PRNGKey(3), (30, 30), jnp.float64)
  a = a + a.T
  val, vec = splitting.lanczos_smallest(lambda v: a @ v, jnp.ones(30), 30)
  np.testing.assert_allclose(float(val), float(jnp.linalg.eigvalsh(a)[0]), rtol=1e-8)
  np.testing.assert_allclose(float(jnp.linalg.norm(a @ vec - val * vec)), 0.0, atol=1e-6)


@pytest.mark.slow  # ~6 CPU-s
def test_projection_split_model_residual_matches_projection_loss():
  from recon.objectives import projection
  v = features.random_weights(jax.random.PRNGKey(0), 40, 3, jnp.float64)
  x = data.sphere_rows(jax.random.PRNGKey(1), 4, 3, jnp.float64)
  theta = jax.random.normal(jax.random.PRNGKey(2), (40,), jnp.float64)
  feat = lambda xj, pr: features.rf_features(v, xj[None], 'relu_tanh')[0]
  model = splitting.projection_split_model(feat, 1e-9)
  r, s, coef = model.residual(x, {'theta': theta})
  want = projection.projection_loss(features.rf_features(v, x, 'relu_tanh'), theta, 1e-9)
  np.testing.assert_allclose(float(jnp.sum(r ** 2) / s), float(want), rtol=1e-8)
  assert coef.shape == (4, 1)
  t = splitting.splitting_matrix(model, x, {'theta': theta}, 2)
  np.testing.assert_allclose(np.asarray(t), np.asarray(t.T), atol=1e-10)


def test_bad_split_input_one_line():
  with pytest.raises(splitting.SplitError, match='attack.split.budget') as e:
    splitting.check_config(sections.Split(mode='every', budget=-1))
  assert '\n' not in str(e.value)
  with pytest.raises(splitting.SplitError, match='second derivative'):
    splitting.check_config(sections.Split(mode='every'), 'relu')
  splitting.check_config(sections.Split(mode='every'), 'relu_smooth')
  splitting.check_config(sections.Split(mode='none'), 'relu')
