"""Candidates close to one another: near duplicates, and whether the loss tells them apart.

Two candidates within relative distance `threshold` (`metrics.signed_distances`, or the
sign-matched `metrics.sign_invariant_distances` for sign-blind activations) are a
near-duplicate pair: one sample found twice, or two close training rows (real data has
them). The certificate counts them (`candidate_duplicates`) and accepts a pair as two samples
only when the loss pins each row within a ball of relative radius r_i and the balls are well
apart (`unresolved_pairs`):
    r_i ||x_i|| + r_j ||x_j|| <= SEPARATION ||x_i - x_j||,   SEPARATION = 1/2
(the sign-matched difference for sign-blind activations; a radius not finite never is).
For feature maps blind to row norms (`scale_invariant`) rows are compared as directions
(`metrics.unit_rows`): the same sample found at two norms is one sample.
`restarts_agree`: every restart's candidate set matches the first row by row within the
threshold (Hungarian matching, `metrics.per_sample_errors`).
"""
from __future__ import annotations

from typing import Optional, Sequence

import numpy as np

from recon import metrics

SEPARATION = 0.5


def pair_distances(x_hat, sign_invariant: bool, scale_invariant: bool = False) -> np.ndarray:
  """(m, m) symmetric relative distances between candidates, inf on the diagonal."""
  x = np.asarray(x_hat, np.float64).reshape(len(x_hat), -1)
  dist = metrics.distances(x, x, sign_invariant, scale_invariant)
  dist = np.minimum(dist, dist.T)
  np.fill_diagonal(dist, np.inf)
  return dist


def candidate_duplicates(x_hat, threshold: float, sign_invariant: bool,
                         scale_invariant: bool = False) -> int:
  """Number of candidate pairs within `threshold` (relative distance) of one another."""
  dist = pair_distances(x_hat, sign_invariant, scale_invariant)
  return int(np.sum(dist[np.triu_indices(len(dist), 1)] < threshold))


def unresolved_pairs(x_hat, threshold: float, sign_invariant: bool,
                     radii: Optional[np.ndarray] = None,
                     scale_invariant: bool = False) -> np.ndarray:
  """(k, 2) index pairs i < j of near-duplicate candidates (relative distance < `threshold`)
  that the loss does not resolve into two samples: all of them without `radii`; with the
  (m,) relative pin radii, those whose pin balls are not well apart,
      r_i ||x_i|| + r_j ||x_j|| > SEPARATION ||x_i - x_j||   (the sign-matched difference
  for sign-blind activations), or a radius not finite."""
  x = np.asarray(x_hat, np.float64).reshape(len(x_hat), -1)
  if scale_invariant:
    x = metrics.unit_rows(x)
  pairs = np.argwhere(np.triu(pair_distances(x, sign_invariant) < threshold, 1))
  if radii is None or not len(pairs):
    return pairs
  i, j = pairs[:, 0], pairs[:, 1]
  gap = np.sum((x[i] - x[j]) ** 2, 1)
  if sign_invariant:
    gap = np.minimum(gap, np.sum((x[i] + x[j]) ** 2, 1))
  reach = np.asarray(radii, np.float64) * np.linalg.norm(x, axis=1)
  apart = np.isfinite(reach[i] + reach[j]) & (reach[i] + reach[j] <= SEPARATION * np.sqrt(gap))
  return pairs[~apart]


def restarts_agree(candidate_sets: Sequence[np.ndarray], threshold: float,
                   sign_invariant: bool, scale_invariant: bool = False) -> bool:
  """True when every candidate set matches the first within `threshold` row by row."""
  first = np.asarray(candidate_sets[0])
  for other in candidate_sets[1:]:
    err = metrics.per_sample_errors(first, np.asarray(other), sign_invariant, scale_invariant)
    if not np.all(err < threshold):
      return False
  return True
