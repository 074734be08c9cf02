"""The registry: names registered once, looked up everywhere; a toy victim and a toy
objective registered from this file run end to end through recon.main."""
import json
import os

import flax.linen as nn
import jax.numpy as jnp
import pytest

from configs import base
from recon.config import routes
from recon.config import validate as config_lib
from recon import main, pipelines, registry  # noqa: F401  (pipelines: built-ins)
from recon.models import features
from recon.objectives import projection


def test_every_builtin_name_is_registered_once():
  assert set(registry.names('victim')) == {'random_features', 'random_features_gd', 'two_layer',
                                           'resnet', 'vit', 'homogeneous_mlp', 'flax_module',
                                           'torch_mlp'}
  assert set(registry.names('objective')) == {'projection', 'unified', 'kkt_binary',
                                              'kkt_multiclass', 'kkt_general'}
  assert {'synthetic_sphere', 'synthetic_subspace', 'digits', 'cifar10', 'mnist', 'lfw_faces',
          'photo_patches'} <= set(registry.names('dataset'))
  assert set(registry.names('pipeline')) == {'random_features', 'networks', 'kkt', 'subspace',
                                             'leak_width'}


def test_a_second_registration_of_a_name_is_refused():
  entry = registry.lookup('victim', 'two_layer')
  registry.register('victim', 'two_layer', entry)  # the same entry again: a no-op
  with pytest.raises(registry.RegistryError, match="^victim 'two_layer': registered twice"):
    registry.register('victim', 'two_layer', registry.Victim(pipeline='networks'))


def test_an_unknown_name_is_one_line_with_the_closest_and_the_accepted():
  with pytest.raises(registry.RegistryError,
                     match=r"^victim.name: unknown name 'two_layr' \(did you mean two_layer\?\); "
                           'accepted: flax_module, homogeneous_mlp, random_features, '):
    registry.lookup('victim', 'two_layr')
  with pytest.raises(registry.RegistryError, match='^registry kind'):
    registry.names('optimiser')


def test_the_config_accepts_exactly_the_registered_names():
  c = base.get_config()
  c.victim.name = 'toy_net'
  with pytest.raises(config_lib.ConfigError, match="^config.victim.name: invalid value 'toy_net'"):
    config_lib.validate(c)
  with registry.registered('victim', 'toy_net', registry.Victim(pipeline='networks')):
    config_lib.validate(c)
  assert 'toy_net' not in registry.names('victim')


def test_architectures_come_from_the_victims():
  archs = registry.architectures()
  assert set(archs) == {'TwoLayer', 'RandomFeatures', 'ResNet', 'ViT', 'HomogeneousMLP'}
  assert registry.victims_with_architecture('TwoLayer') == ('two_layer',)


# -- A toy victim and a toy objective, registered here, run through recon.main. ----------

class ToyNet(nn.Module):
  """f(x) = W_head s(W_1 x + b_1): a network recon has never heard of (a hidden bias)."""
  width: int
  out_dim: int = 1
  activation: str = 'relu_tanh'

  @nn.compact
  def __call__(self, x):
    h = features.make_activation(self.activation)(nn.Dense(self.width, name='hidden')(x))
    return nn.Dense(self.out_dim, use_bias=False, name='head')(h)


CALLS = {'objective': 0, 'build': 0}


def toy_loss(features, target, jitter):
  """||theta - Phi^T a||^2 / ||theta||^2 with a the ridge least-squares coefficients,
  written here with a plain solve (the library's projection loss has a custom JVP)."""
  CALLS['objective'] += 1
  features, target = jnp.asarray(features), jnp.asarray(target)
  gram = features @ features.T + jitter * jnp.eye(features.shape[0], dtype=features.dtype)
  coef = jnp.linalg.solve(gram, features @ target)
  residual = target - features.T @ coef
  return jnp.vdot(residual, residual) / jnp.vdot(target, target)


def toy_build(victim, num_classes):
  CALLS['build'] += 1
  return ToyNet(victim.width, num_classes, victim.activation)


@pytest.fixture
def toys():
  with registry.registered('victim', 'toy_net', registry.Victim(
      pipeline='networks', architecture=ToyNet, build=toy_build,
      checkpoint_fields={'width': 'victim.width', 'out_dim': 'data.num_classes',
                         'activation': 'victim.activation'})), \
      registry.registered('objective', 'toy_projection', registry.Objective(
          loss=toy_loss, pipelines=('networks',))):
    yield


def _toy_config():
  c = base.get_config()
  c.name = 'toy'
  c.data.n, c.data.d = 4, 8
  c.victim.name, c.victim.width = 'toy_net', 320  # p_L = 320 = 10 dn
  c.victim.train.max_steps = 2000
  c.attack.objective = 'toy_projection'
  c.attack.max_steps = 3000
  c.attack.rescue = ('escalate',)
  c.run.dtype = 'float64'
  return c


@pytest.mark.slow
def test_toy_victim_and_objective_run_end_to_end_through_main(toys, tmp_path):
  CALLS.update(objective=0, build=0)
  c = _toy_config()
  assert routes.pipeline_name(c) == 'networks'
  work = tmp_path / 'run'
  assert main.execute(c, str(work)) == 0
  assert CALLS['build'] >= 1 and CALLS['objective'] >= 1  # both looked up, not a built-in
  summary = json.loads((work / 'summary.json').read_text())
  metrics = summary['metrics']
  assert metrics['model'] == 'toy_net'
  assert metrics['frac_recovered'] == 1.0, metrics['recon_error']
  saved = json.loads((work / 'model' / 'model.json').read_text())
  assert saved['architecture'] == 'ToyNet' and saved['hparams']['width'] == 320
  # The saved toy model is attacked again as a checkpoint (its fields adopted).
  c2 = _toy_config()
  c2.victim.checkpoint = str(work / 'model')
  c2.victim.width = 7  # replaced by the checkpoint's 320
  assert main.execute(c2, str(tmp_path / 'again')) == 0
  again = json.loads((tmp_path / 'again' / 'summary.json').read_text())
  assert again['metrics']['width'] == 320
  assert again['metrics']['frac_recovered'] == 1.0


def test_the_toy_objective_equals_the_projection_loss():
  import numpy as np  # pylint: disable=import-outside-toplevel
  rng = np.random.default_rng(0)
  phi, theta = rng.normal(size=(3, 40)), rng.normal(size=40)
  assert float(toy_loss(phi, theta, 1e-9)) == pytest.approx(
      float(projection.projection_loss(phi, theta, 1e-9)), rel=1e-6)


@pytest.mark.slow  # compiles and runs an attack (over ~3 s)
def test_the_toy_victim_and_objective_sweep_with_no_more_code(toys, tmp_path):
  """A registered network victim is vectorised by `recon.sweep.networks` as it stands."""
  CALLS.update(objective=0, build=0)
  c = _toy_config()
  c.run.dtype = 'float32'
  c.victim.width = 40
  c.attack.max_steps, c.attack.rescue, c.run.chunk_steps = 200, (), 100
  c.sweep.seed = (0, 1)
  assert main.execute(c, str(tmp_path / 'sweep')) == 0
  out = json.loads((tmp_path / 'sweep' / 'sweep.json').read_text())
  assert [(r['seed'], r['model'], r['steps']) for r in out['records']] == [
      (0, 'toy_net', 200), (1, 'toy_net', 200)]
  assert CALLS['build'] >= 1 and CALLS['objective'] >= 1
