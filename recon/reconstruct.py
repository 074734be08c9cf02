"""The shared tail of every pipeline: optimise (`recon.driver`), then score and write
(`recon.report`)."""
from __future__ import annotations

import time
from typing import Any, Dict, Optional

import jax
import ml_collections
import numpy as np

from recon import driver, report
from recon import pursuit as pursuit_lib

Array = jax.Array


def reconstruct_and_report(cfg: ml_collections.ConfigDict, workdir: str, *,
                           x_true: Optional[Array], y: Optional[Array],
                           meta: Optional[Dict[str, Any]] = None, problem: Any, loss_fn,
                           x0: Array, constraint, feature_fn=None, gram_fn=None,
                           t0: Optional[float] = None,
                           extra_metrics: Optional[Dict[str, Any]] = None,
                           threat_model: Optional[Dict[str, Any]] = None,
                           decode=None, refiner=None, keys: Optional[Dict[str, Array]] = None,
                           resume: Optional[bool] = None,
                           certify_theta: Optional[Array] = None) -> Dict[str, Any]:
  """Shared tail of every pipeline: optimise `loss_fn(x, problem)` from x0, score, write.

  `feature_fn(x) -> (rows, p)` (optional) gives `victim.feature_residual`; `gram_fn(x) -> (m, m)`
  (optional) gives `gram_condition` of the final candidates (warns when the solve loses
  precision). `decode(params)` (optional) maps the optimised variables (e.g. subspace
  coordinates, or a pytree with free coefficients) to input-space candidates for the
  metrics; default identity. `cfg.attack.reseed.every > 0` re-seeds collapsed candidates
  (`recon.refine`; the optimised variables must be one (m, k) array). Writes
  summary.json (config, metrics, threat model, loss history, data description),
  reconstruction.npz (true rows, matched candidates, all candidates), loss_curve.png
  and, for image data (meta['image_shape'] set), grid.png plus SSIM/PSNR metrics.
  `refiner(x, problem, step, history) -> None | (x, problem)` (e.g.
  `recon.splitting.Splitter`) may replace the variables and the problem between
  chunks; the optimiser state is then reset (its `summary()` goes into the metrics).

  Checkpoints the state (and `keys`) to WORKDIR/checkpoints/ every
  run.checkpoint_every_steps / run.checkpoint_every_seconds and when the run stops;
  `run.resume` (default: config.run.resume and a checkpoint exists) restarts from the
  latest one, history included. With `x_true=None` (no ground truth, e.g. a
  model checkpoint without its training set) only the blind metrics are
  reported (loss, steps, status), only the loss curve is drawn, and the summary
  says so. `certify_theta` (the attacked parameters of a projection attack whose
  `feature_fn` rows are the candidates' features) adds `metrics.certified` and its
  evidence (`recon.certificate`).
  """
  t0 = time.time() if t0 is None else t0
  meta = meta or {}
  report.check_ssim_filter(cfg, meta)
  pursuit = None
  if (cfg.attack.escalate.pursuit == 'auto' and feature_fn is not None
      and certify_theta is not None and np.ndim(x0) == 2):
    pursuit = pursuit_lib.Pursuit(
        feature_fn, certify_theta, radius=float(np.sqrt(np.shape(x0)[1])), tol=cfg.attack.tol,
        key=jax.random.fold_in(jax.random.PRNGKey(cfg.seed), 0x905))
  outcome = driver.optimise(
      cfg, workdir, problem=problem, loss_fn=loss_fn, x0=x0, constraint=constraint, t0=t0,
      x_true=None if x_true is None else np.asarray(x_true), decode=decode, refiner=refiner,
      keys=keys, resume=resume, pursuit=pursuit)
  return report.report(
      cfg, workdir, outcome, x_true=x_true, y=y, meta=meta, loss_fn=loss_fn, x0=x0,
      feature_fn=feature_fn, gram_fn=gram_fn, t0=t0, extra_metrics=extra_metrics,
      threat_model=threat_model, decode=decode, refiner=refiner, certify_theta=certify_theta)
