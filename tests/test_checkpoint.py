"""Checkpoints and resume (bit for bit, also after SIGKILL), workdir rules, saved models."""
import collections
import json
import os
import shutil
import signal
import subprocess
import sys
import time

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import optax
import pytest

from recon import errors, pipelines
from recon.runtime import checkpoint, ownership, runs
from recon.report import scoring as report
from recon.pipelines import random_features as rf_pipeline
from recon.models import networks, train
from recon.models import saved as model_ckpt
from conftest import subprocess_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RF = os.path.join(ROOT, 'configs', 'rf_synthetic.py')

# Tiny problem; tol=0 so every run takes exactly max_steps steps.
TINY = {'data.n': 4, 'data.d': 4, 'victim.p': 64, 'attack.lr': 2.0, 'attack.tol': 0.0,
        'run.chunk_steps': 50, 'run.log_every_seconds': 1000.0,
        'run.checkpoint_every_seconds': 0.0}


def tiny_config(overrides=None):
  """configs/rf_synthetic.py with TINY, 400 steps and `overrides` ({field path: value})."""
  from configs import rf_synthetic  # pylint: disable=import-outside-toplevel
  cfg = rf_synthetic.get_config()
  cfg.update_from_flattened_dict({**TINY, 'attack.max_steps': 400, **(overrides or {})})
  return cfg


def comparable(summary):
  """Everything a run produces except its timings (and where it resumed from)."""
  m = {k: v for k, v in summary['metrics'].items() if not k.endswith('_seconds')}
  if isinstance(m.get('polish'), dict):  # the precision rung's own wall time
    m['polish'] = {k: v for k, v in m['polish'].items() if k != 'seconds'}
  return {'metrics': m, 'history': summary['history']}


def read_npz(workdir):
  with np.load(os.path.join(workdir, 'reconstruction.npz')) as f:
    return {k: f[k] for k in f.files}


def assert_same_outputs(a, b):
  sa = json.load(open(os.path.join(a, 'summary.json')))
  sb = json.load(open(os.path.join(b, 'summary.json')))
  assert comparable(sa) == comparable(sb)
  na, nb = read_npz(a), read_npz(b)
  assert sorted(na) == sorted(nb)
  for k in na:
    np.testing.assert_array_equal(na[k], nb[k], err_msg=k)  # bit for bit


def snapshot(workdir):
  out = {}
  for folder, _, files in os.walk(workdir):
    for f in files:
      path = os.path.join(folder, f)
      out[os.path.relpath(path, workdir)] = open(path, 'rb').read()
  return out


@pytest.fixture(scope='module')
def unbroken(tmp_path_factory):
  """One uninterrupted in-process run: 400 steps, checkpoints every 100."""
  workdir = str(tmp_path_factory.mktemp('unbroken'))
  pipelines.run(tiny_config({'run.checkpoint_every_steps': 100}), workdir)
  return workdir


def _changed(config_dict, overrides):
  c = ml_collections.ConfigDict(config_dict)
  c.update_from_flattened_dict(overrides)
  return c.to_dict()


def test_config_differences_rule():
  saved = tiny_config().to_dict()
  same = _changed(saved, {'run.log_every_seconds': 1.0, 'run.chunk_steps': 7,
                          'run.checkpoint_keep': 5, 'run.resume': True,
                          'run.checkpoint_every_steps': 3, 'run.checkpoint_every_seconds': 9.0,
                          'attack.max_steps': 10**6, 'name': 'x'})
  assert checkpoint.config_differences(saved, same) == []
  diff = checkpoint.config_differences(
      saved, _changed(saved, {'attack.lr': 1.0, 'seed': 3, 'attack.max_steps': 10}))
  assert [d.split(' ')[0] for d in diff] == ['attack.lr', 'attack.max_steps', 'seed']
  assert checkpoint.config_differences(saved, dict(saved, extra=1)) == ['extra (None -> 1)']


def test_a_checkpoint_from_before_the_sections_is_refused_in_one_line(tmp_path, monkeypatch):
  """A workdir checkpointed by a recon whose config was flat cannot be resumed: one line."""
  monkeypatch.setattr(checkpoint, 'saved_steps', lambda workdir: [100])
  monkeypatch.setattr(checkpoint, 'read_config', lambda workdir: {'n': 4, 'lr': 2.0})
  with pytest.raises(errors.ExperimentError, match=r'^run\.resume: .* no sections .* a fresh '
                     r'--workdir') as e:
    c = tiny_config({'run.resume': True})
    runs.prepare_run_workdir(str(tmp_path), c.run, c.victim.checkpoint, c.to_dict())
  assert '\n' not in str(e.value)


def test_checkpoints_written_and_pruned(unbroken):
  assert checkpoint.saved_steps(unbroken) == [300, 400]  # checkpoint_keep = 2
  assert checkpoint.read_config(unbroken)['attack']['max_steps'] == 400
  assert os.path.isfile(os.path.join(unbroken, 'model', 'model.json'))


@pytest.mark.slow  # ~8 CPU-s
def test_resume_with_more_steps_is_bit_for_bit(unbroken, tmp_path):
  """200 steps, then resume to 400 (max_steps may grow): same outputs as 400 in one go."""
  workdir = str(tmp_path / 'split')
  first = pipelines.run(tiny_config({'attack.max_steps': 200}), workdir)
  assert first['metrics']['steps'] == 200
  summary = pipelines.run(tiny_config({'run.resume': True, 'run.chunk_steps': 100}), workdir)
  assert summary['resumed_from_step'] == 200
  assert summary['history']['step'][-1] == 400
  # chunk_steps changed on resume: candidates identical, history sampled differently.
  np.testing.assert_array_equal(read_npz(workdir)['x_candidates'],
                                read_npz(unbroken)['x_candidates'])
  assert comparable(summary)['metrics'] == comparable(
      json.load(open(os.path.join(unbroken, 'summary.json'))))['metrics']


def test_resume_after_crash_is_bit_for_bit(unbroken, tmp_path):
  """A crash after the checkpoint at step 300: the resumed run ends where the unbroken did."""
  workdir = str(tmp_path / 'crashed')
  shutil.copytree(unbroken, workdir)
  shutil.rmtree(os.path.join(workdir, 'checkpoints', '400'))
  os.remove(os.path.join(workdir, 'summary.json'))
  os.remove(os.path.join(workdir, 'reconstruction.npz'))
  # An unfinished orbax save (as SIGKILL mid-save leaves it) must be ignored.
  os.makedirs(os.path.join(workdir, 'checkpoints', '350.orbax-checkpoint-tmp-1'))
  summary = pipelines.run(tiny_config({'run.checkpoint_every_steps': 100, 'run.resume': True}), workdir)
  assert summary['resumed_from_step'] == 300
  assert_same_outputs(unbroken, workdir)


def test_second_run_into_a_workdir_is_refused(unbroken, tmp_path):
  workdir = str(tmp_path / 'again')
  shutil.copytree(unbroken, workdir)
  before = snapshot(workdir)
  with pytest.raises(errors.ExperimentError, match='already holds a finished run') as err:
    pipelines.run(tiny_config({'run.checkpoint_every_steps': 100}), workdir)
  assert '\n' not in str(err.value)
  assert snapshot(workdir) == before
  # overwrite=True replaces it (same config: same outputs).
  pipelines.run(tiny_config({'run.checkpoint_every_steps': 100, 'run.overwrite': True}), workdir)
  assert_same_outputs(unbroken, workdir)


def test_unfinished_run_is_refused_without_resume(unbroken, tmp_path):
  workdir = str(tmp_path / 'unfinished')
  shutil.copytree(unbroken, workdir)
  os.remove(os.path.join(workdir, 'summary.json'))
  with pytest.raises(errors.ExperimentError, match='resume=True to continue'):
    pipelines.run(tiny_config(), workdir)


@pytest.mark.parametrize('overrides,named', [
    ({'attack.lr': 5.0, 'seed': 1}, 'attack.lr (2.0 -> 5.0), seed (0 -> 1)'),
    ({'attack.max_steps': 300}, 'attack.max_steps (400 -> 300)'),
    ({'victim.activation': 'tanh'}, "victim.activation ('relu_tanh' -> 'tanh')"),
])
def test_resume_with_a_different_config_is_refused(unbroken, tmp_path, overrides, named):
  workdir = str(tmp_path / 'mismatch')
  shutil.copytree(unbroken, workdir)
  before = snapshot(workdir)
  with pytest.raises(errors.ExperimentError) as err:
    pipelines.run(tiny_config({'run.resume': True, **overrides}), workdir)
  message = str(err.value)
  assert '\n' not in message
  assert message.startswith('run.resume: the config differs from the checkpointed run in ' + named)
  assert snapshot(workdir) == before


def test_resume_without_checkpoint_starts_fresh(unbroken, tmp_path):
  """Also when killed during the first save (only an unfinished orbax folder and the model)."""
  workdir = str(tmp_path / 'fresh')
  ownership.take(workdir)  # the killed run's manifest lists what it had begun to write
  for name in ('checkpoints', 'model'):
    ownership.claim(os.path.join(workdir, name))
  os.makedirs(os.path.join(workdir, 'checkpoints', '100.orbax-checkpoint-tmp-7'))
  shutil.copytree(os.path.join(unbroken, 'model'), os.path.join(workdir, 'model'))
  with pytest.raises(errors.ExperimentError, match='already holds an unfinished run'):
    pipelines.run(tiny_config({'run.checkpoint_every_steps': 100}), workdir)
  summary = pipelines.run(tiny_config({'run.checkpoint_every_steps': 100, 'run.resume': True}), workdir)
  assert summary['resumed_from_step'] is None
  assert_same_outputs(unbroken, workdir)


# Blind re-seeding (recon/attack/rescue/reseed.py) keeps host-side state (key, schedule, counters): it
# rides in the checkpoint, so a resumed run re-seeds exactly like an unbroken one.
RESEED = {'attack.n_candidates': 8, 'attack.rescue': ('reseed', 'escalate', 'polish'),
          'attack.reseed.every': 50, 'attack.reseed.threshold': 0.3,
          'run.checkpoint_every_steps': 100}


@pytest.fixture(scope='module')
def unbroken_reseeding(tmp_path_factory):
  workdir = str(tmp_path_factory.mktemp('unbroken_reseeding'))
  summary = pipelines.run(tiny_config(RESEED), workdir)
  return workdir, summary


def _saved_aux(workdir, step):
  meta = os.path.join(checkpoint.checkpoint_dir(workdir), str(step), 'meta', 'metadata')
  return json.load(open(meta))['aux']


@pytest.mark.slow  # ~8 CPU-s; test_resume_after_crash_is_bit_for_bit stays in the fast tier
def test_resume_with_reseeding_after_crash_is_bit_for_bit(unbroken_reseeding, tmp_path):
  unbroken, summary = unbroken_reseeding
  saved = _saved_aux(unbroken, 300)['reseed']
  # Re-seeds happened before the crash point and after it: the test can fail.
  assert 0 < saved['stats'][1] < summary['metrics']['reseeded']
  workdir = str(tmp_path / 'crashed')
  shutil.copytree(unbroken, workdir)
  shutil.rmtree(os.path.join(workdir, 'checkpoints', '400'))
  for name in ('summary.json', 'reconstruction.npz'):
    os.remove(os.path.join(workdir, name))
  resumed = pipelines.run(tiny_config({'run.resume': True, **RESEED}), workdir)
  assert resumed['resumed_from_step'] == 300
  assert_same_outputs(unbroken, workdir)


@pytest.mark.slow  # ~7 CPU-s
def test_resume_with_reseeding_and_more_steps_is_bit_for_bit(unbroken_reseeding, tmp_path):
  unbroken, _ = unbroken_reseeding
  workdir = str(tmp_path / 'split')
  pipelines.run(tiny_config({**RESEED, 'attack.max_steps': 250}), workdir)
  resumed = pipelines.run(tiny_config({'run.resume': True, **RESEED}), workdir)
  assert resumed['resumed_from_step'] == 250
  assert_same_outputs(unbroken, workdir)


@pytest.mark.slow  # recon.main subprocesses, killed and resumed
def test_sigkill_with_reseeding_then_resume_matches_unbroken(unbroken_reseeding, tmp_path):
  """A recon.main process killed after its first checkpoint, resumed by another one: the
  in-process unbroken run's outputs, bit for bit (so runs are also deterministic across
  processes, and the re-seeder's host state crosses the kill)."""
  unbroken, _ = unbroken_reseeding
  killed = str(tmp_path / 'killed')

  def cli(*more):  # the fixture's config: 400 steps
    args = {**TINY, 'attack.max_steps': 400, **RESEED, **dict(o.split('=', 1) for o in more)}
    return [sys.executable, '-m', 'recon.main', f'--config={RF}', f'--workdir={killed}'] + [
        f'--config.{k}={v}' for k, v in args.items()]

  proc = _start(cli())
  deadline = time.time() + 300
  while not checkpoint.saved_steps(killed):
    assert proc.poll() is None, 'the run finished before it could be killed'
    assert time.time() < deadline
    time.sleep(0.002)
  proc.send_signal(signal.SIGKILL)
  proc.wait()
  assert proc.returncode == -signal.SIGKILL
  assert not os.path.exists(os.path.join(killed, 'summary.json'))
  steps = checkpoint.saved_steps(killed)
  assert steps and steps[-1] < 400
  _finish(_start(cli('run.resume=True')))
  summary = json.load(open(os.path.join(killed, 'summary.json')))
  assert summary['resumed_from_step'] in steps
  assert_same_outputs(unbroken, killed)


# Saved models.

def test_random_features_model_round_trip(unbroken, tmp_path):
  model = model_ckpt.load(unbroken)  # a workdir: reads WORKDIR/model
  assert model.kind == 'random_features' and model.n == 4
  assert model.hparams == {'p': 64, 'd': 4, 'activation': 'relu_tanh', 'weight_rng': 'threefry'}
  assert model.extras['v_key'].dtype == np.uint32
  path = str(tmp_path / 'copy')
  model_ckpt.save(path, model)
  again = model_ckpt.load(path)
  for part in ('trained', 'extras', 'truth'):
    jax.tree.map(np.testing.assert_array_equal, getattr(model, part), getattr(again, part))
  assert again.initial is None
  assert sorted(json.load(open(os.path.join(path, 'model.json')))['parts']) == [
      'extras', 'trained', 'truth']


@pytest.mark.slow  # ~5 CPU-s: trains a two-layer net
def test_two_layer_model_round_trip(tmp_path):
  module = networks.TwoLayer(width=16, out_dim=3, activation='tanh')
  x = jax.random.normal(jax.random.PRNGKey(0), (5, 4))
  targets = jax.random.normal(jax.random.PRNGKey(1), (5, 3))
  initial = module.init(jax.random.PRNGKey(2), x)['params']
  trained, _ = train.train(lambda p, z: module.apply({'params': p}, z), initial, x, targets,
                           loss='mse', optimizer=optax.sgd(0.1), max_steps=5, tol=0.0)
  saved = model_ckpt.ModelCheckpoint(
      kind='flax', architecture='TwoLayer', hparams={'width': 16, 'out_dim': 3,
                                                     'activation': 'tanh'},
      trained=trained, initial=initial, truth={'x': x, 'y': targets}, n=5)
  path = str(tmp_path / 'two_layer')
  model_ckpt.save(path, saved)
  loaded = model_ckpt.load(path)
  assert loaded.architecture == 'TwoLayer'
  for part in ('trained', 'initial'):
    jax.tree.map(np.testing.assert_array_equal, getattr(saved, part), getattr(loaded, part))
  assert not np.array_equal(loaded.trained['head']['kernel'], loaded.initial['head']['kernel'])
  out = loaded.module().apply({'params': loaded.trained}, x)
  np.testing.assert_array_equal(out, module.apply({'params': trained}, x))
  # A random-features config cannot attack a TwoLayer: refused in one line, before compute.
  with pytest.raises(errors.ExperimentError, match="victim.name: 'random_features' but "
                     'victim.checkpoint .* holds a TwoLayer'):
    pipelines.run(tiny_config({'victim.checkpoint': path}), str(tmp_path / 'w'))
  assert not os.path.exists(tmp_path / 'w')


def test_random_features_model_with_explicit_v(unbroken, tmp_path):
  """A model whose V was drawn elsewhere is stored as extras['v']; same V, same attack."""
  model = model_ckpt.load(unbroken)
  v = rf_pipeline.rf_problem(model, jnp.float32)['v']
  model.extras = {'v': np.asarray(v)}
  path = str(tmp_path / 'explicit_v')
  model_ckpt.save(path, model)
  np.testing.assert_array_equal(rf_pipeline.rf_problem(model_ckpt.load(path), jnp.float32)['v'], v)


def test_bad_model_checkpoint_is_refused(tmp_path):
  with pytest.raises(errors.ExperimentError, match='victim.checkpoint: no model.json'):
    pipelines.run(tiny_config({'victim.checkpoint': str(tmp_path)}), str(tmp_path / 'w'))


def test_reconstruct_from_model_checkpoint(unbroken, tmp_path):
  """Attacking the saved model gives the unbroken run's outputs; the checkpoint's p, d win."""
  workdir = str(tmp_path / 'from_model')
  summary = pipelines.run(tiny_config({'victim.checkpoint': unbroken, 'victim.p': 999,
                                       'data.d': 7, 'run.checkpoint_every_steps': 100}), workdir)
  assert (summary['config']['victim']['p'], summary['config']['data']['d']) == (64, 4)
  assert_same_outputs(unbroken, workdir)


def test_reconstruct_without_ground_truth(unbroken, tmp_path):
  model = model_ckpt.load(unbroken)
  model.truth, model.n = None, None
  path = str(tmp_path / 'blind_model')
  model_ckpt.save(path, model)
  workdir = str(tmp_path / 'blind')
  summary = pipelines.run(tiny_config({'victim.checkpoint': path}), workdir)
  m = summary['metrics']
  assert m['ground_truth'] is False and 'recon_error' not in m
  assert m['steps'] == 400 and m['n_candidates'] == 4
  assert summary['counting'] == report.BLIND_NOTE
  ref = json.load(open(os.path.join(unbroken, 'summary.json')))
  assert m['final_loss'] == ref['metrics']['final_loss']  # same model, same start
  assert sorted(read_npz(workdir)) == ['x_candidates']


# Across processes (the SIGKILL test above).

def _start(cmd):
  return subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                          text=True, env=subprocess_env(JAX_PLATFORMS='cpu'))


def _finish(proc):
  _, err = proc.communicate(timeout=300)
  assert proc.returncode == 0, err[-3000:]


@pytest.mark.slow  # ~16 CPU-s: three subspace-pipeline runs
def test_resume_of_a_pytree_state_in_another_pipeline(tmp_path):
  """Subspace pipeline, free alpha, Adam (a pytree state): 40 + resume to 60 == 60 at once."""
  from configs import rf_subspace  # pylint: disable=import-outside-toplevel

  def cfg(overrides=None):
    c = rf_subspace.get_config()
    c.update_from_flattened_dict({'attack.subspace.alpha_mode': 'joint', 'attack.optimizer': 'adam', 'attack.lr': 0.01, 'attack.max_steps': 60, 'run.chunk_steps': 20, 'run.log_every_seconds': 1000.0})
    c.update_from_flattened_dict(overrides or {})
    return c

  whole, split = str(tmp_path / 'whole'), str(tmp_path / 'split')
  pipelines.run(cfg(), whole)
  pipelines.run(cfg({'attack.max_steps': 40}), split)
  summary = pipelines.run(cfg({'run.resume': True}), split)
  assert summary['resumed_from_step'] == 40
  assert_same_outputs(whole, split)


def test_restoring_a_state_of_another_layout_is_one_line(tmp_path):
  # E.g. a checkpoint written with SGD restored into an Adam run (or by an older version
  # whose optimiser state had another layout): a one-line ExperimentError, not a traceback.
  from recon.attack import optimiser as optimize  # pylint: disable=import-outside-toplevel
  x = jnp.ones((3, 2))
  loss = lambda xx, prob: jnp.sum(xx ** 2)
  sgd = optimize.init_state(x, optimize.make_optimizer('sgd', 0.1), loss, None, lambda v: v)
  adam = optimize.init_state(x, optimize.make_optimizer('adam', 0.1), loss, None, lambda v: v)
  ck = checkpoint.RunCheckpointer(str(tmp_path), {'seed': 0}, every_steps=1)
  assert ck(sgd._replace(step=jnp.asarray(1, sgd.step.dtype)), [(1, 1.0)], stopped=True)
  ck.close()
  reader = checkpoint.RunCheckpointer(str(tmp_path), {'seed': 0})
  with pytest.raises(errors.ExperimentError, match=r'^run.resume: the checkpoint at step 1 .* '
                     r'another layout') as e:
    reader.restore(adam)
  assert '\n' not in str(e.value)


def test_restore_takes_the_newest_checkpoint(tmp_path):
  state = collections.namedtuple('State', 'x step')
  ck = checkpoint.RunCheckpointer(str(tmp_path), {'a': 1}, every_seconds=0, every_steps=1,
                                  keep=3)
  for step in (1, 2, 3):
    ck(state(jnp.full(3, float(step)), jnp.asarray(step)), [(step, 0.5 ** step)], False)
  ck.close()
  ck = checkpoint.RunCheckpointer(str(tmp_path), {'a': 1}, every_seconds=0, every_steps=1)
  restored, history, step = ck.restore(state(jnp.zeros(3), jnp.asarray(0)))
  ck.close()
  assert step == 3 and history == [(3, 0.125)]
  np.testing.assert_array_equal(restored.x, np.full(3, 3.0))


def test_the_key_tree_of_a_seed_is_the_one_results_were_made_with():
  """Every committed result names its seeds; the key tree (data, model, init) is what makes
  a seed reproducible, so a reordered split would silently change every one of them."""
  keys = runs.split_keys(0)
  data = {name: np.asarray(jax.random.key_data(k) if jax.dtypes.issubdtype(
      k.dtype, jax.dtypes.prng_key) else k).tolist() for name, k in keys.items()}
  assert data == {'data': [1797259609, 2579123966], 'model': [928981903, 3453687069],
                  'init': [4146024105, 2718843009]}


# Escalation (recon/attack/rescue/escalate.py) keeps host-side state (trace of losses, counters, key) that
# rides in the checkpoint like the re-seeder's.
ESCALATE = {'attack.rescue': ('escalate', 'polish'), 'attack.escalate.every': 50,
            'attack.escalate.window': 100, 'attack.escalate.trial_steps': 50,
            'attack.escalate.restart_after': 0, 'run.checkpoint_every_steps': 100}


@pytest.mark.slow  # ~25 CPU-s: the escalation programs compile for this run
def test_resume_with_escalation_after_crash_is_bit_for_bit(tmp_path):
  unbroken = str(tmp_path / 'unbroken')
  pipelines.run(tiny_config(ESCALATE), unbroken)
  # The crash point: the last checkpoint but one (which steps are kept depends on when the
  # escalations fell: 300 and 400 on JAX 0.10, 350 and 400 on JAX 0.12).
  steps = sorted(int(s) for s in os.listdir(checkpoint.checkpoint_dir(unbroken)) if s.isdigit())
  before, last = steps[-2:]
  # An escalation was tried before the crash point: a resumed run that forgot it differs.
  assert _saved_aux(unbroken, before)['escalate']['tried'] >= 1
  workdir = str(tmp_path / 'crashed')
  shutil.copytree(unbroken, workdir)
  shutil.rmtree(os.path.join(workdir, 'checkpoints', str(last)))
  for name in ('summary.json', 'reconstruction.npz'):
    os.remove(os.path.join(workdir, name))
  resumed = pipelines.run(tiny_config({'run.resume': True, **ESCALATE}), workdir)
  assert resumed['resumed_from_step'] == before
  assert_same_outputs(unbroken, workdir)


def test_a_field_resolved_at_run_time_matches_its_unset_value():
  """attack.knows_init None resolves to what the run used (the checkpoint holds that); a set
  value that differs is still a difference."""
  saved = {'attack': {'knows_init': True, 'lr': 0.1}}
  assert checkpoint.config_differences(saved, {'attack': {'knows_init': None, 'lr': 0.1}}) == []
  assert checkpoint.config_differences(saved, {'attack': {'knows_init': False, 'lr': 0.1}}) == [
      'attack.knows_init (True -> False)']


class _Rows(collections.namedtuple('_Rows', 'x step')):
  """A state whose layout (the number of rows) is known only from the checkpoint's aux."""


def _save_rows(workdir, steps, rows, **kw):
  ck = checkpoint.RunCheckpointer(str(workdir), {'a': 1}, every_seconds=0, every_steps=1,
                                  keep=5, **kw)
  for step in steps:
    ck(_Rows(jnp.full(rows, float(step)), jnp.asarray(step)), [(step, 0.5 ** step)], False,
       aux={'rows': rows})
  ck.close()


def test_a_callable_template_is_given_the_aux_saved_with_the_checkpoint(tmp_path):
  """A rescue step's state: its layout is read from the checkpoint's aux before the state is
  restored (the run resumes with 5 rows, not the template's default)."""
  _save_rows(tmp_path, (1, 2), rows=5)
  seen = []

  def template(aux):
    seen.append(aux)
    return _Rows(jnp.zeros(aux['rows']), jnp.asarray(0))

  ck = checkpoint.RunCheckpointer(str(tmp_path), {'a': 1})
  restored, history, step = ck.restore(template)
  ck.close()
  assert seen == [{'rows': 5}] and step == 2 and history == [(2, 0.25)]
  np.testing.assert_array_equal(restored.x, np.full(5, 2.0))
  assert ck.restored_aux == {'rows': 5}


def test_the_time_trigger_saves_once_every_every_seconds(tmp_path, monkeypatch):
  clock = [1000.0]
  monkeypatch.setattr(checkpoint.time, 'monotonic', lambda: clock[0])
  ck = checkpoint.RunCheckpointer(str(tmp_path), {'a': 1}, every_seconds=10.0, every_steps=0)
  saved = []
  for step, t in ((1, 1005.0), (2, 1010.0), (3, 1015.0), (4, 1019.9), (5, 1020.0), (6, 1100.0)):
    clock[0] = t
    saved.append(ck(_Rows(jnp.zeros(2), jnp.asarray(step)), [(step, 1.0)], False))
  ck.close()
  # due at 1010 (10 s after the start), then 10 s after that save (1020), then at 1100.
  assert saved == [False, True, False, False, True, True]
  assert checkpoint.saved_steps(str(tmp_path)) == [5, 6]


def test_read_inputs_is_the_input_record_of_the_newest_readable_checkpoint(tmp_path):
  data = tmp_path / 'rows.npz'
  data.write_bytes(b'first rows')
  ck = checkpoint.RunCheckpointer(str(tmp_path / 'w'), {'data': {'path': str(data)}},
                                  every_seconds=0, every_steps=1, keep=5)
  ck(_Rows(jnp.zeros(2), jnp.asarray(1)), [(1, 1.0)], False)
  ck.close()
  record = checkpoint.read_inputs(str(tmp_path / 'w'))
  assert set(record) == {'data.path'} and record['data.path']['path'] == str(data)
  assert record['data.path']['bytes'] == len(b'first rows')
  # A newer checkpoint whose metadata cannot be read: the older one's record.
  newer = os.path.join(checkpoint.checkpoint_dir(str(tmp_path / 'w')), '2', 'meta')
  shutil.copytree(os.path.dirname(os.path.dirname(newer)) + '/1', os.path.dirname(newer))
  with open(os.path.join(newer, 'metadata'), 'w') as f:
    f.write('{not json')
  assert checkpoint.read_inputs(str(tmp_path / 'w')) == record
  assert checkpoint.read_inputs(str(tmp_path / 'none')) is None


def test_metadata_is_read_as_utf8_whatever_the_locale(tmp_path, monkeypatch):
  """A config naming a non-ASCII path reads back the same under a Latin-1 locale (orbax
  writes it with JSON's ASCII escapes; a writer of raw UTF-8 would fail here)."""
  ck = checkpoint.RunCheckpointer(str(tmp_path), {'name': 'café ☕ /données'}, every_seconds=0,
                                  every_steps=1)
  ck(_Rows(jnp.zeros(2), jnp.asarray(1)), [(1, 1.0)], False)
  ck.close()
  real_open = open

  def latin1_locale(file, mode='r', *args, **kwargs):
    if 'b' not in mode and not args and 'encoding' not in kwargs:
      kwargs['encoding'] = 'latin-1'  # what open() defaults to under such a locale
    return real_open(file, mode, *args, **kwargs)

  monkeypatch.setattr(checkpoint, 'open', latin1_locale, raising=False)
  assert checkpoint.read_config(str(tmp_path)) == {'name': 'café ☕ /données'}


def test_an_unreadable_checkpoint_is_set_aside_under_a_free_name_with_its_reason(
    tmp_path, monkeypatch):
  _save_rows(tmp_path, (1, 2), rows=3)
  warnings = []
  monkeypatch.setattr(checkpoint.logging, 'warning', lambda msg, *a: warnings.append(msg % a))
  aside = tmp_path / 'checkpoints.unreadable'
  os.makedirs(aside / '2')  # a checkpoint of this step set aside before: keep it
  (aside / '2' / 'old').write_text('kept')

  def template(aux):
    if aux['rows'] == 3 and not warnings:
      raise OSError('disk says no\nsecond line of the error')
    return _Rows(jnp.zeros(aux['rows']), jnp.asarray(0))

  ck = checkpoint.RunCheckpointer(str(tmp_path), {'a': 1})
  restored, history, step = ck.restore(template)
  ck.close()
  assert step == 1 and history == [(1, 0.5)]
  assert (aside / '2' / 'old').read_text() == 'kept' and os.path.isdir(aside / '2.1' / 'meta')
  assert checkpoint.saved_steps(str(tmp_path)) == [1]
  src = os.path.join(checkpoint.checkpoint_dir(str(tmp_path)), '2')
  assert warnings == [f'run.resume: skipped the unreadable checkpoint {src} (OSError: disk says '
                      f'no); moved to {aside / "2.1"}']
  assert checkpoint.unreadable_dir(str(tmp_path)) == str(aside)


def test_the_first_signal_asks_an_active_checkpointer_to_save_the_second_stops(tmp_path,
                                                                              monkeypatch):
  import weakref  # pylint: disable=import-outside-toplevel
  from recon.runtime import signals  # pylint: disable=import-outside-toplevel
  monkeypatch.setattr(checkpoint, '_ACTIVE', weakref.WeakSet())  # other tests' left aside
  ck = checkpoint.RunCheckpointer(str(tmp_path), {'a': 1})
  try:
    checkpoint.on_sigint(signal.SIGTERM)  # asks for a save, returns
    assert checkpoint.graceful_stop_pending() and signals.exit_code() == 143
    checkpoint._INTERRUPT['saving'] = True
    checkpoint.on_sigint(signal.SIGINT)  # during a save: the save completes first
    checkpoint._INTERRUPT['saving'] = False
    with pytest.raises(KeyboardInterrupt):
      checkpoint.on_sigint(signal.SIGINT)  # a second signal: at once
    # The interrupt is honoured at the end of the chunk: a checkpoint, then Interrupted.
    with pytest.raises(errors.Interrupted) as e:
      ck(_Rows(jnp.zeros(2), jnp.asarray(7)), [(7, 1.0)], False)
    assert str(e.value) == (f'interrupted at step 7; checkpoint written to '
                            f'{checkpoint.checkpoint_dir(str(tmp_path))}/7; continue with '
                            '--config.run.resume=True and the same --workdir')
    assert e.value.exit_code == 130  # the last signal was SIGINT
    assert checkpoint.saved_steps(str(tmp_path)) == [7] and not checkpoint.graceful_stop_pending()
  finally:
    checkpoint._INTERRUPT.update(requested=False, saving=False)
    signals.reset()
    ck.close()
  with pytest.raises(KeyboardInterrupt):  # no running checkpointer: at once
    checkpoint.on_sigint(signal.SIGINT)
  signals.reset()


def test_a_signal_during_a_save_waits_for_the_save(tmp_path, monkeypatch):
  """A second signal while the checkpoint is being written does not stop the process then
  (no half-written checkpoint): the save completes."""
  import weakref  # pylint: disable=import-outside-toplevel
  from recon.runtime import signals  # pylint: disable=import-outside-toplevel
  monkeypatch.setattr(checkpoint, '_ACTIVE', weakref.WeakSet())
  ck = checkpoint.RunCheckpointer(str(tmp_path), {'a': 1}, every_seconds=0, every_steps=1)
  real, seen = ck._manager.save, []

  def save(*args, **kwargs):
    seen.append(checkpoint._INTERRUPT['saving'])
    checkpoint._INTERRUPT['requested'] = True  # a first signal came meanwhile ...
    try:
      checkpoint.on_sigint(signal.SIGINT)  # ... and a second: no KeyboardInterrupt mid-save
    except KeyboardInterrupt:
      seen.append('stopped mid-save')
    return real(*args, **kwargs)

  ck._manager.save = save
  try:
    assert ck(_Rows(jnp.zeros(2), jnp.asarray(3)), [(3, 1.0)], False)
    assert seen == [True] and not checkpoint._INTERRUPT['saving']
    assert checkpoint.saved_steps(str(tmp_path)) == [3]
  finally:
    checkpoint._INTERRUPT.update(requested=False, saving=False)
    signals.reset()
    ck.close()
