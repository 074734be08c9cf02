"""Residual pursuit (recon/attack/rescue/pursuit.py): stuck rows found by the radii gap, a missing sample
re-placed where the residual of theta points, and the escalation trial that uses them."""
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from recon import metrics
from recon.certify import certificate
from recon.config import sections
from recon.models import features
from recon.attack import optimiser as optimize
from recon.attack.rescue import pursuit
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


def test_starts_from_the_rows_lie_where_the_rows_do():
  """'rows': L Lᵀ is the kept rows' second moment (plus 1e-4 of its mean eigenvalue), so the
  starts of rows in a 4-dim subspace of R^8 hold ~all their energy in it; 'sphere': I."""
  x, x_hat, theta, ff = _off_subspace()[:4]
  kept = np.delete(x_hat, [1, 4], 0)
  assert np.array_equal(np.asarray(pursuit.start_factor(kept, 'sphere')), np.eye(8))
  factor = np.asarray(pursuit.start_factor(kept, 'rows'), np.float64)
  moment = kept.T @ kept / len(kept)
  assert np.allclose(factor @ factor.T, moment + 1e-4 * np.trace(moment) / 8 * np.eye(8),
                     atol=1e-4)
  z = np.asarray(jax.random.normal(jax.random.PRNGKey(0), (256, 8))) @ factor.T
  assert np.sum(z[:, 4:] ** 2) / np.sum(z ** 2) < 1e-3
  with pytest.raises(ValueError, match="accepted: sphere, rows"):
    pursuit.start_factor(kept, 'grid')
  with pytest.raises(ValueError, match="start_points 'grid'"):
    pursuit.Pursuit(ff, theta, radius=np.sqrt(8), tol=1e-9, key=jax.random.PRNGKey(0),
                    start_points='grid')
  # A search from the rows' starts puts a row off the subspace back on its sample.
  x, x_hat, theta, ff = _off_subspace(wrong=(1,))[:4]
  x_new, shares = pursuit.place(ff, theta, x_hat, [1], jax.random.PRNGKey(0), np.sqrt(8),
                                starts=16, steps=200, start_points='rows')
  assert metrics.per_sample_errors(x, x_new).max() < 0.01 and shares[0] > 0.99


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
  x, x_hat, theta, ff, p = _off_subspace()
  n, d = x.shape
  loss = float(projection.projection_loss(ff(jnp.asarray(x_hat)), jnp.asarray(theta)))
  monkeypatch.setattr(certificate, 'MAX_JACOBIAN_ENTRIES', p * n * d - 1)
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


def _off_subspace(n=12, d=8, k=4, wrong=(1, 4), seed=4):
  """Samples in a k-dim subspace of R^d, the candidates right but for `wrong`, off it."""
  kx, kv, ka = jax.random.split(jax.random.PRNGKey(seed), 3)
  x = np.zeros((n, d))
  x[:, :k] = np.asarray(jax.random.normal(kx, (n, k)))
  x = x / np.linalg.norm(x, axis=1, keepdims=True) * np.sqrt(d)
  v = features.random_weights(kv, 8 * n * d, d)
  ff = lambda z: features.rf_features(v, z, 'relu_tanh')  # noqa: E731
  theta = np.asarray(jax.random.normal(ka, (n,)) @ ff(jnp.asarray(x)))
  rng = np.random.default_rng(0)
  x_hat = x.copy()
  for j in wrong:
    x_hat[j] = 0.0
    x_hat[j, k:] = rng.standard_normal(d - k)
    x_hat[j] *= np.sqrt(d) / np.linalg.norm(x_hat[j])
  return x, x_hat, theta, ff, v.shape[0]


def _state(x_hat, loss_fn, opt):
  return optimize.init_state(jnp.asarray(x_hat, jnp.float32), opt, loss_fn, None, lambda z: z)


def test_the_pursue_step_re_places_the_dead_rows_on_schedule(monkeypatch):
  """`PursuitStep` acts from `start`, every `every` steps; it re-places the rows off the data's
  subspace, keeps the set (the loss dropped on the spot), zeroes their Adam moments only, owns
  the learning rate from there, and a resumed step goes on from its saved schedule."""
  x, x_hat, theta, ff, p = _off_subspace()
  n, d = x.shape
  monkeypatch.setattr(certificate, 'MAX_JACOBIAN_ENTRIES', p * n * d - 1)
  loss_fn = lambda z, _: projection.projection_loss(ff(z), jnp.asarray(theta))  # noqa: E731
  opt = optimize.make_optimizer('adam', 0.05, 0.9, 'cosine', 1000, 0.05)
  unit = optimize.schedule_unit('cosine', 1000, 0.05)
  search = pursuit.Pursuit(ff, theta, radius=np.sqrt(d), tol=1e-9, key=jax.random.PRNGKey(0))
  settings = sections.Pursue(every=100, start=50, lr=0.01, starts=128, steps=300, dead_ratio=0.1)
  step = pursuit.PursuitStep(search, loss_fn, None, settings, unit=unit)
  state = _state(x_hat, loss_fn, opt)
  state = state._replace(opt_state=jax.tree.map(
      lambda a: jnp.ones_like(a) if a.shape == x_hat.shape else a, state.opt_state))
  assert step(state._replace(step=jnp.asarray(49, jnp.int32))).loss == state.loss  # not due
  assert step.rounds == 0
  out = step(state._replace(step=jnp.asarray(50, jnp.int32)))
  assert step.summary() == {'pursuit_rounds': 1, 'pursuit_rounds_kept': 1,
                            'pursuit_rows_placed': 2}
  assert float(out.loss) < float(state.loss) / 3
  assert np.isclose(float(out.loss), float(loss_fn(out.x, None)), rtol=1e-4)
  moved = metrics.per_sample_errors(x, np.asarray(out.x))
  assert moved[[1, 4]].max() < 0.4 and np.allclose(np.delete(np.asarray(out.x), [1, 4], 0),
                                                    np.delete(x_hat, [1, 4], 0), atol=1e-6)
  for mu in [a for a in jax.tree.leaves(out.opt_state) if a.shape == x_hat.shape]:  # mu, nu
    assert np.all(np.asarray(mu)[[1, 4]] == 0) and np.all(np.delete(np.asarray(mu), [1, 4], 0) == 1)
  # The learning rate is the step's from here: 0.01 now (the schedule's count is 0), a cosine
  # down to 5e-4 over the next 100 steps, set after every chunk.
  lr = lambda s: float(s.opt_state.hyperparams['learning_rate']) * float(unit(0))  # noqa: E731
  assert np.isclose(lr(out), 0.01, rtol=1e-6) and step.learning_rate(50) == 0.01
  assert np.isclose(step.learning_rate(100), 0.01 * (0.05 + 0.95 / 2))
  assert step.learning_rate(150) == step.learning_rate(400) == 0.01 * pursuit.ROUND_FINAL_RATIO
  later = step(out._replace(step=jnp.asarray(149, jnp.int32)))  # next round due at 150
  assert later.loss == out.loss and step.rounds == 1
  assert np.isclose(lr(later), step.learning_rate(149), rtol=1e-6) and lr(later) < 6e-4
  # A fresh step restored from the saved state agrees.
  again = pursuit.PursuitStep(search, loss_fn, None, settings, unit=unit)
  again.load_state_dict(step.state_dict())
  assert again.summary() == step.summary() and again.state_dict() == step.state_dict()
  assert again.learning_rate(120) == step.learning_rate(120)
  assert again(out._replace(step=jnp.asarray(149, jnp.int32))).loss == out.loss
  # Given the attack's optimiser, a kept round starts it afresh: every moment and count zero
  # (Adam's bias correction restarts), the learning rate still the step's.
  fresh = pursuit.PursuitStep(search, loss_fn, None,
                              sections.Pursue(every=100, start=50, lr=0.01, starts=512, steps=300),
                              unit=unit, optimizer=opt)(
                                  state._replace(step=jnp.asarray(50, jnp.int32)))
  assert all(np.all(np.asarray(a) == 0) for a in jax.tree.leaves(fresh.opt_state)
             if a.shape == x_hat.shape or jnp.issubdtype(a.dtype, jnp.integer))
  assert np.isclose(lr(fresh), 0.01, rtol=1e-6)


def test_the_pursue_step_keeps_nothing_that_raises_the_loss(monkeypatch):
  """At the truth every row is right; a row with a small share looks dead by its gain, and
  the step re-places it; a re-placement that does not lower the loss is not kept (the state
  comes back unchanged), and a stopped run is left alone."""
  x, _, theta, ff, p = _off_subspace(wrong=())
  n, d = x.shape
  monkeypatch.setattr(certificate, 'MAX_JACOBIAN_ENTRIES', p * n * d - 1)
  loss_fn = lambda z, _: projection.projection_loss(ff(z), jnp.asarray(theta))  # noqa: E731
  search = pursuit.Pursuit(ff, theta, radius=np.sqrt(d), tol=1e-9, key=jax.random.PRNGKey(0))
  # a search too short to find anything better
  step = pursuit.PursuitStep(search, loss_fn, None,
                             sections.Pursue(every=10, start=0, lr=0.0, starts=8, steps=1))
  state = _state(x, loss_fn, optax.adam(0.01))
  out = step(state)
  assert out is state and step.summary() == {'pursuit_rounds': 1, 'pursuit_rounds_kept': 0,
                                             'pursuit_rows_placed': 0}
  assert step._pursuit.calls == 1  # it did re-place a row (the step's search: `settings`)
  stopped = state._replace(status=jnp.asarray(optimize.CONVERGED, jnp.int32),
                           step=jnp.asarray(1000, jnp.int32))
  assert step(stopped) is stopped and step.rounds == 1


@pytest.mark.slow  # a whole run (~15 s)
def test_a_run_with_pursuit_and_the_pursue_step_reports_both(tmp_path):
  """One run with escalation's pursuit trials and the pursue step (from its first chunk on)
  reports the trials and the rounds; a bad value of either is refused in one line."""
  import recon  # pylint: disable=import-outside-toplevel
  from configs import rf_synthetic  # pylint: disable=import-outside-toplevel

  def config(**fields):
    c = rf_synthetic.get_config()
    c.update_from_flattened_dict({
        'data.n': 6, 'data.d': 6, 'victim.p': 200, 'seed': 3, 'attack.max_steps': 3000,
        'attack.rescue': ('escalate', 'pursue'), 'attack.escalate.pursuit': 'auto',
        'attack.pursue.start': 0, 'attack.pursue.every': 1000, **fields})
    return c

  m = recon.run(config(), str(tmp_path / 'run')).summary['metrics']
  assert m['escalation_pursuits'] >= 0 and 'escalation_pursuits_accepted' in m
  assert 1 <= m['pursuit_rounds'] <= 1 + m['steps'] // 1000, m
  assert m['pursuit_rounds_kept'] <= m['pursuit_rounds'] and m['pursuit_rows_placed'] >= 0
  for field, value, named in (('escalate.pursuit', 'sometimes', 'pursuit'),
                              ('pursue.dead_ratio', 1.5, 'attack.pursue.dead_ratio')):
    with pytest.raises(recon.RunError, match=named):
      recon.run(config(**{f'attack.{field}': value}), str(tmp_path / 'bad'))
