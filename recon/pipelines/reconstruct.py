"""The shared tail of every pipeline: optimise (`recon.attack.driver`), then score and write
(`recon.report.scoring`). The config stops here: scoring and the certificate receive the typed
settings `scoring` / `certify_settings` read from it."""
from __future__ import annotations

import time
from typing import Any, Dict, Optional

import jax
import ml_collections
import numpy as np

from recon.attack import driver
from recon.certify import rung as polish
from recon.report import scoring as report
from recon.attack.rescue import pursuit as pursuit_lib
from recon.attack.plan import Attack
from recon.config import sections

Array = jax.Array


def certify_settings(cfg: ml_collections.ConfigDict) -> Dict[str, Any]:
  """`recon.certify.rung.certify_or_polish`'s settings from the run's config: attack.tol, the
  victim's p and activation, n when the attacker knows it (attack.knows_n), the duplicate
  threshold run.recovered_threshold, the rung on while 'polish' is in attack.rescue with the
  attack.polish section whole, the Jacobian method attack.certify_jacobian, the rung's size cap from
  run.sweep_memory_budget_gb; candidates on the sphere of radius sqrt(d); the rung's key
  derived from the seed."""
  return dict(
      tol=cfg.attack.tol, p=int(cfg.victim.p), activation=cfg.victim.activation,
      n_known=int(cfg.data.n) if cfg.attack.knows_n else None,
      duplicate_threshold=cfg.run.recovered_threshold,
      mode='auto' if 'polish' in cfg.attack.rescue else 'off',
      rung=sections.Polish.from_section(cfg.attack.polish),
      key=jax.random.fold_in(jax.random.PRNGKey(cfg.seed), 0x9011),
      radius=float(np.sqrt(cfg.data.d)), lr=cfg.attack.lr,
      jacobian_method=cfg.attack.certify_jacobian,
      max_entries=polish.rung_max_entries(cfg.run.sweep_memory_budget_gb))


def scoring(cfg: ml_collections.ConfigDict) -> report.Scoring:
  """What `recon.report.scoring.report` reads of the run's config, as one value."""
  return report.Scoring(
      recovered_threshold=cfg.run.recovered_threshold, ssim_threshold=cfg.run.ssim_threshold,
      ssim_filter_size=cfg.run.ssim_filter_size, activation=cfg.victim.activation,
      jitter=cfg.attack.jitter, certify=certify_settings(cfg), config_record=cfg.to_dict())


def reconstruct_and_report(cfg: ml_collections.ConfigDict, workdir: str, attack: Attack, *,
                           x_true: Optional[Array], y: Optional[Array],
                           meta: Optional[Dict[str, Any]] = None, t0: Optional[float] = None,
                           extra_metrics: Optional[Dict[str, Any]] = None,
                           threat_model: Optional[Dict[str, Any]] = None,
                           keys: Optional[Dict[str, Array]] = None,
                           resume: Optional[bool] = None) -> Dict[str, Any]:
  """Shared tail of every pipeline: runs `attack` (`recon.attack.plan.Attack`), scores, writes.

  The descent steps of `cfg.attack.rescue` act between chunks (`recon.attack.rescue.chain`: 'reseed'
  needs the optimised variables to be one (m, k) array). Writes summary.json (config, metrics,
  `extra_metrics`, `threat_model`, loss history, data description), reconstruction.npz (true
  rows, matched candidates, all candidates, `y`), loss_curve.png and, for image data
  (meta['image_shape'] set), grid.png plus SSIM/PSNR metrics.

  Checkpoints the state (and `keys`) to WORKDIR/checkpoints/ every
  run.checkpoint_every_steps / run.checkpoint_every_seconds and when the run stops;
  `resume` (default: config.run.resume and a checkpoint exists) restarts from the
  latest one, history included. With `x_true=None` (no ground truth, e.g. a
  model checkpoint without its training set) only the blind metrics are
  reported (loss, steps, status), only the loss curve is drawn, and the summary
  says so.
  """
  t0 = time.time() if t0 is None else t0
  meta = meta or {}
  report.check_ssim_filter(cfg.run.ssim_filter_size, meta)
  pursuit = None
  wants = (any(n in cfg.attack.rescue for n in ('pursue', 'swap', 'cut'))
           or ('escalate' in cfg.attack.rescue and cfg.attack.escalate.pursuit == 'auto'))
  if (wants and attack.feature_fn is not None
      and attack.certify_theta is not None and np.ndim(attack.x0) == 2):
    pursuit = pursuit_lib.Pursuit(
        attack.feature_fn, attack.certify_theta, radius=float(np.sqrt(np.shape(attack.x0)[1])),
        tol=cfg.attack.tol, key=jax.random.fold_in(jax.random.PRNGKey(cfg.seed), 0x905),
        starts=cfg.attack.escalate.pursuit_starts, steps=cfg.attack.escalate.pursuit_steps)
  outcome = driver.optimise(
      attack, cfg.attack, cfg.run, seed=cfg.seed, workdir=workdir, config_record=cfg.to_dict(),
      t0=t0, x_true=None if x_true is None else np.asarray(x_true), keys=keys, resume=resume,
      pursuit=pursuit, n_samples=int(cfg.data.n) if cfg.attack.knows_n else None)
  return report.report(
      scoring(cfg), workdir, outcome, attack, x_true=x_true, y=y, meta=meta, t0=t0,
      extra_metrics=extra_metrics, threat_model=threat_model)
