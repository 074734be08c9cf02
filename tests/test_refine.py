"""Blind re-seeding of collapsed candidates on a planted collapse."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon.attack import optimiser as optimize
from recon.attack.rescue import reseed as refine
from recon.config import sections
from recon.runtime import runs
from recon.pipelines import random_features as rf_pipeline

ACT = 'relu_tanh'


def test_collapsed_flags_the_later_of_each_close_pair():
  x = jnp.eye(4, 5).at[3].set(jnp.array([1.0, 0.01, 0, 0, 0]))  # row 3 ~ row 0
  x = x.at[2].set(-x[1])  # antipodal rows are distinct points: not a collapse
  assert list(np.asarray(refine.collapsed(x, 0.95))) == [False, False, False, True]


def _problem(x_true):
  keys = runs.split_keys(0)
  y = jnp.arange(x_true.shape[0], dtype=jnp.float32)
  return jax.jit(lambda k, x, y: rf_pipeline.make_rf_problem(
      k, x, y, p_total=300, activation=ACT))(keys, x_true, y)


def _reseeder(problem, every=1):
  loss_fn = jax.jit(lambda x, prob: rf_pipeline.rf_loss(x, prob, activation=ACT, jitter=1e-6))
  opt = optimize.make_optimizer('adam', 0.05)
  constraint = optimize.sphere_constraint(float(np.sqrt(6)))
  r = refine.Reseeder(jax.random.PRNGKey(1), loss_fn, problem, constraint, opt,
                      sections.Reseed(every=every, proposals=32))
  return r, loss_fn, opt, constraint


@pytest.mark.slow  # ~8 CPU-s
def test_reseeds_a_planted_collapse_and_lowers_the_loss():
  x_true = optimize.sphere_constraint(np.sqrt(6))(jax.random.normal(jax.random.PRNGKey(2), (4, 6)))
  problem = _problem(x_true)
  x = x_true.at[3].set(x_true[0] + 0.01)  # candidates 0 and 3 on sample 0; sample 3 uncovered
  reseeder, loss_fn, opt, constraint = _reseeder(problem)
  state = optimize.init_state(x, opt, loss_fn, problem, constraint)
  new = reseeder(state._replace(step=jnp.int32(5)))
  assert reseeder.stats.reseeded == 1
  np.testing.assert_array_equal(np.asarray(new.x[:3]), np.asarray(state.x[:3]))
  assert not np.asarray(refine.collapsed(new.x, 0.95)).any()
  assert float(new.loss) < float(state.loss)
  # Not again before `every` more steps.
  assert reseeder(new._replace(step=jnp.int32(5))) is not None and reseeder.stats.checks == 1


@pytest.mark.slow  # ~6 CPU-s
def test_close_true_samples_are_not_reseeded():
  # Two genuinely close samples (cos > threshold), candidates exactly right: replacing
  # either raises the blind loss, so the re-seed is rejected and the state is unchanged.
  x_true = optimize.sphere_constraint(np.sqrt(6))(jax.random.normal(jax.random.PRNGKey(2), (4, 6)))
  x_true = x_true.at[3].set(x_true[0] + 0.15 * x_true[1])
  x_true = optimize.sphere_constraint(np.sqrt(6))(x_true)
  assert np.asarray(refine.collapsed(x_true, 0.95))[3]
  problem = _problem(x_true)
  reseeder, loss_fn, opt, constraint = _reseeder(problem)
  state = optimize.init_state(x_true, opt, loss_fn, problem, constraint)
  new = reseeder(state._replace(step=jnp.int32(1)))
  assert reseeder.stats.reseeded == 0 and reseeder.stats.rejected == 1
  np.testing.assert_array_equal(np.asarray(new.x), np.asarray(state.x))


@pytest.mark.slow  # compiles 64 full losses and the ranked route (~5 s)
def test_ranked_proposals_choose_as_the_full_losses_do():
  # best_replacement with `score` (escalation's rank-two route) picks the proposal the 64 full
  # losses pick, and returns that proposal's full loss, on a set one row away from the truth.
  from recon.models import features  # pylint: disable=import-outside-toplevel
  from recon.objectives import projection  # pylint: disable=import-outside-toplevel
  m, d, p = 12, 6, 600
  v = features.random_weights(jax.random.PRNGKey(0), p, d)
  sphere = optimize.sphere_constraint(float(np.sqrt(d)))
  x_true = sphere(jax.random.normal(jax.random.PRNGKey(1), (m, d)))
  theta = features.rf_features(v, x_true, 'relu_tanh').T @ jnp.linspace(1.0, 2.0, m)
  problem = {'v': v, 'mask': jnp.ones((p,)), 'theta': theta}
  rows = lambda x, prob: rf_pipeline.rf_rows(x, prob, activation='relu_tanh')  # noqa: E731
  loss = lambda x, prob: projection.projection_loss(*rows(x, prob), 1e-6)  # noqa: E731
  x = x_true.at[3].set(sphere(jax.random.normal(jax.random.PRNGKey(2), (1, d)))[0])
  basis = projection.replacement_basis(*rows(x, problem), 1e-6)
  score = lambda j, z: projection.replacement_losses(basis, j, rows(z, problem)[0])  # noqa: E731
  for j in (3, 7):
    key = jax.random.PRNGKey(10 + j)
    z_full, l_full = refine.best_replacement(key, x, j, loss, problem, sphere, 64)
    z_rank, l_rank = refine.best_replacement(key, x, j, loss, problem, sphere, 64, score)
    np.testing.assert_array_equal(z_rank, z_full)
    assert float(l_rank) == pytest.approx(float(l_full), rel=1e-5)
    assert float(l_rank) == pytest.approx(float(loss(x.at[j].set(z_rank), problem)), rel=1e-6)


def test_proposals_are_ranked_one_row_at_a_time_only_where_the_runtime_deadlocks():
  # jaxlib < 0.12 on the CPU: one row after another (docs/reliability.md); elsewhere batches.
  assert refine.proposal_batch(25, 16, 'cpu', '0.10.2') == 1
  assert refine.proposal_batch(25, 16, 'cpu', '0.11.9') == 1
  assert refine.proposal_batch(25, 16, 'cpu', '0.12.0.1') == 16
  assert refine.proposal_batch(5, 16, 'cpu', '0.13.0') == 5
  assert refine.proposal_batch(25, 16, 'gpu', '0.10.2') == 16
  assert refine.proposal_batch(0, 16, 'tpu', '0.10.2') == 1
  assert refine.proposal_batch(25, 16) in (1, 16)  # this backend and jaxlib
