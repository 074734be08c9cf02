"""Width sweep of the two-layer net: recon_error vs p_L / (d n), p_L = width * num_classes.

Trains W2 sigma(W1 x) by full-batch GD (configs/two_layer.py: n=5, d=10, C=2, MSE
to one-hot targets) at widths from p_L = 0.5 dn to 10 dn and reconstructs the
training set from W2(T) - W2(0), for several seeds. Writes
results/two_layer_threshold.json and .png. Regenerate with

    python -m scripts.two_layer_threshold

(about 10-15 minutes on 2 CPU cores; --ratios / --seeds / --max_steps to change; a smoke
test: --tiny --ratios=1 --seeds=1 --max_steps=30 --out=/tmp/t/two_layer_threshold).
"""
from __future__ import annotations

import os
import sys
import tempfile

from absl import app, flags, logging
import numpy as np

from configs import two_layer
import recon
from recon.runtime import io
from scripts import common
plt = common.pyplot()

_RATIOS = flags.DEFINE_list('ratios', ['0.5', '1', '2', '3', '5', '10'], 'p_L / (d n) values.')
_SEEDS = flags.DEFINE_integer('seeds', 2, 'Seeds per width.')
_MAX_STEPS = flags.DEFINE_integer('max_steps', 2000, 'Reconstruction steps per run.')
_OUT = flags.DEFINE_string('out', 'results/two_layer_threshold', 'Output path without suffix.')
_TINY = flags.DEFINE_bool('tiny', False, 'Smoke test: n=3, d=4, 50 training steps (use with '
                          '--ratios, --seeds, --max_steps and --out elsewhere).')


def _config():
  cfg = two_layer.get_config()
  if _TINY.value:
    cfg.data.n, cfg.data.d, cfg.victim.train.max_steps = 3, 4, 50
  return cfg

KEEP = ('recon_error', 'recon_error_median', 'frac_recovered', 'dist_abs', 'projection_loss',
        'projection_loss_at_truth', 'feature_residual', 'p_L', 'p_L_over_dn', 'width',
        'train_steps', 'train_final_loss', 'train_reached_tol', 'train_lr', 'steps', 'status',
        'wall_seconds')


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  base = _config()
  dn = base.data.d * base.data.n
  rows = []
  for ratio in [float(r) for r in _RATIOS.value]:
    width = max(1, int(round(ratio * dn / base.data.num_classes)))
    for seed in range(_SEEDS.value):
      cfg = _config()
      cfg.victim.width, cfg.seed, cfg.attack.max_steps, cfg.run.overwrite = width, seed, _MAX_STEPS.value, True
      cfg.run.log_every_seconds = 1e9
      with tempfile.TemporaryDirectory() as workdir:
        summary = recon.run(cfg, workdir, nonfinite_ok=True).summary
      m = summary['metrics']
      row = {k: m[k] for k in KEEP}
      row['seed'] = seed
      rows.append(row)
      print(f'p_L/dn={row["p_L_over_dn"]:.2f} width={width} seed={seed}: '
            f'recon_error={row["recon_error"]:.4f} recovered={row["frac_recovered"]:.2f} '
            f'train_steps={row["train_steps"]} reached_tol={row["train_reached_tol"]}',
            file=sys.stderr, flush=True)
  result = {
      'description': 'two-layer net W2 sigma(W1 x) trained by full-batch GD, reconstructed from '
                     'vec(W2(T) - W2(0)) with the last-layer Jacobian features',
      'command': 'python -m scripts.two_layer_threshold',
      'setting': {'n': base.data.n, 'd': base.data.d, 'num_classes': base.data.num_classes,
                  'activation': base.victim.activation, 'loss': base.victim.train.loss,
                  'train_tol': base.victim.train.tol, 'optimizer': base.attack.optimizer,
                  'lr': base.attack.lr, 'momentum': base.attack.momentum},
      'max_steps': _MAX_STEPS.value, 'seeds': _SEEDS.value, 'dn': dn, 'runs': rows,
  }
  os.makedirs(os.path.dirname(_OUT.value) or '.', exist_ok=True)
  io.write_json(_OUT.value + '.json', result)

  fig, ax = plt.subplots(figsize=(5, 3.5))
  ratios = np.array([r['p_L_over_dn'] for r in rows])
  errs = np.array([r['recon_error'] for r in rows])
  ax.scatter(ratios, errs, s=14, alpha=0.6, label='runs')
  uniq = np.unique(ratios)
  ax.plot(uniq, [errs[ratios == u].mean() for u in uniq], 'o-', label='mean over seeds')
  ax.axvline(1.0, color='gray', ls='--', lw=0.8)
  ax.set_xscale('log')
  ax.set_yscale('log')
  ax.set_xlabel(r'$p^{(L)} / (d n)$')
  ax.set_ylabel('recon_error (sign-invariant, relative)')
  ax.set_title(f'Two-layer net, n={base.data.n}, d={base.data.d}, C={base.data.num_classes}')
  ax.legend()
  common.savefig(fig, _OUT.value + '.png', dpi=110)
  print(f'wrote {_OUT.value}.json and .png', file=sys.stderr)


if __name__ == '__main__':
  recon.setup_process()  # the CLI's process setup: CPU buffers, compile cache
  app.run(main)
