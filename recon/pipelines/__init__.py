"""The pipelines and the registry from a config to the one that runs it.

  random_features  theta* = Phi^+ y of a random-features model (projection attack)
  networks         last layer of a GD-trained Flax network (two_layer, resnet, vit, ...)
  subspace         unified objective inside a known / estimated data subspace
  kkt              KKT conditions of a homogeneous MLP trained toward max margin

Each module has `run(cfg, workdir, dtype, resuming)`; `pipeline_for(cfg)` picks it
(by `recon.routes.pipeline_name`) and `run(config, workdir)` is the single-run entry
point behind `recon.main`: resolve the config, refuse bad input before compute,
apply the workdir rules, hand over to the pipeline.
"""
from __future__ import annotations

from types import ModuleType
from typing import Any, Dict

import ml_collections

from recon import memory, precision, restarts, routes, runs, victims
from recon.pipelines import kkt, networks, random_features, subspace

PIPELINES: Dict[str, ModuleType] = {
    routes.SUBSPACE: subspace,
    routes.RANDOM_FEATURES: random_features,
    routes.KKT: kkt,
    routes.NETWORKS: networks,
}


def pipeline_for(cfg: ml_collections.ConfigDict) -> ModuleType:
  """The pipeline module that runs `cfg` (a resolved config)."""
  return PIPELINES[routes.pipeline_name(cfg)]


def run(config: ml_collections.ConfigDict, workdir: str) -> Dict[str, Any]:
  """Runs one reconstruction (the pipeline `pipeline_for` names); returns the summary."""
  cfg = victims.resolve(config)
  memory.check(cfg)  # with a saved model's n, p, d adopted (recon/memory.py)
  subspace.check(cfg)
  victims.check_model_checkpoint(cfg)
  restarts.check_config(cfg)
  pipeline = pipeline_for(cfg)
  if pipeline is networks:
    networks.check_config(cfg)
  resuming = runs.prepare_run_workdir(workdir, cfg)
  dtype = runs.set_dtype(cfg.run.dtype)
  precision.apply_matmul_precision(cfg.run.matmul_precision)  # every program of the run
  return pipeline.run(cfg, workdir, dtype, resuming=resuming)
