"""The pipelines: every shipped config goes to the pipeline that ran it before the split."""
import importlib.util
import os

import pytest

from recon import pipelines, registry
from recon.config import routes

CONFIGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'configs')

EXPECTED = {
    'kkt_identifiability': 'kkt', 'kkt_synthetic': 'kkt', 'resnet': 'networks',
    'rf_digits': 'random_features', 'rf_logistic': 'networks',
    'rf_phase_transition': 'random_features', 'rf_subspace': 'subspace',
    'rf_synthetic': 'random_features', 'two_layer': 'networks', 'two_layer_subspace': 'subspace',
    'vit': 'networks', 'rf_faces': 'random_features', 'rf_cifar': 'random_features',
    'kkt_haim': 'kkt', 'base': 'random_features', 'audit': 'networks',
    'leak_width': 'leak_width', 'federated': 'federated',
}


def _config(name):
  spec = importlib.util.spec_from_file_location(f'_cfg_{name}', os.path.join(CONFIGS, name + '.py'))
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module.get_config()


def test_every_config_file_is_listed():
  names = {f[:-3] for f in os.listdir(CONFIGS) if f.endswith('.py')}
  assert names == set(EXPECTED)


@pytest.mark.parametrize('name', sorted(EXPECTED))
def test_pipeline_for_config(name):
  cfg = _config(name)
  assert pipelines.pipeline_for(cfg) is registry.lookup('pipeline', EXPECTED[name])
  assert routes.pipeline_name(cfg) == EXPECTED[name]


def test_every_pipeline_is_registered_with_run():
  assert set(registry.names('pipeline')) == set(EXPECTED.values())
  for _, pipeline in registry.items('pipeline'):
    assert callable(pipeline.run)


@pytest.mark.parametrize('victim,objective,accepted', [
    ('two_layer', 'kkt_binary', 'projection, unified'),
    ('homogeneous_mlp', 'unified', 'kkt_binary, kkt_general, kkt_multiclass, projection'),
])
def test_an_objective_that_does_not_take_the_victim_is_refused(victim, objective, accepted):
  cfg = _config('base')
  cfg.victim.name, cfg.attack.objective = victim, objective
  with pytest.raises(Exception, match=f"^attack.objective: '{objective}' does not attack "
                     f"victim.name '{victim}'; accepted for that victim: {accepted}$"):
    routes.pipeline_name(cfg)
