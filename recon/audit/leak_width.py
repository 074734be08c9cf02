"""The leak-width pipeline: shadow problems, the threshold fit, the prediction for a width.

`pipeline = 'leak_width'` (configs/leak_width.py) attacks nothing. The config describes the
auditor's model as every other job does: its family (`victim.name` 'random_features' with
`victim.activation` relu / relu_tanh, or 'two_layer' trained with MSE), its width
(`victim.p`, or `victim.width` for the two-layer net, whose attacked layer has
p = width x data.num_classes parameters), its data (`data.n`, `data.d`, or `data.name='file'`
with `data.path`: the rows give n, d and, by PCA, the intrinsic dimension k) and the attack
(`attack.*`, used unchanged on every shadow). The shadow sweep is `leak_width.*`.

Shadows: synthetic data of the auditor's shape (rows on the sqrt(d)-sphere; in a planted
k-dim subspace of R^d when D = k < d), n_s in `leak_width.shadow_n`, widths p = r D n_s for
r in `leak_width.ratios`, seeds `leak_width.shadow_seeds`. Random features run as one
vectorised sweep (`recon.sweep.grid`, one compiled group per n_s, widths x seeds vmapped) in
WORKDIR/shadows; the two-layer net as one sweep per n_s (`recon.sweep.networks`: one compiled
group per width, the seeds' victims trained and attacked at once) in WORKDIR/shadows/n<n>.
The fit and the prediction are `recon.audit.threshold`.

Outputs: WORKDIR/leak_width.json (the dimension estimate, every shadow run, the rates per
point, the fit with its bootstrap interval, the prediction), WORKDIR/leak_width.png (recovery
against width at the auditor's n, the model marked) and summary.json.
"""
from __future__ import annotations

import os
import time
from typing import Any, Dict, List

import ml_collections
import numpy as np
from absl import logging

from recon.config import sections
from recon import registry
from recon.runtime import checkpoint, io, machine
from recon.audit import threshold as leak_width
from recon.attack import sign_quotient
from recon.sweep import grid as sweep
from recon.errors import ExperimentError as ConfigError  # exit status 2, one line
from recon.data import auditor

NAME = 'leak_width'


def random_features(victim: sections.Victim) -> bool:
  """True for a random-features victim (its registered features), False for the two-layer
  network (`leak_width.SUPPORTED` holds the two)."""
  return registry.lookup('victim', victim.name).features == 'random'


def attacked_width(data_cfg: sections.Data, victim: sections.Victim) -> int:
  """p of the described model: victim.p (random features) or width x classes (two-layer)."""
  if random_features(victim):
    return int(victim.p)
  return int(victim.width) * int(data_cfg.num_classes)


def check(data_cfg: sections.Data, victim: sections.Victim,
          lw: sections.LeakWidth) -> None:
  """One-line refusals of what the prediction does not cover (the data, victim and leak_width
  sections), before any compute."""
  family = victim.name
  if family not in leak_width.SUPPORTED:
    raise ConfigError(f'config.victim.name: {family!r} with pipeline leak_width; accepted: '
                      f'{", ".join(leak_width.SUPPORTED)}')
  acts = leak_width.SUPPORTED[family]
  if acts is not None and victim.activation not in acts:
    raise ConfigError(f'config.victim.activation: {victim.activation!r} with pipeline '
                      f'leak_width and victim {family!r}; accepted: {", ".join(acts)}')
  if not random_features(victim) and victim.train.loss != 'mse':
    raise ConfigError(f'config.victim.train.loss: {victim.train.loss!r} with pipeline '
                      "leak_width and victim 'two_layer'; accepted: 'mse'")
  for field, values, ok, what in (
      ('shadow_n', lw.shadow_n, lambda v: isinstance(v, int) and v >= 2, 'ints >= 2'),
      ('ratios', lw.ratios, lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
       and 0 < v < 1e6, 'numbers in (0, 1e6)'),
      ('shadow_seeds', lw.shadow_seeds, lambda v: isinstance(v, int) and v >= 0, 'ints >= 0')):
    if isinstance(values, bool) or not values or not all(ok(v) and not isinstance(v, bool)
                                                         for v in values):
      raise ConfigError(f'config.leak_width.{field}: invalid value {values!r}; accepted: a '
                        f'non-empty tuple of {what}')
  for field in ('shadow_n', 'ratios', 'shadow_seeds'):
    values = tuple(getattr(lw, field))
    if len(set(values)) < len(values):
      twice = sorted({v for v in values if values.count(v) > 1})
      raise ConfigError(f'config.leak_width.{field}: {", ".join(map(str, twice))} given more '
                        f'than once in {values!r}; accepted: distinct values (a repeated one '
                        'would count its shadow runs twice)')
  if len(set(lw.ratios)) < 2 or len(set(lw.shadow_seeds)) < 2:
    raise ConfigError('config.leak_width.ratios / shadow_seeds: fewer than 2 distinct values; '
                      'accepted: >= 2 ratios (bracketing the threshold) and >= 2 seeds')
  if lw.model == 'trend' and len(set(lw.shadow_n)) < 2:
    raise ConfigError(f'config.leak_width.model: \'trend\' with one shadow size {tuple(lw.shadow_n)}; '
                      "accepted: 'trend' with >= 2 distinct leak_width.shadow_n, or 'constant'")
  if lw.dim == 'pca' and data_cfg.name != auditor.NAME:
    raise ConfigError(f"config.leak_width.dim: 'pca' with data.name {data_cfg.name!r}; "
                      "accepted: 'pca' with data.name 'file' (the rows to estimate k from), "
                      "else 'd' or 'auto'")


def dimension(data_cfg: sections.Data, victim: sections.Victim,
              lw: sections.LeakWidth) -> Dict[str, Any]:
  """D and how it was chosen ('why', one sentence): the row size d, or k by PCA of
  data.path's rows. PCA of n rows finds at most n - 1 directions: a k at that ceiling (or at
  d) measures the row count, not the data, and D falls back to d. A k < d also falls back to
  d for a family whose shadows cannot search inside a subspace (the two-layer net's sweep)."""
  mode = lw.dim
  if mode == 'auto':
    mode = 'pca' if data_cfg.name == auditor.NAME else 'd'
  d = int(data_cfg.d)
  out: Dict[str, Any] = {'mode': mode, 'd': d, 'D': d,
                         'why': 'D = d, the row size (leak_width.dim)'}
  if mode != 'pca':
    return out
  x, _ = auditor.read(data_cfg.path)
  est = leak_width.estimate_dim(x, lw.variance)
  out.update(pca=est, k=est['k'])
  ceiling = min(len(x) - 1, d)
  if est['k'] >= ceiling:
    out['why'] = (f'PCA of {len(x)} rows finds at most {ceiling} directions and needed all '
                  f'{est["k"]} for {lw.variance:g} of the variance: the rows are '
                  f'too few to show a subspace, so D = d = {d}')
  elif not random_features(victim):
    out['why'] = (f'PCA finds k = {est["k"]} < d = {d}, but shadows of {victim.name!r} '
                  f'cannot search inside a subspace, so D = d = {d} (a prediction for an attack '
                  'that searches all of R^d)')
  else:
    out['D'] = est['k']
    out['why'] = (f'PCA finds k = {est["k"]} of {ceiling} possible directions hold '
                  f'{lw.variance:g} of the variance: D = k, the shadows\' data lie '
                  'in a planted k-dim subspace and their attacks search inside it')
  return out


def cost_line(victim: sections.Victim, attack: sections.Attack, lw: sections.LeakWidth,
              dim: Dict[str, Any]) -> str:
  """What the shadows will cost, said before any compute: runs, groups, the largest problem."""
  runs = len(lw.shadow_n) * len(lw.ratios) * len(lw.shadow_seeds)
  largest = max(float(r) for r in lw.ratios) * dim['D'] * max(int(n) for n in lw.shadow_n)
  groups = len(lw.shadow_n) if random_features(victim) else (
      len(lw.shadow_n) * len(lw.ratios))
  return (f'leak width: {runs} shadow runs ({len(lw.shadow_n)} sizes x {len(lw.ratios)} ratios x '
          f'{len(lw.shadow_seeds)} seeds) in {groups} compiled group(s), the largest p = '
          f'{int(round(largest))}, each up to attack.max_steps = {int(attack.max_steps)} '
          'steps; the sweep logs the time left after each group')


def shadow_config(record: Dict[str, Any], data_cfg: sections.Data, victim: sections.Victim,
                  attack: sections.Attack, dim: Dict[str, Any]) -> Dict[str, Any]:
  """The auditor's config (`record`, as a dict; its sections read) on synthetic data of the
  same shape (planted subspace when D < d), as a dict.

  The shadows run the attack the auditor's model would get: with a relu-like random-features
  victim, `attack.sign_quotient` is decided for the model's size (n_candidates against d) and
  fixed for every shadow ('on' / 'off'), so shadows at n <= d run the quotient a model with
  n > d runs (recon/attack/sign_quotient.py; its threshold is higher than the plain loss's at n <= d)."""
  m = attack.n_candidates or data_cfg.n
  quotient = sign_quotient.active(attack.sign_quotient, victim.activation, m, dim['d'])
  c = ml_collections.ConfigDict(record)
  with c.ignore_type():
    c.pipeline = None
    c.data.path = None
    c.data.name = 'synthetic_sphere'
    c.data.preprocess = 'sphere'
    if dim['D'] < dim['d']:  # data in a planted k-dim subspace, searched inside it
      c.data.name = 'synthetic_subspace'
      c.data.planted_dim = dim['D']
      c.attack.subspace.mode = 'known'
      c.attack.subspace.dim = None
    c.victim.checkpoint = None
    c.victim.init_checkpoint = None
    c.attack.n_candidates = None
    c.attack.sign_quotient = 'on' if quotient else 'off'
    c.run.overwrite = False
    c.run.resume = False
    c.run.checkpoint_every_seconds = 0.0
    c.run.log_every_seconds = max(c.run.log_every_seconds, 30.0)
  return c.to_dict()


def run_or_read(shadows: Dict[str, Any], workdir: str) -> Dict[str, Any]:
  """`recon.sweep.grid.run` of the shadow sweep `shadows` (its config as a dict) in `workdir`,
  resuming a stopped sweep there, or the sweep.json of one that finished there (its config
  must equal `shadows` in every result-changing field)."""
  done = os.path.join(workdir, 'sweep.json')
  if not os.path.isfile(done):
    return sweep.run(ml_collections.ConfigDict(shadows), workdir)
  out = io.read_json(done)
  diff = checkpoint.config_differences(out.get('config') or {}, shadows)
  if diff:
    raise ConfigError(f'workdir: {workdir} holds shadows of another config (it differs in '
                      f'{", ".join(diff)}); choose another work dir')
  return out


def shadow_records_rf(base: Dict[str, Any], dim: Dict[str, Any], ns, ratios, seeds,
                      workdir: str) -> List[Dict[str, Any]]:
  """Random-features shadows of `base` (`shadow_config`) as one `recon.sweep.grid` (one compiled
  group per n); per-run records."""
  c = ml_collections.ConfigDict(base)
  scale = dim['D'] / dim['d']  # p = r D n = (r D / d) d n
  with c.ignore_type():
    c.sweep.data.n = tuple(int(n) for n in ns)
    c.sweep.victim.p_over_dn = tuple(float(r) * scale for r in ratios)
    c.sweep.seed = tuple(int(s) for s in seeds)
    c.run.resume = True  # a stopped shadow sweep keeps its finished groups
  out = run_or_read(c.to_dict(), workdir)
  per_group = {i: g['seconds'] / max(1, g['n_points']) for i, g in enumerate(out['groups'])}
  records = []
  for r in out['records']:
    records.append({'n': int(r['n']), 'ratio': float(r['p_over_dn']) / scale, 'p': int(r['p']),
                    'seed': int(r['seed']), 'success': bool(r['frac_recovered'] >= 1.0),
                    'certified': bool(r['certified']), 'frac_recovered': float(r['frac_recovered']),
                    'steps': int(r['steps']), 'seconds': float(per_group[r['group']])})
  return records


def shadow_records_two_layer(base: Dict[str, Any], dim: Dict[str, Any], ns, ratios,
                             seeds, workdir: str) -> List[Dict[str, Any]]:
  """Two-layer shadows as one `recon.sweep.grid` per n (`recon.sweep.networks`: one compiled group
  per width, the seeds' victims trained and attacked at once), width rounded so that
  width x classes = r D n."""
  classes = int(base['data']['num_classes'])
  records = []
  for n in ns:
    widths = {r: max(1, int(round(r * dim['D'] * n / classes))) for r in ratios}
    c = ml_collections.ConfigDict(base)
    with c.ignore_type():
      c.data.n = int(n)
      c.sweep.victim.width = tuple(sorted(set(widths.values())))
      c.sweep.seed = tuple(int(s) for s in seeds)
      c.run.resume = True  # a stopped shadow sweep keeps its finished groups
    out = run_or_read(c.to_dict(), os.path.join(workdir, f'n{n}'))
    per_group = {i: g['seconds'] / max(1, g['n_points']) for i, g in enumerate(out['groups'])}
    by_width = {(int(r['width']), int(r['seed'])): r for r in out['records']}
    for ratio, width in widths.items():
      for seed in seeds:
        m = by_width[(width, int(seed))]
        records.append({'n': int(n), 'ratio': float(ratio), 'p': width * classes,
                        'width': width, 'seed': int(seed),
                        'success': bool(m['frac_recovered'] >= 1.0), 'certified': False,
                        'frac_recovered': float(m['frac_recovered']), 'steps': int(m['steps']),
                        'seconds': float(per_group[m['group']])})
  return records


def shadow_records(record: Dict[str, Any], data_cfg: sections.Data, victim: sections.Victim,
                   attack: sections.Attack, dim, ns, ratios, seeds,
                   workdir: str) -> List[Dict[str, Any]]:
  """Per-run records {'n', 'ratio', 'p', 'seed', 'success', 'certified', 'steps', 'seconds'}
  of the family's shadows at sizes `ns`, ratios p / (D n), seeds (`record`: the auditor's
  config as a dict, with its sections)."""
  base = shadow_config(record, data_cfg, victim, attack, dim)
  run = shadow_records_rf if random_features(victim) else shadow_records_two_layer
  return run(base, dim, ns, ratios, seeds, workdir)


def family(victim: sections.Victim) -> str:
  if random_features(victim):
    return f'random_features/{victim.activation}'
  return f'two_layer/{victim.activation}/{victim.train.loss}'


def run(spec: sections.RunSpec, workdir: str, dtype, resuming: bool = False) -> Dict[str, Any]:
  """Shadows, fit, prediction; writes leak_width.json / .png and summary.json."""
  del dtype, resuming
  t0 = time.time()
  data_cfg, victim, lw = spec.data, spec.victim, spec.leak_width
  check(data_cfg, victim, lw)
  dim = dimension(data_cfg, victim, lw)
  logging.info('leak width: %s, n=%d, D=%d: %s; width p=%d', family(victim), data_cfg.n,
               dim['D'], dim['why'], attacked_width(data_cfg, victim))
  logging.info('%s', cost_line(victim, spec.attack, lw, dim))
  records = shadow_records(spec.to_dict(), data_cfg, victim, spec.attack, dim, lw.shadow_n,
                           lw.ratios, lw.shadow_seeds, os.path.join(workdir, 'shadows'))
  points = leak_width.rates(records)
  p = attacked_width(data_cfg, victim)
  bound = leak_width.bound(records, n=int(data_cfg.n), dim=dim['D'], p=p)
  if bound is not None:  # every shadow one outcome: no fit, the bound the runs did measure
    return _write_bound(spec.to_dict(), victim, lw, workdir, dim, records, points, bound, t0)
  try:
    fit = leak_width.bootstrap_threshold([r['ratio'] for r in records],
                                         [r['success'] for r in records],
                                         [(r['n'], r['ratio']) for r in records],
                                         n_boot=lw.bootstrap, seed=int(spec.seed))
    trend = None
    if lw.model == 'trend':
      trend = leak_width.bootstrap_trend([r['ratio'] for r in records], [r['n'] for r in records],
                                         [r['success'] for r in records],
                                         [(r['n'], r['ratio']) for r in records],
                                         n_boot=lw.bootstrap, seed=int(spec.seed))
  except ValueError as e:
    raise ConfigError(f'config.leak_width.ratios: {e}') from None
  chosen = fit if trend is None else leak_width.trend_at(trend, int(data_cfg.n))
  prediction = leak_width.predict(chosen, n=int(data_cfg.n), dim=dim['D'], p=p)
  prediction['model'] = lw.model
  result = {
      'family': family(victim), 'dimension': dim, 'shadow_n': list(lw.shadow_n),
      'ratios': list(lw.ratios), 'shadow_seeds': list(lw.shadow_seeds),
      'model': lw.model,
      'fit': {k: v for k, v in fit.items() if k not in ('boot_mu', 'boot_beta')},
      'fit_trend': None if trend is None else {
          **{k: v for k, v in trend.items() if k != 'boot'},
          'at_n': {k: v for k, v in chosen.items() if k not in ('boot_mu', 'boot_beta')}},
      'prediction': prediction, 'points': points, 'runs': records,
      'machine': machine.describe(), 'wall_seconds': time.time() - t0,
  }
  io.write_json(os.path.join(workdir, 'leak_width.json'), result)
  leak_width.plot(os.path.join(workdir, 'leak_width.png'), points=points, fit=chosen,
                  prediction=prediction,
                  title=f'{family(victim)}: shadows n={list(lw.shadow_n)}, D={dim["D"]} '
                        f'({dim["mode"]})')
  summary = {'status': 'finished', 'pipeline': NAME, 'config': spec.to_dict(),
             'metrics': {'p_star': prediction['p_star'], 'margin': prediction['margin'],
                         'predicted_recovery': prediction['predicted_recovery'],
                         'c': chosen['c'], 'c_ci': chosen.get('c_ci'), 'D': dim['D'],
                         'model': lw.model},
             'wall_seconds': time.time() - t0}
  io.write_json(os.path.join(workdir, 'summary.json'), summary)
  ci = chosen.get('c_ci') or [float('nan')] * 2
  logging.info('leak width: p* = %.3g (c = %.3g, %d%% CI %.3g..%.3g); your p = %d: margin %.2f, '
               'predicted recovery %.2f', prediction['p_star'], chosen['c'], round(100 * fit['level']),
               ci[0], ci[1], prediction['p'], prediction['margin'],
               prediction['predicted_recovery'])
  return summary


def _write_bound(record: Dict[str, Any], victim: sections.Victim, lw: sections.LeakWidth,
                 workdir: str, dim, records, points, bound, t0: float) -> Dict[str, Any]:
  """leak_width.json and summary.json of a prediction that is a bound (no threshold fit;
  `record`: the config as a dict)."""
  result = {'family': family(victim), 'dimension': dim, 'shadow_n': list(lw.shadow_n),
            'ratios': list(lw.ratios), 'shadow_seeds': list(lw.shadow_seeds), 'model': lw.model,
            'fit': None, 'fit_trend': None, 'prediction': bound, 'points': points,
            'runs': records, 'machine': machine.describe(), 'wall_seconds': time.time() - t0}
  io.write_json(os.path.join(workdir, 'leak_width.json'), result)
  summary = {'status': 'finished', 'pipeline': NAME, 'config': record,
             'metrics': {'p_star': None, 'p_star_bound': bound['p_star_bound'],
                         'bound': bound['kind'], 'margin': None,
                         'predicted_recovery': None, 'D': dim['D'], 'model': lw.model,
                         'statement': bound['statement']},
             'wall_seconds': time.time() - t0}
  io.write_json(os.path.join(workdir, 'summary.json'), summary)
  logging.info('leak width: %s', bound['statement'])
  return summary


registry.register('pipeline', NAME, registry.Pipeline(run=run, check=check,
                                                      sections=('data', 'victim', 'leak_width')))
