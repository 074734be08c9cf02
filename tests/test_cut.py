"""recon/attack/rescue/cut.py: m > n candidates cut to n by leave-one-out gain, once, the optimiser's state
following the kept rows; in a run, resumed before or after the cut as an unbroken one."""
import json
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from configs import rf_synthetic
from recon.config import validate as config_lib
from recon import metrics, pipelines
from recon.attack.rescue import cut, pursuit
from recon.config import sections
from recon.models import features
from recon.attack import optimiser as optimize
from recon.sweep import grid as sweep
from recon.objectives import projection


def _sphere(key, m, d):
  x = jax.random.normal(key, (m, d))
  return np.asarray(x / jnp.linalg.norm(x, axis=1, keepdims=True) * np.sqrt(d), np.float64)


def _victim(n, d, p, seed=0):
  kx, kv, ky = jax.random.split(jax.random.PRNGKey(seed), 3)
  x = _sphere(kx, n, d)
  v = features.random_weights(kv, p, d)
  ff = lambda z: features.rf_features(v, jnp.asarray(z, jnp.float32), 'relu_tanh')  # noqa: E731
  theta = np.asarray(jax.random.normal(ky, (n,)) @ ff(x), np.float64)
  return x, ff, theta


def _system(ff, theta):
  return pursuit.Pursuit(ff, theta, radius=1.0, tol=1e-9, key=jax.random.PRNGKey(0)).gram_system


def test_the_gains_from_the_gram_are_the_removal_losses_less_the_loss():
  phi = np.asarray(jax.random.normal(jax.random.PRNGKey(1), (12, 300)), np.float64)
  theta = np.asarray(jax.random.normal(jax.random.PRNGKey(2), (300,)), np.float64)
  with jax.enable_x64(True):
    want = (np.asarray(projection.removal_losses(jnp.asarray(phi), jnp.asarray(theta), 1e-9))
            - float(projection.projection_loss(jnp.asarray(phi), jnp.asarray(theta), 1e-9)))
  got = cut.gains_from_gram(phi @ phi.T, phi @ theta, float(theta @ theta), jitter=1e-9)
  np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-12)
  assert (got > 0).all()


@pytest.mark.parametrize('p', [20_000, 1_000_000])
def test_the_cut_keeps_the_samples_and_one_of_each_pair_of_twins(p):
  """n = 10 samples, d = 10: their rows, a near copy of four of them (twins: either may go,
  never both) and six rows on the sphere that explain none of theta. The cut to n keeps one
  row per sample, whatever their order, at the sizes users run (p = 1e6 in seconds)."""
  n, d = 10, 10
  x, ff, theta = _victim(n, d, p)
  twins = x[:4] + 0.01 * _sphere(jax.random.PRNGKey(7), 4, d)
  noise = _sphere(jax.random.PRNGKey(8), 6, d)
  cands = np.concatenate([noise[:3], twins, x, noise[3:]])
  order = np.random.default_rng(0).permutation(len(cands))
  cands = cands[order]
  rows = cut.kept_rows(*_system(ff, theta)(cands), keep=n)
  assert len(rows) == n and np.all(np.diff(rows) > 0)
  kept = cands[rows]
  assert metrics.per_sample_errors(x, kept).max() < 0.05  # every sample has its row
  assert metrics.reconstruction_metrics(x, kept)['n_recovered'] == n


def test_a_set_of_at_most_keep_rows_is_left_whole():
  x, ff, theta = _victim(6, 5, 2000)
  assert cut.kept_rows(*_system(ff, theta)(x), keep=6).tolist() == list(range(6))
  assert cut.kept_rows(*_system(ff, theta)(x[:4]), keep=6).tolist() == list(range(4))


@pytest.mark.parametrize('name', ['adam', 'sgd', 'lbfgs'])
def test_the_optimiser_state_follows_the_kept_rows(name):
  m, d, rows = 6, 3, np.array([0, 2, 5])
  x = jax.random.normal(jax.random.PRNGKey(0), (m, d))
  opt = optimize.make_optimizer(name, 0.1, 0.9, 'cosine', 100)
  loss = lambda z, _: jnp.sum(jnp.sin(z) ** 2)  # noqa: E731
  state = optimize.init_state(x, opt, loss, None, lambda z: z)
  g = jax.grad(loss)(x, None)
  upd, opt_state = opt.update(g, state.opt_state, x, value=loss(x, None), grad=g,
                              value_fn=lambda z: loss(z, None))
  state = state._replace(x=x + upd, opt_state=opt_state)
  out = cut.take_rows(state, x.shape, rows)
  np.testing.assert_array_equal(out.x, state.x[rows])
  for a, b in zip(jax.tree.leaves(state.opt_state), jax.tree.leaves(out.opt_state)):
    if np.shape(a)[-2:] == (m, d):
      np.testing.assert_array_equal(np.take(np.asarray(a), rows, axis=np.ndim(a) - 2), b)
    else:
      np.testing.assert_array_equal(a, b)  # counts, learning rates
  # The next step of the kept rows: the step they would have taken together.
  g_rows = jax.grad(loss)(out.x, None)
  upd_rows, _ = opt.update(g_rows, out.opt_state, out.x, value=loss(out.x, None), grad=g_rows,
                           value_fn=lambda z: loss(z, None))
  if name != 'lbfgs':  # L-BFGS's line search couples the rows
    g_all = jax.grad(loss)(state.x, None)
    upd_all, _ = opt.update(g_all, state.opt_state, state.x)
    np.testing.assert_allclose(upd_rows, upd_all[rows], rtol=1e-6)


def _tiny(tmp_path, max_steps, at=300, m=8):
  c = rf_synthetic.get_config()
  c.data.n, c.data.d, c.victim.p = 4, 4, 640
  c.attack.n_candidates, c.attack.rescue, c.attack.cut.at = m, ('cut', 'polish'), at
  c.attack.max_steps, c.run.chunk_steps, c.run.checkpoint_every_steps = max_steps, 100, 100
  c.attack.tol, c.run.log_every_seconds = 1e-30, 1e9
  return c


@pytest.mark.slow  # three tiny runs
def test_a_run_cuts_once_and_resumes_before_or_after_the_cut_as_an_unbroken_one(tmp_path):
  c = _tiny(tmp_path, 600)
  c.run.checkpoint_keep = 10
  whole = pipelines.run(c, str(tmp_path / 'whole'))['metrics']
  assert whole['cut']['step'] == 300 and whole['cut']['from'] == 8 and whole['cut']['to'] == 4
  assert whole['n_candidates'] == 4 and whole['steps'] == 600
  x_whole = np.load(tmp_path / 'whole' / 'reconstruction.npz')['x_candidates']
  for stop in (200, 400):  # killed after a checkpoint before the cut, or one after it
    shutil.copytree(tmp_path / 'whole', tmp_path / f'r{stop}')
    for step in (tmp_path / f'r{stop}' / 'checkpoints').iterdir():
      if step.name.isdigit() and int(step.name) > stop:
        shutil.rmtree(step)
    c.run.resume = True
    again = pipelines.run(c, str(tmp_path / f'r{stop}'))['metrics']
    assert again['cut'] == {**whole['cut'], 'seconds': again['cut']['seconds']}
    np.testing.assert_array_equal(
        np.load(tmp_path / f'r{stop}' / 'reconstruction.npz')['x_candidates'], x_whole)


@pytest.mark.slow  # three tiny runs
def test_a_run_that_stops_before_the_step_is_cut_at_its_stop(tmp_path):
  """`at` 0 (the default) or a budget below `at`: the cut comes at the stop, so the report and
  the certificate see n rows, and a larger budget goes on from them; m <= n: no cut."""
  assert rf_synthetic.get_config().attack.cut.at == 0
  out = pipelines.run(_tiny(tmp_path, 200, at=0), str(tmp_path / 'a'))['metrics']
  assert out['cut']['step'] == 200 and out['n_candidates'] == 4 and out['steps'] == 200
  c = _tiny(tmp_path, 300, at=0)
  c.run.resume = True
  more = pipelines.run(c, str(tmp_path / 'a'))['metrics']
  assert more['cut'] == out['cut'] and more['n_candidates'] == 4 and more['steps'] == 300
  out = pipelines.run(_tiny(tmp_path, 200, m=4), str(tmp_path / 'b'))['metrics']
  assert out['cut'] is None and out['n_candidates'] == 4
  out = pipelines.run(_tiny(tmp_path, 200, at=5000), str(tmp_path / 'c'))['metrics']
  assert out['cut']['step'] == 200 and out['n_candidates'] == 4


def test_the_cut_is_refused_in_sweeps_and_its_step_checked(tmp_path):
  c = _tiny(tmp_path, 200)
  c.sweep.seed = (0, 1)
  with pytest.raises(config_lib.ConfigError, match=r"\('cut',\) not supported in sweeps"):
    sweep.run(c, str(tmp_path / 'x'))
  c = _tiny(tmp_path, 200, at=-1)
  with pytest.raises(config_lib.ConfigError, match='attack.cut.at'):
    config_lib.validate(c)
  c = _tiny(tmp_path, 200)
  c.attack.cut.state = 'new'
  with pytest.raises(config_lib.ConfigError, match=r"attack.cut.state: invalid value 'new'; accepted: one of 'kept', 'fresh'"):
    config_lib.validate(c)


@pytest.mark.parametrize('state', ['kept', 'fresh'])
def test_the_step_cuts_at_its_step_with_the_chosen_optimiser_state(state):
  """After 40 steps of a cosine over 100 on 4 samples' rows and 4 rows off the data: at step
  `at` = 40 the cut keeps the 4 samples' rows; 'kept' slices Adam's moments, 'fresh' restarts
  them (zeros, count 0) at the learning rate the schedule had reached (0.05 unit(40))."""
  x, ff, theta = _victim(4, 5, 4000)
  cands = jnp.asarray(np.concatenate([_sphere(jax.random.PRNGKey(3), 4, 5), x]), jnp.float32)
  loss_fn = lambda z, _: projection.projection_loss(ff(z), jnp.asarray(theta, jnp.float32))  # noqa: E731
  opt = optimize.make_optimizer('adam', 0.05, 0.9, 'cosine', 100, 0.05)
  unit = optimize.schedule_unit('cosine', 100, 0.05)
  sphere = optimize.sphere_constraint(np.sqrt(5))
  s = optimize.init_state(cands, opt, loss_fn, None, sphere)
  s = optimize.run_chunk(s, None, jnp.asarray(40), loss_fn=loss_fn, optimizer=opt,
                         constraint=sphere, tol=1e-30, max_steps=100)
  assert int(s.step) == 40
  step = cut.CutStep(_system(ff, theta), loss_fn, None, sections.Cut(at=41, state=state),
                     keep=4, max_steps=100, optimizer=opt, unit=unit)
  assert step(s) is s and step.rows is None  # before its step
  step = cut.CutStep(_system(ff, theta), loss_fn, None, sections.Cut(at=40, state=state),
                     keep=4, max_steps=100, optimizer=opt, unit=unit)
  out = step(s)
  assert step.rows == [4, 5, 6, 7] and out.x.shape == (4, 5) and int(out.step) == 40
  assert int(out.status) == optimize.RUNNING
  np.testing.assert_allclose(float(out.loss), float(loss_fn(out.x, None)), rtol=1e-6)
  assert step.summary()['cut'] == {**step.info, 'step': 40, 'from': 8, 'to': 4}
  lr = optimize.learning_rate_now(out.opt_state, unit)
  assert lr == pytest.approx(optimize.learning_rate_now(s.opt_state, unit))
  assert lr == pytest.approx(0.05 * float(unit(40)), rel=1e-6)
  moments = [a for a in jax.tree.leaves(out.opt_state) if np.shape(a) == (4, 5)]
  assert len(moments) == 2  # Adam's mu and nu
  if state == 'fresh':
    assert all(not np.any(np.asarray(a)) for a in moments)
  else:
    before = [np.asarray(a)[4:] for a in jax.tree.leaves(s.opt_state) if np.shape(a) == (8, 5)]
    for a, b in zip(moments, before):
      np.testing.assert_array_equal(a, b)
  assert step(out) is out  # once
  saved = step.state_dict()
  again = cut.CutStep(_system(ff, theta), loss_fn, None, sections.Cut(at=40, state='kept'),
                      keep=4, max_steps=100)
  again.load_state_dict(json.loads(json.dumps(saved)))
  assert again.rows == step.rows and again.template(s, saved).x.shape == (4, 5)
  with pytest.raises(ValueError, match='state'):
    cut.CutStep(_system(ff, theta), loss_fn, None, sections.Cut(at=0, state='new'), keep=4,
                max_steps=9)
