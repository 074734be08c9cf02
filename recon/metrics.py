"""Reconstruction metrics against the true training set (NumPy, on the host).

All distances between a true row x and a candidate x_hat are sign-invariant,
d(x, x_hat) = min(||x - x_hat||, ||x + x_hat||) / ||x||, because relu features
cannot tell x from -x on their odd part. True rows and candidates are paired by
the Hungarian algorithm on d.

Counting when n_candidates != n:
  * n_candidates > n: every true row gets one candidate; the extra candidates are
    reported as `n_unmatched_candidates`, and those within `threshold` of some
    true row as `n_duplicates` (the paper's "true samples plus duplicates").
  * n_candidates < n: only n_candidates true rows can be matched; each uncovered
    row enters `recon_error` with its distance to the nearest candidate (shared
    candidates = merged samples) and never counts as recovered.
"""
from __future__ import annotations

from typing import Dict

import numpy as np
from scipy.optimize import linear_sum_assignment

RECOVERED_THRESHOLD = 0.1


def sign_invariant_distances(x_true: np.ndarray, x_hat: np.ndarray) -> np.ndarray:
  """D[i, j] = min(||x_i - x_hat_j||, ||x_i + x_hat_j||) / ||x_i||  (n x m)."""
  x_true = np.asarray(x_true, np.float64).reshape(len(x_true), -1)
  x_hat = np.asarray(x_hat, np.float64).reshape(len(x_hat), -1)
  sq_t = np.sum(x_true ** 2, 1)[:, None]
  sq_h = np.sum(x_hat ** 2, 1)[None, :]
  cross = x_true @ x_hat.T
  d_minus = np.sqrt(np.maximum(sq_t + sq_h - 2 * cross, 0.0))
  d_plus = np.sqrt(np.maximum(sq_t + sq_h + 2 * cross, 0.0))
  return np.minimum(d_minus, d_plus) / np.maximum(np.sqrt(sq_t), 1e-300)


def match(x_true: np.ndarray, x_hat: np.ndarray) -> Dict[str, np.ndarray]:
  """Hungarian matching on the sign-invariant relative distance.

  Returns `rows` (matched true indices), `cols` (their candidates), `sign`
  (+1/-1 per matched pair: which of x_hat, -x_hat is closer), and `dist`,
  the full distance matrix.
  """
  x_true = np.asarray(x_true, np.float64).reshape(len(x_true), -1)
  x_hat = np.asarray(x_hat, np.float64).reshape(len(x_hat), -1)
  dist = sign_invariant_distances(x_true, x_hat)
  rows, cols = linear_sum_assignment(dist)
  dots = np.sum(x_true[rows] * x_hat[cols], axis=1)
  sign = np.where(dots >= 0, 1.0, -1.0)
  return {'rows': rows, 'cols': cols, 'sign': sign, 'dist': dist}


def aligned_candidates(x_true: np.ndarray, x_hat: np.ndarray) -> np.ndarray:
  """For each true row, its matched candidate with the sign fixed (nearest if unmatched)."""
  m = match(x_true, x_hat)
  x_hat = np.asarray(x_hat, np.float64)
  out = np.empty((len(x_true),) + x_hat.shape[1:])
  cols = np.argmin(m['dist'], axis=1)
  flat_t = np.asarray(x_true, np.float64).reshape(len(x_true), -1)
  flat_h = x_hat.reshape(len(x_hat), -1)
  signs = np.where(np.sum(flat_t * flat_h[cols], 1) >= 0, 1.0, -1.0)
  cols[m['rows']] = m['cols']
  signs[m['rows']] = m['sign']
  for i, (c, s) in enumerate(zip(cols, signs)):
    out[i] = s * x_hat[c]
  return out


def per_sample_errors(x_true: np.ndarray, x_hat: np.ndarray) -> np.ndarray:
  """Relative sign-invariant error of every true row (matched, or nearest if uncovered)."""
  m = match(x_true, x_hat)
  err = m['dist'].min(axis=1)
  err[m['rows']] = m['dist'][m['rows'], m['cols']]
  return err


def dist_abs(x_true: np.ndarray, x_hat: np.ndarray) -> float:
  """The paper's figure: Hungarian on ||.|x| - |x_hat|.||^2, then sum ||.|| / (sqrt(d) n)."""
  a = np.abs(np.asarray(x_true, np.float64).reshape(len(x_true), -1))
  b = np.abs(np.asarray(x_hat, np.float64).reshape(len(x_hat), -1))
  sq = np.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1)
  rows, cols = linear_sum_assignment(sq)
  n, d = a.shape
  return float(np.sum(np.sqrt(sq[rows, cols])) / (np.sqrt(d) * n))


def reconstruction_metrics(x_true: np.ndarray, x_hat: np.ndarray,
                           threshold: float = RECOVERED_THRESHOLD) -> Dict[str, float]:
  """recon_error, frac_recovered, dist_abs and the n != n_candidates bookkeeping."""
  m = match(x_true, x_hat)
  n, n_hat = m['dist'].shape
  err = per_sample_errors(x_true, x_hat)
  matched_err = np.full(n, np.inf)
  matched_err[m['rows']] = m['dist'][m['rows'], m['cols']]
  unmatched = np.setdiff1d(np.arange(n_hat), m['cols'])
  near = m['dist'][:, unmatched].min(axis=0) if len(unmatched) else np.zeros(0)
  return {
      'recon_error': float(err.mean()),
      'recon_error_median': float(np.median(err)),
      'recon_error_max': float(err.max()),
      'frac_recovered': float(np.mean(matched_err < threshold)),
      'n_recovered': int(np.sum(matched_err < threshold)),
      'dist_abs': dist_abs(x_true, x_hat),
      'n_uncovered_samples': int(n - len(m['rows'])),
      'n_unmatched_candidates': int(len(unmatched)),
      'n_duplicates': int(np.sum(near < threshold)),
  }


def feature_residual(phi_true: np.ndarray, phi_hat: np.ndarray) -> float:
  """Mean over true rows of ||phi(x_i) - P phi(x_i)|| / sqrt(p), P onto rowspan(phi_hat)."""
  a = np.asarray(phi_true, np.float64)
  b = np.asarray(phi_hat, np.float64)
  q, s, _ = np.linalg.svd(b.T, full_matrices=False)
  q = q[:, s > max(b.shape) * np.finfo(np.float64).eps * max(s.max(), 1e-300)]
  resid = a - (a @ q) @ q.T
  return float(np.mean(np.linalg.norm(resid, axis=1)) / np.sqrt(a.shape[1]))
