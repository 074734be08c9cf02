"""The shared tail of every pipeline: optimise (`recon.attack.driver`), then score and write
(`recon.report.scoring`). It receives its settings as one `Tail`, read by the pipeline's entry
from the run's sections (`tail`): scoring and the certificate get the typed values of it."""
from __future__ import annotations

import dataclasses
import time
from typing import Any, Dict, Optional

import jax
import numpy as np

from recon.attack import driver
from recon.certify import rung as polish
from recon.report import scoring as report
from recon.attack.rescue import chain as rescue_chain
from recon.attack.rescue import pursuit as pursuit_lib
from recon.attack.plan import Attack
from recon.config import sections

Array = jax.Array


def certify_settings(data: sections.Data, victim: sections.Victim, attack: sections.Attack,
                     run: sections.Run, seed: int) -> Dict[str, Any]:
  """`recon.certify.rung.certify_or_polish`'s settings from the run's sections: attack.tol, the
  victim's p and activation, n when the attacker knows it (attack.knows_n), the duplicate
  threshold run.recovered_threshold, the rung on while attack.rescue names the chain's step after
  the descent (`rescue_chain.end_steps`: 'polish') with the attack.polish section whole, the
  Jacobian method attack.certify_jacobian, the rung's size cap from run.sweep_memory_budget_gb; candidates on the sphere of radius sqrt(d); the rung's key
  derived from the seed."""
  return dict(
      tol=attack.tol, p=int(victim.p), activation=victim.activation,
      n_known=int(data.n) if attack.knows_n else None,
      duplicate_threshold=run.recovered_threshold,
      mode='auto' if rescue_chain.end_steps(attack.rescue) else 'off',
      rung=sections.Polish.from_section(attack.polish),
      key=jax.random.fold_in(jax.random.PRNGKey(seed), 0x9011),
      radius=float(np.sqrt(data.d)), lr=attack.lr,
      jacobian_method=attack.certify_jacobian,
      max_entries=polish.rung_max_entries(run.sweep_memory_budget_gb))


@dataclasses.dataclass(frozen=True)
class Tail:
  """What the shared tail reads of a run's settings, read once from its sections (`tail`):
  the attack and run sections (the optimiser, its rescue steps, checkpoints), the seed, the
  scoring (`recon.report.scoring.Scoring`, the config's record in it), n when the attacker
  knows it."""
  attack: sections.Attack
  run: sections.Run
  seed: int
  scoring: report.Scoring
  n_samples: Optional[int]

  @property
  def record(self) -> Dict[str, Any]:
    """The run's config as a dict (what summary.json and the checkpoints record)."""
    return self.scoring.config_record


def tail(data: sections.Data, victim: sections.Victim, attack: sections.Attack,
         run: sections.Run, seed: int, record: Dict[str, Any]) -> Tail:
  """The shared tail's settings from the run's sections; `record`: the config as summary.json
  and the checkpoints record it."""
  scoring = report.Scoring(
      recovered_threshold=run.recovered_threshold, ssim_threshold=run.ssim_threshold,
      ssim_filter_size=run.ssim_filter_size, activation=victim.activation,
      jitter=attack.jitter, certify=certify_settings(data, victim, attack, run, seed),
      config_record=record)
  return Tail(attack=attack, run=run, seed=seed, scoring=scoring,
              n_samples=int(data.n) if attack.knows_n else None)


def reconstruct_and_report(settings: Tail, workdir: str, attack: Attack, *,
                           x_true: Optional[Array], y: Optional[Array],
                           meta: Optional[Dict[str, Any]] = None, t0: Optional[float] = None,
                           extra_metrics: Optional[Dict[str, Any]] = None,
                           threat_model: Optional[Dict[str, Any]] = None,
                           keys: Optional[Dict[str, Array]] = None,
                           resume: Optional[bool] = None) -> Dict[str, Any]:
  """Shared tail of every pipeline: runs `attack` (`recon.attack.plan.Attack`), scores, writes.

  The descent steps of `settings.attack.rescue` act between chunks (`recon.attack.rescue.chain`:
  'reseed' needs the optimised variables to be one (m, k) array). Writes summary.json (config,
  metrics, `extra_metrics`, `threat_model`, loss history, data description),
  reconstruction.npz (true rows, matched candidates, all candidates, `y`), loss_curve.png and,
  for image data (meta['image_shape'] set), grid.png plus SSIM/PSNR metrics.

  Checkpoints the state (and `keys`) to WORKDIR/checkpoints/ every
  run.checkpoint_every_steps / run.checkpoint_every_seconds and when the run stops;
  `resume` (default: run.resume and a checkpoint exists) restarts from the
  latest one, history included. With `x_true=None` (no ground truth, e.g. a
  model checkpoint without its training set) only the blind metrics are
  reported (loss, steps, status), only the loss curve is drawn, and the summary
  says so.
  """
  t0 = time.time() if t0 is None else t0
  meta = meta or {}
  a, run = settings.attack, settings.run
  report.check_ssim_filter(run.ssim_filter_size, meta)
  pursuit = None
  if (rescue_chain.uses_pursuit(a.rescue, a) and attack.feature_fn is not None
      and attack.certify_theta is not None and np.ndim(attack.x0) == 2):
    pursuit = pursuit_lib.Pursuit(
        attack.feature_fn, attack.certify_theta, radius=float(np.sqrt(np.shape(attack.x0)[1])),
        tol=a.tol, key=jax.random.fold_in(jax.random.PRNGKey(settings.seed), 0x905),
        starts=a.escalate.pursuit_starts, steps=a.escalate.pursuit_steps)
  outcome = driver.optimise(
      attack, a, run, seed=settings.seed, workdir=workdir,
      config_record=settings.record,
      t0=t0, x_true=None if x_true is None else np.asarray(x_true), keys=keys, resume=resume,
      pursuit=pursuit, n_samples=settings.n_samples)
  return report.report(
      settings.scoring, workdir, outcome, attack, x_true=x_true, y=y, meta=meta, t0=t0,
      extra_metrics=extra_metrics, threat_model=threat_model)
