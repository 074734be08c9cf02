"""The registry: every shipped config goes to the pipeline that ran it before the split."""
import importlib.util
import os

import pytest

from recon import pipelines, routes

CONFIGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'configs')

EXPECTED = {
    'kkt_identifiability': 'kkt', 'kkt_synthetic': 'kkt', 'resnet': 'networks',
    'rf_digits': 'random_features', 'rf_logistic': 'networks',
    'rf_phase_transition': 'random_features', 'rf_subspace': 'subspace',
    'rf_synthetic': 'random_features', 'two_layer': 'networks', 'two_layer_subspace': 'subspace',
    'vit': 'networks', 'rf_faces': 'random_features', 'rf_cifar': 'random_features',
    'kkt_haim': 'kkt', 'base': 'random_features',
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
  assert pipelines.pipeline_for(cfg) is pipelines.PIPELINES[EXPECTED[name]]
  assert routes.pipeline_name(cfg) == EXPECTED[name]


def test_every_pipeline_has_run():
  for module in pipelines.PIPELINES.values():
    assert callable(module.run)
