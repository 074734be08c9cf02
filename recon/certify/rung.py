"""The precision rung: a float64 polish of the rows a float32 projection attack left free.

Why float32 stops short. With theta = Phi^T alpha, training sample i carries the share
s_i = |alpha_i| ||phi(x_i)|| / ||theta|| of theta. If candidate i is wrong while the
others are right, the projection loss is at most about s_i^2 (its part of theta left
unexplained); random labels now and then give a sample s_i ~ 1e-4, so a wrong row costs
~1e-8, while the float32 loss cannot go below ~1e-10 (its Cholesky jitter and rounding)
and its gradients along row i are as small. The float32 run ends with every other row
right and row i wherever it was; the certificate sees it (row i's pin radius is large)
but more float32 descent cannot fix it.

The rung, run on the float32 result when the certificate fails with counting satisfied
(p >= m (d + 1)) and its Jacobian test computed (`certify_or_polish`), uses only the
attacker's view (feature map, theta) and blind signals:

  0. (sign-ambiguous activations, relu) sign flips: relu(z) = |z|/2 + z/2 sees a sample's
     sign only through its linear part, and when the linear parts V x_i span few dimensions
     (data in a k-dim subspace: k of them) the others cheaply make up for a candidate at
     -x_i, so runs end with several candidates at mirror images. Greedily, each row in turn:
     x_j := -x_j, step 3, kept if L falls; `sign_sweeps` passes. This runs whatever the
     number of free rows; the free rows are then re-read from the row radii at the new loss.
     Not under the sign quotient (`recon.attack.sign_quotient`: its features are exactly sign-blind,
     the caller passes sign_sweeps = 0).

  1. float64 throughout, and no jitter: the residual r(X) = theta - Q Q^T theta with
     Q an orthonormal basis of rowspan Phi(X) (QR), L(X) = ||r||^2 / ||theta||^2. Its
     floor is the rounding of the float32 theta itself (~1e-14), 4 orders below s_i^2.
  2. Row re-search, for each free row i (the certificate's `row_within` false, largest
     pin radius first; only when 1 .. max(1, m/4) rows are free: a run with most rows free
     failed wholesale, and restarts are the rung for that; when more are free at the float32
     loss, step 3 runs first and the rows free at its loss are counted -- right rows the
     float32 loss left unpinned are pinned at the lower one), the other rows held to first
     order: Q_o is an orthonormal basis
     of the others' features *and their Jacobians* d phi(x_k)/d x_k (`held_basis`: the
     others sit slightly off their samples, having compensated for the wrong row i, and
     the residual of that is a first-order move of theirs), r_0 = (I - Q_o Q_o^T) theta,
     and candidate x in slot i leaves the part l_i(x) of ||r_0||^2 unexplained,
         l_i(x) = 1 - cos^2(f(x), r_0),   f(x) = (I - Q_o Q_o^T) phi(x);
     l_i in [0, 1] is scale-free: a row carrying 1e-4 of theta is searched as
     easily as one carrying half. Adam on l_i from the current row, its mirror image -x_i
     and `starts` - 2 random points on the sphere, vmapped, `row_steps` steps; the best
     start replaces row i if, after step 3 lets every row re-adjust, L is lower.
     The free rows are searched together, all from the same X (`recon.certify.row_search`: one
     compiled function vmapped over the rows, a progress line after each pass): the held
     basis of row i is the span of every row's features and Jacobians without row i's
     columns (the same span as `held_basis` of the others), read off one shared SVD; the
     starts are pruned by successive halving and the product U^T phi runs in float32
     (`row_search.PRUNE`); row i's random starts are drawn with the key the one-row search
     would use. Then
     the found rows replace theirs at once and step 3 runs once; if L is not lower, each
     row is judged alone in turn (replace, step 3, kept if L falls: the one-row rule).
     Rows searched from the same X all see the same r_0, so two of them can find the same
     missing sample (the one with the larger share): only the best of a group of found
     rows within relative distance `threshold` of each other (or of a mirror image) is
     placed (`row_search.distinct`), and the rows still free at the new loss
     (`free_rows_at`) are searched again, in rounds, while L falls (at most one round per
     free row: the sequential search's worst case, in which each round places one row).
  3. Joint Gauss-Newton (Levenberg-Marquardt) on r(X) in the spheres' tangent spaces
     (the variable-projection Jacobian of `recon.certify.certificate.tangent_jacobian`), with
     the rows re-normalised after each step; a step is kept only if L falls.

The polished set is kept only if its float64 loss is below that of the input set; the
certificate is then evaluated on it with the float64 loss: its loss test against
max(attack.polish.tol, FLOOR_MARGIN x F), F the statistical bound on the loss theta's own
rounding leaves at the truth (`float64_loss.rounding_floor_estimate`: theta was formed from
float32 features and stored in float32, so no set near the truth goes much below it), and its
pin radii at the bound on the truth's loss max(L / (1 - q), F) (`certificate.radius_loss`), not
at the test's tolerance (docs/random_features.md, "The pin radius's loss level").
Ground truth is never used.

Threads. The rung's host work is hundreds of small NumPy / LAPACK calls (lstsq, QR, a
m (d - 1) square solve per Gauss-Newton trial) between jitted JAX calls; run with NumPy's
OpenBLAS on its default thread count they fight XLA's own CPU threads for the cores. `polish`
therefore runs with BLAS at one thread (`threadpoolctl`): one sign-sweep pass at n = 32, d = 16,
p = 768 took 28.3 s with OpenBLAS's two threads and 11.9 s with one on an idle 2-core CPU,
with the same flips; on an accelerator backend the limit is not set (`blas_thread_limit`).

Size. Up to p m d = `max_entries` (the pipelines pass `rung_max_entries(run.sweep_memory_budget_gb)`:
2.1e8 entries at the default 8 GB, about `RUNG_BYTES_PER_ENTRY` bytes per entry of p m d for J,
the per-row Jacobians and their projection; never below the certificate's dense cap) the
Gauss-Newton step forms the tangent Jacobian densely in float64 and solves its damped Gram by
LAPACK (faster at small sizes: 0.01 s against 0.07 s for five steps at (m, d, p) = (6, 6, 288)).
Above it the step is matrix-free (`gn_method`): J^T r by one `jax.vjp` per feature block and
(J^T J + mu I) u = J^T r by conjugate gradients on jvp / vjp, preconditioned by the damped
per-row blocks (`residual_jacobian.transpose_apply`, `damped_solve`; memory O(p + m d) besides
the certificate's pass-1 statistics); the free rows are counted from the certificate's blocked
Gram (or its matrix-free bound), and the row re-search (step 2) is skipped: its held basis,
p x m (d + 1), is as large as J. `metrics.polish.gauss_newton_method` says which ran.
Measured at (m, d, p) = (500, 16, 32 000), relu+tanh, rows 1e-4 off a float32 truth, on the
2-core CPU at load 8-11 (niced): one matrix-free Levenberg-Marquardt step took the loss from
1.9e-9 to 2.0e-13 in 712 s wall (pass 1 137 s, the row blocks 82 s, CG 117 iterations to a
relative residual 1e-10 in 431 s), the process's peak RSS 1.24 GB; the dense J there would
take ~10 GB (`RUNG_BYTES_PER_ENTRY` x p m d).
"""
from __future__ import annotations

import functools
import time
from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
import threadpoolctl
from absl import logging

from recon.certify import certificate, residual_jacobian, row_search, symmetry
from recon.config import sections
from recon.certify.float64_loss import Features64, loss64, precision_split, rounding_floor_estimate
from recon.certify.float64_loss import basis as _basis
from recon.certify.row_search import held_basis  # noqa: F401 (held_basis: API)
from recon.certify.row_search import project as _project

Array = jax.Array
MODES = ('auto', 'off')
FLOOR_MARGIN = 4.0  # the polished set's loss test: max(attack.polish.tol, 4 x the floor's bound)


GN_LOG_SECONDS = 10.0  # a Gauss-Newton progress line at most this often
RUNG_BYTES_PER_ENTRY = 40  # float64 J and its working copies, per entry of p m d


def rung_max_entries(memory_budget_gb: float) -> int:
  """The largest p m d the rung's dense float64 Jacobian may take within `memory_budget_gb`
  (never below `certificate.MAX_JACOBIAN_ENTRIES`)."""
  return max(certificate.MAX_JACOBIAN_ENTRIES,
             int(memory_budget_gb * 2 ** 30 / RUNG_BYTES_PER_ENTRY))


def blas_thread_limit(backend: Optional[str] = None) -> Optional[int]:
  """NumPy's BLAS threads during the rung: 1 where XLA computes on the host CPU (the two
  fight for the cores), None (the library's default) where it computes on an accelerator."""
  return residual_jacobian.blas_threads(backend)


GN_METHODS = ('auto', 'dense', 'matrix_free')


def gn_method(p: int, m: int, d: int, method: str = 'auto',
              max_entries: Optional[int] = None) -> str:
  """The Gauss-Newton step's method: 'dense' (J formed, `certificate.tangent_jacobian`, and a
  LAPACK solve of its Gram) while p m d <= `max_entries` (default the certificate's dense cap),
  'matrix_free' above (`residual_jacobian.damped_solve`: J^T r by vjp, the damped normal
  equations by conjugate gradients on jvp / vjp, memory O(p + m d))."""
  if method not in GN_METHODS:
    raise ValueError(f'gauss_newton method: unknown {method!r}; accepted: {", ".join(GN_METHODS)}')
  if method != 'auto':
    return method
  cap = certificate.MAX_JACOBIAN_ENTRIES if max_entries is None else int(max_entries)
  return 'dense' if p * m * d <= cap else 'matrix_free'


def _dense_system(feature_fn, x, theta64):
  """(solve(mu) -> step, mean diag(J^T J), bases) from the dense tangent Jacobian."""
  jac, bases = certificate.tangent_jacobian(feature_fn, x, theta64, return_bases=True)
  q = np.asarray(_basis(jnp.asarray(feature_fn(jnp.asarray(x)), jnp.float64)))
  r = theta64 - q @ (q.T @ theta64)
  gram, rhs = jac.T @ jac, jac.T @ r
  solve = lambda mu: np.linalg.solve(gram + mu * np.eye(len(gram)), rhs)  # noqa: E731
  return solve, float(np.mean(np.diag(gram))), bases


def _matrix_free_system(feature_fn, x, theta64):
  """`_dense_system` without J: `residual_jacobian.stats`, J^T r by vjp, CG per damping."""
  st = residual_jacobian.stats(feature_fn, x, theta64)
  q = np.asarray(_basis(jnp.asarray(feature_fn(jnp.asarray(x)), jnp.float64)))
  r = theta64 - q @ (q.T @ theta64)
  rhs = residual_jacobian.transpose_apply(st, r)
  blocks = residual_jacobian.row_blocks(st)
  if not (np.all(np.isfinite(blocks)) and np.all(np.isfinite(rhs))):
    raise np.linalg.LinAlgError('non-finite residual Jacobian')

  def solve(mu):
    step, info = residual_jacobian.damped_solve(st, rhs, mu, blocks)
    if not np.all(np.isfinite(step)):
      raise np.linalg.LinAlgError('conjugate gradients diverged')
    return step
  mean_diag = float(np.mean(np.trace(blocks, axis1=1, axis2=2))) / max(blocks.shape[1], 1)
  return solve, mean_diag, np.asarray(st.bases)


def gauss_newton_step(feature_fn: Callable, theta, x, mu: float, method: str = 'auto'
                      ) -> np.ndarray:
  """One damped Gauss-Newton step u ((m, d - 1): row i moves by bases[i] u_i) solving
  (J^T J + mu I) u = J^T r, by `method` (`gn_method`). Call under `jax.enable_x64`."""
  x = np.asarray(x, np.float64)
  m, d = x.shape
  theta64 = np.asarray(theta, np.float64).reshape(-1)
  method = gn_method(theta64.shape[0], m, d, method)
  system = _dense_system if method == 'dense' else _matrix_free_system
  solve, _, _ = system(feature_fn, x, theta64)
  return solve(mu).reshape(m, d - 1)


def gauss_newton(feature_fn: Callable, theta, x, *, iters: int, radius: float,
                 tol: float, method: str = 'auto') -> Tuple[np.ndarray, float, int]:
  """Levenberg-Marquardt on r(X) in the tangent spaces (step 3); returns (X, L, steps kept).
  The step's linear algebra by `method` (`gn_method`: dense J below the certificate's dense
  cap, matrix-free above). Logs a progress line (steps, loss, seconds) at most every
  `GN_LOG_SECONDS` (always with the matrix-free method: its steps take seconds).

  Call under `jax.enable_x64`.
  """
  t0 = last = time.time()
  x = np.asarray(x, np.float64)
  m, d = x.shape
  theta64 = np.asarray(theta, np.float64).reshape(-1)
  method = gn_method(theta64.shape[0], m, d, method)
  system = _dense_system if method == 'dense' else _matrix_free_system
  loss = loss64(feature_fn, x, theta64)
  mu, kept = None, 0
  for _ in range(iters):
    if loss <= tol:
      break
    try:
      solve, mean_diag, bases = system(feature_fn, x, theta64)
    except np.linalg.LinAlgError as e:  # LAPACK on a degenerate (non-finite) set: stop here
      logging.warning('precision rung: Gauss-Newton stopped at step %d (%s); the set it had '
                      'is kept', kept, e)
      break
    if mu is None:
      mu = 1e-6 * mean_diag
    improved = False
    for _ in range(12):  # raise the damping until a step lowers the loss
      try:
        step = solve(mu)
      except np.linalg.LinAlgError:
        mu *= 10.0
        continue
      moved = x + np.stack([bases[k] @ step[k * (d - 1):(k + 1) * (d - 1)] for k in range(m)])
      moved = np.asarray(_project(jnp.asarray(moved), radius))
      new = loss64(feature_fn, moved, theta64)
      if new < loss:
        x, loss, improved = moved, new, True
        mu = max(mu / 3.0, 1e-300)
        kept += 1
        if method == 'matrix_free' or time.time() - last >= GN_LOG_SECONDS:
          last = time.time()
          logging.info('precision rung: Gauss-Newton step %d (%s), float64 loss %.2e (%.0fs)',
                       kept, method, loss, last - t0)
        break
      mu *= 4.0
    if not improved:
      break
  return x, loss, kept


def sign_sweep(feature_fn: Callable, theta, x, *, radius: float, tol: float, lm_iters: int,
               sweeps: int, method: str = 'auto') -> Tuple[np.ndarray, float, list, int]:
  """Greedy sign flips (step 0 of the module docstring): x_j := -x_j, Gauss-Newton, kept if the
  loss falls; every row in turn, up to `sweeps` passes. Returns (X, L, rows flipped, steps).
  Logs a progress line (pass, row, rows flipped, loss, seconds) at most every `GN_LOG_SECONDS`.
  Call under `jax.enable_x64`."""
  t0 = last = time.time()
  x = np.asarray(x, np.float64)
  loss = loss64(feature_fn, x, theta)
  flipped, kept = [], 0
  for sweep in range(sweeps):
    changed = False
    for j in range(x.shape[0]):
      if loss <= tol:
        break
      if time.time() - last >= GN_LOG_SECONDS:
        last = time.time()
        logging.info('precision rung: sign flips: pass %d/%d, row %d/%d, %d flipped, float64 '
                     'loss %.2e (%.0fs)', sweep + 1, sweeps, j, x.shape[0], len(flipped), loss,
                     last - t0)
      trial = x.copy()
      trial[j] = -trial[j]
      trial, new, steps = gauss_newton(feature_fn, theta, trial, iters=lm_iters, radius=radius,
                                       tol=tol, method=method)
      if new < loss:
        x, loss, changed = trial, new, True
        flipped.append(j)
        kept += steps
    if not changed or loss <= tol:
      break
  return x, loss, flipped, kept


def free_rows_at(feature_fn: Callable, theta, x, loss: float, tol: float,
                 threshold: float, dense: bool = True) -> list:
  """Rows whose pin radius (`certificate.row_radii`) at this loss is not below `threshold`,
  largest first; not `dense`: from the certificate's blocked Gram (exact radii) or, above its
  cap, its matrix-free bound (`certificate.jacobian_spectrum`). Call under `jax.enable_x64`."""
  if dense:
    radii = certificate.row_radii(feature_fn, x, theta, loss, tol)
  else:
    m, d = np.shape(x)[0], int(np.prod(np.shape(x)[1:]))
    method = 'gram' if (m * (d - 1)) ** 2 <= certificate.MAX_GRAM_ENTRIES else 'matrix_free'
    spec = certificate.jacobian_spectrum(feature_fn, x, theta, method)
    radii = certificate._radii(np.asarray(spec['row_scales']), x,  # pylint: disable=protected-access
                               float(np.linalg.norm(np.asarray(theta, np.float64))), loss, tol)
  return [int(i) for i in np.argsort(-radii) if not radii[i] < threshold]


def polish(feature_fn: Callable, theta, x_hat, *, free_rows: Sequence[int], key: Array,
           radius: float, tol: float, starts: int = 32, row_steps: int = 1000,
           lr: float = 0.05, lm_iters: int = 20, sign_sweeps: int = 0, max_free: int = 0,
           threshold: float = 0.1, row_batch: Optional[int] = None,
           dense_max_entries: Optional[int] = None) -> Tuple[np.ndarray, Dict[str, Any]]:
  """Steps 0-3 of the module docstring; returns (X (float64), info). The input set is
  returned unchanged when the polish does not lower the float64 loss.

  `dense_max_entries` (default the certificate's dense cap): the p m d up to which J is formed
  densely (`gn_method`; above it: matrix-free Gauss-Newton, no row re-search).
  `sign_sweeps` > 0 (sign-ambiguous activations) runs step 0 first; the rows free after it
  (radius at the new loss >= `threshold`) replace `free_rows`. Step 2 runs when there are
  1 .. `max_free` free rows (max_free 0: no limit); with more, step 3 runs first and the rows
  free at its loss are counted again. Still more (and no `sign_sweeps`): the input set back
  with info {'applied': False, 'free_rows', 'free_rows_after_gauss_newton', 'gauss_newton_first'}
  (no timing: a resumed run's metrics equal an unbroken one's; the log line has the seconds)."""
  t0 = time.time()
  free_rows = [int(i) for i in free_rows]
  m, d = np.shape(x_hat)[0], int(np.prod(np.shape(x_hat)[1:]))
  method = gn_method(int(np.size(theta)), m, d, 'auto', dense_max_entries)
  dense = method == 'dense'
  with jax.enable_x64(True), threadpoolctl.threadpool_limits(limits=blas_thread_limit(),
                                                             user_api='blas'):
    feature_fn = Features64(feature_fn)
    newton = functools.partial(gauss_newton, method=method)
    x0 = np.asarray(x_hat, np.float64)
    before = loss64(feature_fn, x0, theta)
    x, loss = x0.copy(), before
    flipped, kept = [], 0
    if sign_sweeps:
      x, loss, flipped, kept = sign_sweep(feature_fn, theta, x, radius=radius, tol=tol,
                                          lm_iters=lm_iters, sweeps=sign_sweeps, method=method)
      if flipped:
        free_rows = free_rows_at(feature_fn, theta, x, loss, tol, threshold, dense)
      logging.info('precision rung: sign flips: %d row(s) flipped, float64 loss %.2e (%.0fs)',
                   len(set(flipped)), loss, time.time() - t0)
    first = 0
    if max_free and len(free_rows) > max_free and loss > tol:
      # More rows free than the search takes at the float32 loss: step 3 first, then the
      # rows free at its loss (the float32 loss leaves right rows unpinned).
      many = len(free_rows)
      x, loss, first = newton(feature_fn, theta, x, iters=lm_iters, radius=radius, tol=tol)
      free_rows = free_rows_at(feature_fn, theta, x, loss, tol, threshold, dense)
      kept += first
      logging.info('precision rung: %d rows free; after Gauss-Newton first (float64 loss %.2e) '
                   '%d (%.0fs)', many, loss, len(free_rows), time.time() - t0)
      if len(free_rows) > max_free and not sign_sweeps:
        return x0, {'applied': False, 'free_rows': many, 'free_rows_after_gauss_newton':
                    len(free_rows), 'gauss_newton_first': first}
    searched = free_rows if (free_rows and (not max_free or len(free_rows) <= max_free)) else []
    if searched and not dense:  # the held basis (p x m (d + 1)) is as large as J: no search
      logging.info('precision rung: p m d = %.3g above the dense cap: no row re-search of the '
                   '%d free row(s), matrix-free Gauss-Newton only', int(np.size(theta)) * m * d,
                   len(searched))
      searched = []
    replaced = []
    pending, rounds = list(searched), 0
    while pending and loss > tol and rounds < len(searched):
      # Round 0 draws with `key` (the one-row search's keys); later rounds with fresh keys.
      round_key = key if rounds == 0 else jax.random.fold_in(key, 0x7A11 + rounds)
      found, values = row_search.row_search_batch(feature_fn, theta, x, pending, round_key,
                                       starts=starts, steps=row_steps, lr=lr, radius=radius,
                                       row_batch=row_batch, t0=t0)
      take = row_search.distinct(found, values, threshold)
      rows = [pending[n] for n in take]
      trial = x.copy()
      trial[rows] = found[take]
      # The held rows had compensated for the wrong rows: let them move back before judging.
      trial, new, steps = newton(feature_fn, theta, trial, iters=lm_iters,
                                       radius=radius, tol=tol)
      logging.info('precision rung: round %d, rows %s re-searched together: float64 loss '
                   '%.2e, %s (%.0fs)', rounds + 1, rows, new,
                   'kept' if new < loss else 'not kept', time.time() - t0)
      before_round = loss
      if new < loss:
        x, loss = trial, new
        replaced += [i for i in rows if i not in replaced]
        kept += steps
      else:  # one at a time, each judged alone (the one-row rule)
        for n, i in zip(take, rows):
          trial = x.copy()
          trial[i] = found[n]
          trial, new, steps = newton(feature_fn, theta, trial, iters=lm_iters,
                                           radius=radius, tol=tol)
          if new < loss:
            x, loss = trial, new
            replaced += [i] if i not in replaced else []
            kept += steps
          logging.info('precision rung: row %d alone: float64 loss %.2e, %s (%.0fs)', i, new,
                       'replaced' if new <= loss else 'kept', time.time() - t0)
      rounds += 1
      if not loss < before_round or loss <= tol:
        break
      # Rows searched together can chase the same missing sample: re-search what is still free.
      pending = free_rows_at(feature_fn, theta, x, loss, tol, threshold, dense)
      if max_free and len(pending) > max_free:
        break
    x, loss, steps = newton(feature_fn, theta, x, iters=lm_iters, radius=radius, tol=tol)
    kept += steps
  improved = loss < before
  info = {'applied': True, 'loss_before': before, 'loss_after': loss if improved else before,
          'rows_flipped': flipped, 'rows_searched': searched, 'rows_replaced': replaced,
          'search_rounds': rounds, 'gauss_newton_first': first,
          'gauss_newton_steps': kept, 'gauss_newton_method': method, 'kept': bool(improved),
          'seconds': time.time() - t0}
  return (x if improved else x0), info


def certify_or_polish(*, final_loss: float, tol: float, x_hat, p: int,
                      activation: Optional[str], n_known: Optional[int], feature_fn: Callable,
                      theta, duplicate_threshold: float, mode: str = 'off',
                      rung: sections.Polish = sections.Polish(), key: Optional[Array] = None,
                      radius: Optional[float] = None, lr: float = 0.05,
                      restart_sets=None, jacobian_method: str = 'auto',
                      max_entries: Optional[int] = None
                      ) -> Tuple[np.ndarray, Dict[str, Any], Dict[str, Any]]:
  """The certificate of x_hat (its Jacobian test by `jacobian_method`; 'off': none, the
  counting margin instead); when it fails, the Jacobian test was computable and
  counting holds (p >= m (d + 1)), `mode` 'auto' polishes and certifies the polished set in
  float64 against `polish_tol` -- if at most max(1, max_free_share m) rows are free
  (`row_within` false), counted again after a first Gauss-Newton pass when more are: the
  rung is for rows float32 cannot resolve, not for a run that failed wholesale. Up to
  p m d = `max_entries` (default: the certificate's dense cap; the pipelines pass
  `rung_max_entries` of their memory budget) the rung forms J densely, above it its
  Gauss-Newton is matrix-free and it does not re-search rows (`polish`). `rung`: the section attack.polish, whole (its tol is `polish_tol` here).
  Returns (x_hat, certificate, polish info). NumPy's BLAS runs on
  `residual_jacobian.blas_threads()` threads throughout (one on the host CPU)."""
  with residual_jacobian.host_blas():
    return _certify_or_polish(
        final_loss=final_loss, tol=tol, x_hat=x_hat, p=p, activation=activation,
        n_known=n_known, feature_fn=feature_fn, theta=theta,
        duplicate_threshold=duplicate_threshold, mode=mode, rung=rung, key=key, radius=radius,
        lr=lr, restart_sets=restart_sets, jacobian_method=jacobian_method,
        max_entries=max_entries)


def _certify_or_polish(*, final_loss, tol, x_hat, p, activation, n_known, feature_fn, theta,
                       duplicate_threshold, mode, rung, key, radius, lr, restart_sets,
                       jacobian_method, max_entries):
  polish_tol, starts, row_steps = rung.tol, rung.starts, rung.row_steps
  lm_iters, max_free_share, sign_sweeps = rung.lm_iters, rung.max_free_share, rung.sign_sweeps
  x_hat = np.asarray(x_hat)
  off = jacobian_method == 'off'
  cert = certificate.certify(final_loss=final_loss, tol=tol, x_hat=x_hat, p=p,
                             activation=activation, n_known=n_known,
                             feature_fn=None if off else feature_fn, theta=theta,
                             duplicate_threshold=duplicate_threshold, restart_sets=restart_sets,
                             jacobian_method='auto' if off else jacobian_method)
  if off:
    cert['evidence']['jacobian'] = 'not computed (attack.certify_jacobian off)'
  ev = cert['evidence']
  if not cert['certified'] and not ev['loss_at_tol'] and theta is not None:
    ev.update(precision_split(feature_fn, x_hat, theta, final_loss) or {})
  if mode not in MODES:
    raise ValueError(f'polish mode: unknown {mode!r}; accepted: {", ".join(MODES)}')
  m, d = x_hat.shape[0], int(np.prod(x_hat.shape[1:]))
  # At most `max_entries` = p m d the rung forms the residual Jacobian densely; above it its
  # Gauss-Newton is matrix-free and the row re-search is skipped (`polish`).
  cap = certificate.MAX_JACOBIAN_ENTRIES if max_entries is None else int(max_entries)
  if (mode == 'off' or cert['candidates_certified'] or not ev['counting']
      or ev.get('jacobian') != 'computed' or 'row_within' not in ev):
    return x_hat, cert, {'applied': False}
  radii = np.asarray(ev['row_pin_radius'])
  free = [int(i) for i in np.argsort(-radii) if not ev['row_within'][i]]
  m, d = x_hat.shape[0], int(np.prod(x_hat.shape[1:]))
  max_free = max(1, int(max_free_share * m))
  # Sign flips help only where the symmetry is approximate (relu-like): under an exact one
  # (odd or even sigma) a flipped row has the same loss.
  flips = (sign_sweeps if symmetry.of_activation(activation).kind == symmetry.SIGN_COMPENSATED
           else 0)
  logging.info('%s; precision rung: float64 %sre-search of the free rows, then Gauss-Newton',
               certificate.verdict(cert, m), 'sign flips, ' if flips else '')
  radius = float(np.sqrt(d)) if radius is None else radius
  key = jax.random.PRNGKey(0) if key is None else key
  x_pol, info = polish(feature_fn, theta, x_hat.reshape(m, d), free_rows=free, key=key,
                       radius=radius, tol=polish_tol, starts=starts, row_steps=row_steps,
                       lr=lr, lm_iters=lm_iters, sign_sweeps=flips, max_free=max_free,
                       threshold=duplicate_threshold, dense_max_entries=cap)
  if not info['applied']:  # most rows free even after Gauss-Newton: failed wholesale
    return x_hat, cert, info
  logging.info('precision rung: loss %.2e -> %.2e in float64 (rows flipped %s, re-searched %s, '
               'replaced %s, %d Gauss-Newton steps, %.1fs)%s', info['loss_before'],
               info['loss_after'], info['rows_flipped'], info['rows_searched'],
               info['rows_replaced'], info['gauss_newton_steps'], info['seconds'],
               '' if info['kept'] else ': not kept')
  if not info['kept']:
    return x_hat, cert, info
  if restart_sets is not None and len(restart_sets) > 1:
    restart_sets = [x_pol.reshape(x_hat.shape)] + list(restart_sets[1:])
  with jax.enable_x64(True):
    ff64 = Features64(feature_fn)
    est = rounding_floor_estimate(feature_fn, x_pol, theta)
    floor = est['bound']  # the statistical bound F on theta's rounding floor
    tol_eff = max(polish_tol, FLOOR_MARGIN * floor)
    info.update(rounding_floor=floor, rounding_floor_expected=est['expected'],
                rounding_floor_worst=est['worst'], tol=tol_eff)
    cert2 = certificate.certify(
        final_loss=info['loss_after'], tol=tol_eff, x_hat=x_pol, p=p, activation=activation,
        n_known=n_known, feature_fn=ff64,
        theta=np.asarray(theta, np.float64), duplicate_threshold=duplicate_threshold,
        restart_sets=restart_sets, floor=floor)
  cert2['evidence']['precision'] = 'float64 (polished)'
  info['certificate_before'] = {'reasons': cert['reasons'],
                                'rows_within': ev.get('rows_within')}
  return x_pol.reshape(x_hat.shape).astype(x_hat.dtype), cert2, info
