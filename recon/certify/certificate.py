"""A blind certificate that a projection-loss attack found the whole training set.

What it certifies, and up to what. The features cannot see every property of a row: with
an odd or even activation they are blind to each row's sign, with a relu-like one nearly
so (`recon.certify.symmetry`). The certificate is a statement up to that symmetry,
`certified_up_to` ('the order of the rows' or 'the order of the rows and the sign of each
row'; with a feature map blind to row norms, a positively homogeneous one such as relu's or
quadratic's, '... and the norm of each row'), and the matching metric of `recon.metrics`
scores the same symmetry, so a certified run has every row right in the metric that matches
the claim.

The radial direction. The Jacobian test below works on the spheres' tangent space: each
row's radial direction is removed. For a norm-blind feature map that direction is an exact
symmetry (phi(c x) parallel to phi(x)), so the certificate claims nothing about a row's norm,
and says so (`certified_up_to`; the metric compares directions). For a feature map that
sees the norm (relu + tanh, softplus + tanh, tanh, gelu) the candidates lie on the sqrt(d)
sphere and the claim is that sphere rows explain theta to tol and cannot move on it; rows
of the training set off the sphere have no exact zero there, so the loss test refuses them
(measured: docs/random_features.md, "Rows off the sphere").

The candidates versus the training set. The checks below pin the m candidates: they
explain theta to tol and cannot move. That is the whole training set only when the
attacker knows n (`n_known`) and m = n: a sample whose share of theta
(s_i = |alpha_i| ||phi(x_i)|| / ||theta||) is tiny leaves theta in the candidates' span to
tol with or without a candidate for it. `certified` is that whole-set claim;
`candidates_certified` is the claim on the m candidates alone, and the evidence carries
`unseen_share`, the largest share a sample can carry and still go unseen:
    s_unseen = sqrt(level) / min_i kappa_i,   (level = `radius_loss`: max(L, tol) in general)
kappa_i = ||P_perp(others) phi(x_hat_i)|| / ||phi(x_hat_i)|| = 1 / sqrt(G_ii (G^-1)_ii)
(G = Phi_hat Phi_hat^T) the part of candidate i's feature outside the others' span: a
missing sample as entangled with the found ones as the most entangled candidate leaves
the residual s kappa, which stays below the loss's resolution for s < s_unseen.

A loss at `tol` is necessary but not enough: below the threshold (p < d n) the
zero-loss set of L(X) = ||P_perp(Phi(X)) theta||^2 / ||theta||^2 is a manifold
of dimension > 0, and the optimiser lands on a wrong point of it with a loss as
small as at the truth. The certificate adds evidence that the solution found is
*locally unique* up to the attack's symmetries, using only what the attacker has
(the features of its own candidates and theta), never the ground truth:

  * loss:        L(X_hat) <= tol.
  * counting:    the constraint "theta in rowspan Phi(X_hat)" is p - m equations in
                 m (d - 1) unknowns (candidates on spheres); an isolated solution needs
                 p - m >= m (d - 1), i.e. p >= m d. At p = m d the system is square and
                 has many isolated zeros besides the truth (measured: the float64 rung,
                 a Newton root-finder, reached one at loss 5e-15 with 2 of 8 rows right,
                 relu, n = d = 8), so the test asks for m equations to spare beyond the
                 unknowns, p >= m (d + 1), which leaves a wrong zero codimension m.
  * uniqueness:  at a zero of the residual r(X) = P_perp(X) theta, its Jacobian is
                 J = -P_perp dPhi^T alpha (alpha the span coefficients), taken on the
                 tangent space of the spheres (each row's radial direction removed:
                 homogeneous features make it a symmetry). To first order, moving the
                 candidates by dx raises the loss by ||J dx||^2 / ||theta||^2, so every
                 candidate set within the *pin radius*
                     sqrt(level) ||theta|| / sigma_min(J)   (relative to ||x_hat||)
                 at the loss level `radius_loss`: max(L, tol) for a run's own loss; for a
                 float64 loss (the precision rung, the truth certificate) the bound on the
                 truth's own loss max(L / (1 - q), floor), floor theta's rounding estimated
                 statistically (`float64_loss.rounding_floor_estimate`), no clamp at tol
                 is as good as X_hat. Certification needs the pin radius below the
                 recovered threshold: the loss then determines every row to within what
                 counts as recovered. A rank deficit (sigma_min = 0: a continuum of
                 zero-loss solutions, as below the threshold) or a row that theta barely
                 sees (alpha_i ~ 0) gives a large radius. Permutations and, for relu,
                 signs are discrete symmetries and do not enter the rank.
  * duplicates:  no two candidates within `duplicate_threshold` of one another
                 (relative; sign-invariant for sign-ambiguous activations) unless the loss
                 at tol pins them apart: one sample found twice leaves one uncovered, but
                 real data has close training rows. A close pair is two samples when
                 r_i ||x_i|| + r_j ||x_j|| <= SEPARATION (1/2) ||x_i - x_j|| (pin radii
                 r, `candidate_pairs.unresolved_pairs`). One sample found twice fails it:
                 one of the two carries almost no share of theta (alpha ~ 0: an infinite
                 radius), or the pair slides along its difference at a curvature ~ its
                 distance (large radii). Probed by `scripts/certificate.py probes` (near_duplicate, collapsed).
  * restarts:    when several candidate sets reached tol, they agree (< duplicate_threshold).

`candidates_certified` is the conjunction of the evidence computed; `certified` adds m =
n_known. The Jacobian test runs when there is a feature map and counting holds, by one of three
methods (`jacobian_method`, recorded as evidence; 'auto' picks):
  * 'dense':       J formed (p m (d - 1) entries, `tangent_jacobian`), its Gram
                   eigendecomposed. 'auto' takes it for a plain feature_fn while p m d <=
                   `max_jacobian_entries` (2e7): no compilation per call.
  * 'gram':        J^T J accumulated block by block over the features, J never formed
                   (`recon.certify.residual_jacobian`), then Cholesky + Lanczos
                   (`residual_jacobian.gram_spectrum`; eigendecomposition when J^T J is
                   numerically singular): 'dense''s sigmas, rank and per-row radii (to 1e-6),
                   float64. 'auto' takes it for a feature map that gives its blocks
                   (`features.FeatureMap`) while (m (d - 1))^2 <= `max_gram_entries` (1e8),
                   and for a plain feature_fn above the dense cap (one block); it is what
                   runs at (100, 48, 48 000) (`results/certificate_scale.md`).
  * 'matrix_free': above that, sigma_min by LOBPCG on J^T J through jvp / vjp of the
                   feature blocks (memory O(m^2 d + m d^2 + block), the papers' CIFAR size on
                   one GPU: docs/random_features.md); the per-row radii are then the whole
                   set's bound (`row_radius_kind`), which never pins a row 'dense' would not;
                   `jacobian` reads 'computed (matrix-free)' (the precision rung, which forms J,
                   does not run on it).
Only without a feature map does certification fall back to the stricter counting margin
p >= 2 m d, and it says so.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence

import jax
import jax.numpy as jnp
import numpy as np

from recon.config import choices
from recon import metrics
from recon.certify import float64_loss, residual_jacobian, symmetry
from recon.certify.pairs import candidate_duplicates, restarts_agree, unresolved_pairs

RANK_RTOL = 1e-3
MAX_JACOBIAN_ENTRIES = 2 * 10 ** 7
MAX_GRAM_ENTRIES = 10 ** 8
FALLBACK_COUNTING_MARGIN = 2.0
tangent_bases = residual_jacobian.tangent_bases


def tangent_jacobian(feature_fn: Callable, x_hat, theta, return_bases: bool = False):
  """The residual's Jacobian on the spheres' tangent space, (p, m (d - 1)), float64.

  feature_fn(x) -> Phi (m, p), row i a function of x_i alone; theta (p,). J = P_perp
  d(Phi^T alpha)/dX with alpha the span coefficients held fixed (the exact Jacobian at a
  zero of the residual), rows' radial directions projected out; columns i (d-1) ...
  (i+1)(d-1) - 1 belong to candidate i. `return_bases`: also the (m, d, d - 1) tangent
  bases (`tangent_bases`), so that column block i times a step u is the move bases[i] u.
  """
  x_hat = jnp.asarray(x_hat)
  m, d = x_hat.shape[0], int(np.prod(x_hat.shape[1:]))
  phi = np.asarray(feature_fn(x_hat), np.float64)
  theta64 = np.asarray(theta, np.float64).reshape(-1)
  alpha, *_ = np.linalg.lstsq(phi.T, theta64, rcond=None)
  # Rows are independent (phi(x)_i depends on x_i only): one (p, d) Jacobian per candidate
  # (a feature_fn may bring its own compiled one, as `recon.certify.float64_loss.Features64` does).
  row_fn = getattr(feature_fn, 'row_jacobian', None) or jax.vmap(
      jax.jacfwd(lambda xi: feature_fn(xi[None])[0]))
  row_jac = row_fn(x_hat)  # (m, p, *shape)
  row_jac = np.asarray(row_jac, np.float64).reshape(m, phi.shape[1], d) * alpha[:, None, None]
  jac = np.transpose(row_jac, (1, 0, 2)).reshape(phi.shape[1], m * d)
  q, _ = np.linalg.qr(phi.T)
  jac = jac - q @ (q.T @ jac)
  bases = tangent_bases(x_hat)
  tangent = np.concatenate([jac[:, i * d:(i + 1) * d] @ bases[i] for i in range(m)], axis=1)
  return (tangent, bases) if return_bases else tangent  # (p, m (d - 1))


def row_pin_scales(tangent: np.ndarray, m: int) -> np.ndarray:
  """(m,) s_i = sqrt(lambda_max([(J^T J)^{-1}]_ii)): how far candidate i can move, per unit
  of residual, when every other candidate re-adjusts to compensate.

  To first order the smallest residual reachable with candidate i moved by a tangent step
  u (the others free) is ||u|| / sqrt(lambda_max of the i-th diagonal block of
  (J^T J)^{-1}) (the Schur complement), so a residual budget rho lets row i move by at
  most rho s_i. s_i <= 1 / sigma_min(J), so every row's radius is at most the whole set's
  pin radius; a direction of (numerically) zero curvature makes s_i huge for the rows it
  moves and leaves the others pinned.
  """
  return row_pin_scales_from_eigh(*np.linalg.eigh(tangent.T @ tangent), m)


def row_pin_scales_from_eigh(lam: np.ndarray, vec: np.ndarray, m: int) -> np.ndarray:
  """`row_pin_scales` from the eigendecomposition (lam, vec) of J^T J."""
  if not float(lam[-1]) > np.finfo(np.float64).tiny:  # J = 0: no row is held at all
    return np.full(m, np.inf)
  floor = float(lam[-1]) * np.finfo(np.float64).eps
  inv = 1.0 / np.maximum(lam, floor)
  k = vec.shape[0] // m
  scales = np.empty(m)
  for i in range(m):
    v = vec[i * k:(i + 1) * k]  # (k, md): row i's part of every eigenvector
    block = (v * inv) @ v.T
    scales[i] = (np.sqrt(max(float(np.linalg.eigvalsh(block)[-1]), 0.0))
                 if np.all(np.isfinite(block)) else np.inf)
  return scales


def radius_loss(loss: float, tol: float, floor: Optional[float] = None, *, m: int = 0,
                d: int = 0, p: int = 0) -> float:
  """The loss level the pin radius is taken at (docs/random_features.md, "The pin radius's
  loss level"). Without `floor` (a run's own loss, in its dtype, with its ridge):
  max(loss, tol). With `floor` (`loss` a float64 loss without the ridge, as the precision rung
  and `recon.truth_certificate` compute it): the bound on the truth's own loss,
  `float64_loss.truth_loss_bound` -- no clamp at `tol`."""
  if floor is None:
    return max(loss, tol)
  return float64_loss.truth_loss_bound(loss, floor, m=m, d=d, p=p)


def _radii(scales: np.ndarray, x_hat, theta_norm: float, loss: float, tol: float,
           level: Optional[float] = None) -> np.ndarray:
  m = len(x_hat)
  norms = np.maximum(np.linalg.norm(np.asarray(x_hat, np.float64).reshape(m, -1), axis=1), 1e-300)
  return np.sqrt(max(loss, tol) if level is None else level) * theta_norm * scales / norms


def row_radii(feature_fn: Callable, x_hat, theta, loss: float, tol: float) -> np.ndarray:
  """(m,) relative pin radius of every row at this loss (`row_pin_scales`; the certificate's
  `row_pin_radius`)."""
  tangent = tangent_jacobian(feature_fn, x_hat, theta)
  return _radii(row_pin_scales(tangent, len(x_hat)), x_hat,
                float(np.linalg.norm(np.asarray(theta, np.float64))), loss, tol)


def unseen_share(phi_hat, loss: float, tol: float) -> float:
  """The largest share of theta a training sample without a candidate can carry unseen:
  sqrt(max(loss, tol)) / min_i kappa_i (see the module docstring); 1 when the candidates'
  features are (numerically) dependent."""
  phi = np.asarray(phi_hat, np.float64).reshape(len(phi_hat), -1)
  return unseen_share_from_gram(phi @ phi.T, loss, tol)


def unseen_share_from_gram(gram: np.ndarray, loss: float, tol: float) -> float:
  """`unseen_share` from G = Phi_hat Phi_hat^T (m x m)."""
  gram = np.asarray(gram, np.float64)
  try:
    inv_diag = np.diag(np.linalg.inv(gram))
  except np.linalg.LinAlgError:
    return 1.0
  kappa2 = 1.0 / np.maximum(np.diag(gram) * inv_diag, 1e-300)
  if not np.all(np.isfinite(kappa2)) or np.any(inv_diag <= 0):
    return 1.0
  return float(min(1.0, np.sqrt(max(loss, tol)) / np.sqrt(max(float(kappa2.min()), 1e-300))))


def jacobian_spectrum(feature_fn: Callable, x_hat, theta, method: str) -> Dict[str, Any]:
  """The residual Jacobian's spectrum by `method` ('dense' | 'gram' | 'matrix_free', see the
  module docstring): sigma_min, sigma_max, rank(rtol) -> int, row_scales ((m,),
  `row_pin_scales`), row_radius_kind ('exact' | 'upper bound (whole set)'), feature_gram
  (G = Phi_hat Phi_hat^T, or None), and for 'matrix_free' the eigensolver's record. NumPy's
  BLAS runs on `residual_jacobian.blas_threads()` threads (one on the host CPU)."""
  with residual_jacobian.host_blas():
    return _jacobian_spectrum(feature_fn, x_hat, theta, method)


def _jacobian_spectrum(feature_fn: Callable, x_hat, theta, method: str) -> Dict[str, Any]:
  m, d = len(x_hat), int(np.prod(np.shape(x_hat)[1:]))
  if method not in choices.JACOBIAN_METHODS[1:]:
    raise ValueError(f'jacobian_method: unknown method {method!r}; accepted: {", ".join(choices.JACOBIAN_METHODS)}')
  out: Dict[str, Any] = {'feature_gram': None, 'row_radius_kind': 'exact'}
  # Degenerate candidates (e.g. identical rows: a singular feature Gram) make J non-finite;
  # then nothing is pinned: sigma_min = 0, every row radius infinite.
  degenerate = dict(sigma_min=0.0, sigma_max=0.0, rank=lambda rtol: 0,
                    row_scales=np.full(m, np.inf), non_finite=True)
  if method == 'dense':
    tangent = tangent_jacobian(feature_fn, x_hat, theta)
    if not np.all(np.isfinite(tangent)):
      out.update(degenerate)
      return out
    lam, vec = np.linalg.eigh(tangent.T @ tangent)
  else:
    with jax.enable_x64(True):
      st = residual_jacobian.stats(feature_fn, x_hat, theta)
      out['feature_gram'] = st.gram
      if method == 'gram':
        h = residual_jacobian.tangent_gram(st)
        if not np.all(np.isfinite(h)):
          out.update(degenerate)
          return out
        fast = residual_jacobian.gram_spectrum(h, m)
        if fast is not None:
          out.update(fast)
          return out
        lam, vec = np.linalg.eigh(h)
      else:
        lo, hi, info = residual_jacobian.smallest_singular_value(st)
        ritz = np.asarray(info['ritz'])
        out.update(sigma_min=lo, sigma_max=hi, row_scales=np.full(m, 1.0 / max(lo, 1e-300)),
                   row_radius_kind='upper bound (whole set)', eigensolver=info,
                   rank=lambda rtol: int(m * (d - 1) - np.sum(
                       np.sqrt(np.clip(ritz, 0.0, None)) <= rtol * hi)))
        return out
  sv = np.sqrt(np.clip(lam[::-1], 0.0, None))
  out.update(sigma_min=float(sv[-1]) if sv.size else 0.0,
             sigma_max=float(sv[0]) if sv.size else 0.0,
             rank=lambda rtol: int(np.sum(sv > rtol * sv[0])) if sv.size else 0,
             row_scales=row_pin_scales_from_eigh(lam, vec, m) if sv.size else np.zeros(m))
  return out


def above(loss: float, tol: float) -> str:
  """`loss` (> tol) written with the digits that show it is above `tol`: 2.13e-07, but
  1.0000003e-09 where two digits would print the tol itself."""
  for digits in range(2, 10):
    text = f'{loss:.{digits}e}'
    if float(text) > tol:
      return text
  return repr(float(loss))

def certify(*, final_loss: float, tol: float, x_hat, p: int, activation: Optional[str],
            n_known: Optional[int], feature_fn: Optional[Callable] = None, theta=None,
            duplicate_threshold: float = metrics.RECOVERED_THRESHOLD,
            restart_sets: Optional[Sequence[np.ndarray]] = None,
            rank_rtol: float = RANK_RTOL,
            max_jacobian_entries: int = MAX_JACOBIAN_ENTRIES,
            max_gram_entries: int = MAX_GRAM_ENTRIES,
            jacobian_method: str = 'auto', floor: Optional[float] = None) -> Dict[str, Any]:
  """The certificate and its evidence (a JSON-able dict); see the module docstring.

  `n_known`: the training set's size when the attacker knows it, else None (then only the
  candidates can be certified, never the whole set). `feature_fn`/`theta` enable the
  Jacobian test (`jacobian_method`, `max_jacobian_entries`, `max_gram_entries`: the module
  docstring); without them the counting margin must be FALLBACK_COUNTING_MARGIN.
  `floor`: given where `final_loss` is a float64 loss without the ridge (the precision rung,
  `recon.truth_certificate`): the statistical bound on the truth's own loss
  (`float64_loss.rounding_floor_estimate`); the pin radii and the unseen share are then taken at
  `radius_loss` (max(L / (1 - q), floor), no clamp at `tol`), recorded as `radius_loss`.
  """
  x_hat = np.asarray(x_hat)
  m, d = x_hat.shape[0], int(np.prod(x_hat.shape[1:]))
  level = radius_loss(final_loss, tol, floor, m=m, d=d, p=int(p))
  sym = symmetry.of_features(activation, feature_fn, x_hat)
  sign_invariant, scale_invariant = sym.sign_invariant, sym.scale_invariant
  evidence: Dict[str, Any] = {
      'symmetry': sym.kind, 'n_known': None if n_known is None else int(n_known),
      'loss': float(final_loss), 'tol': float(tol), 'loss_at_tol': bool(final_loss <= tol),
      'p': int(p), 'm_times_d': int(m * d), 'p_over_md': float(p / (m * d)),
      'counting': bool(p >= m * (d + 1)), 'radius_loss': float(level),
      'scale_invariant': bool(scale_invariant),
      'duplicate_pairs': candidate_duplicates(x_hat, duplicate_threshold, sign_invariant),
  }
  if floor is not None:
    evidence.update(floor=float(floor), absorbed_share=float64_loss.absorbed_share(m, d, int(p)))
  if scale_invariant:  # one sample at two norms is one sample found twice
    evidence['duplicate_pairs'] = candidate_duplicates(x_hat, duplicate_threshold, sign_invariant,
                                                       scale_invariant=True)
  reasons = []
  if not evidence['loss_at_tol']:
    reasons.append(f'loss {above(final_loss, tol)} > tol {tol:.0e}')
  if not evidence['counting']:
    reasons.append(f'p = {p} < m (d + 1) = {m * (d + 1)}: ' + (
        'zero-loss solutions are not isolated' if p < m * d else
        'too few equations beyond the unknowns to rule out other isolated zeros'))
  duplicates_at = len(reasons)  # the near-duplicate reason, once the pin radii are known
  unresolved = evidence['duplicate_pairs']
  entries = int(p) * m * d
  method = jacobian_method
  if method == 'auto':
    blocked = hasattr(feature_fn, 'block_fn')
    method = ('dense' if not blocked and entries <= max_jacobian_entries else
              'gram' if (m * (d - 1)) ** 2 <= max_gram_entries else 'matrix_free')
  gram = spec = None
  if feature_fn is not None and theta is not None and evidence['counting']:
    spec = jacobian_spectrum(feature_fn, x_hat, theta, method)
    gram = spec.get('feature_gram')
  if spec is not None:
    sv_min, sv_max = spec['sigma_min'], spec['sigma_max']
    ratio = float(sv_min / sv_max) if sv_max > 0 else 0.0
    row_norm = float(np.median(np.linalg.norm(x_hat.reshape(m, -1), axis=1)))
    theta_norm = float(np.linalg.norm(np.asarray(theta, np.float64)))
    # Linearised: moving the candidates by dx raises the loss by ||J dx||^2 / ||theta||^2, so
    # every X within this (relative) radius has a loss <= the level (`radius_loss`).
    pin = (np.sqrt(level) * theta_norm / max(float(sv_min), 1e-300) /
           max(row_norm, 1e-300)) if m * (d - 1) else np.inf
    rank = spec['rank'](rank_rtol)
    # The precision rung (`recon.certify.rung`: J dense) runs on a plain 'computed' only.
    evidence.update(jacobian='computed' if method != 'matrix_free' else 'computed (matrix-free)',
                    jacobian_method=method, jacobian_sigma_ratio=ratio,
                    jacobian_rank=rank, jacobian_full_rank=m * (d - 1), rank_rtol=rank_rtol,
                    pin_radius=float(pin), row_radius_kind=spec['row_radius_kind'])
    if 'eigensolver' in spec:
      evidence['eigensolver'] = spec['eigensolver']
    if spec.get('non_finite'):
      reasons.append('the residual Jacobian is not finite (degenerate candidates: a singular '
                     'feature Gram)')
    if m * (d - 1):
      # Per row: the radius within which candidate i can move (others compensating) at
      # this loss; pinned = below the threshold and not half of a near-duplicate pair.
      radii = _radii(spec['row_scales'], x_hat, theta_norm, final_loss, tol, level)
      # A near-duplicate pair whose pin balls are well apart is two samples, not one sample
      # found twice (`unresolved_pairs`): close training rows, as real data has.
      pairs = unresolved_pairs(x_hat, duplicate_threshold, sign_invariant, radii,
                               scale_invariant)
      in_pair = np.zeros(m, bool)
      in_pair[pairs.ravel()] = True
      within = (radii < duplicate_threshold) & ~in_pair
      if evidence['loss_at_tol']:
        unresolved = len(pairs)
        evidence['duplicate_pairs_resolved'] = evidence['duplicate_pairs'] - unresolved
      # Pinned needs the loss at tol: above it X_hat may sit in a wrong basin, where the
      # linearisation says nothing about the truth (measured: a wrong row "within" at
      # p = m d, loss 1e-5). `row_within` is the same test at any loss, as evidence only.
      pinned = within & evidence['loss_at_tol']
      evidence.update(row_pin_radius=[float(r) for r in radii],
                      row_within=[bool(b) for b in within], rows_within=int(within.sum()),
                      row_pinned=[bool(b) for b in pinned], rows_pinned=int(pinned.sum()))
    if not pin < duplicate_threshold:
      reasons.append(f'the loss pins the candidates only to a relative radius {pin:.2g} >= '
                     f'{duplicate_threshold:g} (residual Jacobian rank '
                     f'{evidence["jacobian_rank"]} of {m * (d - 1)}, sigma ratio {ratio:.1e})')
  else:
    why = ('no feature map' if feature_fn is None or theta is None else
           'counting failed')
    evidence['jacobian'] = f'not computed ({why})'
    if evidence['counting'] and p < FALLBACK_COUNTING_MARGIN * m * d:
      reasons.append(f'without the Jacobian test p must be >= {FALLBACK_COUNTING_MARGIN:g} m d')
  if unresolved:
    reasons.insert(duplicates_at, f'{unresolved} near-duplicate candidate pair(s)' + (
        ' whose pin radii do not keep them apart' if 'duplicate_pairs_resolved' in evidence else ''))
  if restart_sets is not None and len(restart_sets) > 1:
    evidence['restarts_at_tol'] = len(restart_sets)
    evidence['restarts_agree'] = restarts_agree(restart_sets, duplicate_threshold, sign_invariant,
                                                scale_invariant)
    if not evidence['restarts_agree']:
      reasons.append('candidate sets of independent restarts disagree')
  if gram is not None:
    evidence['unseen_share'] = unseen_share_from_gram(gram, level, level)
  elif feature_fn is not None and int(p) * m <= max_jacobian_entries:
    evidence['unseen_share'] = unseen_share(feature_fn(jnp.asarray(x_hat)), level, level)
  candidates_ok = not reasons
  if n_known is None:
    reasons.append(f'n is unknown: {m} samples found; a sample carrying less than '
                   f'{_share_text(evidence)} of theta cannot be seen')
  elif n_known != m:
    reasons.append(f'{m} candidates for n = {n_known} samples' + (
        f': at least {n_known - m} sample(s) not found (a sample carrying less than '
        f'{_share_text(evidence)} of theta cannot be seen)' if m < n_known else ''))
  return {'certified': not reasons, 'candidates_certified': candidates_ok,
          'certified_up_to': sym.certified_up_to, 'reasons': reasons, 'evidence': evidence}


def _share_text(evidence: Dict[str, Any]) -> str:
  share = evidence.get('unseen_share')
  return 'an unmeasured share' if share is None else f'{share:.1e}'


def verdict(cert: Dict[str, Any], m: int) -> str:
  """One log line: 'certified: ...' or 'not certified: reason; reason'."""
  ev = cert['evidence']
  if cert['certified']:
    extra = (f', pinned to a relative radius {ev["pin_radius"]:.1e}'
             if str(ev.get('jacobian')).startswith('computed') else ', Jacobian not computed')
    dups = (f'{ev["duplicate_pairs"]} close pairs pinned apart' if ev['duplicate_pairs']
            else 'no duplicates')
    return (f'certified: the whole training set, all {m} samples, up to '
            f'{cert["certified_up_to"]}: an isolated zero of the loss (loss '
            f'{ev["loss"]:.1e} <= tol, p/md {ev["p_over_md"]:.1f}, {dups}{extra})')
  if cert['candidates_certified']:
    return (f'not certified as the whole training set: the {m} candidates are pinned, up to '
            f'{cert["certified_up_to"]}, but ' + '; '.join(cert['reasons']))
  line = 'not certified: ' + '; '.join(cert['reasons'])
  if 'loss_float64' in ev:  # recon.certify.float64_loss.precision_split
    line += (f' (at these rows float64 without the ridge: {ev["loss_float64"]:.1e}, '
             f'{ev["precision_share"]:.0%} of the loss is precision)')
  if 'row_pinned' in ev:
    key, what = (('row_pinned', 'candidates pinned by the loss') if ev['loss_at_tol'] else
                 ('row_within', 'candidates within the threshold at this loss (evidence, '
                  'not pinned: the loss is above tol)'))
    flags = ev[key]
    free = [i for i, b in enumerate(flags) if not b]
    line += (f'; {sum(flags)} of {m} {what}'
             + (f' (not: {", ".join(map(str, free[:10]))}{" ..." if len(free) > 10 else ""})'
                if free else ''))
  return line
