"""Validation of the leak-width prediction: the threshold at a large n predicted from shadows
at small n, against the threshold measured directly at that n.

Per family (random features relu / relu_tanh, the two-layer MSE net) at d = 16, with the attack
of configs/leak_width.py capped at --max_steps on every run alike:
  1. shadows: n in --shadow_n, p = r d n for r in --ratios, --shadow_seeds (never reported);
     `recon.audit.threshold`'s logistic fit gives c_pred with its bootstrap interval;
  2. direct: n = --n_target, widths c_pred x --bracket, fresh --seeds (or the recovery law's
     runs: --direct_from); the same fit gives c_measured;
  3. the prediction error c_pred / c_measured (target: within a factor 1.5).
Both stages run `recon.leak_width_shadows`. Families merge into results/leak_width.json (one
already there is skipped unless --redo); .md and .png are rendered from it. The results' runs
were made per family and n into their own --out_dir and merged as `F@n<n>`.

    python -m scripts.leak_width --families=relu --shadow_n=4,8,16 --n_target=32
    python -m scripts.leak_width --tiny --out_dir=/tmp/lw
"""
from __future__ import annotations

import json
import os
import sys
import tempfile
import time
from typing import Any, Dict, List

from absl import app, flags, logging
import numpy as np

from configs import leak_width as leak_width_config
import recon
from recon.runtime import io, machine
from recon.audit import threshold as leak_width
from scripts import common
plt = common.pyplot()

FAMILIES = {
    'relu': {'victim.name': 'random_features', 'victim.activation': 'relu'},
    'relu_tanh': {'victim.name': 'random_features', 'victim.activation': 'relu_tanh'},
    'two_layer': {'victim.name': 'two_layer', 'victim.activation': 'relu_tanh',
                  'data.num_classes': 2,
                  # network_law's blind choice for the two-layer MSE net (results/network_law.md)
                  'attack.jacobian_at': 'init_and_trained'},
}
BRACKET = (2 / 3, 1.0, 1.5)  # direct widths: c_pred x these
TARGET_FACTOR = 1.5


def define_flags() -> None:
  """The command line's flags (defined only when run as a script, so that importing the module
  for its functions, as the tests do, collides with no other script's flags)."""
  flags.DEFINE_list('families', ['relu', 'relu_tanh', 'two_layer'], 'Families to run.')
  flags.DEFINE_integer('d', 16, 'Row size.')
  flags.DEFINE_list('shadow_n', ['8', '16', '32'], 'Shadow training-set sizes.')
  flags.DEFINE_list('ratios', ['0.75', '1', '1.25', '1.5', '2', '3'], 'Shadow p / (d n).')
  flags.DEFINE_list('shadow_seeds', ['1000', '1001', '1002', '1003', '1004'], 'Shadow seeds.')
  flags.DEFINE_list('seeds', ['0', '1', '2', '3', '4'], 'Reported (direct) seeds.')
  flags.DEFINE_integer('n_target', 100, 'n of the direct measurement (random features).')
  flags.DEFINE_integer('n_target_two_layer', 100, 'n of the direct measurement (two-layer).')
  flags.DEFINE_list('shadow_n_two_layer', None, 'Shadow n of the two-layer net (default shadow_n).')
  flags.DEFINE_integer('max_steps', 20000, 'attack.max_steps of every run (shadow and direct).')
  flags.DEFINE_integer('bootstrap', 200, 'Bootstrap resamples.')
  flags.DEFINE_enum('polish', 'off', ['off', 'auto'],
                    "'auto': 'polish' in every run's attack.rescue: the precision rung re-searches "
                    'rows one by one '
                    'in float64 after the vectorised sweep, point by point (about a minute per '
                    'point on 2 shared cores), so the validation runs without it.')
  flags.DEFINE_string('direct_from', None,
                      'Take the direct measurement at n_target from this recovery-law JSON '
                      '(scripts/recovery_law.py: method default, fresh seeds >= 100, every width '
                      'measured at that n and d) instead of running it; random features only, and '
                      'the attack must be the same (--polish=auto: the recovery law\'s default).')
  flags.DEFINE_integer('ratios_per_call', None,
                       'Widths per vectorised shadow group (default: all of --ratios in one group '
                       'per n). Groups of 30 points at n = 32 hung on the shared 2-core CPU '
                       '(docs/audit.md); 3 ratios x 5 seeds = 15 points ran.')
  flags.DEFINE_enum('dtype', 'float32', ['float32', 'float64'],
                    "run.dtype of every run. The two-layer net at n = 100 needs 'float64': its "
                    'stacked rows at W(0) and W(T) are nearly parallel and their float32 Gram '
                    'fails its Cholesky (every run non-finite; docs/audit.md).')
  flags.DEFINE_list('bracket', [str(b) for b in BRACKET],
                    'Direct widths as multiples of the shadow c (default 2/3, 1, 3/2).')
  flags.DEFINE_string('work_dir', None,
                      'Where the runs keep their state (default: a fresh temporary folder); '
                      'a stopped call given the same folder resumes its finished groups.')
  flags.DEFINE_string('out_dir', 'results', 'Where leak_width.{json,md,png} go.')
  flags.DEFINE_bool('redo', False, 'Rerun families already in the JSON.')
  flags.DEFINE_enum('sign_quotient', 'auto', ['auto', 'on', 'off'],
                    "attack.sign_quotient of every run (relu: 'on' runs the shadows at n <= d "
                    'with the quotient that a target with n > d runs; recon/attack/sign_quotient.py).')
  flags.DEFINE_bool('tiny', False, 'Smoke test: tiny sizes.')


FLAGS = flags.FLAGS


def family_config(family: str, n: int):
  c = leak_width_config.get_config()
  c.update_from_flattened_dict({**FAMILIES[family], 'data.n': n, 'data.d': FLAGS.d,
                                'attack.max_steps': FLAGS.max_steps,
                                'attack.rescue': ('escalate', 'polish') if (
                                    FLAGS.polish == 'auto' and family != 'two_layer')
                                else ('escalate',),
                                'run.log_every_seconds': 60.0, 'run.dtype': FLAGS.dtype,
                                'attack.sign_quotient': FLAGS.sign_quotient})
  return c


def fit_or_bound(records: List[Dict[str, Any]], seed: int) -> Dict[str, Any]:
  """The bootstrap fit, or (all one outcome) which side of the measured ratios c lies on."""
  try:
    fit = leak_width.bootstrap_threshold([r['ratio'] for r in records],
                                         [r['success'] for r in records],
                                         [(r['n'], r['ratio']) for r in records],
                                         n_boot=FLAGS.bootstrap, seed=seed)
    return {k: v for k, v in fit.items() if k not in ('boot_mu', 'boot_beta')}
  except ValueError as e:
    ratios = [r['ratio'] for r in records]
    every = all(r['success'] for r in records)
    return {'c': None, 'bound': ('c < ' if every else 'c > ') + f'{(min if every else max)(ratios):g}',
            'why': str(e)}


def direct_from_law(path: str, activation: str, d: int, n: int) -> List[Dict[str, Any]]:
  """Per-seed records of the recovery law's default method at (activation, d, n), fresh seeds,
  full space, in the shadows' record format (success: every row recovered)."""
  law = io.read_json(path)
  out = []
  for r in law['records']:
    if (r['method'], r['activation'], r['d'], r['n'], r['k']) != ('default', activation, d, n, None) \
        or r.get('first_seed', 0) < 100 or 'per_seed' not in r \
        or r.get('data', 'synthetic_sphere') != 'synthetic_sphere':
      continue
    s = r['per_seed']
    for i, seed in enumerate(s['seed']):
      out.append({'n': n, 'ratio': float(r['p_over_dn']), 'p': int(r['p']), 'seed': int(seed),
                  'success': bool(s['recovered'][i]), 'certified': bool(s['certified'][i]),
                  'steps': int(s['steps'][i]), 'seconds': float(r['median_seconds'])})
  if not out:
    raise SystemExit(f'--direct_from: no default-method records at {activation}, d={d}, n={n} '
                     f'(fresh seeds) in {path}')
  return out


def add_trend(out: Dict[str, Any]) -> Dict[str, Any]:
  """The trend form's prediction (c(n) = exp(mu0) n^gamma over the shadow sizes) at n_target,
  from the shadow runs alone, and its error against the measured c."""
  runs = out['shadow_runs']
  try:
    trend = leak_width.bootstrap_trend([r['ratio'] for r in runs], [r['n'] for r in runs],
                                       [r['success'] for r in runs],
                                       [(r['n'], r['ratio']) for r in runs],
                                       n_boot=FLAGS.bootstrap, seed=0)
  except ValueError as e:
    out['trend_fit'] = {'c': None, 'why': str(e)}
    return out
  at = leak_width.trend_at(trend, out['n_target'])
  out['trend_fit'] = {**{k: v for k, v in trend.items() if k != 'boot'},
                      'c': at['c'], 'c_ci': at.get('c_ci')}
  if out['measured_fit'].get('c'):
    err = at['c'] / out['measured_fit']['c']
    out.update(trend_prediction_ratio=err,
               trend_within_target=bool(1 / TARGET_FACTOR <= err <= TARGET_FACTOR))
  return out


def with_direct(out: Dict[str, Any], direct: List[Dict[str, Any]], t_direct: float
                ) -> Dict[str, Any]:
  """`out` with its direct side (runs, points, measured fit, the prediction's error) set."""
  measured = fit_or_bound(direct, seed=1)
  out.update(direct_ratios=sorted({r['ratio'] for r in direct}), measured_fit=measured,
             direct_points=leak_width.rates(direct), direct_runs=direct,
             direct_wall_seconds=t_direct, reported_seeds=sorted({r['seed'] for r in direct}))
  for key in ('p_star_measured', 'prediction_ratio', 'within_target'):
    out.pop(key, None)
  if measured.get('c'):
    err = out['shadow_fit']['c'] / measured['c']
    out.update(p_star_measured=measured['c'] * out['d'] * out['n_target'], prediction_ratio=err,
               within_target=bool(1 / TARGET_FACTOR <= err <= TARGET_FACTOR))
  return add_trend(out)


def run_family(family: str) -> Dict[str, Any]:
  t0 = time.time()
  two_layer = family == 'two_layer'
  n_target = FLAGS.n_target_two_layer if two_layer else FLAGS.n_target
  shadow_n = [int(n) for n in (FLAGS.shadow_n_two_layer if two_layer and FLAGS.shadow_n_two_layer
                               else FLAGS.shadow_n)]
  cfg = family_config(family, n_target)  # data.d = --d: the shadows' D is d
  tmp = (os.path.join(FLAGS.work_dir, family) if FLAGS.work_dir
         else tempfile.mkdtemp(prefix=f'leak_width_{family}_'))
  shadow_seeds = [int(s) for s in FLAGS.shadow_seeds]
  seeds = [int(s) for s in FLAGS.seeds]
  assert not set(shadow_seeds) & set(seeds), 'shadow seeds must not be reported seeds'
  ratios = [float(r) for r in FLAGS.ratios]
  # --ratios_per_call splits each n's widths over several vectorised groups (see the flag).
  step = FLAGS.ratios_per_call or len(ratios)
  shadows, found = [], None
  for i in range(0, len(ratios), step):
    found = recon.leak_width_shadows(cfg, shadow_n, ratios[i:i + step], shadow_seeds,
                                     os.path.join(tmp, f'shadows_{i}'))
    shadows += found['records']
  # Shadow sweeps read back from --work_dir took no wall time here: count their runs' seconds.
  t_shadow = max(time.time() - t0, sum(r['seconds'] for r in shadows))
  fit = fit_or_bound(shadows, seed=0)
  per_n = {str(n): fit_or_bound([r for r in shadows if r['n'] == n], seed=0) for n in shadow_n}
  logging.info('%s: shadows %s -> c_pred %s (%.0fs)', family, shadow_n, fit.get('c'), t_shadow)
  if fit['c'] is None:
    raise SystemExit(f'{family}: the shadow fit failed ({fit["bound"]}); widen --ratios')
  bracket = sorted({round(fit['c'] * float(b), 3) for b in FLAGS.bracket})
  t1 = time.time()
  if FLAGS.direct_from:
    if two_layer or FLAGS.polish != 'auto':
      raise SystemExit('--direct_from: random-features families with --polish=auto only (the '
                       "recovery law's default attack)")
    direct = direct_from_law(FLAGS.direct_from, FAMILIES[family]['victim.activation'], FLAGS.d,
                             n_target)
    bracket = sorted({r['ratio'] for r in direct})
    seeds = sorted({r['seed'] for r in direct})
    assert not set(shadow_seeds) & set(seeds), 'shadow seeds must not be reported seeds'
    t_direct = sum(r['seconds'] for r in direct)  # the law's own wall time per seed, summed
  else:
    direct = recon.leak_width_shadows(cfg, [n_target], bracket, seeds,
                                      os.path.join(tmp, 'direct'))['records']
    t_direct = time.time() - t1
  out = {
      'family': found['family'], 'd': FLAGS.d, 'n_target': n_target,
      'shadow_n': shadow_n, 'shadow_ratios': ratios, 'shadow_seeds': shadow_seeds,
      'ratios_per_call': FLAGS.ratios_per_call, 'bracket': [float(b) for b in FLAGS.bracket],
      'reported_seeds': seeds, 'max_steps': FLAGS.max_steps, 'dtype': FLAGS.dtype,
      'attack': {**{k: cfg.attack[k] for k in ('optimizer', 'lr', 'schedule', 'tol',
                                               'sign_quotient')},
                 'polish': 'auto' if 'polish' in cfg.attack.rescue else 'off',
                 'escalate': 'auto' if 'escalate' in cfg.attack.rescue else 'off'},
      'shadow_fit': fit, 'shadow_fit_per_n': per_n,
      'p_star_pred': fit['c'] * FLAGS.d * n_target,
      'direct_from': FLAGS.direct_from,
      'shadow_points': leak_width.rates(shadows), 'shadow_runs': shadows,
      'shadow_wall_seconds': t_shadow,
      'machine': machine.describe(), 'device': '1 x cpu',
  }
  out = with_direct(out, direct, t_direct)
  out['direct_ratios'] = bracket
  return out


def render(path_json: str, out_dir: str) -> None:
  """results/leak_width.{md,png} from the JSON."""
  with open(path_json) as f:
    result = json.load(f)
  fams = result['families']
  fmt = lambda f: (f'{f["c"]:.3g} [{f["c_ci"][0]:.3g}, {f["c_ci"][1]:.3g}]'  # noqa: E731
                   if f.get('c') and f.get('c_ci') else (f'{f["c"]:.3g}' if f.get('c')
                                                         else f.get('bound', '-')))
  io.write_text(os.path.join(out_dir, 'leak_width.md'), common.page(
      'Leak-width prediction: the threshold at large n from shadows at small n',
      'c: p* = c d n, the width at which half the seeds recover every row (logistic fit of '
      'per-seed success on log(p / dn); 95% bootstrap interval over seeds); the trend form '
      'c(n) = exp(mu0) n^gamma. Target: predicted / measured within 1/1.5 .. 1.5. Shadow seeds '
      'are never reported on; direct seeds are fresh. Machine: '
      + '; '.join(sorted({r['machine'] for r in fams.values()})) + '.',
      common.table(['family', 'd', 'shadow n', 'n', 'c, constant law', 'c, trend in n',
                    'c measured at n', 'constant / measured', 'trend / measured', 'shadow s',
                    'direct s'],
                   [[r['family'], r['d'], str(r['shadow_n']), r['n_target'],
                     fmt(r['shadow_fit']), fmt(r.get('trend_fit', {})), fmt(r['measured_fit']),
                     r.get('prediction_ratio'), r.get('trend_prediction_ratio'),
                     round(r['shadow_wall_seconds']), round(r['direct_wall_seconds'])]
                    for r in fams.values()]),
      '## Direct measurements (fresh seeds)',
      common.table(['family', 'n', 'p', 'p/dn', 'seeds', 'recovery', 'certified',
                    'false cert.', 'median s / seed', 'median steps'],
                   [[r['family'], p['n'], p['p'], p['ratio'], len(p['seeds']),
                     p['recovery_rate'], p['certified_rate'], p['false_certified'],
                     p['median_seconds'], p['median_steps']]
                    for r in fams.values() for p in r['direct_points']]),
      *[f"## Not measured: {name}\n\n{note['why']}"
        for name, note in result.get('not_measured', {}).items()]))
  fig, axes = plt.subplots(1, max(1, len(fams)), figsize=(4.6 * max(1, len(fams)), 3.8),
                           squeeze=False)
  for ax, (name, r) in zip(axes[0], fams.items()):
    for n in r['shadow_n']:
      pts = [p for p in r['shadow_points'] if p['n'] == n]
      ax.plot([p['ratio'] for p in pts], [p['recovery_rate'] for p in pts], 'o-', alpha=0.6,
              label=f'shadow n={n}')
    ax.plot([p['ratio'] for p in r['direct_points']],
            [p['recovery_rate'] for p in r['direct_points']], 's', color='k', ms=8,
            label=f'measured n={r["n_target"]}')
    f = r['shadow_fit']
    grid = np.geomspace(min(r['shadow_ratios']) / 1.2, max(r['shadow_ratios']) * 1.2, 100)
    ax.plot(grid, [leak_width.recovery_probability(g, f['mu'], f['beta']) for g in grid], '-',
            color='C3', label=f'shadow fit c={f["c"]:.2f}')
    if f.get('c_ci'):
      ax.axvspan(*f['c_ci'], color='C3', alpha=0.12)
    if r['measured_fit'].get('c'):
      ax.axvline(r['measured_fit']['c'], color='k', ls='--',
                 label=f'measured c={r["measured_fit"]["c"]:.2f}')
    ax.set_xscale('log')
    ax.set_xlabel('p / (d n)')
    ax.set_ylabel('share of seeds with every row recovered')
    ax.set_title(r['family'], fontsize=9)
    ax.legend(fontsize=7)
  common.savefig(fig, os.path.join(out_dir, 'leak_width.png'), dpi=110)


def main(argv):
  del argv
  recon.setup_process()  # the CLI's process setup: CPU buffers, compile cache
  if FLAGS.tiny:
    FLAGS.families, FLAGS.d, FLAGS.shadow_n = ['relu'], 4, ['3', '4']
    FLAGS.ratios, FLAGS.shadow_seeds, FLAGS.seeds = ['0.25', '16'], ['1000', '1001'], ['0', '1']
    FLAGS.n_target, FLAGS.max_steps, FLAGS.bootstrap = 6, 1000, 10
  try:
    assert FLAGS.bracket and all(float(b) > 0 for b in FLAGS.bracket)
  except (AssertionError, ValueError):
    sys.exit(f'error: --bracket: {",".join(FLAGS.bracket)!r}; accepted: positive numbers, '
             'multiples of the shadow c (e.g. 0.667,1,1.5)')
  os.makedirs(FLAGS.out_dir, exist_ok=True)
  path = os.path.join(FLAGS.out_dir, 'leak_width.json')
  result = io.read_json(path) if os.path.exists(path) else {
      'description': 'leak-width prediction: threshold c (p* = c d n) from shadows at small n vs '
                     'measured at n_target', 'command': 'python -m scripts.leak_width',
      'families': {}}
  for family in FLAGS.families:
    if family not in FAMILIES:
      sys.exit(f'error: --families: unknown {family!r}; accepted: {", ".join(FAMILIES)}')
    if family in result['families'] and not FLAGS.redo:
      logging.info('%s: already in %s (skipped; --redo to rerun)', family, path)
      continue
    result['families'][family] = run_family(family)
    io.write_json(path, result)  # after each family: a stopped script keeps what finished
  render(path, FLAGS.out_dir)


if __name__ == '__main__':
  define_flags()
  app.run(main)
