"""Which pipeline runs a config: a lookup in the registry, never a list of names.

The objective's registered pipeline when it owns one (the KKT conditions, the unified
subspace objective; a subspace search or a free alpha also take the subspace pipeline),
else the victim's. The pipelines register their runners under these names
(recon/pipelines); nothing here imports them, so the lower layers (`recon.pipelines.victims`) can ask.
"""
from __future__ import annotations

import ml_collections

from recon import registry
from recon.errors import ExperimentError

SUBSPACE = 'subspace'
RANDOM_FEATURES = 'random_features'
KKT = 'kkt'
NETWORKS = 'networks'


def uses_subspace_pipeline(attack: ml_collections.ConfigDict) -> bool:
  """True for attack.objective 'unified', or a subspace search / free alpha
  (attack.subspace.mode, attack.subspace.alpha_mode; `attack`: the attack section).

  configs/two_layer_subspace.py sets the objective; configs/two_layer.py (objective
  'projection') runs the generic network pipeline (recon/pipelines/networks.py) instead.
  """
  return (registry.lookup('objective', attack.objective).pipeline == SUBSPACE
          or attack.subspace.mode != 'none' or attack.subspace.alpha_mode != 'closed_form')


def victim_pipeline(name: str) -> str:
  """The pipeline that trains and attacks the victim registered under `name` (victim.name)."""
  return registry.lookup('victim', name).pipeline


def pipeline_name(cfg: ml_collections.ConfigDict) -> str:
  """The name of the pipeline that runs `cfg` (a resolved config): `cfg.pipeline` when set
  (leak_width), else the objective's or victim's; one-line error when the objective does not
  take this victim."""
  if cfg.pipeline is not None:
    registry.lookup('pipeline', cfg.pipeline)  # one line naming the registered ones
    return cfg.pipeline
  victim = victim_pipeline(cfg.victim.name)
  objective = registry.lookup('objective', cfg.attack.objective)
  if victim not in objective.pipelines:
    takes = sorted(name for name, o in registry.items('objective') if victim in o.pipelines)
    raise ExperimentError(
        f'attack.objective: {cfg.attack.objective!r} does not attack victim.name '
        f'{cfg.victim.name!r}; accepted for that victim: {", ".join(takes)}')
  if uses_subspace_pipeline(cfg.attack):
    return SUBSPACE
  return objective.pipeline or victim
