"""The law of reconstruction at CPU scale: phase-transition curve, law table, n_candidates != n.

Every stage is one sweep (`recon.run`, `sweep` set) on configs/rf_phase_transition.py (n=8, d=10):

  lr:     lr grid {0.5, 2, 5, 20} at p/dn in {2, 8} on the TUNING seeds 1000-1002
                                                       -> results/phase_transition_lr.json
  curve:  the config's sweep (2 activations x 9 widths) x seeds 100-104
                                                       -> results/phase_transition.{json,png}
  law:    p = n, dn, 10 dn x seeds 100-104 x 2 activations
                                                       -> results/law_table.{md,json}
  ncand:  n_candidates = n/2, n, 2n at p = 10 dn x seeds 100-102
                                                       -> results/n_candidates.{md,json}

The learning rate is chosen blind: the lr stage runs only on the tuning seeds, which no other
stage reports, and picks the lr with the lowest final projection loss of the descent (before
the float64 precision rung; the attack's own signal, never the distance to the true set): the
mean over (activation, p/dn) of log10 of the median loss over the tuning seeds. recon_error is
scored after the rung (records: projection_loss before it, loss_after_rung after it). The other stages run at the chosen lr (read back from
phase_transition_lr.json) on the reported seeds; every JSON records both seed lists.

    python scripts/phase_transition.py                     # every stage (runs: results/runs/)
    python scripts/phase_transition.py --stages=curve,law
    python scripts/phase_transition.py --tiny --out_dir=/tmp/pt
"""
from __future__ import annotations

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ml_collections  # noqa: E402
import numpy as np  # noqa: E402
from absl import logging  # noqa: E402

from configs import base, rf_phase_transition  # noqa: E402
import recon  # noqa: E402
from recon import metrics  # noqa: E402
from recon.runtime import io, machine
from recon.config import validate as config_lib  # noqa: E402
from scripts import common  # noqa: E402
plt = common.pyplot()

RESULTS = 'results'  # --out_dir
RUNS = os.path.join(RESULTS, 'runs', 'phase_transition')
TINY = False  # --tiny: n=4, d=4, 30 steps, at most 2 values per sweep axis (a smoke test)
KEEP = ('index', 'activation', 'p', 'p_over_dn', 'p_over_n', 'seed', 'lr', 'n_candidates',
        'recon_error', 'recon_error_median', 'frac_recovered', 'n_recovered', 'dist_abs',
        'feature_residual', 'projection_loss', 'train_mse', 'steps', 'status',
        'n_duplicates', 'n_uncovered_samples', 'n_unmatched_candidates', 'certified')
PAPER = {'p = n': 'train loss ~0, rho ~1.0 (label fitting only)',
         'p = dn': 'train loss ~0, rho ~0.5 (reconstruction starts)',
         'p = 10dn': 'train loss ~0, rho ~0 (full reconstruction)'}
LAW_FIELDS = ('train_mse', 'recon_error', 'dist_abs', 'frac_recovered')
TUNING_SEEDS = (1000, 1001, 1002)  # the lr stage only; never reported
REPORTED_SEEDS = {'curve': (100, 101, 102, 103, 104), 'law': (100, 101, 102, 103, 104),
                  'ncand': (100, 101, 102)}
LR_RULE = ('lowest mean over (activation, p/dn) of log10(median final projection loss over the '
           'tuning seeds); ties to the smaller lr')


def base_config() -> ml_collections.ConfigDict:
  c = rf_phase_transition.get_config()
  c.run.overwrite = True
  if TINY:
    c.data.n, c.data.d = 4, 4
  return c


def run_sweep(c: ml_collections.ConfigDict, name: str):
  if TINY:
    c.attack.max_steps = min(c.attack.max_steps, 30)
    for axis, values in config_lib.sweep_axes(c.sweep).items():
      if axis != 'attack.n_candidates':  # the ncand report needs n/2, n and 2n
        config_lib.set_path(c.sweep, axis, tuple(values)[:2])
  t0 = time.time()
  result = recon.run(c, os.path.join(RUNS, name)).summary
  return result, time.time() - t0


def slim(records):
  """The kept fields; projection_loss is the descent's final loss, loss_after_rung the loss
  after the float64 precision rung where it ran (recon_error is scored after it)."""
  out = []
  for r in records:
    row = {k: r[k] for k in KEEP if k in r}
    rung = r.get('polish') or {}
    row['rung_applied'] = bool(rung.get('applied'))
    if rung.get('applied'):
      row['loss_after_rung'] = rung.get('loss_after')
      row['rung_kept'] = bool(rung.get('kept'))
    out.append(row)
  return out


def stats(values):
  v = np.asarray(values, np.float64)
  return {'mean': float(v.mean()), 'std': float(v.std()), 'min': float(v.min()),
          'max': float(v.max()), 'median': float(np.median(v)), 'n': int(v.size)}


def aggregate(records, keys, fields):
  """Mean/std/min/max over seeds of each field, per combination of `keys`."""
  out = {}
  for r in records:
    out.setdefault(tuple(r[k] for k in keys), []).append(r)
  rows = []
  for combo, rs in out.items():
    row = dict(zip(keys, combo))
    row.update({f: stats([r[f] for r in rs]) for f in fields})
    rows.append(row)
  return rows


def setup_text(c, seconds, lr_source=None, tuning_seeds=TUNING_SEEDS):
  out = {'n': c.data.n, 'd': c.data.d, 'dn': c.data.d * c.data.n,
         'optimizer': c.attack.optimizer, 'lr': c.attack.lr, 'momentum': c.attack.momentum,
         'max_steps': c.attack.max_steps, 'tol': c.attack.tol, 'dtype': c.run.dtype,
         'seeds': [int(v) for v in c.sweep.seed], 'tuning_seeds': [int(v) for v in tuning_seeds],
         'wall_seconds': round(seconds, 1), 'machine': machine.describe(),
         'load_average_1min': round(os.getloadavg()[0], 1)}
  if lr_source:
    out['lr_source'] = lr_source
  return out


def choose_lr(rows):
  """The blind rule (LR_RULE) over the lr stage's rows: {lr: score}, chosen lr."""
  scores = {}
  for r in rows:
    scores.setdefault(r['lr'], []).append(np.log10(max(r['projection_loss']['median'], 1e-30)))
  scores = {lr: float(np.mean(v)) for lr, v in scores.items()}
  best = min(sorted(scores), key=lambda lr: scores[lr])
  return scores, best


def attack_lr(c):
  """(lr, where it came from, tuning seeds): the lr stage's blind choice when its JSON is
  there, else the config's lr."""
  path = os.path.join(RESULTS, 'phase_transition_lr.json')
  if os.path.exists(path):
    result = io.read_json(path)
    if result.get('chosen'):
      return (float(result['chosen']['lr']), f"the lr stage's blind choice ({path})",
              result['setup']['seeds'])
  return float(c.attack.lr), 'the config (no lr stage result found)', ()


def reported_config(stage):
  """(config on the stage's reported seeds at the blind lr, setup_text's extra arguments)."""
  c = base_config()
  c.sweep.seed = REPORTED_SEEDS[stage]
  c.attack.lr, source, tuning = attack_lr(c)
  return c, {'lr_source': source, 'tuning_seeds': tuning}


def stage_lr():
  c = base_config()
  c.sweep.victim.p_over_dn = (2.0, 8.0)
  c.sweep.attack.lr = (0.5, 2.0, 5.0, 20.0)
  c.attack.max_steps = 4000
  c.sweep.seed = TUNING_SEEDS
  result, seconds = run_sweep(c, 'lr')
  rows = aggregate(result['records'], ('activation', 'p_over_dn', 'lr'),
                   ('recon_error', 'frac_recovered', 'projection_loss', 'steps'))
  scores, best = choose_lr(rows)
  setup = dict(setup_text(c, seconds, tuning_seeds=c.sweep.seed), lr=list(c.sweep.attack.lr))
  io.write_json(os.path.join(RESULTS, 'phase_transition_lr.json'), {
      'what': 'lr grid for SGD momentum 0.9 on the phase-transition problem, on the tuning seeds '
              'only; mean/std over seeds', 'setup': setup,
      'chosen': {'lr': best, 'rule': LR_RULE,
                 'scores': [{'lr': lr, 'score': v} for lr, v in sorted(scores.items())]},
      'rows': rows, 'records': slim(result['records'])})
  print(f'chosen lr {best:g}: ' + ', '.join(f'{lr:g}: {v:.2f}' for lr, v in sorted(scores.items())))

def plot_curve(rows, c, path):
  fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
  colors = {'relu': 'tab:blue', 'relu_tanh': 'tab:red'}
  for act in sorted({r['activation'] for r in rows}):
    rs = sorted((r for r in rows if r['activation'] == act), key=lambda r: r['p_over_dn'])
    x = np.array([r['p_over_dn'] for r in rs])
    for ax, field in zip(axes, ('recon_error', 'train_mse')):
      mean = np.array([r[field]['mean'] for r in rs])
      lo = np.array([r[field]['min'] for r in rs])
      hi = np.array([r[field]['max'] for r in rs])
      ax.plot(x, mean, 'o-', color=colors.get(act), label=f'{act} (mean)')
      ax.fill_between(x, lo, hi, color=colors.get(act), alpha=0.2,
                      label=f'{act} (min-max over {rs[0][field]["n"]} seeds)')
  for ax in axes:
    ax.set_xscale('log')
    ax.axvline(1.0 / c.data.d, color='gray', ls='--', lw=1)
    ax.axvline(1.0, color='black', ls='--', lw=1)
    ax.set_xlabel('p / (d n)')
    ax.grid(alpha=0.3, which='both')
  axes[0].text(1.0 / c.data.d, 1.02, ' p = n', transform=axes[0].get_xaxis_transform(), fontsize=8)
  axes[0].text(1.0, 1.02, ' p = dn', transform=axes[0].get_xaxis_transform(), fontsize=8)
  axes[0].set_ylabel('recon_error (sign-invariant, Hungarian)')
  axes[0].set_ylim(0, None)
  axes[1].set_yscale('log')
  axes[1].set_ylabel('train MSE of the random-features fit')
  axes[0].legend(fontsize=7)
  fig.suptitle(f'Random features, synthetic sphere data: n={c.data.n}, d={c.data.d}, SGD momentum '
               f'{c.attack.momentum} lr {c.attack.lr:g}, {c.attack.max_steps} steps', fontsize=10)
  common.savefig(fig, path, dpi=110)


def stage_curve():
  c, how = reported_config('curve')
  result, seconds = run_sweep(c, 'curve')
  rows = aggregate(result['records'], ('activation', 'p_over_dn'),
                   ('recon_error', 'train_mse', 'dist_abs', 'frac_recovered',
                    'feature_residual', 'projection_loss'))
  io.write_json(os.path.join(RESULTS, 'phase_transition.json'), {
      'what': 'recon_error and train MSE against p/(dn); mean/std/min/max over seeds',
      'setup': setup_text(c, seconds, **how), 'axes': result['axes'],
      'groups': result['groups'],
      'rows': rows, 'records': slim(result['records'])})
  plot_curve(rows, c, os.path.join(RESULTS, 'phase_transition.png'))
  print(f'curve: {len(result["records"])} points in {seconds:.0f}s')

def fmt(s):
  return f"{s['mean']:.3g} ± {s['std']:.2g}"


def stage_law():
  c, how = reported_config('law')
  c.sweep.victim.p_over_dn = (1.0 / c.data.d, 1.0, 10.0)
  result, seconds = run_sweep(c, 'law')
  rows = aggregate(result['records'], ('activation', 'p_over_dn'), LAW_FIELDS)
  names = {1.0 / c.data.d: 'p = n', 1.0: 'p = dn', 10.0: 'p = 10dn'}
  for r in rows:
    r['regime'] = names[r['p_over_dn']]
    r['p'] = int(round(r['p_over_dn'] * c.data.d * c.data.n))
    r['paper'] = PAPER[r['regime']]
  io.write_json(os.path.join(RESULTS, 'law_table.json'), {
      'what': "the paper's table (p = n, dn, 10 dn) at CPU scale; mean ± std over seeds",
      'setup': setup_text(c, seconds, **how), 'rows': rows, 'records': slim(result['records'])})
  io.write_text(os.path.join(RESULTS, 'law_table.md'), common.page(
      'The law of reconstruction at CPU scale',
      f'Random features on synthetic sphere data, n = {c.data.n}, d = {c.data.d}, SGD momentum '
      f'{c.attack.momentum}, lr {c.attack.lr:g} (chosen blind on seeds {list(TUNING_SEEDS)}), '
      f'at most {c.attack.max_steps} steps, seeds {list(c.sweep.seed)}: mean ± std. recon_error: '
      'the sign-invariant relative distance after matching (the paper\'s ρ); dist_abs: the '
      "paper's |x|-distance; frac_recovered: rows within 0.1.",
      common.table(['activation', 'regime', 'p', 'train MSE', 'recon_error', 'dist_abs',
                    'frac_recovered', 'paper (CIFAR-10 RF, relu)'],
                   [[r['activation'], r['regime'], r['p']] + [fmt(r[f]) for f in LAW_FIELDS]
                    + [r['paper']]
                    for r in sorted(rows, key=lambda r: (r['activation'], r['p_over_dn']))])))

def candidate_report(record, x_true, x_hat, threshold):
  """What the candidates did: near a sample, duplicates of one, or between samples (merges)."""
  dist = metrics.sign_invariant_distances(x_true, x_hat)  # (n, m)
  nearest = dist.min(axis=0)
  owner = dist.argmin(axis=0)
  near = nearest < threshold
  covered = np.unique(owner[near])
  per_sample = np.bincount(owner[near], minlength=len(x_true))
  # Merges: distance of each candidate to the nearest normalised pair sum x_i +- x_j.
  n, radius = len(x_true), np.linalg.norm(x_true[0])
  pairs = [x_true[i] + s * x_true[j] for i in range(n) for j in range(i + 1, n) for s in (1, -1)]
  pairs = np.stack([q * radius / np.linalg.norm(q) for q in pairs])
  to_pair = metrics.sign_invariant_distances(pairs, x_hat).min(axis=0)
  return {
      'candidates_near_a_sample': int(near.sum()),
      'samples_covered': int(len(covered)),
      'candidates_on_already_covered_samples': int(np.sum(np.maximum(per_sample - 1, 0))),
      'candidates_far_from_every_sample': int(np.sum(~near)),
      'candidate_nearest_distance': [round(float(v), 4) for v in np.sort(nearest)],
      'candidate_pair_midpoint_distance': [round(float(v), 4)
                                           for v in to_pair[np.argsort(nearest)]],
      'candidates_closer_to_a_pair_midpoint': int(np.sum(to_pair < nearest)),
  }


def stage_ncand():
  c, how = reported_config('ncand')
  c.sweep = base.sweep()
  c.sweep.attack.n_candidates = (c.data.n // 2, c.data.n, 2 * c.data.n)
  c.sweep.victim.activation = ('relu_tanh',)
  c.sweep.victim.p_over_dn = (10.0,)
  c.sweep.seed = REPORTED_SEEDS['ncand']
  result, seconds = run_sweep(c, 'ncand')
  arrays = np.load(os.path.join(RUNS, 'ncand', 'sweep.npz'))
  records = slim(result['records'])
  for r in records:
    r.update(candidate_report(r, arrays[f'x_true_{r["index"]}'], arrays[f'x_hat_{r["index"]}'],
                              c.run.recovered_threshold))
  fields = ('recon_error', 'frac_recovered', 'n_recovered', 'n_duplicates',
            'n_uncovered_samples', 'samples_covered', 'candidates_far_from_every_sample',
            'projection_loss')
  rows = aggregate(records, ('n_candidates',), fields)
  io.write_json(os.path.join(RESULTS, 'n_candidates.json'), {
      'what': 'n_candidates (n_hat) = n/2, n, 2n at p = 10 dn; mean/std over seeds',
      'setup': setup_text(c, seconds, **how), 'rows': rows, 'records': records})
  io.write_text(os.path.join(RESULTS, 'n_candidates.md'), common.page(
      'Reconstruction with the wrong number of candidates (n̂ ≠ n)',
      f'relu+tanh random features, n = {c.data.n}, d = {c.data.d}, p = 10 dn, SGD momentum '
      f'{c.attack.momentum} lr {c.attack.lr:g}, {c.attack.max_steps} steps, seeds '
      f'{list(c.sweep.seed)}. A candidate is near a sample within {c.run.recovered_threshold} '
      '(sign-invariant relative distance).',
      common.table(['n̂', 'seed', 'recon_error', 'recovered', 'samples with a near candidate',
                    'duplicates', 'candidates far from every sample',
                    'closer to a pair x_i ± x_j than to any sample', 'projection loss'],
                   [[r['n_candidates'], r['seed'], r['recon_error'], r['n_recovered'],
                     r['samples_covered'], r['n_duplicates'],
                     r['candidates_far_from_every_sample'],
                     r['candidates_closer_to_a_pair_midpoint'], r['projection_loss']]
                    for r in sorted(records, key=lambda r: (r['n_candidates'], r['seed']))])))

STAGES = {'lr': stage_lr, 'curve': stage_curve, 'law': stage_law, 'ncand': stage_ncand}


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--stages', default='lr,curve,law,ncand')
  parser.add_argument('--out_dir', default='results',
                      help='where the results (and runs/phase_transition/) are written')
  parser.add_argument('--tiny', action='store_true',
                      help='smoke test: tiny problem, few steps, 2 values per axis')
  args = parser.parse_args(argv)
  global RESULTS, RUNS, TINY  # pylint: disable=global-statement
  RESULTS, TINY = args.out_dir, args.tiny
  RUNS = os.path.join(RESULTS, 'runs', 'phase_transition')
  logging.set_verbosity(logging.INFO)
  for name in args.stages.split(','):
    t0 = time.time()
    STAGES[name]()
    print(f'stage {name}: {time.time() - t0:.0f}s')


if __name__ == '__main__':
  recon.setup_process()  # the CLI's process setup: CPU buffers, compile cache
  main()
