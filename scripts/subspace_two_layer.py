"""Experiment 2: a GD-trained two-layer net on data in a k-dim subspace; subspace from dW1.

configs/two_layer_subspace.py: n = 6 samples in a planted k = 4 dim subspace of R^64,
f = W2 relu_tanh(W1 x) trained by full-batch GD (MSE, lr 5e-3) until loss 1e-6; the
attack reconstructs from dW2 with features at (W1_T + W1_0) / 2 ('both').
  A. full space vs subspace estimated from dW1 vs the true (known) subspace, at the same
     widths (96, 192), two seeds;
  B. weight decay 0, 1e-4, 1e-3, 1e-2 (width 192, k fixed to 4): principal angles
     between the estimate and the true subspace, the data's residual outside it, the
     automatically chosen k and the reconstruction error.
Writes results/subspace_two_layer.{json,csv,png}.

Regenerate (about 8 minutes on 2 shared CPU cores):
    python -m scripts.subspace_two_layer
A smoke test elsewhere (narrow nets, 1 seed, 2 weight decays, few steps):
    python -m scripts.subspace_two_layer --tiny --out_dir=/tmp/stl
"""
from __future__ import annotations

import argparse
import os

import numpy as np  # pylint: disable=wrong-import-position
from absl import logging  # pylint: disable=wrong-import-position

import recon  # pylint: disable=wrong-import-position
from recon.runtime import io  # pylint: disable=wrong-import-position
from scripts import common  # pylint: disable=wrong-import-position
plt = common.pyplot()

WIDTHS = (96, 192)
SEEDS = (0, 1)
MODES = ('none', 'estimated', 'known')
WEIGHT_DECAYS = (0.0, 1e-4, 1e-3, 1e-2)
MAX_STEPS = 3000
OUT = 'results'  # --out_dir
TRAIN_MAX_STEPS = None  # None: the config's; --tiny sets a few
KEYS = ('recon_error', 'frac_recovered', 'final_loss', 'steps', 'train_final_loss',
        'train_steps_taken', 'delta_w1_rel', 'subspace_k', 'auto_k', 'estimated_k',
        'max_principal_angle_deg', 'estimate_max_principal_angle_deg',
        'subspace_residual_true', 'singular_values_top')


# The fields the parts vary (recorded under these names in the results), and their paths.
FIELDS = {'width': 'victim.width', 'subspace': 'attack.subspace', 'seed': 'seed',
          'weight_decay': 'victim.train.weight_decay', 'subspace_dim': 'attack.subspace_dim'}


def load_config(**fields):
  cfg = recon.get_config('two_layer_subspace')
  cfg.attack.max_steps, cfg.run.overwrite = MAX_STEPS, True
  if TRAIN_MAX_STEPS is not None:
    cfg.victim.train.max_steps = TRAIN_MAX_STEPS
  cfg.update_from_flattened_dict({FIELDS[k]: v for k, v in fields.items()})
  return cfg


def run(part: str, **fields):
  cfg = load_config(**fields)
  tag = '-'.join(f'{k}{v}' for k, v in fields.items())
  workdir = os.path.join(OUT, 'runs', 'subspace_two_layer', f'{part}-{tag}')
  m = recon.run(cfg, workdir, nonfinite_ok=True).summary
  m = m['metrics']
  row = {'part': part, 'width': cfg.victim.width, 'seed': cfg.seed, 'subspace': cfg.attack.subspace,
         'weight_decay': cfg.victim.train.weight_decay, 'p_over_kn': cfg.victim.width / (cfg.data.planted_dim * cfg.data.n),
         'p_over_dn': cfg.victim.width / (cfg.data.d * cfg.data.n)}
  row.update({k: m.get(k) for k in KEYS})
  print({k: v for k, v in row.items() if k != 'singular_values_top'}, flush=True)
  return row


def main(argv=None) -> None:
  # pylint: disable-next=global-statement
  global WIDTHS, SEEDS, WEIGHT_DECAYS, MAX_STEPS, OUT, TRAIN_MAX_STEPS
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--out_dir', default=OUT, help='results folder (runs go to OUT/runs/)')
  parser.add_argument('--tiny', action='store_true',
                      help='smoke test: widths 24, 48, 1 seed, 2 weight decays, few steps')
  args = parser.parse_args(argv)
  OUT = args.out_dir
  if args.tiny:
    WIDTHS, SEEDS, WEIGHT_DECAYS, MAX_STEPS, TRAIN_MAX_STEPS = (24, 48), (0,), (0.0, 1e-3), 30, 50
  logging.set_verbosity(logging.WARNING)
  rows = []
  for width in WIDTHS:
    for mode in MODES:
      for seed in SEEDS:
        if mode == 'known' and width != WIDTHS[-1]:
          continue
        rows.append(run('A', width=width, subspace=mode, seed=seed))
  for wd in WEIGHT_DECAYS:
    rows.append(run('B', weight_decay=wd, subspace='estimated', subspace_dim=4))
  base = load_config()
  io.write_json(os.path.join(OUT, 'subspace_two_layer.json'),
                {'setup': {'n': base.data.n, 'd': base.data.d, 'k': base.data.planted_dim,
                           'activation': base.victim.activation, 'train_lr': base.victim.train.lr,
                           'train_tol': base.victim.train.tol, 'train_max_steps': base.victim.train.max_steps,
                           'gradient_at': base.attack.gradient_at, 'n_candidates': base.attack.n_candidates,
                           'lr': base.attack.lr, 'max_steps': MAX_STEPS},
                 'rows': rows})
  flat = [{k: v for k, v in r.items() if k != 'singular_values_top'} for r in rows]
  common.save_csv(os.path.join(OUT, 'subspace_two_layer.csv'), flat)

  fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
  ax = axes[0]
  labels = {'none': 'full space (R^64)', 'estimated': 'subspace from dW1', 'known': 'true subspace'}
  for i, mode in enumerate(MODES):
    for j, width in enumerate(WIDTHS):
      errs = [r['recon_error'] for r in rows if r['part'] == 'A' and r['subspace'] == mode
              and r['width'] == width]
      if errs:
        ax.bar(j * 4 + i, np.mean(errs), color=f'C{i}', label=labels[mode] if j == 1 else None)
        ax.plot([j * 4 + i] * len(errs), errs, 'k.')
  ax.set_xticks([1, 5], [f'width {w}\n(p/kn={w / 24:g}, p/dn={w / 384:g})' for w in WIDTHS])
  ax.set_ylabel('recon_error')
  ax.set_yscale('log')
  ax.legend(fontsize=8)
  ax.set_title('A. same width: full vs subspace')
  ax = axes[1]
  for r in [r for r in rows if r['part'] == 'B']:
    s = np.asarray(r['singular_values_top'])
    ax.semilogy(np.arange(1, len(s) + 1), s, 'o-', ms=3, label=f"wd={r['weight_decay']:g}")
  ax.set_xlabel('index i')
  ax.set_ylabel('s_i / s_1 of dW1')
  ax.legend(fontsize=8)
  ax.set_title('B. spectrum of dW1')
  ax = axes[2]
  b = [r for r in rows if r['part'] == 'B']
  wds = [max(r['weight_decay'], 1e-5) for r in b]
  ax.semilogx(wds, [r['max_principal_angle_deg'] for r in b], 'o-',
              label='max principal angle (deg)')
  ax.set_xlabel('weight decay (0 drawn at 1e-5)')
  ax.set_ylabel('degrees')
  ax2 = ax.twinx()
  ax2.semilogx(wds, [r['recon_error'] for r in b], 's--', color='C3', label='recon_error')
  ax2.set_ylabel('recon_error', color='C3')
  ax.set_title('B. weight decay degrades the estimate')
  ax.legend(loc='upper left', fontsize=8)
  common.savefig(fig, os.path.join(OUT, 'subspace_two_layer.png'), dpi=110)


if __name__ == '__main__':
  recon.setup_process()  # the CLI's process setup: CPU buffers, compile cache
  main()
