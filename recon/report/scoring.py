"""Scoring a finished attack and writing its outputs.

`score` (host side: Hungarian matching, feature residual, loss, status; the
counting rules are `COUNTING_NOTE`), `write_plots` (loss curve, image grid),
`write_audit` (records.json, one entry per training record, and the self-contained
report.html: `recon.report.records`, `recon.report.page`) and `report`, which writes a run's
summary.json (last: it marks a finished run), reconstruction.npz, the plots and the
audit from the optimiser's `recon.attack.driver.Outcome`. What scoring reads of the run's settings
arrives as one `Scoring` value (built from the config by `recon.pipelines.reconstruct.scoring`): this
module never sees the config.
"""
from __future__ import annotations

import dataclasses
import os
import time
from typing import Any, Dict, Optional

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from recon import data, metrics
from recon.certify import certificate, symmetry
from recon.certify import rung as polish
from recon.attack import driver, sign_quotient
from recon.attack import optimiser as optimize
from recon.runtime import io
from recon.report import plots, provenance, records
from recon.report import page as report_page
from recon.models import min_norm as precision
from recon.attack.plan import Attack
from recon.errors import ExperimentError
from recon.objectives import projection


@dataclasses.dataclass(frozen=True)
class Scoring:
  """The settings scoring reads: the matching threshold (run.recovered_threshold), SSIM's
  (run.ssim_threshold, run.ssim_filter_size: None picks it from the image size), the victim's
  activation (its symmetry decides whether a mirror image counts), the Gram jitter of the
  condition check (attack.jitter), the certificate's and precision rung's keyword settings
  (`polish.certify_or_polish`'s, less the run's arrays) and the config as a plain dict for
  summary.json."""
  recovered_threshold: float
  ssim_threshold: float
  ssim_filter_size: Optional[int]
  activation: Optional[str]
  jitter: float
  certify: Dict[str, Any]
  config_record: Dict[str, Any]


def score(x_true: np.ndarray, x_hat: np.ndarray, *, threshold: float, final_loss: float,
          steps: int, status: int, phi_true=None, phi_hat=None, theta=None,
          sign_invariant: bool = True, scale_invariant: bool = False) -> Dict[str, Any]:
  """Metrics of one finished run (host side): matching errors, feature residual, loss, status.

  `sign_invariant`: errors ignore the sign of a row (`symmetry.sign_invariant(activation)`);
  `scale_invariant`: and its norm (a feature map blind to norms, `recon.certify.symmetry`).
  With `phi_true` and `theta`: `sample_share_min`, the smallest share of theta a training
  sample carries (`metrics.sample_shares`; ground truth, for analysis only).
  """
  x_true = np.asarray(x_true)
  x_hat = np.asarray(x_hat)
  result = metrics.reconstruction_metrics(x_true, x_hat, threshold, sign_invariant,
                                          scale_invariant)
  if phi_true is not None:
    result['feature_residual'] = metrics.feature_residual(np.asarray(phi_true),
                                                          np.asarray(phi_hat))
    if theta is not None:
      result['sample_share_min'] = float(np.min(metrics.sample_shares(phi_true, theta)))
  result.update({
      'projection_loss': final_loss,
      'final_loss': final_loss,
      'steps': int(steps),
      'status': optimize.STATUS_NAMES[int(status)],
      'n': int(x_true.shape[0]), 'd': int(np.prod(x_true.shape[1:])),
      'n_candidates': int(x_hat.shape[0]),
  })
  return result


COUNTING_NOTE = (
    'Hungarian matching on the relative distance, sign-invariant for activations that cannot '
    'tell x from -x (odd, even and relu-like ones: recon.certify.symmetry; metrics.sign_invariant says '
    'which was used, and both '
    'recon_error_sign_invariant and recon_error_signed are reported); recovered = matched distance '
    '< recovered_threshold; if n_candidates < n the uncovered samples enter recon_error with '
    'their nearest-candidate distance; if n_candidates > n the extra candidates are '
    'n_unmatched_candidates, of which n_duplicates lie within the threshold of a true sample. '
    'When scale_invariant (a feature map blind to row norms: relu, quadratic, ...) every '
    'distance is up to each row\'s norm: the candidate rescaled to the true row\'s norm (the '
    'normalised rows\' distance); recon_error_with_norm and norm_error_median say how far the '
    'norms were off.')
# Rows off the sqrt(d) sphere: norms differing from sqrt(d) by more than this (relative).
OFF_SPHERE_RTOL = 1e-3


def norm_statement(scale_invariant: bool) -> Dict[str, Any]:
  """summary.json's word on row norms: `norm_identifiable`, and the reason when it is not."""
  out: Dict[str, Any] = {'scale_invariant': bool(scale_invariant),
                         'norm_identifiable': not scale_invariant}
  if scale_invariant:
    out['norm_note'] = (f'{symmetry.NORM_NOT_IDENTIFIABLE}: its features are positively '
                        'homogeneous (phi(c x) parallel to phi(x)), so each row is found and '
                        'scored up to its norm (as a direction)')
  return out


def off_sphere(x_true: np.ndarray, scale_invariant: bool) -> Optional[Dict[str, Any]]:
  """None when every true row's norm is sqrt(d) to OFF_SPHERE_RTOL; else how many are off,
  their norms over sqrt(d), and how they were scored (the attack searches on the sphere)."""
  rows = np.asarray(x_true, np.float64).reshape(len(x_true), -1)
  ratio = np.linalg.norm(rows, axis=1) / np.sqrt(rows.shape[1])
  off = np.abs(ratio - 1.0) > OFF_SPHERE_RTOL
  if not off.any():
    return None
  how = ('up to each row\'s norm (directions compared): the features cannot see the norm, '
         'the attack finds directions on the sqrt(d) sphere' if scale_invariant else
         'with the norm: the attack searches on the sqrt(d) sphere, so a row off it cannot be '
         'found exactly where the features see the norm (its loss stays above tol: not '
         'certified)')
  return {'count': int(off.sum()), 'n': int(len(rows)),
          'norm_over_sqrt_d_min': float(ratio.min()), 'norm_over_sqrt_d_max': float(ratio.max()),
          'scored': how}
BLIND_NOTE = ('no ground truth: the model checkpoint holds no training set, so only the blind '
              'metrics (loss, steps, status) are reported')


def nothing_recovered(result: Dict[str, Any], threat: Dict[str, Any]) -> str:
  """What a run that recovered no record tried, and what that does not prove (summary.json's
  `nothing_recovered`, the top of report.html): never a clean bill of health."""
  tried = (f"tried: {threat.get('target', 'the projection attack on the given parameters')}"
           f" ({result['status']} after {result['steps']} steps, loss {result['final_loss']:.2e})")
  why = []
  if threat.get('attacker_knows_init') is False:
    why.append('the initial weights W(0) were not used (not given, or attack.knows_init=False): '
               'without them nothing came back in any training regime of docs/audit.md\'s '
               'table; give victim.init_checkpoint')
  if 'attacker_knows_init' in threat:  # a trained network: the regimes it does not cover
    why.append('models trained by Adam defeated every variant of this attack even with W(0) '
               'known (docs/audit.md, "Which training regimes it covers")')
  why.append('other attacks, more steps or restarts may recover what this one did not')
  return (f"0 of {result['n']} records came back. This does not show the training data is safe "
          f"from reconstruction, only that this attack did not recover it; {tried}; "
          + '; '.join(why) + '.')


def rung_loss(result: Dict[str, Any]) -> Optional[float]:
  """The precision rung's float64 loss when it ran and was kept, else None."""
  rung = result.get('polish') or {}
  return float(rung['loss_after']) if rung.get('kept') else None


def write_plots(workdir: str, x_true: np.ndarray, aligned: np.ndarray, meta: Dict[str, Any],
                history: Dict[str, Any], result: Dict[str, Any],
                ssim_filter: Optional[int] = None) -> None:
  """DIR/loss_curve.png always; DIR/grid.png (truth over matched reconstruction) for images.

  Reconstructions are mapped to pixels with their matched sample's row norm
  (`data.to_pixels`), so both rows of the grid are at the data's true scale, drawn on
  meta['pixel_range'] (default: the true images' min..max).
  """
  plots.loss_curve(os.path.join(workdir, 'loss_curve.png'), history['step'], history['loss'],
                   title=f'{meta.get("name", "")}: loss vs step ({result["status"]})',
                   rung_loss=rung_loss(result))
  shape = meta.get('image_shape')
  if shape is None:
    return
  ssim = metrics.ssim_pairs(x_true, aligned, shape, result.get('ssim_filter_size', ssim_filter))
  true_px = data.to_pixels(x_true, meta)
  value_range = meta.get('pixel_range') or (float(true_px.min()), float(true_px.max()))
  if not value_range[1] > value_range[0]:
    value_range = (value_range[0], value_range[0] + 1.0)
  plots.image_grid(os.path.join(workdir, 'grid.png'), true_px, data.to_pixels(aligned, meta),
                   shape, ssim, value_range=value_range)


def write_audit(workdir: str, summary: Dict[str, Any], recs, *, x_true: Optional[np.ndarray],
                aligned: Optional[np.ndarray], x_hat: np.ndarray, meta: Dict[str, Any],
                cert: Optional[Dict[str, Any]]) -> None:
  """DIR/records.json (`recon.report.records`; [] without ground truth) and DIR/report.html.

  Records are drawn in the data's own units (`data.to_pixels` undoes the preprocessing; a
  candidate at its matched record's norm), images on the true images' range, as grid.png is.
  """
  io.write_json(os.path.join(workdir, 'records.json'), recs)
  shape = meta.get('image_shape')
  shape = tuple(shape) if shape is not None else None
  truth = cands = value_range = None
  if x_true is not None:
    truth = np.asarray(x_true, np.float64).reshape(len(x_true), -1)
    cands = np.asarray(aligned, np.float64).reshape(len(aligned), -1)
    if shape is not None or meta.get('preprocess') != 'sphere' or 'row_norms' in meta:
      truth, cands = data.to_pixels(truth, meta), data.to_pixels(cands, meta)  # your units
    if shape is not None:
      value_range = meta.get('pixel_range') or (float(truth.min()), float(truth.max()))
  else:
    cands = np.asarray(x_hat, np.float64).reshape(len(x_hat), -1)
  page = report_page.render(summary, recs, truth=truth, candidates=cands, image_shape=shape,
                            value_range=value_range, workdir=workdir,
                            verdicts=records.candidate_verdicts(cert, len(x_hat)))
  io.write_text(os.path.join(workdir, 'report.html'), page)


def check_ssim_filter(ssim_filter: Optional[int], meta: Dict[str, Any]) -> None:
  """One-line refusal of a run.ssim_filter_size larger than the images (before compute)."""
  image_shape = meta.get('image_shape')
  if image_shape is not None and ssim_filter is not None and ssim_filter > min(image_shape[:2]):
    raise ExperimentError(f'config.run.ssim_filter_size: invalid value {ssim_filter} for images of '
                          f'shape {tuple(image_shape)}; accepted: None (auto) or an int in '
                          f'1..{min(image_shape[:2])}')


def report(scoring: Scoring, workdir: str, outcome: driver.Outcome,
           attack: Attack, *, x_true: Optional[jax.Array], y, meta: Dict[str, Any], t0: float,
           extra_metrics: Optional[Dict[str, Any]] = None,
           threat_model: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
  """Scores `outcome` of `attack` and writes summary.json, reconstruction.npz and the plots;
  the summary.

  See `recon.pipelines.reconstruct.reconstruct_and_report` for the arguments.
  """
  loss_fn, x0, feature_fn, gram_fn = attack.loss_fn, attack.x0, attack.feature_fn, attack.gram_fn
  decode, refiner, certify_theta = attack.decode, attack.refiner, attack.certify_theta
  state, problem, history = outcome.state, outcome.problem, outcome.history
  image_shape = meta.get('image_shape')
  ssim_filter = scoring.ssim_filter_size
  decode = decode if decode is not None else (lambda params: params)
  has_truth = x_true is not None
  x_true_np = np.asarray(x_true) if has_truth else None
  status = optimize.STATUS_NAMES[int(state.status)]

  x_hat = np.asarray(decode(state.x))
  final_loss = float(loss_fn(state.x, problem))
  # The norm's symmetry is measured on the run's feature map; without one (the KKT attacks:
  # margins can fix the norm) rows are scored with their norms, as before.
  sym = (symmetry.of_features(scoring.activation, feature_fn, x_hat) if feature_fn is not None
         else symmetry.of_activation(scoring.activation).with_scale(False))
  sign_invariant, scale_invariant = sym.sign_invariant, sym.scale_invariant
  cert = polished = None
  if certify_theta is not None:
    # The certificate; when it fails, the precision rung may polish x_hat (recon/certify/rung.py).
    x_hat, cert, polished = polish.certify_or_polish(
        **sign_quotient.certify_settings(scoring.certify, attack.quotient_dims),
        final_loss=final_loss, x_hat=x_hat, feature_fn=feature_fn,
        theta=certify_theta,
        restart_sets=(decode.sets_at_tol(scoring.certify['tol'])
                      if hasattr(decode, 'sets_at_tol') else None))
  if has_truth:
    result = score(x_true_np, x_hat, threshold=scoring.recovered_threshold, final_loss=final_loss,
                   steps=int(state.step), status=int(state.status),
                   phi_true=None if feature_fn is None else feature_fn(x_true),
                   phi_hat=None if feature_fn is None else feature_fn(
                       jnp.asarray(x_hat, x_true.dtype)),
                   theta=None if feature_fn is None else certify_theta,
                   sign_invariant=sign_invariant, scale_invariant=scale_invariant)
    result['ground_truth'] = True
    aligned = metrics.aligned_candidates(x_true_np, x_hat, sign_invariant, scale_invariant)
    if image_shape is not None:
      result.update(metrics.image_metrics(
          x_true_np, x_hat, image_shape,
          threshold=scoring.ssim_threshold, filter_size=ssim_filter,
          sign_invariant=sign_invariant, scale_invariant=scale_invariant))
    off = off_sphere(x_true_np, scale_invariant)
    if off is not None:
      result['rows_off_sphere'] = off
      logging.warning('%d of %d training rows are off the sqrt(d) sphere (norms %.2f..%.2f '
                      'sqrt(d)); scored %s', off['count'], off['n'], off['norm_over_sqrt_d_min'],
                      off['norm_over_sqrt_d_max'], off['scored'])
  else:
    result = {'projection_loss': final_loss, 'final_loss': final_loss,
              'steps': int(state.step), 'status': status, 'ground_truth': False,
              'n_candidates': int(x_hat.shape[0])}
    if 'no_truth' in meta:
      result['no_ground_truth_reason'] = meta['no_truth']
  result.update(norm_statement(scale_invariant))
  if scale_invariant:
    logging.info('scored up to %s: the %s (the features are homogeneous)',
                 sym.certified_up_to, symmetry.NORM_NOT_IDENTIFIABLE)
  if gram_fn is not None:
    result['gram_condition'] = projection.check_condition(
        np.asarray(gram_fn(jnp.asarray(x_hat, x0.dtype))),
        scoring.jitter)
  if cert is not None:
    result['certified'] = cert['certified']
    result['candidates_certified'] = cert['candidates_certified']
    result['certified_up_to'] = cert['certified_up_to']
    result['polish'] = polished
    result['certificate'] = {'reasons': cert['reasons'], **cert['evidence']}
    if has_truth and 'row_pinned' in cert['evidence']:
      for name in ('pinned', 'within'):
        result[f'rows_{name}_wrong'] = metrics.pinned_but_wrong(
            x_true_np, x_hat, cert['evidence'][f'row_{name}'], scoring.recovered_threshold,
            sign_invariant, scale_invariant)
    logging.info('%s', certificate.verdict(cert, int(x_hat.shape[0])))
  result.update(outcome.rescue.summary())  # each descent step of attack.rescue
  result.update(extra_metrics or {})
  if has_truth and result['n_recovered'] == 0:
    result['nothing_recovered'] = nothing_recovered(result, threat_model or {})
    logging.warning('%s', result['nothing_recovered'])
  if refiner is not None and hasattr(refiner, 'summary'):
    result['splitting'] = refiner.summary()
  if hasattr(decode, 'summary'):
    result['restarts'] = decode.summary()
  result['wall_seconds'] = time.time() - t0
  result['matmul_precision'] = precision.current_matmul_precision()  # as compiled
  if status == 'nonfinite':
    logging.error('the loss or its gradient became non-finite at step %d; the outputs hold '
                  'the last finite candidates', int(state.step))
  summary = {
      'config': scoring.config_record,
      'metrics': result,
      'threat_model': threat_model or {},
      'counting': COUNTING_NOTE if has_truth else meta.get('no_truth', BLIND_NOTE),
      'history': {'step': [h[0] for h in history], 'loss': [h[1] for h in history]},
      'resumed_from_step': outcome.resumed_from,
      'device': str(jax.devices()[0].platform),
      'data': data.describe(meta),
      'provenance': provenance.record(scoring.config_record),
  }
  arrays = {'x_candidates': x_hat}
  if has_truth:
    arrays.update(x_true=x_true_np, x_matched=aligned)
  if y is not None:
    arrays['y'] = np.asarray(y)
  io.write_npz(os.path.join(workdir, 'reconstruction.npz'), **arrays)
  recs = []
  if has_truth:
    recs = records.build(x_true_np, x_hat, threshold=scoring.recovered_threshold,
                         sign_invariant=sign_invariant, cert=cert, image_shape=image_shape,
                         ssim_filter=result.get('ssim_filter_size', ssim_filter),
                         scale_invariant=scale_invariant)
  write_audit(workdir, summary, recs, x_true=x_true_np, aligned=aligned if has_truth else None,
              x_hat=x_hat, meta=meta, cert=cert)
  if has_truth:
    write_plots(workdir, x_true_np, aligned, meta, summary['history'], result, ssim_filter)
  else:
    plots.loss_curve(os.path.join(workdir, 'loss_curve.png'), summary['history']['step'],
                     summary['history']['loss'], rung_loss=rung_loss(result),
                     title=f'loss vs step ({status}, no ground truth)')
  io.write_json(os.path.join(workdir, 'summary.json'), summary)  # last: marks a finished run
  if has_truth:
    logging.info('recon_error %.4f  frac_recovered %.2f  dist_abs %.4f  loss %.3e  '
                 '(%s after %d steps, %.1fs) -> %s', result['recon_error'],
                 result['frac_recovered'], result['dist_abs'], final_loss, status,
                 result['steps'], result['wall_seconds'], workdir)
  else:
    logging.info('no ground truth: blind metrics only; loss %.3e (%s after %d steps, %.1fs) '
                 '-> %s', final_loss, status, result['steps'], result['wall_seconds'], workdir)
  return summary
