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
  # Above the dense Jacobian cap it stands aside (the radii would need J whole).
  big = pursuit.Pursuit(ff, np.zeros(certificate.MAX_JACOBIAN_ENTRIES // (N * D) + 1),
                        radius=1.0, tol=1e-9, key=jax.random.PRNGKey(0))
  assert big(x_hat, loss) is None


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
