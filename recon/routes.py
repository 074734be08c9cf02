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
  """True for attack.objective 'unified', or any subspace / free alpha.

  configs/two_layer_subspace.py sets the objective; configs/two_layer.py (objective
  'projection') runs the generic network pipeline (recon/pipelines/networks.py) instead.
  """
  return (cfg.attack.objective == 'unified' or cfg.attack.subspace != 'none'
          or cfg.attack.alpha_mode != 'closed_form')


def pipeline_name(cfg: ml_collections.ConfigDict) -> str:
  """The name of the pipeline that runs `cfg` (a resolved config); one-line error if none."""
  if uses_subspace_pipeline(cfg):
    return SUBSPACE
  if cfg.victim.name == 'random_features':
    return RANDOM_FEATURES
  if cfg.victim.name == 'homogeneous_mlp':
    return KKT
  if cfg.victim.name in config_lib.NETWORK_MODELS:
    return NETWORKS
  raise ExperimentError(f'victim.name: unknown name {cfg.victim.name!r}; accepted: '
                        f'{", ".join(config_lib.MODELS)}')
