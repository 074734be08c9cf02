"""Residual pursuit (recon/pursuit.py): stuck rows found by the radii gap, a missing sample
re-placed where the residual of theta points, and the escalation trial that uses them."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon import certificate, features, metrics, pursuit
from recon.objectives import projection

N, D = 6, 6


def _problem(p, activation='relu_tanh', seed=0):
  kx, kv, ka = jax.random.split(jax.random.PRNGKey(seed), 3)
  x = jax.random.normal(kx, (N, D))
  x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * jnp.sqrt(D)
  v = features.random_weights(kv, p, D)
  ff = lambda z: features.rf_features(v, z, activation)  # noqa: E731
  theta = jax.random.normal(ka, (N,)) @ ff(x)
  return np.asarray(x), np.asarray(theta), ff


def test_stuck_rows_are_the_ones_above_the_largest_gap():
  radii = np.array([0.01, 0.02, 9.0, 0.015, 30.0, 0.012, 0.02, 0.011])
  assert sorted(pursuit.stuck_rows(radii).tolist()) == [2, 4]
  assert pursuit.stuck_rows(radii)[0] == 4  # most loosely pinned first
  assert pursuit.stuck_rows(np.array([0.01, 0.02, 0.015, 0.012])).size == 0  # no gap
  assert pursuit.stuck_rows(np.array([0.01, np.nan, 5.0, 0.02])).size == 0
  # Only the top quarter (plus one) is searched: a gap deep in the bulk is no stuck set.
  assert pursuit.stuck_rows(np.r_[np.full(6, 1.0), np.full(6, 1e-3)]).size == 0


def test_a_missing_sample_is_placed_where_the_residual_points():
  p = 8 * N * D
  x, theta, ff = _problem(p)
  rng = np.random.default_rng(1)
  x_hat = x.copy()
  x_hat[3] = rng.standard_normal(D)
  x_hat[3] *= np.sqrt(D) / np.linalg.norm(x_hat[3])
  x_new, shares = pursuit.place(ff, theta, x_hat, [3], jax.random.PRNGKey(0), np.sqrt(D),
                                starts=128, steps=300)
  assert metrics.per_sample_errors(x, x_new).max() < 1e-2
  assert shares[0] > 0.999  # the placed row explains the whole residual


def test_the_radii_single_out_a_stuck_row_and_pursuit_fixes_it():
  """The stall the rung and the escalation meet (n = 100 on a tuning seed: 5 such rows): a
  sample whose coefficient in theta is tiny, its candidate anywhere, every other row right;
  the loss is small, the stuck row's pin radius orders of magnitude above the others'."""
  p, weak = 8 * N * D, 1
  kx, kv, ka = jax.random.split(jax.random.PRNGKey(2), 3)
  x = jax.random.normal(kx, (N, D))
  x = np.asarray(x / jnp.linalg.norm(x, axis=1, keepdims=True) * jnp.sqrt(D))
  v = features.random_weights(kv, p, D)
  ff = lambda z: features.rf_features(v, z, 'relu_tanh')  # noqa: E731
  phi = np.asarray(ff(jnp.asarray(x)), np.float64)
  alpha = np.asarray(jax.random.normal(ka, (N,)), np.float64)
  alpha[weak] = 2e-3 * np.linalg.norm(alpha @ phi) / np.linalg.norm(phi[weak])
  theta = (alpha @ phi).astype(np.float32)
  x_hat = x.copy()
  z = np.random.default_rng(1).standard_normal(D)
  x_hat[weak] = z / np.linalg.norm(z) * np.sqrt(D)
  loss = float(projection.projection_loss(ff(jnp.asarray(x_hat)), jnp.asarray(theta)))
  assert loss < 1e-4
  radii = certificate.row_radii(ff, x_hat, theta, loss, 1e-9)
  assert pursuit.stuck_rows(radii).tolist() == [weak]
  step = pursuit.Pursuit(ff, theta, radius=np.sqrt(D), tol=1e-9, key=jax.random.PRNGKey(0),
                         starts=128)
  x_new, rows = step(x_hat, loss)
  assert rows.tolist() == [weak] and step.calls == 1
  assert metrics.per_sample_errors(x, x_new).max() < 1e-2
  assert step.rule == 'pin radius'


def test_dead_rows_are_the_ones_far_below_the_median_gain():
  gains = np.array([1.0, 2e-3, 0.8, 1.2, 0.0, 0.9, 0.05, 1.1])
  assert pursuit.dead_rows(gains).tolist() == [4, 1, 6]  # weakest first
  assert pursuit.dead_rows(gains, ratio=0.01).tolist() == [4, 1]
  assert pursuit.dead_rows(np.array([1.0, 0.9, 1.1])).size == 0
  assert pursuit.dead_rows(np.array([1.0, np.inf, 0.0])).size == 0  # a gain not finite
  assert pursuit.dead_rows(np.zeros(4)).size == 0  # no median gain to compare with


def test_above_the_jacobian_cap_the_dead_rows_are_re_placed(monkeypatch):
  """Where the radii's dense Jacobian does not fit (photo patches, n = 100: p m d = 2.3e8),
  the rows are chosen by leave-one-out gain. As on photo patches, the samples lie near a
  low-dimensional subspace (here in it: 4 of 8 dimensions) and the wrong candidates off it;
  those explain ~none of theta (gains <= 1e-4 x the median, the right rows' >= 0.3 x): both
  are found and put back on their samples."""
  n, d, k = 12, 8, 4
  kx, kv, ka = jax.random.split(jax.random.PRNGKey(4), 3)
  x = np.zeros((n, d))
  x[:, :k] = np.asarray(jax.random.normal(kx, (n, k)))
  x = x / np.linalg.norm(x, axis=1, keepdims=True) * np.sqrt(d)
  v = features.random_weights(kv, 8 * n * d, d)
  ff = lambda z: features.rf_features(v, z, 'relu_tanh')  # noqa: E731
  theta = np.asarray(jax.random.normal(ka, (n,)) @ ff(jnp.asarray(x)))
  rng = np.random.default_rng(0)
  x_hat = x.copy()
  for j in (1, 4):
    x_hat[j] = 0.0
    x_hat[j, k:] = rng.standard_normal(d - k)
    x_hat[j] *= np.sqrt(d) / np.linalg.norm(x_hat[j])
  loss = float(projection.projection_loss(ff(jnp.asarray(x_hat)), jnp.asarray(theta)))
  monkeypatch.setattr(certificate, 'MAX_JACOBIAN_ENTRIES', v.shape[0] * n * d - 1)
  step = pursuit.Pursuit(ff, theta, radius=np.sqrt(d), tol=1e-9, key=jax.random.PRNGKey(0),
                         starts=128)
  assert sorted(step.rows(x_hat, loss).tolist()) == [1, 4]
  assert step.rule == 'leave-one-out gain'
  x_new, rows = step(x_hat, loss)
  assert sorted(rows.tolist()) == [1, 4] and step.calls == 1
  # One after another against the residual both leave, each placed row lands between the two
  # missing samples (the descent that follows in the escalation's trial finishes it).
  before = metrics.per_sample_errors(x, x_hat)[[1, 4]]
  after = metrics.per_sample_errors(x, x_new)[[1, 4]]
  assert after.max() < 0.4 < 1.0 < before.min()
  assert float(projection.projection_loss(ff(jnp.asarray(x_new)), jnp.asarray(theta))) < loss / 3
  # The gain is no classifier: at the truth a sample with a small coefficient (here row 4's)
  # looks dead too; re-placed alone against the others' residual it goes back to its sample
  # (and the escalation keeps a trial only if it lowers the loss).
  at_truth = float(projection.projection_loss(ff(jnp.asarray(x)), jnp.asarray(theta)))
  x_again, rows = step(x, at_truth)
  assert rows.tolist() == [4]
  assert metrics.per_sample_errors(x, x_again).max() < 1e-2


@pytest.mark.slow  # a whole run (~15 s)
def test_a_run_with_pursuit_reports_its_trials(tmp_path):
  import recon  # pylint: disable=import-outside-toplevel
  from configs import rf_synthetic  # pylint: disable=import-outside-toplevel
  c = rf_synthetic.get_config()
  c.data.n, c.data.d, c.victim.p, c.seed = 6, 6, 200, 3
  c.attack.max_steps, c.attack.escalate.pursuit = 3000, 'auto'
  m = recon.run(c, str(tmp_path / 'run')).summary['metrics']
  assert m['escalation_pursuits'] >= 0 and 'escalation_pursuits_accepted' in m
  c.attack.escalate.pursuit = 'sometimes'
  with pytest.raises(recon.RunError, match='pursuit'):
    recon.run(c, str(tmp_path / 'bad'))
