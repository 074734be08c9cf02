"""The certificate at the true training rows: the most any attack on this victim can certify.

GROUND TRUTH, for analysis only: never an input to an attack or a choice. A run is certified
when its loss L pins the candidates (`recon.certify.certificate`): every candidate set within the pin
radius
    r = sqrt(max(L, tol)) ||theta|| / sigma_min(J)          (relative to ||x||)
explains theta as well, and r must lie below the recovered threshold. The loss cannot go below
what theta's own rounding leaves at the truth, so the best candidate set an attack could return
is the training set itself, judged at the tolerance a run is judged at. Two judgements are
made, as a run makes them:
  * `attack`:   the truth's float64 loss against `attack.tol` (a float32 run's own verdict:
                at best the loss reaches tol, so r uses tol);
  * `polished`: as `polish.certify_or_polish` judges a polished set: the loss test against
                max(`attack.polish.tol`, FLOOR_MARGIN x F), F the statistical bound on theta's
                rounding floor estimated blind at the rows (`float64_loss.
                rounding_floor_estimate`), the pin radii at max(L / (1 - q), F)
                (`certificate.radius_loss`: no clamp at a tolerance).
If neither certifies the truth, no attack can be certified on this victim, whatever it
recovers: the training set is not identifiable to the threshold at the loss's resolution. The
rows that fail are named (`least_pinned`: the largest row radii), typically the samples theta
barely carries (`metrics.sample_shares`): a float64 victim (theta stored in float64) lowers
the floor by ~1e17 and, at the rung's level, shrinks every radius by ~1e8.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Dict

import jax
import numpy as np

from recon import metrics
from recon.certify import certificate, float64_loss
from recon.certify import rung as polish

LEAST_PINNED = 5  # how many of the largest row radii the report names


def _judge(loss: float, tol: float, x: np.ndarray, theta64: np.ndarray, ff64, *, p: int,
           activation: str, duplicate_threshold: float, jacobian_method: str,
           floor=None) -> Dict[str, Any]:
  t0 = time.time()
  cert = certificate.certify(final_loss=loss, tol=tol, x_hat=x, p=p, activation=activation,
                             n_known=len(x), feature_fn=ff64, theta=theta64,
                             duplicate_threshold=duplicate_threshold,
                             jacobian_method=jacobian_method, floor=floor)
  ev = cert['evidence']
  out = {'tol': float(tol), 'radius_loss': ev['radius_loss'],
         'certified': bool(cert['certified']), 'reasons': cert['reasons'],
         'pin_radius': ev.get('pin_radius'), 'jacobian': ev.get('jacobian'),
         'jacobian_method': ev.get('jacobian_method'),
         'sigma_ratio': ev.get('jacobian_sigma_ratio'), 'rank': ev.get('jacobian_rank'),
         'rows_pinned': ev.get('rows_pinned'), 'seconds': round(time.time() - t0, 2)}
  if 'row_pin_radius' in ev:
    radii = np.asarray(ev['row_pin_radius'], np.float64)
    worst = np.argsort(-radii)[:LEAST_PINNED]
    out['least_pinned'] = [{'row': int(i), 'radius': float(radii[i])} for i in worst]
    out['row_radius_median'] = float(np.median(radii))
  return out


def at_truth(feature_fn: Callable, x_true, theta, *, p: int, activation: str, tol: float,
             polish_tol: float, duplicate_threshold: float = metrics.RECOVERED_THRESHOLD,
             jacobian_method: str = 'auto') -> Dict[str, Any]:
  """What the certificate says of the training set itself (module docstring).

  `feature_fn`: the victim's feature map (a `features.FeatureMap` or a plain function of
  (m, d) rows); `x_true` (n, d) the training rows; `theta` the victim's parameters in the
  dtype it was stored in (the rounding floor reads it). Returns {'loss64': the truth's float64
  loss without the ridge, 'rounding_floor' (the statistical bound F),
  'rounding_floor_expected', 'rounding_floor_worst' (the triangle inequality (eps S)^2),
  'attack': judgement at `tol`, 'polished': judgement as the rung judges (its `radius_loss`),
  'certifiable': either certified, 'shares': each row's share of theta for the least pinned
  rows}."""
  x = np.asarray(x_true, np.float64).reshape(len(x_true), -1)
  theta_np = np.asarray(theta)
  with jax.enable_x64(True):
    ff64 = float64_loss.Features64(feature_fn)
    loss = float(float64_loss.loss64(feature_fn, x, theta_np))
    est = float64_loss.rounding_floor_estimate(feature_fn, x, theta_np)
    floor = est['bound']
    theta64 = theta_np.astype(np.float64)
    kw = dict(p=int(p), activation=activation, duplicate_threshold=duplicate_threshold,
              jacobian_method=jacobian_method)
    judged = {'attack': _judge(loss, tol, x, theta64, ff64, **kw),
              'polished': _judge(loss, max(polish_tol, polish.FLOOR_MARGIN * floor), x,
                                 theta64, ff64, floor=floor, **kw)}
    phi = np.asarray(ff64(x), np.float64)
  shares = metrics.sample_shares(phi, theta64)
  for j in judged.values():
    for row in j.get('least_pinned', ()):
      row['share'] = float(shares[row['row']])
      row['share_rank'] = int(np.sum(shares < shares[row['row']]))  # 0: the smallest share
  return {'n': int(x.shape[0]), 'd': int(x.shape[1]), 'p': int(p),
          'theta_dtype': str(theta_np.dtype), 'loss64': loss, 'rounding_floor': floor,
          'rounding_floor_expected': est['expected'], 'rounding_floor_worst': est['worst'],
          **judged, 'certifiable': bool(judged['attack']['certified']
                                        or judged['polished']['certified'])}
