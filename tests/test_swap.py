"""Row swaps (recon/attack/rescue/swap.py): the deadest row re-placed by residual pursuit, kept when the loss
after a short descent is lower, undone otherwise; its schedule, patience and saved state."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon import metrics
from recon.attack import optimiser as optimize
from recon.attack.rescue import pursuit, swap
from recon.config import sections
from recon.objectives import projection
from tests.test_pursuit import _off_subspace


def _swapper(theta, ff, d, *, starts, search_steps, steps, lr=0.003, patience=2, start=0):
  loss_fn = lambda z, _: projection.projection_loss(ff(z), jnp.asarray(theta))  # noqa: E731
  opt = optimize.make_optimizer('adam', 0.01, 0.9, 'cosine', 1000, 0.05)
  unit = optimize.schedule_unit('cosine', 1000, 0.05)
  search = pursuit.Pursuit(ff, theta, radius=np.sqrt(d), tol=1e-9, key=jax.random.PRNGKey(0))
  step = swap.SwapStep(search, loss_fn, None, opt,
                       sections.Swap(start=start, steps=steps, lr=lr, patience=patience,
                                     starts=starts, search_steps=search_steps,
                                     start_points='sphere'), unit=unit)
  step.chunk = jax.jit(lambda s, stop: optimize.run_chunk(
      s, None, stop, loss_fn=loss_fn, optimizer=opt,
      constraint=optimize.sphere_constraint(np.sqrt(d)), tol=1e-12, max_steps=10_000))
  return step, loss_fn, opt


def _state(x_hat, loss_fn, opt):
  return optimize.init_state(jnp.asarray(x_hat, jnp.float32), opt, loss_fn, None, lambda z: z)


def test_the_learning_rate_of_a_swap_is_a_cosine():
  assert swap.swap_learning_rate(0.003, 0, 800) == pytest.approx(0.003)
  assert swap.swap_learning_rate(0.003, 400, 800) == pytest.approx(0.003 * (0.05 + 0.95 / 2))
  r = 0.003 * pursuit.ROUND_FINAL_RATIO
  assert swap.swap_learning_rate(0.003, 800, 800) == pytest.approx(r)
  assert swap.swap_learning_rate(0.003, 5000, 800) == pytest.approx(r)


def test_a_swap_puts_the_row_off_the_data_back_and_is_kept():
  """The row off the data's subspace explains ~none of theta (the smallest gain): the swap
  re-places it on its sample, the descent runs `steps` steps, the loss drops, it is kept."""
  x, x_hat, theta, ff = _off_subspace(wrong=(1,))[:4]
  d = x.shape[1]
  step, loss_fn, opt = _swapper(theta, ff, d, starts=128, search_steps=300, steps=200)
  state = _state(x_hat, loss_fn, opt)
  out = step(state)
  assert step.summary() == {'swaps': 1, 'swaps_kept': 1} and step.tried == []
  assert int(out.step) == 200
  assert metrics.per_sample_errors(x, np.asarray(out.x)).max() < 0.05
  assert float(loss_fn(out.x, None)) < float(state.loss) / 100


def test_a_swap_that_raises_the_loss_is_undone_and_patience_ends_the_swaps():
  """At the truth every row is right: a search too short to find anything re-places the
  deadest row somewhere worse, one descent step cannot repair it, and the swap is undone (the
  candidates and the optimiser's state as they were, the step counted). Two refusals in a row
  end the swaps; a restored step agrees; steps before `start` and stopped runs are left alone."""
  x, _, theta, ff = _off_subspace(wrong=())[:4]
  d = x.shape[1]
  step, loss_fn, opt = _swapper(theta, ff, d, starts=8, search_steps=1, steps=1,
                                   lr=1e-6, patience=2, start=10)
  state = _state(x, loss_fn, opt)._replace(step=jnp.asarray(10, jnp.int32))
  assert step(state._replace(step=jnp.asarray(9, jnp.int32))).step == 9  # not yet
  out = step(state)
  assert int(out.step) == 11 and out.loss == state.loss
  assert np.array_equal(np.asarray(out.x), np.asarray(state.x))
  assert all(np.array_equal(a, b) for a, b in zip(jax.tree.leaves(out.opt_state),
                                                  jax.tree.leaves(state.opt_state)))
  gains = step._pursuit.gains(x)  # pylint: disable=protected-access
  assert step.tried == [int(np.argmin(gains))] and not step.done
  out = step(out)
  assert step.summary() == {'swaps': 2, 'swaps_kept': 0} and step.done
  assert len(set(step.tried)) == 2  # the second swap took the next row
  assert step(out) is out  # patience spent: no more swaps
  again, *_ = _swapper(theta, ff, d, starts=8, search_steps=1, steps=1, start=10)
  again.load_state_dict(step.state_dict())
  assert again.state_dict() == step.state_dict() and again.done
  fresh, *_ = _swapper(theta, ff, d, starts=8, search_steps=1, steps=1, start=10)
  stopped = state._replace(status=jnp.asarray(optimize.CONVERGED, jnp.int32))
  assert fresh(stopped) is stopped and fresh.swaps == 0


def test_bad_settings_are_refused():
  _, _, theta, ff = _off_subspace(wrong=())[:4]
  for bad in ({'steps': 0}, {'lr': 0.0}, {'patience': 0}):
    kw = dict(starts=8, search_steps=1, steps=10, lr=0.003, patience=2)
    kw.update(bad)
    with pytest.raises(ValueError, match='swap'):
      _swapper(theta, ff, 8, **kw)


@pytest.mark.slow  # a whole run (~15 s)
def test_a_run_with_the_swap_step_reports_its_swaps(tmp_path):
  import recon  # pylint: disable=import-outside-toplevel
  from configs import rf_synthetic  # pylint: disable=import-outside-toplevel
  c = rf_synthetic.get_config()
  c.data.n, c.data.d, c.victim.p, c.seed = 6, 6, 200, 3
  c.attack.max_steps, c.attack.rescue = 3000, ('pursue', 'swap')
  c.attack.swap.start, c.attack.swap.steps = 0, 200
  c.attack.pursue.start, c.attack.pursue.stop = 0, 1  # rounds due from 0, none from step 1 on
  m = recon.run(c, str(tmp_path / 'run')).summary['metrics']
  assert m['swaps'] >= 1 and 0 <= m['swaps_kept'] <= m['swaps'] and m['pursuit_rounds'] == 0, m
  c.attack.swap.lr = 0.0
  with pytest.raises(recon.RunError, match='attack.swap.lr'):
    recon.run(c, str(tmp_path / 'bad'))
