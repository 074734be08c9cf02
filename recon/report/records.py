"""The per-record audit: which training records came back, and what the certificate says of each.

One entry per training record i (written to WORKDIR/records.json by `recon.report.scoring`):

  index              i, the record's row in the training set (the auditor's file order)
  distance           its relative distance to its matched candidate, d(x_i, x_hat_j) =
                     ||x_i - s x_hat_j|| / ||x_i||, s = +-1 when the activation cannot tell x
                     from -x (`recon.certify.symmetry`), else s = +1: the metric of `recon.metrics`,
                     matched one-to-one by the Hungarian algorithm; a record left without a
                     candidate (n_candidates < n) gets its nearest one and `matched` false
                     With a feature map blind to row norms (relu, quadratic, ...:
                     `recon.certify.symmetry`, summary.json's scale_invariant) the distance is up to
                     the norm: x_hat_j rescaled to ||x_i|| (the normalised rows' distance),
                     and `norm_ratio` = ||x_hat_j|| / ||x_i|| says how far its norm is off
                     (norm not identifiable from this model: not part of the claim)
  recovered          matched and distance < run.recovered_threshold (summary.json's count)
  verdict            the certificate's word on the matched candidate (`recon.certify.certificate`'s
                     per-row evidence, blind: no ground truth enters it):
                       pinned       the loss at tol pins the candidate within the threshold
                                    (row pin radius < threshold; not in a close pair the
                                    radii do not keep apart)
                       within       the same radius test passes but the loss is above tol
                                    (evidence, not a claim)
                       free         the certificate ran and does not pin it
                       uncertified  no certificate ran (this attack has none)
                     Without per-row evidence (the Jacobian test not computed) every
                     candidate shares the set's verdict: pinned when the candidates are
                     certified, else free.
  matched_candidate  j, the candidate's row in reconstruction.npz's x_candidates
  matched            False for a record the one-to-one matching left without a candidate
  sign               s above (-1: the candidate is the record's mirror image)
  ssim               images only: SSIM of the record with its sign-aligned candidate
                     (`metrics.ssim_pairs`, each image min-max rescaled)

Sorted by exposure, most exposed first: by distance (the closest reconstructions first),
ties by index. A record's verdict is blind and its distance is ground truth, so a
`pinned` record that is not `recovered` is the certificate being wrong (summary.json's
rows_pinned_wrong counts them; it has been 0 in every measured run).
"""
from __future__ import annotations

from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from recon import metrics

VERDICTS = ('pinned', 'within', 'free', 'uncertified')


def candidate_verdicts(cert: Optional[Dict[str, Any]], m: int) -> List[str]:
  """The verdict of each of the m candidates (module docstring) from a certificate or None."""
  if cert is None:
    return ['uncertified'] * m
  ev = cert.get('evidence') or {}
  if 'row_pinned' in ev:
    return ['pinned' if p else 'within' if w else 'free'
            for p, w in zip(ev['row_pinned'], ev['row_within'])]
  return ['pinned' if cert.get('candidates_certified') else 'free'] * m


def build(x_true, x_hat, *, threshold: float, sign_invariant: bool,
          cert: Optional[Dict[str, Any]] = None, image_shape: Optional[Sequence[int]] = None,
          ssim_filter: Optional[int] = None,
          scale_invariant: bool = False) -> List[Dict[str, Any]]:
  """The records of a scored run (module docstring), most exposed first."""
  x_true = np.asarray(x_true, np.float64).reshape(len(x_true), -1)
  x_hat = np.asarray(x_hat, np.float64).reshape(len(x_hat), -1)
  m = metrics.match(x_true, x_hat, sign_invariant, scale_invariant)
  dist = m['dist']
  cols = np.argmin(dist, axis=1)
  cols[m['rows']] = m['cols']
  matched = np.zeros(len(x_true), bool)
  matched[m['rows']] = True
  distance = dist[np.arange(len(x_true)), cols]
  signs = np.where(np.sum(x_true * x_hat[cols], axis=1) >= 0, 1, -1) if sign_invariant else \
      np.ones(len(x_true), int)
  verdicts = candidate_verdicts(cert, len(x_hat))
  ratio = (np.linalg.norm(x_hat[cols], axis=1) /
           np.maximum(np.linalg.norm(x_true, axis=1), 1e-300))
  ssim = None
  if image_shape is not None:  # min-max rescaled: the same with or without the norm
    ssim = metrics.ssim_pairs(x_true, signs[:, None] * x_hat[cols], image_shape, ssim_filter)
  out = []
  for i in range(len(x_true)):
    rec = {'index': i, 'distance': float(distance[i]),
           'recovered': bool(matched[i] and distance[i] < threshold),
           'verdict': verdicts[cols[i]] if matched[i] else
                      ('uncertified' if cert is None else 'free'),
           'matched_candidate': int(cols[i]), 'matched': bool(matched[i]), 'sign': int(signs[i])}
    if scale_invariant:
      rec['norm_ratio'] = float(ratio[i])
    if ssim is not None:
      rec['ssim'] = float(ssim[i])
    out.append(rec)
  out.sort(key=lambda r: (r['distance'], r['index']))
  return out


def counts(records: List[Dict[str, Any]]) -> Dict[str, int]:
  """{'n', 'recovered', and each verdict}: the counts the report's summary shows."""
  out = {'n': len(records), 'recovered': sum(r['recovered'] for r in records)}
  out.update({v: sum(r['verdict'] == v for r in records) for v in VERDICTS})
  return out
