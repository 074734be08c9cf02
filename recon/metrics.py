"""Reconstruction metrics against the true training set (NumPy, on the host).

Distances between a true row x and a candidate x_hat are relative to ||x||. Two
variants exist:
  * sign-invariant, d(x, x_hat) = min(||x - x_hat||, ||x + x_hat||) / ||x||, for
    activations whose features cannot tell x from -x (odd and even activations exactly,
    relu-like ones up to a linear compensation): `recon.certify.symmetry.sign_invariant(activation)`;
  * signed, d(x, x_hat) = ||x - x_hat|| / ||x||, for every other activation.
The headline `recon_error` uses the variant of the victim's activation; both are
reported (`recon_error_sign_invariant`, `recon_error_signed`). True rows and
candidates are paired by the Hungarian algorithm on the headline distance.

Up to norm (`scale_invariant`, `recon.certify.symmetry`: a positively homogeneous feature map, e.g.
relu or quadratic, cannot see a row's norm): each candidate is rescaled to the norm of the
true row it is compared with, d(x, x_hat) = ||x - ||x|| x_hat / ||x_hat|| || / ||x||, which is
the same number as the distance of the normalised rows, ||x / ||x|| - x_hat / ||x_hat|| ||
(min over the sign as well when sign-invariant). The norm's own error is then reported
apart (`recon_error_with_norm`: the same matching's pairs scored without rescaling, and
`norm_error_median`: median | ||x_hat|| / ||x|| - 1 | over the matched pairs).

Counting when n_candidates != n:
  * n_candidates > n: every true row gets one candidate; the extra candidates are
    reported as `n_unmatched_candidates`, and those within `threshold` of some
    true row as `n_duplicates` (the paper's "true samples plus duplicates").
  * n_candidates < n: only n_candidates true rows can be matched; each uncovered
    row enters `recon_error` with its distance to the nearest candidate (shared
    candidates = merged samples) and never counts as recovered.
"""
from __future__ import annotations

from typing import Any, Dict

import numpy as np
from scipy.optimize import linear_sum_assignment

RECOVERED_THRESHOLD = 0.1


def unit_rows(x: np.ndarray) -> np.ndarray:
  """Rows (flattened) divided by their norm (zero rows stay 0)."""
  x = np.asarray(x, np.float64).reshape(len(x), -1)
  return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-300)


def sign_invariant_distances(x_true: np.ndarray, x_hat: np.ndarray,
                             scale_invariant: bool = False) -> np.ndarray:
  """D[i, j] = min(||x_i - x_hat_j||, ||x_i + x_hat_j||) / ||x_i||  (n x m); with
  `scale_invariant`, of the normalised rows (x_hat_j rescaled to ||x_i||)."""
  if scale_invariant:
    x_true, x_hat = unit_rows(x_true), unit_rows(x_hat)
  x_true = np.asarray(x_true, np.float64).reshape(len(x_true), -1)
  x_hat = np.asarray(x_hat, np.float64).reshape(len(x_hat), -1)
  sq_t = np.sum(x_true ** 2, 1)[:, None]
  sq_h = np.sum(x_hat ** 2, 1)[None, :]
  cross = x_true @ x_hat.T
  d_minus = np.sqrt(np.maximum(sq_t + sq_h - 2 * cross, 0.0))
  d_plus = np.sqrt(np.maximum(sq_t + sq_h + 2 * cross, 0.0))
  return np.minimum(d_minus, d_plus) / np.maximum(np.sqrt(sq_t), 1e-300)


def signed_distances(x_true: np.ndarray, x_hat: np.ndarray,
                     scale_invariant: bool = False) -> np.ndarray:
  """D[i, j] = ||x_i - x_hat_j|| / ||x_i||  (n x m); with `scale_invariant`, of the
  normalised rows."""
  if scale_invariant:
    x_true, x_hat = unit_rows(x_true), unit_rows(x_hat)
  x_true = np.asarray(x_true, np.float64).reshape(len(x_true), -1)
  x_hat = np.asarray(x_hat, np.float64).reshape(len(x_hat), -1)
  sq_t = np.sum(x_true ** 2, 1)[:, None]
  sq_h = np.sum(x_hat ** 2, 1)[None, :]
  d_minus = np.sqrt(np.maximum(sq_t + sq_h - 2 * x_true @ x_hat.T, 0.0))
  return d_minus / np.maximum(np.sqrt(sq_t), 1e-300)


def distances(x_true: np.ndarray, x_hat: np.ndarray, sign_invariant: bool = True,
              scale_invariant: bool = False) -> np.ndarray:
  """The (n x m) relative distances of the given symmetry (module docstring)."""
  fn = sign_invariant_distances if sign_invariant else signed_distances
  return fn(x_true, x_hat, scale_invariant)


def match(x_true: np.ndarray, x_hat: np.ndarray,
          sign_invariant: bool = True, scale_invariant: bool = False) -> Dict[str, np.ndarray]:
  """Hungarian matching on the relative distance (sign-invariant or signed; up to each row's
  norm when `scale_invariant`).

  Returns `rows` (matched true indices), `cols` (their candidates), `sign`
  (+1/-1 per matched pair: which of x_hat, -x_hat is closer; always +1 when
  signed), and `dist`, the full distance matrix.
  """
  x_true = np.asarray(x_true, np.float64).reshape(len(x_true), -1)
  x_hat = np.asarray(x_hat, np.float64).reshape(len(x_hat), -1)
  dist = distances(x_true, x_hat, sign_invariant, scale_invariant)
  rows, cols = linear_sum_assignment(dist)
  dots = np.sum(x_true[rows] * x_hat[cols], axis=1)
  sign = np.where(dots >= 0, 1.0, -1.0) if sign_invariant else np.ones(len(rows))
  return {'rows': rows, 'cols': cols, 'sign': sign, 'dist': dist}


def aligned_candidates(x_true: np.ndarray, x_hat: np.ndarray,
                       sign_invariant: bool = True, scale_invariant: bool = False) -> np.ndarray:
  """For each true row, its matched candidate (sign fixed when sign-invariant; rescaled to the
  true row's norm when `scale_invariant`; nearest if unmatched)."""
  m = match(x_true, x_hat, sign_invariant, scale_invariant)
  x_hat = np.asarray(x_hat, np.float64)
  out = np.empty((len(x_true),) + x_hat.shape[1:])
  cols = np.argmin(m['dist'], axis=1)
  flat_t = np.asarray(x_true, np.float64).reshape(len(x_true), -1)
  flat_h = x_hat.reshape(len(x_hat), -1)
  signs = np.where(np.sum(flat_t * flat_h[cols], 1) >= 0, 1.0, -1.0)
  if not sign_invariant:
    signs = np.ones_like(signs)
  cols[m['rows']] = m['cols']
  signs[m['rows']] = m['sign']
  if scale_invariant:
    signs = signs * np.linalg.norm(flat_t, axis=1) / np.maximum(
        np.linalg.norm(flat_h[cols], axis=1), 1e-300)
  for i, (c, s) in enumerate(zip(cols, signs)):
    out[i] = s * x_hat[c]
  return out


def _errors(m: Dict[str, np.ndarray]) -> np.ndarray:
  err = m['dist'].min(axis=1)
  err[m['rows']] = m['dist'][m['rows'], m['cols']]
  return err


def per_sample_errors(x_true: np.ndarray, x_hat: np.ndarray,
                      sign_invariant: bool = True, scale_invariant: bool = False) -> np.ndarray:
  """Relative error of every true row (matched, or nearest if uncovered)."""
  return _errors(match(x_true, x_hat, sign_invariant, scale_invariant))


def norm_scoring(m: Dict[str, np.ndarray], x_true: np.ndarray, x_hat: np.ndarray,
                 sign_invariant: bool) -> Dict[str, float]:
  """For a matching `m` made up to norm: the same pairs scored with the norm
  (`recon_error_with_norm`, mean over the true rows, uncovered ones at their nearest
  candidate) and `norm_error_median`, median | ||x_hat_j|| / ||x_i|| - 1 | of the pairs."""
  raw = distances(x_true, x_hat, sign_invariant)
  cols = np.argmin(m['dist'], axis=1)
  cols[m['rows']] = m['cols']
  rows = np.arange(len(cols))
  n_t = np.linalg.norm(np.asarray(x_true, np.float64).reshape(len(x_true), -1), axis=1)
  n_h = np.linalg.norm(np.asarray(x_hat, np.float64).reshape(len(x_hat), -1), axis=1)
  ratio = n_h[cols] / np.maximum(n_t, 1e-300)
  return {'recon_error_with_norm': float(raw[rows, cols].mean()),
          'norm_error_median': float(np.median(np.abs(ratio - 1.0)))}


def dist_abs(x_true: np.ndarray, x_hat: np.ndarray) -> float:
  """The paper's figure: Hungarian on ||.|x| - |x_hat|.||^2, then sum ||.|| / (sqrt(d) n).

  Every true row counts: with fewer candidates than rows, a row the matching leaves
  uncovered enters with its distance to the nearest candidate (as in recon_error), so
  copies of a few samples cannot score 0.
  """
  a = np.abs(np.asarray(x_true, np.float64).reshape(len(x_true), -1))
  b = np.abs(np.asarray(x_hat, np.float64).reshape(len(x_hat), -1))
  sq = np.sum((a[:, None, :] - b[None, :, :]) ** 2, axis=-1)
  rows, cols = linear_sum_assignment(sq)
  n, d = a.shape
  per_row = np.sqrt(sq.min(axis=1))
  per_row[rows] = np.sqrt(sq[rows, cols])
  return float(np.sum(per_row) / (np.sqrt(d) * n))


def reconstruction_metrics(x_true: np.ndarray, x_hat: np.ndarray,
                           threshold: float = RECOVERED_THRESHOLD,
                           sign_invariant: bool = True,
                           scale_invariant: bool = False) -> Dict[str, Any]:
  """recon_error, frac_recovered, dist_abs and the n != n_candidates bookkeeping.

  The headline errors, the matching and the recovered count use the sign-invariant
  distance when `sign_invariant` (`recon.certify.symmetry.sign_invariant(activation)`), else the signed
  one; `recon_error_sign_invariant` and `recon_error_signed` are always both reported. With
  `scale_invariant` every distance is up to each row's norm (module docstring), and
  `norm_scoring`'s two figures say how far the norms were off. dist_abs is the paper's
  figure, always on the raw rows.
  """
  m = match(x_true, x_hat, sign_invariant, scale_invariant)
  n, n_hat = m['dist'].shape
  err = _errors(m)
  other = _errors(match(x_true, x_hat, not sign_invariant, scale_invariant))
  matched_err = np.full(n, np.inf)
  matched_err[m['rows']] = m['dist'][m['rows'], m['cols']]
  unmatched = np.setdiff1d(np.arange(n_hat), m['cols'])
  near = m['dist'][:, unmatched].min(axis=0) if len(unmatched) else np.zeros(0)
  return {
      'recon_error': float(err.mean()),
      'recon_error_sign_invariant': float((err if sign_invariant else other).mean()),
      'recon_error_signed': float((other if sign_invariant else err).mean()),
      'sign_invariant': bool(sign_invariant),
      'scale_invariant': bool(scale_invariant),
      'recon_error_median': float(np.median(err)),
      'recon_error_max': float(err.max()),
      'frac_recovered': float(np.mean(matched_err < threshold)),
      'n_recovered': int(np.sum(matched_err < threshold)),
      'dist_abs': dist_abs(x_true, x_hat),
      'n_uncovered_samples': int(n - len(m['rows'])),
      'n_unmatched_candidates': int(len(unmatched)),
      'n_duplicates': int(np.sum(near < threshold)),
      **(norm_scoring(m, x_true, x_hat, sign_invariant) if scale_invariant else {}),
  }


def sample_shares(phi_true: np.ndarray, theta: np.ndarray) -> np.ndarray:
  """s_i = |alpha_i| ||phi(x_i)|| / ||theta||, alpha = argmin ||theta - Phi^T alpha||.

  How much of the trained parameters each training sample carries (ground truth: a
  scoring quantity, never an input to the attack). A sample with s_i ~ 0 barely enters
  theta = Phi^T alpha (its label is nearly what the other samples already predict), so
  the projection loss is nearly flat along its candidate: no attack on theta can place it
  better than the loss resolves, and the certificate's row pin radius says so blindly.
  """
  phi = np.asarray(phi_true, np.float64).reshape(len(phi_true), -1)
  theta = np.asarray(theta, np.float64).reshape(-1)
  alpha, *_ = np.linalg.lstsq(phi.T, theta, rcond=None)
  return np.abs(alpha) * np.linalg.norm(phi, axis=1) / max(float(np.linalg.norm(theta)), 1e-300)


def pinned_but_wrong(x_true: np.ndarray, x_hat: np.ndarray, pinned: np.ndarray,
                     threshold: float = RECOVERED_THRESHOLD, sign_invariant: bool = True,
                     scale_invariant: bool = False) -> int:
  """Candidates the certificate calls pinned (`pinned`, (m,) bool) that are NOT within
  `threshold` of their matched training sample (scoring a blind per-row claim: must be 0)."""
  m = match(x_true, x_hat, sign_invariant, scale_invariant)
  err = np.full(len(np.asarray(x_hat)), np.inf)
  err[m['cols']] = m['dist'][m['rows'], m['cols']]
  return int(np.sum(np.asarray(pinned, bool) & ~(err < threshold)))


def feature_residual(phi_true: np.ndarray, phi_hat: np.ndarray) -> float:
  """Mean over true rows of ||phi(x_i) - P phi(x_i)|| / sqrt(p), P onto rowspan(phi_hat)."""
  a = np.asarray(phi_true, np.float64)
  b = np.asarray(phi_hat, np.float64)
  q, s, _ = np.linalg.svd(b.T, full_matrices=False)
  q = q[:, s > max(b.shape) * np.finfo(np.float64).eps * max(s.max(), 1e-300)]
  resid = a - (a @ q) @ q.T
  return float(np.mean(np.linalg.norm(resid, axis=1)) / np.sqrt(a.shape[1]))


# ---------------------------------------------------------------------------------------------
# Image metrics. Every candidate is first matched to a true row and its sign fixed by the
# sign-invariant L2 matching above (`aligned_candidates`), so SSIM/PSNR inherit the sign
# invariance. Both images of a pair are min-max rescaled to [0, 1] one by one (data range
# 1; the rescaling also undoes any positive per-image scale, e.g. the sphere projection),
# as in Haim et al. 2022. SSIM is dm-pix's (Wang et al. 2004; Gaussian window, sigma 1.5,
# k1 = 0.01, k2 = 0.03, mean over the valid-convolution map and the channels).

SSIM_THRESHOLD = 0.7  # recovered (images) = matched and SSIM > 0.7 (sample-splitting's "good").
SSIM_SIGMA = 1.5
PSNR_MAX_DB = 100.0  # PSNR of identical images is capped here (finite JSON).


def ssim_filter_size(image_shape) -> int:
  """Default SSIM window: 11 when both sides are >= 16 pixels, else 3 (1 below 3 pixels)."""
  side = min(int(image_shape[0]), int(image_shape[1]))
  return 11 if side >= 16 else (3 if side >= 3 else 1)


def minmax_images(x: np.ndarray, image_shape) -> np.ndarray:
  """Rows (n, H*W*C) -> images (n, H, W, C), each rescaled to [0, 1] (constant -> 0)."""
  img = np.asarray(x, np.float64).reshape((len(x),) + tuple(image_shape))
  lo = img.min(axis=(1, 2, 3), keepdims=True)
  hi = img.max(axis=(1, 2, 3), keepdims=True)
  return (img - lo) / np.maximum(hi - lo, 1e-12)


def ssim_pairs(a: np.ndarray, b: np.ndarray, image_shape,
               filter_size: int | None = None) -> np.ndarray:
  """SSIM of row a_i with row b_i (both min-max rescaled; data range 1), shape (n,)."""
  import dm_pix  # pylint: disable=import-outside-toplevel  (JAX; only image runs need it)
  size = ssim_filter_size(image_shape) if filter_size is None else int(filter_size)
  if size > min(image_shape[0], image_shape[1]):
    raise ValueError(f'run.ssim_filter_size: {size} exceeds the image side '
                     f'{min(image_shape[0], image_shape[1])}')
  ia = minmax_images(a, image_shape).astype(np.float32)
  ib = minmax_images(b, image_shape).astype(np.float32)
  return np.asarray(dm_pix.ssim(ia, ib, max_val=1.0, filter_size=size, filter_sigma=SSIM_SIGMA),
                    np.float64)


def psnr_pairs(a: np.ndarray, b: np.ndarray, image_shape) -> np.ndarray:
  """PSNR (dB) of row a_i with row b_i after min-max rescaling: -10 log10(mse), capped."""
  mse = np.mean((minmax_images(a, image_shape) - minmax_images(b, image_shape)) ** 2,
                axis=(1, 2, 3))
  return np.minimum(-10.0 * np.log10(np.maximum(mse, 1e-300)), PSNR_MAX_DB)


def per_sample_ssim(x_true: np.ndarray, x_hat: np.ndarray, image_shape,
                    filter_size: int | None = None, sign_invariant: bool = True,
                    scale_invariant: bool = False) -> np.ndarray:
  """SSIM of every true image with its matched, sign-aligned candidate (nearest if uncovered)."""
  return ssim_pairs(x_true, aligned_candidates(x_true, x_hat, sign_invariant, scale_invariant),
                    image_shape, filter_size)


def image_metrics(x_true: np.ndarray, x_hat: np.ndarray, image_shape,
                  threshold: float = SSIM_THRESHOLD,
                  filter_size: int | None = None,
                  sign_invariant: bool = True, scale_invariant: bool = False) -> Dict[str, float]:
  """SSIM/PSNR summaries and frac_recovered_ssim = share of true images matched with SSIM > threshold.

  Uncovered true images (n_candidates < n) enter the means with their nearest
  candidate but never count as recovered (as in `reconstruction_metrics`).
  """
  aligned = aligned_candidates(x_true, x_hat, sign_invariant, scale_invariant)
  size = ssim_filter_size(image_shape) if filter_size is None else int(filter_size)
  ssim = ssim_pairs(x_true, aligned, image_shape, size)
  psnr = psnr_pairs(x_true, aligned, image_shape)
  matched = np.zeros(len(ssim), bool)
  matched[match(x_true, x_hat, sign_invariant, scale_invariant)['rows']] = True
  recovered = matched & (ssim > threshold)
  return {
      'ssim_mean': float(ssim.mean()),
      'ssim_median': float(np.median(ssim)),
      'ssim_min': float(ssim.min()),
      'psnr_mean': float(psnr.mean()),
      'frac_recovered_ssim': float(recovered.mean()),
      'n_recovered_ssim': int(recovered.sum()),
      'ssim_threshold': float(threshold),
      'ssim_filter_size': size,
  }


def normalized_rows(x: np.ndarray) -> np.ndarray:
  """Rows minus their mean, divided by their norm (constant rows -> 0)."""
  x = np.asarray(x, np.float64)
  x = x - x.mean(axis=1, keepdims=True)
  return x / np.maximum(np.linalg.norm(x, axis=1, keepdims=True), 1e-12)


def nearest_candidate_ssim(x_true: np.ndarray, x_hat: np.ndarray, image_shape,
                           filter_size: int | None = None) -> Dict[str, Any]:
  """The anchors' evaluation (Haim et al. 2022; Buzaglo et al. 2023): for EVERY training image
  the candidate with the highest normalised cross-correlation (NCC; the same as the smallest L2
  distance after per-image mean removal and unit norm), then SSIM of the pair after per-image
  min-max rescaling (`ssim_pairs`, dm-pix). Several images may share one candidate (no
  one-to-one matching), and no sign flip is allowed.

  Returns per-image arrays (`ssim`, `ncc`, `nearest`: candidate index) and the summaries
  `frac_ssim_0_5`, `frac_ssim_0_4` (share of training images with SSIM >= 0.5 / 0.4),
  `ssim_median`, `ssim_mean`, `n_distinct_nearest`.
  """
  x_true, x_hat = np.asarray(x_true, np.float64), np.asarray(x_hat, np.float64)
  ncc = normalized_rows(x_true) @ normalized_rows(x_hat).T  # (n, m)
  nearest = np.argmax(ncc, axis=1)
  ssim = ssim_pairs(x_true, x_hat[nearest], image_shape, filter_size)
  return {
      'ssim': ssim, 'ncc': ncc[np.arange(len(x_true)), nearest], 'nearest': nearest,
      'frac_ssim_0_5': float(np.mean(ssim >= 0.5)),
      'frac_ssim_0_4': float(np.mean(ssim >= 0.4)),
      'ssim_median': float(np.median(ssim)),
      'ssim_mean': float(np.mean(ssim)),
      'n_distinct_nearest': int(len(np.unique(nearest))),
  }
