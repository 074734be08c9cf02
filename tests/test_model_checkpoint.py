"""Saved Flax models (recon.models.saved) and attacking them with victim.checkpoint."""
import json
import os
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon import errors, pipelines
from recon.models import homogeneous, networks
from recon.models import saved as model_ckpt
from conftest import subprocess_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TWO_LAYER = os.path.join(ROOT, 'configs', 'two_layer.py')

# Tiny two_layer run: trains in a few dozen steps, attacks for 100.
TINY = {'victim.width': 24, 'victim.train.max_steps': 500, 'attack.max_steps': 100,
        'run.chunk_steps': 50, 'run.log_every_seconds': 1000.0,
        'run.checkpoint_every_seconds': 0.0}


def two_layer_config(overrides=None):
  from configs import two_layer  # pylint: disable=import-outside-toplevel
  cfg = two_layer.get_config()
  cfg.update_from_flattened_dict({**TINY, **(overrides or {})})
  return cfg


def same_trees(a, b):
  assert jax.tree.structure(a) == jax.tree.structure(b)
  jax.tree.map(np.testing.assert_array_equal, a, b)


def without_wall_time(metrics):
  return {k: v for k, v in metrics.items() if k != 'wall_seconds'}


# Round trips, one per registered architecture.

ARCHS = {
    'TwoLayer': (lambda: networks.TwoLayer(8, 2, 'tanh'), (6,)),
    'RandomFeatures': (lambda: networks.RandomFeatures(8, 1, 'relu'), (6,)),
    'ResNet': (lambda: networks.ResNet(4, 2, depth=1, pool='mean'), (4, 4, 1)),
    'ViT': (lambda: networks.ViT(8, 2, depth=1, patch_size=2, num_heads=2, head_init='zeros'),
            (4, 4, 1)),
    'HomogeneousMLP': (lambda: homogeneous.HomogeneousMLP(widths=(5, 5), out_dim=3,
                                                          activation='cubic',
                                                          init_scale=0.3), (6,)),
}


def test_every_architecture_is_registered():
  assert sorted(ARCHS) == sorted(model_ckpt.architectures())


@pytest.mark.parametrize('name', sorted(ARCHS))
def test_flax_round_trip(name, tmp_path):
  make, shape = ARCHS[name]
  module = make()
  x = jax.random.normal(jax.random.PRNGKey(0), (3,) + shape)
  # Random arrays of the module's variable shapes (eval_shape: no slow eager init).
  shapes = jax.eval_shape(module.init, jax.random.PRNGKey(1), x)
  leaves, tree = jax.tree.flatten(shapes)
  rng = np.random.default_rng(2)
  fill = lambda: jax.tree.unflatten(tree, [  # noqa: E731
      rng.standard_normal(l.shape).astype(l.dtype) for l in leaves])
  variables, moved = fill(), fill()
  initial, trained = variables['params'], moved['params']
  others = {k: v for k, v in variables.items() if k != 'params'}
  saved = model_ckpt.flax_model(module, trained, initial, collections=others or None, n=3,
                                data_description={'input_shape': list(shape)},
                                info={'train': {'steps': 7}})
  path = str(tmp_path / name)
  model_ckpt.save(path, saved)
  meta = json.load(open(os.path.join(path, 'model.json')))
  assert meta['architecture'] == name and meta['data'] == {'input_shape': list(shape)}
  loaded = model_ckpt.load(path)
  assert loaded.module() == module  # hparams rebuild the same module
  same_trees(trained, loaded.trained)
  same_trees(initial, loaded.initial)
  same_trees(others, loaded.collections())
  model_ckpt.check_params(loaded, x[:1])
  if name in ('TwoLayer', 'RandomFeatures'):  # cheap to run eagerly
    out = loaded.module().apply({'params': loaded.trained, **loaded.collections()}, x)
    np.testing.assert_array_equal(out, module.apply({'params': trained, **others}, x))
  assert loaded.info == {'train': {'steps': 7}} and loaded.n == 3


def test_check_params_rejects_a_wrong_tree(tmp_path):
  module = networks.TwoLayer(8)
  params = module.init(jax.random.PRNGKey(0), jnp.zeros((1, 6)))['params']
  model = model_ckpt.flax_model(networks.TwoLayer(9), params)  # hparams disagree with params
  with pytest.raises(model_ckpt.ModelCheckpointError, match='trained parameters do not fit'):
    model_ckpt.check_params(model, jnp.zeros((1, 6)))
  rf_module = networks.RandomFeatures(8)
  rf_params = rf_module.init(jax.random.PRNGKey(0), jnp.zeros((1, 6)))['params']
  rf = model_ckpt.flax_model(rf_module, rf_params)  # no 'constants' (V)
  with pytest.raises(model_ckpt.ModelCheckpointError, match="lacks 'constants'"):
    model_ckpt.check_params(rf, jnp.zeros((1, 6)))


def test_non_default_initialiser_is_refused():
  module = networks.TwoLayer(8, hidden_init=jax.nn.initializers.zeros)
  with pytest.raises(model_ckpt.ModelCheckpointError, match='hidden_init is not its default'):
    model_ckpt.flax_hparams(module)


# Attacking a saved two-layer net.

@pytest.fixture(scope='module')
def trained_run(tmp_path_factory):
  """A tiny two_layer run that trains its net and saves it to WORKDIR/model."""
  workdir = str(tmp_path_factory.mktemp('trained'))
  summary = pipelines.run(two_layer_config(), workdir)
  return workdir, summary


def test_run_saves_its_model_without_the_data(trained_run):
  workdir, _ = trained_run
  meta = json.load(open(os.path.join(workdir, 'model', 'model.json')))
  assert meta['kind'] == 'flax' and meta['architecture'] == 'TwoLayer'
  assert meta['hparams'] == {'width': 24, 'out_dim': 2, 'activation': 'relu_tanh',
                             'head_init': 'fan_in'}
  assert sorted(meta['parts']) == ['initial', 'trained']  # no truth: the data is not saved
  assert meta['data']['input_shape'] == [10] and meta['data']['n'] == 5
  assert meta['data']['config']['dataset'] == 'synthetic_sphere'
  assert meta['info']['train']['train_steps'] > 0


def test_reconstruct_from_saved_two_layer_matches_the_training_run(trained_run, tmp_path):
  workdir, trained = trained_run
  # The checkpoint's architecture wins over the config's (width 7 -> 24).
  summary = pipelines.run(two_layer_config({'victim.checkpoint': workdir, 'victim.width': 7}),
                           str(tmp_path / 'attack'))
  assert summary['config']['victim']['width'] == 24
  assert without_wall_time(summary['metrics']) == without_wall_time(trained['metrics'])
  with np.load(os.path.join(workdir, 'reconstruction.npz')) as a, np.load(
      str(tmp_path / 'attack' / 'reconstruction.npz')) as b:
    np.testing.assert_array_equal(a['x_candidates'], b['x_candidates'])
  # The attacked model is kept next to the run (for resume and audit).
  same_trees(model_ckpt.load(workdir).trained, model_ckpt.load(str(tmp_path / 'attack')).trained)


@pytest.mark.slow  # ~9 CPU-s
def test_resume_reads_the_saved_model_instead_of_training(trained_run, tmp_path):
  """50 steps, then resume to 100: the training run's metrics; the first half's train_seconds
  shows the net was read back from WORKDIR/model, not retrained."""
  workdir, trained = trained_run
  split = str(tmp_path / 'split')
  first = pipelines.run(two_layer_config({'attack.max_steps': 50}), split)
  summary = pipelines.run(two_layer_config({'run.resume': True}), split)
  assert summary['resumed_from_step'] == 50
  assert summary['metrics']['train_seconds'] == first['metrics']['train_seconds']
  drop = lambda m: {k: v for k, v in m.items() if k not in ('wall_seconds', 'train_seconds')}
  assert drop(summary['metrics']) == drop(trained['metrics'])


def test_trained_params_only(trained_run, tmp_path):
  """No initial params: attack.knows_init=False works, the delta target is refused."""
  workdir, _ = trained_run
  model = model_ckpt.load(workdir)
  model.initial = None
  path = str(tmp_path / 'trained_only')
  model_ckpt.save(path, model)
  for overrides, field in [({'attack.knows_init': True}, 'attack.knows_init'),
                           ({'attack.knows_init': False, 'attack.jacobian_at': 'midpoint'},
                            'attack.jacobian_at')]:
    with pytest.raises(errors.ExperimentError) as err:
      pipelines.run(two_layer_config({'victim.checkpoint': path, **overrides}), str(tmp_path / 'w'))
    message = str(err.value)
    assert message.startswith(f'{field}: ') and "no initial parameters (part 'initial')" in message
    assert '\n' not in message and not os.path.exists(tmp_path / 'w')
  # attack.knows_init unset: no initial parameters given, so none are used (not refused).
  summary = pipelines.run(two_layer_config({'victim.checkpoint': path}), str(tmp_path / 'ok'))
  assert summary['metrics']['ground_truth'] is True and summary['metrics']['steps'] == 100
  assert 'theta = vec(W_head(T))' in summary['threat_model']['target']


def test_foreign_model_gives_blind_metrics(trained_run, tmp_path):
  """A model that records no data fields (brought by a user): blind metrics only."""
  workdir, trained = trained_run
  model = model_ckpt.load(workdir)
  model.data, model.info = {'input_shape': [10]}, {}
  path = str(tmp_path / 'foreign')
  model_ckpt.save(path, model)
  summary = pipelines.run(two_layer_config({'victim.checkpoint': path}), str(tmp_path / 'blind'))
  m = summary['metrics']
  assert m['ground_truth'] is False and 'recon_error' not in m
  assert m['final_loss'] == trained['metrics']['final_loss']  # same net, same start


@pytest.mark.slow  # up to ~6 CPU-s a case
@pytest.mark.parametrize('setup,config,message', [
    ('empty', {}, 'victim.checkpoint: no model.json in'),
    ('resnet', {}, "victim.name: 'two_layer' but victim.checkpoint .* holds a ResNet"),
    ('no_arrays', {}, 'victim.checkpoint: no arrays/ folder'),
    ('wrong_width', {}, 'victim.checkpoint: trained parameters do not fit a TwoLayer'),
    ('homogeneous', {'attack.kkt.target': 'delta'}, "kkt.target: 'delta' attacks"),
    ('subspace', {}, 'subspace.mode: the subspace pipeline attacks dW2'),
    ('subspace_known', {}, "subspace.mode: 'known' needs the training data's subspace"),
])
def test_bad_checkpoints_are_refused_in_one_line(trained_run, tmp_path, setup, config, message):
  workdir, _ = trained_run
  path = str(tmp_path / 'model')
  cfg = two_layer_config({'victim.checkpoint': path, **config})
  if setup == 'empty':
    os.makedirs(path)
  elif setup == 'resnet':
    module = networks.ResNet(4, 2, depth=1)
    x = jnp.zeros((1, 4, 4, 1))
    model_ckpt.save(path, model_ckpt.flax_model(module, module.init(
        jax.random.PRNGKey(0), x)['params'], data_description={'input_shape': [4, 4, 1]}))
  elif setup == 'no_arrays':
    model_ckpt.save(path, model_ckpt.load(workdir))
    import shutil  # pylint: disable=import-outside-toplevel
    shutil.rmtree(os.path.join(path, 'arrays'))
  elif setup == 'wrong_width':
    model = model_ckpt.load(workdir)
    model.hparams = dict(model.hparams, width=25)
    model_ckpt.save(path, model)
  elif setup == 'homogeneous':
    from configs import kkt_synthetic  # pylint: disable=import-outside-toplevel
    cfg = kkt_synthetic.get_config()
    cfg.update_from_flattened_dict({'victim.checkpoint': path, 'attack.kkt.target': 'delta',
                                    'run.dtype': 'float32'})
    module = homogeneous.HomogeneousMLP(widths=(40,), activation='cubic', init_scale=0.2)
    model_ckpt.save(path, model_ckpt.flax_model(module, module.init(
        jax.random.PRNGKey(0), jnp.zeros((1, 8)))['params']))  # no initial params
  elif setup in ('subspace', 'subspace_known'):
    from configs import two_layer_subspace  # pylint: disable=import-outside-toplevel
    cfg = two_layer_subspace.get_config()
    cfg.victim.checkpoint = path
    module = networks.TwoLayer(192, 1, 'relu_tanh')
    params = module.init(jax.random.PRNGKey(0), jnp.zeros((1, 64)))['params']
    if setup == 'subspace':
      model_ckpt.save(path, model_ckpt.flax_model(module, params))  # no initial params
    else:  # initial params present, but no record of the data's subspace
      cfg.attack.subspace.mode = 'known'
      model_ckpt.save(path, model_ckpt.flax_model(module, params, params))
  target = str(tmp_path / 'run')
  with pytest.raises(errors.ExperimentError, match=message) as err:
    pipelines.run(cfg, target)
  assert '\n' not in str(err.value)
  if setup not in ('no_arrays', 'wrong_width'):  # refused from model.json alone: nothing written
    assert not os.path.exists(target)


@pytest.mark.slow  # a CLI subprocess (the in-process attack of a saved model is above)
def test_cli_attacks_a_saved_two_layer_model(trained_run, tmp_path):
  workdir, trained = trained_run
  out = str(tmp_path / 'cli')
  args = [f'--config.{k}={v}' for k, v in TINY.items()]
  cmd = [sys.executable, '-m', 'recon.main', f'--config={TWO_LAYER}', f'--workdir={out}',
         f'--config.victim.checkpoint={workdir}'] + args
  env = subprocess_env(JAX_PLATFORMS='cpu')
  proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, env=env, timeout=300)
  assert proc.returncode == 0, proc.stderr[-3000:]
  summary = json.load(open(os.path.join(out, 'summary.json')))
  assert summary['config']['victim']['checkpoint'] == workdir
  assert without_wall_time(summary['metrics']) == without_wall_time(trained['metrics'])
  # A bad victim.checkpoint on the command line: tests/test_config.py (exit 2, one line).
