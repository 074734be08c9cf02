"""How wide before it leaks: the leak-width threshold p* = c D n, fitted on shadow problems.

The law of reconstruction says a model of this family reconstructs its whole training set
once its attacked width p passes a threshold linear in n and in the data's dimension:

    p* = c D n,     D = d (data filling R^d) or k (data in a k-dim subspace),

with c a constant of the family (victim, activation, attack). An auditor holds a model of
width p trained on n records; this module predicts, without attacking that model, whether
its width is past the threshold:

1. Shadow problems: the same family on synthetic data of the auditor's shape (n_s records in
   R^d, on a planted k-dim subspace when the auditor's data has intrinsic dimension k < d),
   at small n_s the machine affords, widths p = r D n_s for a grid of ratios r, a few
   *shadow* seeds each (never the seeds anything is reported on). Random features run as
   one vectorised sweep per n_s (`recon.sweep.grid`: widths x seeds in one jit(vmap) program);
   the two-layer net runs its single-run pipeline per point. Each run gives success
   s = 1{every row recovered} and the blind certificate.
2. The fit: a logistic regression of s on x = log(p / (D n)),

       P(s = 1 | x) = sigma(beta (x - mu)),     c = exp(mu),

   so that p* = c D n is the width at which half the seeds recover every row
   (`fit_threshold`; scikit-learn's LogisticRegression, the slope mildly penalised so that
   separable data, every seed above the gap recovering, has a finite fit with mu inside the
   gap). Its uncertainty: a bootstrap over seeds (`bootstrap_threshold`: the runs of each
   (n_s, r) point resampled with replacement, the fit repeated), the 2.5 / 97.5 percentiles
   of c.
   The constant-c law extrapolates with c fixed; the trend form (`fit_trend`)
   lets c drift with n, logit P = beta (x - mu0 - gamma log n), c(n) = exp(mu0) n^gamma, one
   regression on (x, log n) over every shadow, bootstrapped alike; `leak_width.model` picks
   which one predicts (the other is reported beside it).
3. The prediction at the auditor's (n, p): the margin p / p*, the predicted recovery
   sigma(beta (log(p / (D n)) - mu)) with its bootstrap interval, and the recovery curve
   against width with the auditor's model marked (leak_width.png).

The intrinsic dimension of the auditor's data (`estimate_dim`): principal components of its
rows (scikit-learn's PCA, centred), k = the fewest components holding >= `variance` of the
variance; the spectrum is reported with it.
"""
from __future__ import annotations

import math
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

# The slope penalty of the logistic fit: LogisticRegression(C=...) on x = log(p / (D n)).
# Large enough that a graded transition is fitted as measured, small enough that separable
# data (a clean gap between failing and recovering ratios) keeps a finite slope.
FIT_C = 10.0
SUPPORTED = {'random_features': ('relu', 'relu_tanh'), 'two_layer': None}


def estimate_dim(x: np.ndarray, variance: float = 0.99) -> Dict[str, Any]:
  """The intrinsic dimension of rows `x` (n, ...) by PCA: k = the fewest principal
  components whose explained variance ratios sum to >= `variance`; with the spectrum."""
  from sklearn.decomposition import PCA  # pylint: disable=import-outside-toplevel
  rows = np.asarray(x, np.float64).reshape(len(x), -1)
  pca = PCA().fit(rows)
  ratio = np.asarray(pca.explained_variance_ratio_)
  cumulative = np.cumsum(ratio)
  k = int(np.searchsorted(cumulative, variance - 1e-12) + 1)
  return {'k': min(k, rows.shape[1]), 'd': int(rows.shape[1]), 'n': int(rows.shape[0]),
          'variance': float(variance), 'explained_variance_ratio': ratio.tolist(),
          'cumulative': cumulative.tolist()}


def _design(ratios: Sequence[float]) -> np.ndarray:
  return np.log(np.asarray(ratios, np.float64)).reshape(-1, 1)


def fit_threshold(ratios: Sequence[float], success: Sequence[float]) -> Dict[str, float]:
  """Logistic fit of per-run success on x = log(ratio) (ratio = p / (D n)): {'c', 'mu',
  'beta'} with c = exp(mu) the 50% point; ValueError when the runs are all one outcome."""
  from sklearn.linear_model import LogisticRegression  # pylint: disable=import-outside-toplevel
  s = np.asarray(success, np.float64) > 0.5
  if s.all() or not s.any():
    raise ValueError('leak width fit: every run has the same outcome (all recovered or none); '
                     'accepted: ratios that bracket the threshold')
  model = LogisticRegression(C=FIT_C, max_iter=1000).fit(_design(ratios), s.astype(int))
  beta = float(model.coef_[0, 0])
  b0 = float(model.intercept_[0])
  if beta <= 0:
    raise ValueError('leak width fit: recovery does not grow with the width (slope '
                     f'{beta:.3g} <= 0); accepted: ratios that bracket the threshold')
  mu = -b0 / beta
  return {'c': float(math.exp(mu)), 'mu': mu, 'beta': beta}


def bootstrap_threshold(ratios: Sequence[float], success: Sequence[float],
                        groups: Sequence[Any], *, n_boot: int = 200, seed: int = 0,
                        level: float = 0.95) -> Dict[str, Any]:
  """The fit and its bootstrap over seeds: the runs of each group (one (n, ratio) point)
  resampled with replacement, refitted `n_boot` times; c's central `level` interval."""
  ratios = np.asarray(ratios, np.float64)
  success = np.asarray(success, np.float64)
  groups = np.asarray([repr(g) for g in groups])
  fit = fit_threshold(ratios, success)
  rng = np.random.default_rng(seed)
  members = [np.flatnonzero(groups == g) for g in np.unique(groups)]
  cs, mus, betas = [], [], []
  for _ in range(n_boot):
    idx = np.concatenate([rng.choice(m, size=len(m), replace=True) for m in members])
    try:
      f = fit_threshold(ratios[idx], success[idx])
    except ValueError:
      continue
    cs.append(f['c'])
    mus.append(f['mu'])
    betas.append(f['beta'])
  lo, hi = (1 - level) / 2 * 100, (1 + level) / 2 * 100
  fit.update(c_ci=[float(np.percentile(cs, lo)), float(np.percentile(cs, hi))] if cs else None,
             level=level, n_boot=n_boot, n_boot_fitted=len(cs), boot_mu=mus, boot_beta=betas,
             runs=int(len(ratios)))
  return fit


def fit_trend(ratios: Sequence[float], ns: Sequence[int], success: Sequence[float]
              ) -> Dict[str, float]:
  """The threshold with a trend in n: logit P = beta (x - mu0 - gamma log n), x = log(ratio),
  i.e. c(n) = exp(mu0) n^gamma (gamma = 0: the constant-c law). One logistic regression on
  (x, log n); {'mu0', 'gamma', 'beta'}."""
  from sklearn.linear_model import LogisticRegression  # pylint: disable=import-outside-toplevel
  s = np.asarray(success, np.float64) > 0.5
  if s.all() or not s.any():
    raise ValueError('leak width fit: every run has the same outcome (all recovered or none); '
                     'accepted: ratios that bracket the threshold')
  if len(set(int(n) for n in ns)) < 2:
    raise ValueError('leak width trend: one shadow n; accepted: >= 2 shadow sizes')
  design = np.column_stack([np.log(np.asarray(ratios, np.float64)),
                            np.log(np.asarray(ns, np.float64))])
  model = LogisticRegression(C=FIT_C, max_iter=1000).fit(design, s.astype(int))
  beta, b_n = (float(v) for v in model.coef_[0])
  if beta <= 0:
    raise ValueError('leak width fit: recovery does not grow with the width (slope '
                     f'{beta:.3g} <= 0); accepted: ratios that bracket the threshold')
  return {'mu0': -float(model.intercept_[0]) / beta, 'gamma': -b_n / beta, 'beta': beta}


def bootstrap_trend(ratios, ns, success, groups, *, n_boot: int = 200, seed: int = 0,
                    level: float = 0.95) -> Dict[str, Any]:
  """`fit_trend` and its bootstrap over seeds (runs resampled within each group)."""
  ratios, ns = np.asarray(ratios, np.float64), np.asarray(ns, np.float64)
  success = np.asarray(success, np.float64)
  groups = np.asarray([repr(g) for g in groups])
  fit = fit_trend(ratios, ns, success)
  rng = np.random.default_rng(seed)
  members = [np.flatnonzero(groups == g) for g in np.unique(groups)]
  boots = []
  for _ in range(n_boot):
    idx = np.concatenate([rng.choice(m, size=len(m), replace=True) for m in members])
    try:
      boots.append(fit_trend(ratios[idx], ns[idx], success[idx]))
    except ValueError:
      continue
  fit.update(level=level, n_boot=n_boot, n_boot_fitted=len(boots), boot=boots)
  return fit


def trend_at(fit: Dict[str, Any], n: int) -> Dict[str, Any]:
  """The constant-c form of a trend fit at n: {'c', 'mu', 'beta', 'c_ci', 'boot_mu',
  'boot_beta'} (what `predict` takes), c = exp(mu0) n^gamma."""
  mu = fit['mu0'] + fit['gamma'] * math.log(n)
  out = {'c': float(math.exp(mu)), 'mu': mu, 'beta': fit['beta'], 'level': fit['level'],
         'gamma': fit['gamma']}
  if fit.get('boot'):
    mus = [b['mu0'] + b['gamma'] * math.log(n) for b in fit['boot']]
    lo, hi = (1 - fit['level']) / 2 * 100, (1 + fit['level']) / 2 * 100
    out.update(c_ci=[float(np.exp(np.percentile(mus, lo))), float(np.exp(np.percentile(mus, hi)))],
               boot_mu=mus, boot_beta=[b['beta'] for b in fit['boot']])
  return out


def recovery_probability(ratio: float, mu: float, beta: float) -> float:
  """sigma(beta (log(ratio) - mu)): the fitted chance that every row is recovered."""
  z = beta * (math.log(ratio) - mu)
  return float(1.0 / (1.0 + math.exp(-z))) if z > -700 else 0.0


def bound(records: Sequence[Dict[str, Any]], *, n: int, dim: int, p: int
          ) -> Optional[Dict[str, Any]]:
  """When every shadow run has one outcome no threshold can be fitted, but the runs still
  bound it: none recovered up to the largest ratio r (p* > r D n, 'lower'), or all recovered
  down to the smallest (p* <= r D n, 'upper'). None when the outcomes are mixed (fit them)."""
  success = [bool(r['success']) for r in records]
  if not records or (any(success) and not all(success)):
    return None
  kind = 'upper' if all(success) else 'lower'
  ratio = (min if kind == 'upper' else max)(float(r['ratio']) for r in records)
  p_bound = ratio * dim * n
  if kind == 'lower':
    statement = (f'no shadow recovered its training set up to p = {ratio:g} D n: p* > '
                 f'{p_bound:.4g} at n = {n}, D = {dim}; your p = {p} is '
                 f'{"below" if p <= p_bound else "above"} that bound'
                 f'{"" if p <= p_bound else " (no prediction: add larger leak_width.ratios)"}')
  else:
    statement = (f'every shadow recovered its training set down to p = {ratio:g} D n: p* <= '
                 f'{p_bound:.4g} at n = {n}, D = {dim}; your p = {p} is '
                 f'{"at or above" if p >= p_bound else "below"} that bound'
                 f'{"" if p >= p_bound else " (no prediction: add smaller leak_width.ratios)"}')
  statement += ' (the shadows\' ratio carried to your n, as the constant model does)'
  return {'n': int(n), 'dim': int(dim), 'p': int(p), 'p_over_dim_n': p / (dim * n),
          'kind': kind, 'ratio_bound': ratio, 'p_star_bound': p_bound, 'statement': statement}


def predict(fit: Dict[str, Any], *, n: int, dim: int, p: int) -> Dict[str, Any]:
  """The prediction for a model of width p (attacked parameters) trained on n records of
  dimension `dim` (D): the threshold p* = c D n with its interval, the margin p / p* and the
  predicted recovery with its bootstrap interval."""
  ratio = p / (dim * n)
  out = {'n': int(n), 'dim': int(dim), 'p': int(p), 'p_over_dim_n': ratio,
         'p_star': fit['c'] * dim * n, 'margin': p / (fit['c'] * dim * n),
         'predicted_recovery': recovery_probability(ratio, fit['mu'], fit['beta'])}
  if fit.get('c_ci'):
    out['p_star_ci'] = [fit['c_ci'][0] * dim * n, fit['c_ci'][1] * dim * n]
    out['margin_ci'] = [p / out['p_star_ci'][1], p / out['p_star_ci'][0]]
  if fit.get('boot_mu'):
    probs = [recovery_probability(ratio, m, b) for m, b in zip(fit['boot_mu'], fit['boot_beta'])]
    level = fit.get('level', 0.95)
    out['predicted_recovery_ci'] = [float(np.percentile(probs, (1 - level) / 2 * 100)),
                                    float(np.percentile(probs, (1 + level) / 2 * 100))]
  return out


def rates(records: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
  """Per (n, ratio) point: seeds, recovery rate (every row recovered), certified rate,
  median seconds and steps, from per-run records {'n', 'ratio', 'p', 'success',
  'certified', 'seconds', 'steps', 'seed'}."""
  points: Dict[tuple, List[Dict[str, Any]]] = {}
  for r in records:
    points.setdefault((r['n'], r['ratio']), []).append(r)
  out = []
  for (n, ratio), rs in sorted(points.items()):
    out.append({'n': n, 'ratio': ratio, 'p': rs[0]['p'], 'seeds': [r['seed'] for r in rs],
                'recovery_rate': float(np.mean([r['success'] for r in rs])),
                'certified_rate': float(np.mean([r['certified'] for r in rs])),
                'false_certified': int(sum(1 for r in rs if r['certified'] and not r['success'])),
                'median_seconds': float(np.median([r['seconds'] for r in rs])),
                'median_steps': float(np.median([r['steps'] for r in rs]))})
  return out


def plot(path: str, *, points: Sequence[Dict[str, Any]], fit: Dict[str, Any],
         prediction: Dict[str, Any], title: str, measured: Optional[Sequence[Dict[str, Any]]] = None
         ) -> None:
  """Recovery against width at the auditor's n: shadow rates (per shadow n, at the width of
  the same p / (D n)), the fitted curve and p* with its interval, the auditor's model marked;
  `measured`: rates measured directly at the auditor's n (validation)."""
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  from recon.runtime import io  # pylint: disable=import-outside-toplevel
  scale = prediction['dim'] * prediction['n']
  fig, ax = plt.subplots(figsize=(6.4, 4.2))
  for n in sorted({p['n'] for p in points}):
    mine = [p for p in points if p['n'] == n]
    ax.plot([p['ratio'] * scale for p in mine], [p['recovery_rate'] for p in mine], 'o',
            alpha=0.7, label=f'shadow n={n}')
  if measured:
    ax.plot([p['ratio'] * scale for p in measured], [p['recovery_rate'] for p in measured], 's',
            color='k', label=f'measured at n={prediction["n"]}')
  lo = min([p['ratio'] for p in points] + [prediction['p_over_dim_n']]) / 1.5
  hi = max([p['ratio'] for p in points] + [prediction['p_over_dim_n']]) * 1.5
  grid = np.geomspace(lo, hi, 200)
  ax.plot(grid * scale, [recovery_probability(r, fit['mu'], fit['beta']) for r in grid], '-',
          color='C3', label=f'fit: p* = {fit["c"]:.2f} D n')
  ax.axvline(prediction['p_star'], color='C3', ls=':')
  if prediction.get('p_star_ci'):
    ax.axvspan(*prediction['p_star_ci'], color='C3', alpha=0.12)
  ax.axvline(prediction['p'], color='k', ls='--')
  ax.plot([prediction['p']], [prediction['predicted_recovery']], '*', color='k', ms=14,
          label=f'your model: p={prediction["p"]}, margin {prediction["margin"]:.2f}')
  ax.set_xscale('log')
  ax.set_xlabel(f'attacked width p (n={prediction["n"]}, D={prediction["dim"]})')
  ax.set_ylabel('share of seeds with every row recovered')
  ax.set_ylim(-0.05, 1.05)
  ax.set_title(title, fontsize=9)
  ax.legend(fontsize=7, loc='lower right')
  fig.tight_layout()
  io.write_figure(path, fig, dpi=120)
  plt.close(fig)
