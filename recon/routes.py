"""Which pipeline a config takes, by name (no pipeline is imported here).

The registry `recon.pipelines` maps these names to modules; the lower layers
(`recon.victims`) ask this module, so they never import a pipeline.
"""
from __future__ import annotations

import ml_collections

from recon import config as config_lib
from recon.errors import ExperimentError

SUBSPACE = 'subspace'
RANDOM_FEATURES = 'random_features'
KKT = 'kkt'
NETWORKS = 'networks'


def uses_subspace_pipeline(cfg: ml_collections.ConfigDict) -> bool:
  """True for a config with a `subspace` field and model two_layer, or any subspace / free alpha.

  A two_layer config without the `subspace` field (configs/two_layer.py) runs the
  generic network pipeline (recon/pipelines/networks.py) instead.
  """
  return ((cfg.model == 'two_layer' and cfg.get('subspace') is not None)
          or cfg.get('subspace', 'none') != 'none'
          or cfg.get('alpha_mode', 'closed_form') != 'closed_form')


def pipeline_name(cfg: ml_collections.ConfigDict) -> str:
  """The name of the pipeline that runs `cfg` (a resolved config); one-line error if none."""
  if uses_subspace_pipeline(cfg):
    return SUBSPACE
  if cfg.model == 'random_features':
    return RANDOM_FEATURES
  if cfg.model == 'homogeneous_mlp':
    return KKT
  if cfg.model in config_lib.NETWORK_MODELS:
    return NETWORKS
  raise ExperimentError(f'model: unknown name {cfg.model!r}; accepted: '
                        f'{", ".join(config_lib.MODELS)}')
