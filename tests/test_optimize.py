import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

from recon.attack import optimiser as optimize


def _quadratic(x, target):
  return jnp.sum((x - target) ** 2)


def _run(loss_fn, x0, target, opt, *, tol=1e-10, max_steps=500, chunk=37, constraint=lambda x: x):
  state = optimize.init_state(x0, opt, loss_fn, target, constraint)
  chunk_fn = jax.jit(lambda s, stop: optimize.run_chunk(
      s, target, stop, loss_fn=loss_fn, optimizer=opt, constraint=constraint, tol=tol,
      max_steps=max_steps))
  return optimize.drive(state, chunk_fn, max_steps=max_steps, chunk_steps=chunk)


def test_sphere_constraint():
  x = jnp.array([[3.0, 4.0], [0.0, -2.0]])
  np.testing.assert_allclose(optimize.sphere_constraint(2.0)(x), [[1.2, 1.6], [0.0, -2.0]])
  huge = jnp.array([[3e30, 4e30]])  # the plain norm overflows in float32
  np.testing.assert_allclose(optimize.sphere_constraint(2.0)(huge), [[1.2, 1.6]], rtol=1e-6)


def test_converges_and_reports_status():
  target = jnp.array([[1.0, -2.0]])
  s = _run(_quadratic, jnp.zeros((1, 2)), target, optimize.make_optimizer('sgd', 0.1, 0.9))
  assert int(s.status) == optimize.CONVERGED
  assert float(s.loss) <= 1e-10 and 0 < int(s.step) < 500
  np.testing.assert_allclose(s.x, target, atol=1e-4)


def test_chunking_does_not_change_the_trajectory():
  target = jnp.array([[1.0, -2.0], [0.5, 0.1]])
  opt = optimize.make_optimizer('adam', 0.01, 0.9)
  a = _run(_quadratic, jnp.zeros((2, 2)), target, opt, tol=0.0, max_steps=120, chunk=7)
  b = _run(_quadratic, jnp.zeros((2, 2)), target, opt, tol=0.0, max_steps=120, chunk=120)
  assert int(a.step) == int(b.step) == 120 and int(a.status) == optimize.MAX_STEPS
  np.testing.assert_array_equal(a.x, b.x)


def test_nonfinite_loss_stops_and_keeps_last_finite_state():
  def loss_fn(x, _):
    return jnp.where(x[0, 0] > 0.5, jnp.nan, jnp.sum((x - 1.0) ** 2))

  s = _run(loss_fn, jnp.zeros((1, 1)), None, optimize.make_optimizer('sgd', 0.1, 0.0))
  # The candidates are never moved by a non-finite gradient: they stay at the (finite) point
  # where the loss first failed, and the reported loss is the last finite one.
  assert int(s.status) == optimize.NONFINITE
  assert 0.5 < float(s.x[0, 0]) < 1.0 and bool(jnp.all(jnp.isfinite(s.x)))
  assert np.isfinite(float(s.loss)) and float(s.loss) < 1.0


def test_batched_drive_keeps_stopped_runs_frozen():
  targets = jnp.array([[[1.0]], [[1e3]]])
  opt = optimize.make_optimizer('sgd', 0.1, 0.0)
  init = jax.vmap(lambda t: optimize.init_state(jnp.zeros((1, 1)), opt, _quadratic, t,
                                                lambda x: x))(targets)
  chunk = jax.jit(jax.vmap(lambda s, t, stop: optimize.run_chunk(
      s, t, stop, loss_fn=_quadratic, optimizer=opt, constraint=lambda x: x, tol=1e-6,
      max_steps=400), in_axes=(0, 0, None)))
  s = optimize.drive(init, lambda s, stop: chunk(s, targets, stop), max_steps=400, chunk_steps=25)
  assert list(np.asarray(s.status)) == [optimize.CONVERGED, optimize.CONVERGED]
  assert int(s.step[0]) < int(s.step[1])


def test_a_chunk_that_never_advances_raises_instead_of_looping():
  opt = optimize.make_optimizer('sgd', 0.1, 0.0)
  init = optimize.init_state(jnp.zeros((1, 1)), opt, _quadratic, jnp.ones((1, 1)), lambda x: x)
  calls = []

  def stuck(state, stop):
    calls.append(int(stop))
    return state

  with pytest.raises(RuntimeError, match='never advances the step'):
    optimize.drive(init, stuck, max_steps=100, chunk_steps=10)
  assert calls == [10]


def test_unknown_optimizer():
  with pytest.raises(ValueError, match="optimizer: unknown name 'lbfgsx'; accepted: sgd, adam, lbfgs"):
    optimize.make_optimizer('lbfgsx', 0.1)


def test_lbfgs_drives_an_ill_conditioned_quadratic_to_zero():
  """optax.lbfgs + zoom line search through run_chunk (value, grad, value_fn passed)."""
  before = jax.config.jax_enable_x64
  jax.config.update('jax_enable_x64', True)
  try:
    scales = jnp.asarray([1.0, 10.0, 100.0, 1000.0], jnp.float64)
    loss_fn = lambda x, t: jnp.sum(scales * (x - t) ** 2)  # noqa: E731
    target = jnp.asarray([[1.0, -2.0, 0.5, 3.0]], jnp.float64)
    opt = optimize.make_optimizer('lbfgs', 1.0)
    assert optimize.needs_value_fn(opt)
    assert not optimize.needs_value_fn(optimize.make_optimizer('adam', 0.1))
    s = _run(loss_fn, jnp.zeros((1, 4), jnp.float64), target, opt, tol=1e-24, max_steps=100)
    assert int(s.status) == optimize.CONVERGED
    assert float(s.loss) <= 1e-24
    assert int(s.step) < 60
  finally:
    jax.config.update('jax_enable_x64', before)


@pytest.mark.slow  # ~12 CPU-s
def test_lbfgs_runs_the_random_features_attack_end_to_end(tmp_path):
  # L-BFGS with the sphere projection after each step (its curvature pairs see the
  # projected iterates) still drives the projection loss down on the default problem.
  from configs import rf_synthetic  # pylint: disable=import-outside-toplevel
  from recon import pipelines  # pylint: disable=import-outside-toplevel
  cfg = rf_synthetic.get_config()
  cfg.update_from_flattened_dict({'data.n': 4, 'data.d': 5, 'victim.p': 200, 'attack.optimizer': 'lbfgs', 'attack.lr': 1.0, 'attack.schedule': 'constant', 'attack.max_steps': 300, 'run.chunk_steps': 300})
  m = pipelines.run(cfg, str(tmp_path / 'lbfgs'))['metrics']
  assert m['final_loss'] < 1e-6 and m['recon_error'] < 0.01, m  # 1e-9, 8e-5 measured; 5 steps: 0.06


@pytest.mark.parametrize('schedule', ['cosine', 'constant'])
def test_set_learning_rate_makes_the_next_step_that_long_and_the_schedule_decays_on(schedule):
  """After `set_learning_rate(state, 0.01, unit)` an sgd step moves by 0.01 x the gradient,
  wherever the schedule was, and later steps keep decaying by the schedule's own ratio."""
  opt = optimize.make_optimizer('sgd', 0.05, 0.0, schedule, 1000, 0.05)
  unit = optimize.schedule_unit(schedule, 1000, 0.05)
  x, g = jnp.zeros((3, 2)), jnp.ones((3, 2))
  state = opt.init(x)
  for _ in range(400):
    _, state = opt.update(g, state, x)
  state = optimize.set_learning_rate(state, 0.01, unit)
  u, state = opt.update(g, state, x)
  np.testing.assert_allclose(np.asarray(u), -0.01, rtol=1e-5)
  for _ in range(199):
    _, state = opt.update(g, state, x)
  u, _ = opt.update(g, state, x)
  np.testing.assert_allclose(np.asarray(u), -0.01 * float(unit(600)) / float(unit(400)), rtol=1e-5)
  lbfgs = optimize.make_optimizer('lbfgs', 1.0).init(x)
  assert optimize.set_learning_rate(lbfgs, 0.01, unit) is lbfgs  # no injected lr: left as it is


def test_a_float64_learning_rate_does_not_promote_float32_candidates():
  """x64 on (an earlier float64 run in the process) and float64 numbers in the step (a numpy
  radius, data the loss closes over): the chunk keeps the candidates' and the optimiser state's
  dtypes (the while loop's carry; tests/test_swap.py failed so after another test's x64)."""
  import jax  # pylint: disable=import-outside-toplevel
  import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
  from recon.attack import optimiser as optimize  # pylint: disable=import-outside-toplevel
  before = jax.config.jax_enable_x64
  jax.config.update('jax_enable_x64', True)
  try:
    x = jnp.ones((3, 4), jnp.float32) / 2.0
    opt = optimize.make_optimizer('adam', 0.01, 0.9, 'cosine', 1000, 0.05)
    target = np.full((3, 4), 0.1)  # a float64 constant: with x64 on, the gradient is float64
    loss_fn = lambda z, _: jnp.sum((z - target) ** 2)  # noqa: E731
    state = optimize.init_state(x, opt, loss_fn, None, lambda z: z)
    state = state._replace(opt_state=optimize.set_learning_rate(  # as swap.SwapStep does
        opt.init(x), 0.005, optimize.schedule_unit('cosine', 1000, 0.05)))
    out = optimize.run_chunk(state, None, jnp.asarray(5, jnp.int32), loss_fn=loss_fn,
                             optimizer=opt, constraint=optimize.sphere_constraint(np.sqrt(4.0)),
                             tol=0.0, max_steps=100)
  finally:
    jax.config.update('jax_enable_x64', before)
  assert out.x.dtype == jnp.float32 and int(out.step) == 5
  assert jax.tree.map(lambda a: a.dtype, out.opt_state) == jax.tree.map(lambda a: a.dtype,
                                                                       state.opt_state)


def test_progress_logs_on_time_and_last_but_never_one_step_twice():
  logged = []
  log = optimize.ProgressLogger(lambda s: logged.append(int(s.step)), every_seconds=1e9)
  state = lambda k: optimize.ReconState(None, None, jnp.asarray(k), None, None)
  log(state(200))  # the first call logs
  log(state(400))  # too soon
  log(state(400), force=True)  # the last state: logged
  log(state(400), force=True)  # the same step again: not twice
  log(state(600), force=True)
  assert logged == [200, 400, 600]
