"""recon/attack/rescue/chain.py: rescue steps composed in the order of attack.rescue, each with its own
state in the run's checkpoints; a toy step registered from this file runs end to end."""
import json

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from configs import rf_synthetic
from recon.config import validate as config_lib
from recon import errors, pipelines, registry  # noqa: F401
from recon.attack.rescue import escalate
from recon.attack.rescue import reseed as refine
from recon.attack.rescue import chain as rescue
from recon.attack.rescue.step import Step
from recon.attack import optimiser as optimize
from recon.sweep import grid as sweep


def test_the_builtin_steps_and_their_stages():
  assert set(registry.names('rescue')) == {'reseed', 'escalate', 'pursue', 'swap', 'cut',
                                           'polish'}
  assert rescue.descent_steps(('polish', 'escalate', 'reseed')) == ('escalate', 'reseed')
  assert rescue.unbatched(('reseed', 'escalate', 'pursue', 'swap', 'cut', 'polish')) == (
      'reseed', 'pursue', 'swap', 'cut')
  assert rescue.batched_names() == ('escalate', 'polish')
  # The precision rung is the one step after the descent: what switches the certificate's rung on.
  assert rescue.end_steps(('escalate', 'polish')) == ('polish',)
  assert rescue.end_steps(('escalate', 'reseed')) == ()
  # Residual pursuit is built for a run only when a listed step uses it (by its section).
  attack = rf_synthetic.get_config().attack
  assert attack.escalate.pursuit == 'off'
  assert not rescue.uses_pursuit(('reseed', 'escalate', 'polish'), attack)
  assert all(rescue.uses_pursuit((name,), attack) for name in ('pursue', 'swap', 'cut'))
  attack.escalate.pursuit = 'auto'
  assert rescue.uses_pursuit(('escalate',), attack)


class Recorder(Step):
  """A toy step: appends its name to a shared log after each chunk, counts its calls (its
  state) and adds `shift` to the candidates' first coordinate."""

  def __init__(self, name, log, shift=0.0):
    self.name, self.log, self.shift, self.calls = name, log, shift, 0

  def update(self, state):
    self.calls += 1
    self.log.append(self.name)
    return state._replace(x=state.x.at[:, 0].add(self.shift))

  def state_dict(self):
    return {'calls': self.calls}

  def load_state_dict(self, saved):
    self.calls = saved['calls']

  def summary(self):
    return {f'{self.name}_calls': self.calls}


def _ctx():
  loss_fn = lambda x, prob: jnp.sum((x - prob) ** 2)  # noqa: E731
  return rescue.Context(key=jax.random.PRNGKey(0), loss_fn=loss_fn, problem=jnp.zeros((3, 2)),
                        constraint=lambda x: x, optimizer=optimize.make_optimizer('sgd', 0.1),
                        tol=1e-9, max_steps=100)


def test_the_chain_applies_the_steps_after_the_chunk_in_the_listed_order():
  log = []
  a, b = Recorder('a', log, shift=1.0), Recorder('b', log, shift=10.0)
  chain = rescue.Chain([('a', a), ('b', b)])

  def chunk(state, stop):
    log.append('chunk')
    return state._replace(x=state.x * 2.0)

  state = optimize.init_state(jnp.zeros((3, 2)), optimize.make_optimizer('sgd', 0.1),
                              _ctx().loss_fn, _ctx().problem, lambda x: x)
  out = chain.wrap(chunk)(state._replace(x=jnp.ones((3, 2))), 10)
  assert log == ['chunk', 'a', 'b']
  # b(a(chunk(x))): x[:, 0] = 2 * 1 + 1 + 10; the rest 2.
  np.testing.assert_allclose(np.asarray(out.x), [[13.0, 2.0]] * 3)
  assert a.chunk is chunk and b.chunk is chunk  # their own trials run the bare chunk
  assert chain.summary() == {'a_calls': 1, 'b_calls': 1}
  saved = chain.state_dict()
  fresh = rescue.Chain([('a', Recorder('a', [])), ('b', Recorder('b', []))])
  assert fresh.load_state_dict({'a': saved['a']}) == ['b']  # b not saved: reported
  assert fresh.get('a').calls == 1 and fresh.get('b').calls == 0


def test_escalation_is_skipped_for_pytrees_and_splitting_and_reseed_refused():
  ctx = _ctx()
  attack = rf_synthetic.get_config().attack
  built = rescue.build(('reseed', 'escalate', 'polish'), attack, ctx)
  assert [n for n, _ in built.steps] == ['reseed', 'escalate']
  assert isinstance(built.get('reseed'), refine.Reseeder)
  assert isinstance(built.get('escalate'), escalate.Escalator)
  assert all(isinstance(step, Step) for _, step in built.steps)  # every hook defined
  for other in (dict(single_array=False), dict(refiner=True)):
    skipped = rescue.build(('escalate',), attack, rescue.Context(**{**ctx.__dict__, **other}))
    assert skipped.steps == []
  with pytest.raises(errors.ExperimentError, match="^attack.rescue: 'reseed' needs"):
    rescue.build(('reseed',), attack, rescue.Context(**{**ctx.__dict__, 'single_array': False}))
  with pytest.raises(errors.ExperimentError, match="^attack.rescue: 'reseed' does not serve"):
    rescue.build(('reseed',), attack, rescue.Context(**{**ctx.__dict__, 'batched': True}))
  # Re-seeding holds the problem, which sample splitting replaces between chunks.
  with pytest.raises(errors.ExperimentError, match="^attack.rescue: 'reseed' with sample splitting"):
    rescue.build(('reseed',), attack, rescue.Context(**{**ctx.__dict__, 'refiner': True}))


def test_sweeps_refuse_a_step_that_does_not_batch(tmp_path):
  c = rf_synthetic.get_config()
  c.sweep.seed = (0, 1)
  c.attack.rescue = ('reseed', 'escalate')
  with pytest.raises(config_lib.ConfigError,
                     match=r"^config.attack.rescue: \('reseed',\) not supported in sweeps"):
    sweep.run(c, str(tmp_path / 'x'))
  assert not (tmp_path / 'x').exists()


def _tiny(workdir_steps=300):
  c = rf_synthetic.get_config()
  c.data.n, c.data.d, c.victim.p = 4, 4, 160
  c.attack.max_steps, c.run.chunk_steps = workdir_steps, 100
  c.run.log_every_seconds = 1e9
  return c


def test_a_toy_step_registered_here_runs_in_order_and_resumes_with_its_state(tmp_path):
  log = []
  built = []

  def init_toy(section, ctx):
    assert section.every == 2000 and not ctx.batched  # its own section, the run's context
    step = Recorder('toy', log)
    built.append(step)
    return step

  entry = registry.Rescue(section='reseed', init=init_toy)
  with registry.registered('rescue', 'toy', entry):
    c = _tiny()
    c.attack.rescue = ('toy', 'escalate')
    c.attack.tol = 1e-30  # never converges: one toy call per chunk of 100 steps
    c.run.checkpoint_every_steps = 100
    out = pipelines.run(c, str(tmp_path / 'run'))
    m = out['metrics']
    assert m['toy_calls'] == built[0].calls == log.count('toy') == 3
    assert 'escalations_tried' in m and 'reseeded' not in m
    saved = json.load(open(tmp_path / 'run' / 'summary.json'))['config']['attack']['rescue']
    assert saved == ['toy', 'escalate']
    # A resumed run restores the toy's state from the checkpoint under its name.
    c.attack.max_steps = 400
    c.run.resume = True
    again = pipelines.run(c, str(tmp_path / 'run'))['metrics']
    assert again['toy_calls'] == built[1].calls == 4  # 3 restored, then one more chunk
  assert 'toy' not in registry.names('rescue')
  c.attack.rescue = ('toy',)
  with pytest.raises(config_lib.ConfigError, match='^config.attack.rescue: invalid value'):
    config_lib.validate(c)
