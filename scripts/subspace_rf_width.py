"""Experiment 1: random features on data in a k-dim subspace, full-space vs subspace-aware.

d = 64, k = 4, n = 6, relu+tanh, 2n candidates, SGD lr 20 (configs/rf_subspace.py);
widths p from 0.5 k n to 8 d n; two seeds. Writes results/subspace_rf_width.{json,csv,png}:
recon_error against p/(kn) and p/(dn) for subspace 'none' (search in R^64) and
'known' (search in span(U), R^4).

Regenerate (about 10 minutes on 2 shared CPU cores):
    python -m scripts.subspace_rf_width
A smoke test elsewhere (2 widths, 1 seed, 30 steps):
    python -m scripts.subspace_rf_width --tiny --out_dir=/tmp/srw
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np  # pylint: disable=wrong-import-position
from absl import logging  # pylint: disable=wrong-import-position

import recon  # pylint: disable=wrong-import-position
from recon.runtime import io  # pylint: disable=wrong-import-position
from scripts import common  # pylint: disable=wrong-import-position
plt = common.pyplot()

P_OVER_KN = (0.5, 1, 2, 4, 8, 16, 32, 64, 128)
SEEDS = (0, 1)
MODES = ('none', 'known')
MAX_STEPS = 3000
OUT = 'results'  # --out_dir


def main(argv=None) -> None:
  global P_OVER_KN, SEEDS, MAX_STEPS, OUT  # pylint: disable=global-statement
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--out_dir', default=OUT, help='results folder (runs go to OUT/runs/)')
  parser.add_argument('--tiny', action='store_true', help='smoke test: 2 widths, 1 seed, 30 steps')
  args = parser.parse_args(argv)
  OUT = args.out_dir
  if args.tiny:
    P_OVER_KN, SEEDS, MAX_STEPS = (1, 8), (0,), 30
  logging.set_verbosity(logging.WARNING)
  base = recon.get_config('rf_subspace')
  k, n, d = base.data.planted_dim, base.data.n, base.data.d
  rows = []
  for ratio in P_OVER_KN:
    p = int(round(ratio * k * n))
    for mode in MODES:
      for seed in SEEDS:
        cfg = recon.get_config('rf_subspace')
        cfg.victim.p, cfg.attack.subspace, cfg.seed, cfg.attack.max_steps, cfg.run.overwrite = p, mode, seed, MAX_STEPS, True
        workdir = os.path.join(OUT, 'runs', 'subspace_rf', f'{mode}-p{p}-s{seed}')
        m = recon.run(cfg, workdir, nonfinite_ok=True).summary
        m = m['metrics']
        row = {'subspace': mode, 'p': p, 'seed': seed, 'p_over_kn': p / (k * n),
               'p_over_dn': p / (d * n), 'recon_error': m['recon_error'],
               'frac_recovered': m['frac_recovered'], 'final_loss': m['final_loss'],
               'steps': m['steps'], 'status': m['status']}
        rows.append(row)
        print(row, flush=True)
  io.write_json(os.path.join(OUT, 'subspace_rf_width.json'),
                {'setup': {'n': n, 'd': d, 'k': k, 'activation': base.victim.activation,
                           'n_candidates': base.attack.n_candidates, 'optimizer': base.attack.optimizer,
                           'lr': base.attack.lr, 'max_steps': MAX_STEPS, 'seeds': list(SEEDS)},
                 'rows': rows})
  common.save_csv(os.path.join(OUT, 'subspace_rf_width.csv'), rows)

  fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
  labels = {'none': f'full space (search in R^{d})', 'known': f'subspace-aware (search in R^{k})'}
  for ax, key, name in ((axes[0], 'p_over_kn', 'p / (k n)'), (axes[1], 'p_over_dn', 'p / (d n)')):
    for mode, color in zip(MODES, ('tab:red', 'tab:blue')):
      xs = sorted({r[key] for r in rows if r['subspace'] == mode})
      errs = [[r['recon_error'] for r in rows if r['subspace'] == mode and r[key] == x]
              for x in xs]
      mean = np.array([np.mean(e) for e in errs])
      ax.plot(xs, mean, 'o-', color=color, label=labels[mode])
      ax.fill_between(xs, [min(e) for e in errs], [max(e) for e in errs], color=color, alpha=0.2)
    ax.set_xscale('log')
    ax.set_xlabel(name)
    ax.axhline(0.1, color='gray', lw=0.8, ls=':')
    ax.grid(alpha=0.3)
  axes[0].set_ylabel('recon_error (mean, min-max over seeds)')
  axes[0].legend(fontsize=8)
  fig.suptitle(f'Random features, data in a {k}-dim subspace of R^{d}, n={n}')
  common.savefig(fig, os.path.join(OUT, 'subspace_rf_width.png'), dpi=110)
  print('wrote', os.path.join(OUT, 'subspace_rf_width.png'), file=sys.stderr)


if __name__ == '__main__':
  recon.setup_process()  # the CLI's process setup: CPU buffers, compile cache
  main()
