"""Escalation on a plateau: the weakest candidate by leave-one-out loss is replaced."""
import dataclasses

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from configs import base
from recon import metrics
from recon.attack import driver
from recon.attack import optimiser as optimize
from recon.attack.rescue import escalate
from recon.config import sections
from recon.models import features, random_features
from recon.objectives import projection

N, D, P = 5, 5, 250


def _problem(seed=0):
  kx, kv, ky = jax.random.split(jax.random.PRNGKey(seed), 3)
  x = jax.random.normal(kx, (N, D))
  x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * jnp.sqrt(D)
  v = features.random_weights(kv, P, D)
  theta = random_features.min_norm_solution(features.rf_features(v, x, 'relu'),
                                            jax.random.normal(ky, (N,)))
  loss_fn = lambda z, prob: projection.projection_loss(  # noqa: E731
      features.rf_features(prob['v'], z, 'relu'), prob['theta'])
  return x, {'v': v, 'theta': theta}, loss_fn


@pytest.mark.slow
def test_leave_one_out_finds_the_candidate_that_explains_nothing():
  x, prob, loss_fn = _problem()
  xh = x.at[2].set(x[0] * 1.0)  # candidate 2 duplicates candidate 0: it adds nothing
  loo = np.asarray(escalate.leave_one_out_losses(xh, loss_fn, prob))
  assert int(np.argmin(loo[[1, 2, 3, 4]])) + 1 == 2  # removing the copy costs nothing
  np.testing.assert_allclose(loo[2], float(loss_fn(xh, prob)), rtol=1e-3)


def _settings(kw, **fixed):
  """(the Escalate settings, the Escalator's keywords) from a test's keywords: the section's
  fields go to the settings, the rest (max_steps, ...) to the Escalator, with tol 1e-9."""
  names = {f.name for f in dataclasses.fields(sections.Escalate)}
  settings = sections.Escalate(**fixed, **{k: v for k, v in kw.items() if k in names})
  return settings, {'tol': 1e-9, **{k: v for k, v in kw.items() if k not in names}}


def _escalator(prob, loss_fn, **kw):
  cfg = base.get_config()
  cfg.attack.tol, cfg.attack.max_steps = 1e-9, 100000
  opt = optimize.make_optimizer('adam', 0.01, 0.9)
  constraint = optimize.sphere_constraint(float(np.sqrt(D)))
  chunk = jax.jit(driver.chunk_fn(cfg.attack, loss_fn, opt, constraint))
  settings, kw = _settings(kw, every=100, window=300, trial_steps=600)
  esc = escalate.Escalator(jax.random.PRNGKey(1), loss_fn, prob, constraint, opt, settings, **kw)
  esc.chunk = lambda s, stop: chunk(s, prob, stop)
  return esc, opt, constraint


@pytest.mark.slow
def test_a_mirrored_candidate_on_a_plateau_is_repaired_and_the_state_round_trips():
  x, prob, loss_fn = _problem()
  stuck = x.at[3].set(-x[3])  # relu: the mirror image is a poor local minimum
  esc, opt, constraint = _escalator(prob, loss_fn)
  state = optimize.init_state(stuck, opt, loss_fn, prob, constraint)
  loss0 = float(state.loss)
  assert loss0 > 1e-6
  for step in (100, 200, 300):  # a flat loss over one window: a plateau
    state = state._replace(step=jnp.asarray(step, state.step.dtype))
    out = esc(state)
    assert out is state  # no plateau before a whole window has passed
  state = state._replace(step=jnp.asarray(400, state.step.dtype))
  out = esc(state)
  assert esc.tried_per_run == [1] and esc.accepted_per_run == [1]
  assert float(out.loss) < 0.5 * loss0 and int(out.step) >= 400
  assert metrics.per_sample_errors(np.asarray(x), np.asarray(out.x)).max() < 0.1
  saved = esc.state_dict()
  again, _, _ = _escalator(prob, loss_fn)
  again.load_state_dict(saved)
  assert again.state_dict() == saved


def test_no_escalation_below_tol_or_while_the_loss_falls():
  x, prob, loss_fn = _problem()
  esc, opt, constraint = _escalator(prob, loss_fn)
  state = optimize.init_state(x, opt, loss_fn, prob, constraint)  # at the truth: loss ~ 0
  for step in range(100, 1000, 100):
    state = state._replace(step=jnp.asarray(step, state.step.dtype))
    assert esc(state) is state
  assert esc.tried_per_run == [0]


@pytest.mark.slow
def test_escalation_auto_runs_end_to_end_and_reports(tmp_path):
  from configs import rf_synthetic
  from recon import pipelines
  c = rf_synthetic.get_config()
  c.update_from_flattened_dict({'data.n': 4, 'data.d': 4, 'victim.p': 160, 'attack.max_steps': 3000, 'attack.escalate.every': 200, 'attack.escalate.window': 400, 'run.log_every_seconds': 1e9, 'run.checkpoint_every_seconds': 0.0})
  m = pipelines.run(c, str(tmp_path / 'a'))['metrics']
  assert 'escalations_tried' in m and m['escalations_accepted'] <= m['escalations_tried']
  c.attack.rescue = ('polish',)
  assert 'escalations_tried' not in pipelines.run(c, str(tmp_path / 'b'))['metrics']


def test_reset_rows_zeroes_only_the_chosen_rows_of_x_shaped_leaves():
  x = jnp.ones((3, 2))
  opt = optimize.make_optimizer('adam', 0.01, 0.9, schedule='cosine', decay_steps=100)
  state = opt.init(x)
  state = jax.tree.map(lambda a: a + 1 if a.shape == x.shape else a, state)
  rows = jnp.asarray([False, True, False])
  out = optimize.reset_rows(state, x, rows)
  for before, after in zip(jax.tree.leaves(state), jax.tree.leaves(out)):
    if before.shape == x.shape:
      np.testing.assert_array_equal(np.asarray(after)[1], 0.0)
      np.testing.assert_array_equal(np.asarray(after)[[0, 2]], np.asarray(before)[[0, 2]])
    else:  # counts, schedule state: kept
      np.testing.assert_array_equal(np.asarray(after), np.asarray(before))


@pytest.mark.slow
def test_a_batch_escalates_each_run_on_its_own():
  """Run 0 is stuck (a mirrored candidate), run 1 sits at the truth: the batched escalator
  repairs run 0 and leaves run 1 exactly as its own chunk leaves it."""
  x, prob, loss_fn = _problem()
  cfg = base.get_config()
  cfg.attack.tol, cfg.attack.max_steps = 1e-9, 100000
  opt = optimize.make_optimizer('adam', 0.01, 0.9)
  constraint = optimize.sphere_constraint(float(np.sqrt(D)))
  chunk = jax.jit(jax.vmap(driver.chunk_fn(cfg.attack, loss_fn, opt, constraint),
                           in_axes=(0, 0, None)))
  probs = jax.tree.map(lambda a: jnp.stack([a, a]), prob)
  keys = jnp.stack([jax.random.PRNGKey(1), jax.random.PRNGKey(2)])
  esc = escalate.Escalator(keys, loss_fn, probs, constraint, opt,
                           sections.Escalate(every=100, window=300, trial_steps=600), tol=1e-9,
                           batched=True)
  esc.chunk = lambda s, stop: chunk(s, probs, stop)
  x0 = jnp.stack([x.at[3].set(-x[3]), x * (1 + 1e-3)])
  state = jax.vmap(lambda z: optimize.init_state(z, opt, loss_fn, prob, constraint))(x0)
  # Run 1 is held just above tol so that it is checked but never flagged (its loss falls).
  losses = [np.asarray(state.loss)]
  for step in (100, 200, 300):
    state = state._replace(step=jnp.full((2,), step, state.step.dtype))
    assert esc(state) is state
  state = state._replace(step=jnp.full((2,), 400, state.step.dtype),
                         loss=state.loss.at[1].set(losses[0][1] * 0.1))
  out = esc(state)
  assert esc.tried_per_run == [1, 0] and esc.accepted_per_run == [1, 0]
  assert float(out.loss[0]) < 0.5 * float(state.loss[0])
  assert metrics.per_sample_errors(np.asarray(x), np.asarray(out.x[0])).max() < 0.1
  alone = chunk(state, probs, jnp.asarray(int(out.step[1]), jnp.int32))  # run 1's own progress
  np.testing.assert_allclose(np.asarray(out.x[1]), np.asarray(alone.x[1]), rtol=1e-6)


def test_reset_state_zeroes_counts_and_moments_but_keeps_injected_hyperparameters():
  x = jnp.ones((2, 3, 2))  # a batch of two runs
  opt = optax.inject_hyperparams(optax.adam)(learning_rate=0.5)
  state = jax.vmap(opt.init)(x)
  state = jax.tree.map(lambda a: a + 1, state)
  out = optimize.reset_state(state, x, jnp.asarray([True, False]))
  for before, after in zip(jax.tree.leaves(state), jax.tree.leaves(out)):
    if before.shape == x.shape or jnp.issubdtype(before.dtype, jnp.integer):
      np.testing.assert_array_equal(np.asarray(after)[0], 0)
    else:  # the learning rate
      np.testing.assert_array_equal(np.asarray(after)[0], np.asarray(before)[0])
    np.testing.assert_array_equal(np.asarray(after)[1], np.asarray(before)[1])


@pytest.mark.slow
def test_after_rejected_replacements_a_new_candidate_set_is_tried_and_kept_if_better():
  x, prob, loss_fn = _problem()
  esc, opt, constraint = _escalator(prob, loss_fn, restart_after=2, restart_steps=600)
  collapsed = jnp.tile(x[:1], (N, 1))  # every candidate on sample 0: one replacement won't do
  state = optimize.init_state(collapsed, opt, loss_fn, prob, constraint)
  esc.rejected_in_row = [2]  # as after two rejected replacements
  for step in (100, 200, 300):
    state = state._replace(step=jnp.asarray(step, state.step.dtype))
    assert esc(state) is state
  state = state._replace(step=jnp.asarray(400, state.step.dtype))
  out = esc(state)
  assert esc.restarts_per_run == [1] and esc.restarts_kept_per_run == [1]
  assert esc.tried_per_run == [0] and esc.rejected_in_row == [0]
  assert float(out.loss) < float(state.loss) and int(out.step) >= 400
  summary = esc.summary()
  assert summary['escalation_restarts'] == 1 and summary['escalation_restarts_kept'] == 1


def test_a_restart_trial_reports_progress_and_its_chunks_are_one_descent(monkeypatch):
  """The restart's long trial runs TRIAL_CHUNK steps per call with a progress line between;
  chunked it ends where one call does."""
  x, prob, loss_fn = _problem()
  collapsed = jnp.tile(x[:1], (N, 1))

  def restart(chunk_steps):
    monkeypatch.setattr(escalate, 'TRIAL_CHUNK', chunk_steps)
    esc, opt, constraint = _escalator(prob, loss_fn, restart_after=1, restart_steps=300)
    state = optimize.init_state(collapsed, opt, loss_fn, prob, constraint)
    esc.rejected_in_row = [1]
    for step in (100, 200, 300, 400):
      state = state._replace(step=jnp.asarray(step, state.step.dtype))
      out = esc(state)
    assert esc.restarts_per_run == [1]
    return out

  whole = restart(10 ** 9)
  lines = []
  monkeypatch.setattr(escalate, 'TRIAL_LOG_SECONDS', 0.0)
  monkeypatch.setattr(escalate.logging, 'info', lambda msg, *a: lines.append(msg % a))
  chunked = restart(70)
  assert int(chunked.step) == int(whole.step)
  np.testing.assert_allclose(np.asarray(chunked.x), np.asarray(whole.x), rtol=1e-5, atol=1e-6)
  trial = [s for s in lines if s.startswith('escalation: a new candidate set on trial: step ')]
  assert [s.split('step ')[1].split(' of')[0] for s in trial] == ['470', '540', '610', '680'], lines


def test_a_loss_falling_too_slowly_for_the_budget_counts_as_a_plateau():
  """A loss that falls 20% per window is not flat, but at that rate it would need ~80
  windows to reach tol: with the budget known it is flagged, without it it is not."""
  x, prob, loss_fn = _problem()
  running = np.asarray([optimize.RUNNING])
  for max_steps, expected in ((2000, [0]), (None, [])):
    esc, _, _ = _escalator(prob, loss_fn, max_steps=max_steps)
    flagged = []
    for i, step in enumerate((100, 200, 300, 400)):
      flagged = esc._flagged(np.asarray([step]), running, np.asarray([1e-3 * 0.8 ** (i / 3)]))
    assert flagged == expected
  # Falling fast enough (10x per window) is never flagged.
  esc, _, _ = _escalator(prob, loss_fn, max_steps=2000)
  for i, step in enumerate((100, 200, 300, 400)):
    flagged = esc._flagged(np.asarray([step]), running, np.asarray([1e-3 * 0.1 ** (i / 3)]))
  assert flagged == []


def test_tol_zero_never_counts_as_too_slow():
  """tol = 0 (run to max_steps): only a flat loss is a plateau; no division by tol."""
  x, prob, loss_fn = _problem()
  esc, opt, constraint = _escalator(prob, loss_fn, max_steps=2000)
  esc._tol = 0.0
  running = np.asarray([optimize.RUNNING])
  flagged = []
  for i, step in enumerate((100, 200, 300, 400)):
    flagged = esc._flagged(np.asarray([step]), running, np.asarray([1e-3 * 0.8 ** (i / 3)]))
  assert flagged == []


def test_the_candidate_replaced_is_the_one_whose_removal_costs_least():
  """Sample 2 has no candidate; candidate 2 is a random point that explains almost nothing.
  Every trial accepted (accept_ratio huge) and a chunk that does nothing: the state comes
  back with exactly row 2 changed (replacing any other, e.g. the strongest, fails)."""
  x, prob, loss_fn = _problem()
  z = jax.random.normal(jax.random.PRNGKey(7), (D,))
  xh = x.at[2].set(z / jnp.linalg.norm(z) * jnp.sqrt(D))
  opt = optimize.make_optimizer('adam', 0.01, 0.9)
  constraint = optimize.sphere_constraint(float(np.sqrt(D)))
  esc = escalate.Escalator(jax.random.PRNGKey(1), loss_fn, prob, constraint, opt,
                           sections.Escalate(every=100, window=100, accept_ratio=1e9,
                                             restart_after=0), tol=1e-9)
  esc.chunk = lambda s, stop: s  # the trial changes nothing: only the replacement shows
  state = optimize.init_state(xh, opt, loss_fn, prob, constraint)
  for step in (100, 200):
    state = state._replace(step=jnp.asarray(step, state.step.dtype))
    out = esc(state)
  assert esc.tried_per_run == [1] and esc.accepted_per_run == [1]
  changed = np.flatnonzero(np.abs(np.asarray(out.x) - np.asarray(state.x)).max(axis=1) > 1e-6)
  assert changed.tolist() == [2]


def _escalator_with_trials_at(factor, **kw):
  """An Escalator whose trial chunk only sets the loss to `factor` times the plateau's loss
  (every=window=100), and the plateaued state (candidate 2 a random point)."""
  x, prob, loss_fn = _problem()
  z = jax.random.normal(jax.random.PRNGKey(7), (D,))
  xh = x.at[2].set(z / jnp.linalg.norm(z) * jnp.sqrt(D))
  opt = optimize.make_optimizer('adam', 0.01, 0.9)
  constraint = optimize.sphere_constraint(float(np.sqrt(D)))
  settings, kw = _settings(kw, every=100, window=100)
  esc = escalate.Escalator(jax.random.PRNGKey(1), loss_fn, prob, constraint, opt, settings, **kw)
  state = optimize.init_state(xh, opt, loss_fn, prob, constraint)
  esc.chunk = lambda s, stop: s._replace(loss=jnp.asarray(factor, s.loss.dtype) * state.loss,
                                         step=jnp.maximum(s.step, stop).astype(s.step.dtype))
  return esc, state


def _at(state, step):
  return state._replace(step=jnp.asarray(step, state.step.dtype))


@pytest.mark.parametrize('factor,accepted', [(0.8, 0), (0.4, 1)])
def test_a_replacement_is_kept_only_below_accept_ratio_times_the_loss(factor, accepted):
  esc, state = _escalator_with_trials_at(factor, accept_ratio=0.5, restart_after=0)
  for step in (100, 200):
    out = esc(_at(state, step))
  assert esc.tried_per_run == [1] and esc.accepted_per_run == [accepted]
  assert bool(np.any(np.asarray(out.x) != np.asarray(state.x))) == bool(accepted)


@pytest.mark.parametrize('factor,kept', [(2.0, 0), (0.9, 1)])
def test_a_new_candidate_set_is_kept_only_if_its_loss_is_lower(factor, kept):
  """One rejected replacement (restart_after=1), then the next plateau tries a fresh set:
  discarded when its loss is higher, kept when lower."""
  esc, state = _escalator_with_trials_at(factor, accept_ratio=0.5, restart_after=1)
  for step in (100, 200, 300):
    out = esc(_at(state, step))
  assert esc.tried_per_run == [1] and esc.accepted_per_run == [0]
  assert esc.summary()['escalation_restarts'] == 1
  assert esc.summary()['escalation_restarts_kept'] == kept
  assert bool(np.any(np.asarray(out.x) != np.asarray(state.x))) == bool(kept)


def test_weak_rows_are_those_far_below_the_typical_gain_capped_and_the_weakest_always():
  loss = jnp.asarray([1.0, 1.0])
  gains = jnp.asarray([[5.0, 0.1, 4.0, 0.2, 3.0, 6.0, 0.0, 4.5],   # three far below the median
                       [5.0, 4.0, 3.0, 6.0, 4.5, 5.5, 3.5, 4.2]])  # none: only the weakest
  weak = np.asarray(escalate.weak_rows(loss[:, None] + gains, loss, ratio=0.25, max_weak=3))
  assert np.flatnonzero(weak[0]).tolist() == [1, 3, 6]
  assert np.flatnonzero(weak[1]).tolist() == [2]
  capped = np.asarray(escalate.weak_rows(loss[:, None] + gains, loss, ratio=0.25, max_weak=2))
  assert np.flatnonzero(capped[0]).tolist() == [1, 6]  # the two smallest gains


K_BAD = (2, 5, 9)


def _planted_k(n=12, d=32, p=8000, seed=0):
  """n samples with balanced shares of theta (|a_i| ||phi_i|| equal), tanh features, and the
  candidates right except K_BAD, which sit at random points (they explain nothing)."""
  kx, kv, ky, kz = jax.random.split(jax.random.PRNGKey(seed), 4)
  x = jax.random.normal(kx, (n, d))
  x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * jnp.sqrt(d)
  v = features.random_weights(kv, p, d)
  phi = features.rf_features(v, x, 'tanh')
  theta = (jnp.sign(jax.random.normal(ky, (n,))) / jnp.linalg.norm(phi, axis=1)) @ phi
  loss_fn = lambda z, prob: projection.projection_loss(  # noqa: E731
      features.rf_features(prob['v'], z, 'tanh'), prob['theta'])
  z = jax.random.normal(kz, (len(K_BAD), d))
  xh = x.at[jnp.asarray(K_BAD)].set(z / jnp.linalg.norm(z, axis=1, keepdims=True) * jnp.sqrt(d))
  return x, xh, {'v': v, 'theta': theta}, loss_fn


@pytest.mark.slow  # ~30 CPU-s (p = 8000: the proposal pass evaluates 3 x 64 candidate sets)
def test_all_corrupted_candidates_are_flagged_and_replaced_in_one_round():
  """k = 3 corrupted rows of 12: the one-pass leave-one-out flags exactly those three (none
  of the right ones), and one escalation round replaces all three together."""
  x, xh, prob, loss_fn = _planted_k()
  loss = loss_fn(xh, prob)
  loo = escalate.leave_one_out_losses(xh, loss_fn, prob, batch_size=5)  # batches: 5, 5, 2
  one_by_one = [loss_fn(xh.at[j].set(xh[(j + 1) % len(xh)]), prob) for j in range(len(xh))]
  np.testing.assert_allclose(np.asarray(loo), np.asarray(one_by_one), rtol=1e-5)
  weak = np.asarray(escalate.weak_rows(loo, loss, ratio=0.25, max_weak=3))
  assert np.flatnonzero(weak).tolist() == list(K_BAD)
  d = xh.shape[1]
  opt = optimize.make_optimizer('adam', 0.01, 0.9)
  constraint = optimize.sphere_constraint(float(np.sqrt(d)))
  esc = escalate.Escalator(jax.random.PRNGKey(1), loss_fn, prob, constraint, opt,
                           sections.Escalate(every=100, window=100, accept_ratio=1e9,
                                             restart_after=0), tol=1e-9)
  esc.chunk = lambda s, stop: s  # the trial changes nothing: only the replacements show
  state = optimize.init_state(xh, opt, loss_fn, prob, constraint)
  for step in (100, 200):
    out = esc(state._replace(step=jnp.asarray(step, state.step.dtype)))
  assert esc.tried_per_run == [1] and esc.accepted_per_run == [1]
  changed = np.flatnonzero(np.abs(np.asarray(out.x) - np.asarray(xh)).max(axis=1) > 1e-6)
  assert changed.tolist() == list(K_BAD)
  assert float(out.loss) < float(loss)


def test_one_run_shares_its_problem_and_never_copies_it_with_a_run_axis():
  # At a dense feature map's size a stacked copy of the problem (V: p x d) doubled the attack's
  # memory; one run's vmaps take the caller's arrays as they are (in_axes None).
  _, prob, loss_fn = _problem()
  esc = escalate.Escalator(jax.random.PRNGKey(1), loss_fn, prob,
                           optimize.sphere_constraint(float(np.sqrt(D))),
                           optimize.make_optimizer('adam', 0.01, 0.9), sections.Escalate(),
                           tol=1e-9)
  assert all(a is b for a, b in zip(jax.tree.leaves(esc._problem), jax.tree.leaves(prob)))
  assert len(esc.tried_per_run) == 1


@pytest.mark.parametrize('m, d, p', [(20, 40, 2000), pytest.param(100, 16, 6400, marks=pytest.mark.slow)])
def test_removal_losses_give_the_weak_rows_of_the_duplicate_row_losses(m, d, p):
  # A plateau: every row near its sample, one row far (5), one mirrored (7). The gains
  # L_{-j} - L from one Cholesky against the m duplicate-row losses (float64): within 2%, and
  # in float32 the same weak rows as the duplicate-row losses in float64.
  act = 'relu_tanh'
  with jax.enable_x64(True):
    v = features.random_weights(jax.random.PRNGKey(0), p, d, jnp.float64)
    sphere = optimize.sphere_constraint(float(np.sqrt(d)))
    x_true = sphere(jax.random.normal(jax.random.PRNGKey(1), (m, d), jnp.float64))
    theta = features.rf_features(v, x_true, act).T @ jax.random.normal(
        jax.random.PRNGKey(2), (m,), jnp.float64)
    x = sphere(x_true + 0.003 * jax.random.normal(jax.random.PRNGKey(3), (m, d), jnp.float64))
    x = x.at[5].set(sphere(jax.random.normal(jax.random.PRNGKey(9), (1, d), jnp.float64))[0])
    x = x.at[7].set(-x[7])
    weak = {}
    for dtype in (jnp.float64, jnp.float32):
      vv, th, xx = v.astype(dtype), theta.astype(dtype), x.astype(dtype)
      loss = lambda xs, _: projection.projection_loss(  # noqa: E731
          features.rf_features(vv, xs, act), th)
      base_loss = float(loss(xx, None))
      duplicate = np.asarray(jax.jit(lambda z: escalate.leave_one_out_losses(z, loss, None))(xx))
      removal = np.asarray(jax.jit(lambda z: projection.removal_losses(
          features.rf_features(vv, z, act), th))(xx))
      if dtype == jnp.float64:
        np.testing.assert_allclose(removal - base_loss, duplicate - base_loss, rtol=0.02)
        weak['truth'] = np.asarray(escalate.weak_rows(
            jnp.asarray(duplicate), jnp.asarray(base_loss), ratio=0.25, max_weak=m // 4))
      weak[dtype] = np.asarray(escalate.weak_rows(
          jnp.asarray(removal), jnp.asarray(base_loss), ratio=0.25, max_weak=m // 4))
    assert weak['truth'][5] and weak['truth'][7]
    np.testing.assert_array_equal(weak[jnp.float32], weak['truth'])
    np.testing.assert_array_equal(weak[jnp.float64], weak['truth'])


def test_a_run_gives_up_after_plateaus_no_escalation_lowered():
  """give_up_after 2: a rejected replacement, then a discarded new set, and the run stops as
  'stalled' at its loss; with the default 0 it runs on."""
  esc, state = _escalator_with_trials_at(2.0, accept_ratio=0.5, restart_after=1, give_up_after=2)
  for step in (100, 200):
    out = esc(_at(state, step))
    assert int(out.status) == optimize.RUNNING
  assert esc.failed_in_row == [1]
  out = esc(_at(state, 300))
  assert esc.failed_in_row == [2] and int(out.status) == optimize.STALLED
  assert optimize.STATUS_NAMES[int(out.status)] == 'stalled'
  assert float(out.loss) == float(state.loss)  # the loss it had, not a rejected trial's
  assert esc.state_dict()['failed_in_row'] == 2
  never, state = _escalator_with_trials_at(2.0, accept_ratio=0.5, restart_after=1)
  for step in (100, 200, 300, 400, 500):
    out = never(_at(state, step))
  assert never.failed_in_row == [4] and int(out.status) == optimize.RUNNING


def test_an_escalation_that_lowers_the_loss_resets_the_count():
  esc, state = _escalator_with_trials_at(0.4, accept_ratio=0.5, restart_after=0, give_up_after=1)
  for step in (100, 200, 300, 400):
    state = esc(_at(state, step))
    assert int(state.status) == optimize.RUNNING
  assert esc.accepted_per_run[0] >= 1 and esc.failed_in_row == [0]
