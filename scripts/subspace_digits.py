"""Experiment 2b: the two-layer pipeline on real data (scikit-learn's 8x8 digits, d = 64).

n = 6 digit images (classes 0..5), standardised by the subset's global mean/std, each
row scaled to the sqrt(d) sphere; regression targets y = (class - 2.5) / 1.7. A
two-layer net of width 192 (configs/two_layer_subspace.py settings) is trained by GD;
the attack estimates the subspace from dW1 (rank <= n, so the search is at most
n-dimensional) and reconstructs from dW2, against the full-space search at the same
width. The data are not planted in a subspace: span(U) can only be span{x_i}.
Writes results/subspace_digits.{json,png}. Uses sklearn's bundled copy (no download).
The selection (the first image of each class 0..5) and the targets differ from recon.data's
'digits' data set (balanced random images, +-1 labels), so this script writes them to a data
file (OUT/runs/subspace_digits/digits6.npz: 8x8 images, preprocess 'none') that each run reads.

Regenerate (about 2 minutes on 2 shared CPU cores):
    python -m scripts.subspace_digits
A smoke test elsewhere (width 48, few steps):
    python -m scripts.subspace_digits --tiny --out_dir=/tmp/sd
"""
from __future__ import annotations

import argparse
import os

import numpy as np  # pylint: disable=wrong-import-position
from absl import logging  # pylint: disable=wrong-import-position
from sklearn.datasets import load_digits  # pylint: disable=wrong-import-position

import recon  # pylint: disable=wrong-import-position
from recon.runtime import io  # pylint: disable=wrong-import-position
from scripts import common  # pylint: disable=wrong-import-position
plt = common.pyplot()

OUT = 'results'  # --out_dir
N = 6


def digits_rows(n: int):
  digits = load_digits()
  idx = [int(np.flatnonzero(digits.target == c)[0]) for c in range(n)]
  x = digits.data[idx].astype(np.float64)
  x = (x - x.mean()) / x.std()
  x = x * (np.sqrt(x.shape[1]) / np.linalg.norm(x, axis=1, keepdims=True))
  y = (digits.target[idx] - (n - 1) / 2) / np.std(np.arange(n))
  return x.astype(np.float32), y.astype(np.float32)


def main(argv=None) -> None:
  global OUT  # pylint: disable=global-statement
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--out_dir', default=OUT, help='results folder (runs go to OUT/runs/)')
  parser.add_argument('--tiny', action='store_true', help='smoke test: width 48, few steps')
  args = parser.parse_args(argv)
  OUT = args.out_dir
  max_steps = 30 if args.tiny else 3000
  logging.set_verbosity(logging.WARNING)
  x, y = digits_rows(N)
  path = os.path.join(OUT, 'runs', 'subspace_digits', f'digits{N}.npz')
  os.makedirs(os.path.dirname(path), exist_ok=True)
  io.write_npz(path, x=x.reshape(N, 8, 8), y=y)  # (H, W) images: the runs' pictures and SSIM
  results = {}
  for mode in ('none', 'estimated'):
    cfg = recon.get_config('two_layer_subspace')
    cfg.name, cfg.data.n, cfg.attack.subspace, cfg.attack.max_steps, cfg.run.overwrite = ('digits', N, mode, max_steps,
                                                                   True)
    if args.tiny:
      cfg.victim.width, cfg.victim.train.max_steps = 48, 50
    cfg.data.name, cfg.data.path, cfg.data.preprocess = 'file', path, 'none'  # rows as written
    cfg.data.planted_dim = None
    workdir = os.path.join(OUT, 'runs', 'subspace_digits', mode)
    result = recon.run(cfg, workdir, nonfinite_ok=True)
    m = result.metrics
    results[mode] = {k: m.get(k) for k in (
        'recon_error', 'frac_recovered', 'final_loss', 'search_dim', 'auto_k',
        'subspace_residual_true', 'singular_values_top', 'train_final_loss', 'delta_w1_rel')}
    print(mode, results[mode], flush=True)
    results[mode]['x_matched'] = np.load(os.path.join(workdir, 'reconstruction.npz'))['x_matched']
  io.write_json(os.path.join(OUT, 'subspace_digits.json'),
                {'setup': {'n': N, 'd': 64, 'width': cfg.victim.width, 'train_lr': cfg.victim.train.lr,
                           'gradient_at': cfg.attack.gradient_at, 'n_candidates': cfg.attack.n_candidates},
                 'runs': {k: {kk: vv for kk, vv in v.items() if kk != 'x_matched'}
                          for k, v in results.items()}})
  fig, axes = plt.subplots(3, N, figsize=(1.3 * N, 4.4))
  rows = [('true', np.asarray(x))] + [
      (f"{'full space' if k == 'none' else 'U from dW1'}\nerr {results[k]['recon_error']:.3f}",
       results[k]['x_matched']) for k in ('none', 'estimated')]
  for r, (label, imgs) in enumerate(rows):
    for j in range(N):
      axes[r, j].imshow(np.asarray(imgs[j]).reshape(8, 8), cmap='gray')
      axes[r, j].set_xticks([])
      axes[r, j].set_yticks([])
    axes[r, 0].set_ylabel(label, fontsize=8)
  fig.suptitle(f'digits, n={N}, width {cfg.victim.width}: reconstruction from dW2', fontsize=9)
  common.savefig(fig, os.path.join(OUT, 'subspace_digits.png'), dpi=110)


if __name__ == '__main__':
  recon.setup_process()  # the CLI's process setup: CPU buffers, compile cache
  main()
