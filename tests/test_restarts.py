"""Restarts chosen by the blind loss: independent blocks, min value, the blind choice."""
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon.attack import driver, restarts
from recon.attack import optimiser as optimize
from recon.runtime import runs
from recon.pipelines import random_features as rf_pipeline

ACT = 'relu_tanh'
N, D, P, K = 4, 5, 200, 3


def _problem():
  keys = runs.split_keys(0)
  x_true = optimize.sphere_constraint(np.sqrt(D))(jax.random.normal(jax.random.PRNGKey(2), (N, D)))
  y = jnp.arange(N, dtype=jnp.float32)
  prob = jax.jit(lambda k, x, y: rf_pipeline.make_rf_problem(
      k, x, y, p_total=P, activation=ACT))(keys, x_true, y)
  prob.pop('train_mse')
  return prob


def _loss(x, prob):
  return rf_pipeline.rf_loss(x, prob, activation=ACT, jitter=1e-6)


def _init(key):
  return driver.init_candidates(key, N, D, jnp.float32)


def test_init_block_zero_is_the_single_run_start():
  key = jax.random.PRNGKey(7)
  xs = restarts.init_restarts(key, K, _init)
  assert xs.shape == (K, N, D)
  np.testing.assert_array_equal(xs[0], _init(key))
  assert float(jnp.abs(xs[1] - xs[2]).min()) > 0  # distinct starts
  with pytest.raises(ValueError, match='attack.restarts'):
    restarts.init_restarts(key, 0, _init)


@pytest.mark.slow  # ~10 CPU-s
def test_stacked_loss_is_the_min_and_its_gradient_is_blockwise():
  prob = _problem()
  xs = restarts.init_restarts(jax.random.PRNGKey(3), K, _init)
  xs = xs.at[1].set(xs[1] * 0.5 + 0.1)  # three different losses
  per = np.asarray([_loss(x, prob) for x in xs])
  value, grad = jax.value_and_grad(restarts.stacked_loss(_loss))(xs, prob)
  np.testing.assert_allclose(float(value), per.min(), rtol=1e-5)
  for k in range(K):
    np.testing.assert_allclose(grad[k], jax.grad(_loss)(xs[k], prob), rtol=1e-4, atol=1e-6)
  chooser = restarts.BestRestart(_loss, prob)
  np.testing.assert_array_equal(chooser(xs), xs[int(np.argmin(per))])
  assert chooser.summary()['chosen'] == int(np.argmin(per))
  np.testing.assert_allclose(chooser.summary()['losses'], per, rtol=1e-5)


def test_best_restart_skips_a_nonfinite_block():
  prob = _problem()
  xs = restarts.init_restarts(jax.random.PRNGKey(3), 2, _init)
  chooser = restarts.BestRestart(_loss, prob)
  bad = xs.at[0].set(jnp.nan)
  np.testing.assert_array_equal(chooser(bad), xs[1])


@pytest.mark.slow  # up to ~6 CPU-s a case
@pytest.mark.parametrize('name', ['adam', 'sgd'])
def test_each_block_follows_its_own_single_run(name, tmp_path):
  """The driver runs K restarts as a batch: block k == the run from start k alone."""
  from configs import rf_synthetic  # pylint: disable=import-outside-toplevel
  from recon.attack.plan import Attack  # pylint: disable=import-outside-toplevel
  prob = _problem()
  c = rf_synthetic.get_config()
  c.attack.update(optimizer=name, lr=0.05 if name == 'adam' else 1.0, momentum=0.9,
                  schedule='cosine', decay_steps=40, max_steps=60, tol=0.0, rescue=())
  c.run.update(chunk_steps=25, checkpoint_every_seconds=0.0, log_every_seconds=1e9)
  constraint = optimize.sphere_constraint(float(np.sqrt(D)))
  xs = restarts.init_restarts(jax.random.PRNGKey(5), K, _init)

  def run(attack, where):
    return driver.optimise(attack, c.attack, c.run, seed=0, workdir=str(tmp_path / where),
                           config_record={}, t0=0.0).state

  batch = run(Attack(problem=prob, loss_fn=restarts.stacked_loss(_loss), x0=xs,
                     constraint=constraint, decode=restarts.BestRestart(_loss, prob)), 'k')
  assert int(batch.step) == 60 and batch.x.shape == xs.shape
  singles = [run(Attack(problem=prob, loss_fn=_loss, x0=xs[k], constraint=constraint), str(k))
             for k in range(K)]
  for k in range(K):
    np.testing.assert_allclose(batch.x[k], singles[k].x, atol=2e-5)
  np.testing.assert_allclose(float(batch.loss), min(float(s.loss) for s in singles), rtol=1e-4)


TINY = {'data.n': 3, 'data.d': 4, 'victim.p': 120, 'attack.max_steps': 300,
        'attack.decay_steps': 300, 'attack.restarts': 3}


def _execute(workdir, **fields):
  """recon.main's run in this process (what the CLI runs after parsing its flags): the tiny
  rf_synthetic problem with `fields` ({field path: value}); asserts exit status 0."""
  from configs import rf_synthetic  # pylint: disable=import-outside-toplevel
  from recon import main  # pylint: disable=import-outside-toplevel
  c = rf_synthetic.get_config()
  c.update_from_flattened_dict({**TINY, 'run.log_every_seconds': 1e9, **fields})
  assert main.execute(c, str(workdir)) == 0


def _assert_blind_choice(out):
  m = json.loads((out / 'summary.json').read_text())['metrics']
  rs = m['restarts']
  assert rs['n_restarts'] == 3 and rs['chosen'] == int(np.argmin(rs['losses']))
  np.testing.assert_allclose(m['projection_loss'], min(rs['losses']), rtol=1e-3, atol=1e-7)
  assert np.load(out / 'reconstruction.npz')['x_candidates'].shape == (3, 4)


@pytest.mark.slow  # a whole run (the dense case is the unbroken run of the resume test below)
def test_lean_restarts_report_the_blind_choice(tmp_path):
  _execute(tmp_path / 'run', **{'victim.feature_mode': 'lean', 'victim.feature_chunk': 64})
  _assert_blind_choice(tmp_path / 'run')


def test_cli_refuses_restarts_with_lbfgs_before_writing(tmp_path, capsys):
  # In-process: recon.main.execute is what the CLI runs after parsing the flags.
  from configs import rf_synthetic  # pylint: disable=import-outside-toplevel
  from recon import main  # pylint: disable=import-outside-toplevel
  c = rf_synthetic.get_config()
  c.data.n, c.data.d, c.victim.p, c.attack.max_steps, c.attack.decay_steps = 3, 4, 120, 300, 300
  c.attack.restarts, c.attack.optimizer = 2, 'lbfgs'
  assert main.execute(c, str(tmp_path / 'x')) == 2
  err = capsys.readouterr().err
  assert err.strip().count('\n') == 0, err
  assert 'attack.restarts' in err and "optimizer 'lbfgs'" in err
  assert not (tmp_path / 'x').exists()


@pytest.mark.slow  # three runs
def test_restarts_report_the_blind_choice_and_resume_bit_for_bit(tmp_path):
  """A dense run reports the blind choice of its restarts; one stopped at 150 steps and
  resumed to 300 equals it, bit for bit."""
  common = {'run.chunk_steps': 50, 'run.checkpoint_every_steps': 50, 'attack.tol': 0.0,
            'victim.feature_mode': 'dense'}
  a, b = tmp_path / 'a', tmp_path / 'b'
  _execute(a, **common)
  _assert_blind_choice(a)
  _execute(b, **common, **{'attack.max_steps': 150})
  _execute(b, **common, **{'run.resume': True})
  assert json.loads((b / 'summary.json').read_text())['resumed_from_step'] == 150
  xa = np.load(a / 'reconstruction.npz')['x_candidates']
  xb = np.load(b / 'reconstruction.npz')['x_candidates']
  np.testing.assert_array_equal(xa, xb)
  ma = json.loads((a / 'summary.json').read_text())['metrics']['restarts']
  mb = json.loads((b / 'summary.json').read_text())['metrics']['restarts']
  assert ma == mb


@pytest.mark.slow  # compiles and runs an attack (over ~3 s)
def test_restarts_and_escalation_compose(tmp_path):
  """The K restarts run as a batch, and escalation acts on each of them as on a sweep's runs."""
  from configs import rf_synthetic  # pylint: disable=import-outside-toplevel
  from recon import pipelines  # pylint: disable=import-outside-toplevel
  c = rf_synthetic.get_config()
  c.update_from_flattened_dict({
      'data.n': 4, 'data.d': 4, 'victim.p': 160, 'victim.activation': 'relu', 'seed': 0,
      'attack.max_steps': 3000, 'attack.restarts': 3, 'attack.rescue': ('escalate',),
      'attack.escalate.every': 200, 'attack.escalate.window': 400,
      'run.log_every_seconds': 1e9, 'run.checkpoint_every_seconds': 0.0})
  m = pipelines.run(c, str(tmp_path / 'run'))['metrics']
  rs = m['restarts']
  assert rs['n_restarts'] == 3 and rs['chosen'] == int(np.argmin(rs['losses']))
  # Measured: 3 rounds tried and kept over the three blocks; every row back.
  assert m['escalations_tried'] >= 1 and m['escalations_accepted'] >= 1
  assert m['status'] == 'converged' and m['frac_recovered'] == 1.0
  assert min(rs['losses']) <= c.attack.tol
