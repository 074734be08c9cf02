"""The pipelines, and the single-run entry point from a config to the one that runs it.

  random_features  theta* = Phi^+ y of a random-features model (projection attack)
  networks         last layer of a GD-trained Flax network (two_layer, resnet, vit, ...)
  subspace         unified objective inside a known / estimated data subspace
  kkt              KKT conditions of a homogeneous MLP trained toward max margin

The leak-width pipeline (no attack: the width at which the described model leaks, predicted
from shadow problems; `pipeline = 'leak_width'`) is the audit's: recon/audit/leak_width.py.

Each module registers a `registry.Pipeline` (its `run(spec, workdir, dtype, resuming)` and
its checks) under its name; `pipeline_for(cfg)` looks up the one `recon.config.routes.pipeline_name`
names, and `run(spec, workdir)` is the single-run entry point behind `recon.main`: the run's
frozen spec (`recon.config.sections.RunSpec`, read once by `recon.execution`; a ConfigDict is
resolved into one here), bad input refused before compute, the workdir rules applied, handed
over. Below the entry, builders take their typed sections, never the whole config.
"""
from __future__ import annotations

from typing import Any, Dict, Union

import ml_collections

from recon import registry
from recon.runtime import runs
from recon.attack import memory
from recon.models import min_norm as precision
from recon.attack import restarts
from recon.config import routes, sections
from recon.pipelines import victims
# Importing the pipelines registers them (and, through them, every built-in victim,
# objective and data set).
from recon.pipelines import (federated, kkt, networks, random_features, subspace)  # noqa: F401  pylint: disable=unused-import


def pipeline_for(cfg: Any) -> registry.Pipeline:
  """The registered pipeline that runs `cfg` (a resolved config or its RunSpec)."""
  return registry.lookup('pipeline', routes.pipeline_name(cfg))


def run(config: Union[ml_collections.ConfigDict, sections.RunSpec], workdir: str,
        validated: bool = False) -> Dict[str, Any]:
  """Runs one reconstruction (the pipeline `pipeline_for` names); returns the summary.
  `config`: the run's RunSpec (`recon.execution` resolves and validates the config once into
  it), or a ConfigDict, resolved here (`validated`: it has passed
  `recon.config.validate.validate`)."""
  cfg = config if isinstance(config, sections.RunSpec) else sections.RunSpec.from_config(
      victims.resolve(config, validated=validated))
  if cfg.pipeline is not None:  # a named pipeline (leak_width) attacks nothing: its own checks
    pipeline = pipeline_for(cfg)
    pipeline.check_sections(data=cfg.data, victim=cfg.victim, attack=cfg.attack,
                            leak_width=cfg.leak_width, run=cfg.run)
    resuming = runs.prepare_run_workdir(workdir, cfg.run, cfg.victim.checkpoint, cfg.to_dict())
    return pipeline.run(cfg, workdir, runs.set_dtype(cfg.run.dtype), resuming=resuming)
  victims.check_model_checkpoint(cfg.victim, cfg.attack)
  memory.check(cfg.data, cfg.victim, cfg.attack, cfg.run.dtype)  # with a saved model's n, p, d adopted (recon/attack/memory.py)
  restarts.check_config(cfg.attack, cfg.victim)
  pipeline = pipeline_for(cfg)
  victims.check_victim(cfg.victim)
  subspace.check(cfg.data, cfg.victim, cfg.attack)  # the subspace fields, whichever pipeline runs
  if pipeline.check is not subspace.check:
    pipeline.check_sections(data=cfg.data, victim=cfg.victim, attack=cfg.attack,
                            leak_width=cfg.leak_width, run=cfg.run)
  resuming = runs.prepare_run_workdir(workdir, cfg.run, cfg.victim.checkpoint, cfg.to_dict())
  dtype = runs.set_dtype(cfg.run.dtype)
  precision.apply_matmul_precision(cfg.run.matmul_precision)  # every program of the run
  return pipeline.run(cfg, workdir, dtype, resuming=resuming)
