"""Showcase: a random-features model's training digits reconstructed from its parameters.

Regenerates results/rf_digits/ (from the repository root; a few minutes on 2 CPU cores):

    python -m scripts.rf_digits
    python -m scripts.rf_digits --tiny --seeds=0 --out=/tmp/d --runs=/tmp/d/runs  # smoke test

Runs configs/rf_digits.py for seeds 0, 1, 2 (`--seeds`; the seed draws the digit subset, the
features V and the candidates' start) into results/runs/rf_digits-seed<S>/ (git-ignored) and
writes results/rf_digits/: grid.png and loss_curve.png of the first seed, metrics.json (its
config, metrics and data description, plus every seed's metrics) and seeds.md (a table).
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from absl import logging  # pylint: disable=wrong-import-position

from configs import rf_digits  # pylint: disable=wrong-import-position
import recon  # pylint: disable=wrong-import-position
from recon.runtime import io  # pylint: disable=wrong-import-position

COLUMNS = ('seed', 'frac_recovered', 'frac_recovered_ssim', 'ssim_mean', 'ssim_min', 'psnr_mean',
           'recon_error', 'recon_error_median', 'final_loss', 'steps', 'status', 'wall_seconds')


def _fmt(v) -> str:
  if isinstance(v, float):
    return f'{v:.3g}' if abs(v) < 1e-2 or abs(v) >= 1e3 else f'{v:.3f}'
  return str(v)


def main(argv=None) -> None:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--seeds', default='0,1,2', help='comma-separated seeds')
  parser.add_argument('--out', default=os.path.join('results', 'rf_digits'))
  parser.add_argument('--runs', default=os.path.join('results', 'runs'))
  parser.add_argument('--tiny', action='store_true',
                      help='smoke test: n=4 digits, p=256, 30 steps (with --out, --runs elsewhere)')
  args = parser.parse_args(argv)
  logging.set_verbosity(logging.INFO)
  seeds = [int(s) for s in args.seeds.split(',')]
  rows, first = [], None
  for seed in seeds:
    config = rf_digits.get_config()
    config.seed = seed
    config.run.overwrite = True
    if args.tiny:
      config.data.n, config.victim.p, config.attack.max_steps = 4, 256, 30
    workdir = os.path.join(args.runs, f'rf_digits-seed{seed}')
    summary = recon.run(config, workdir, nonfinite_ok=True).summary
    rows.append({'seed': seed, **{k: summary['metrics'][k] for k in COLUMNS[1:]}})
    if first is None:
      first = (workdir, summary)
  workdir, summary = first
  for name in ('grid.png', 'loss_curve.png'):
    with open(os.path.join(workdir, name), 'rb') as f:
      io.write_bytes(os.path.join(args.out, name), f.read())
  io.write_json(os.path.join(args.out, 'metrics.json'), {
      'command': 'python -m scripts.rf_digits --seeds=' + args.seeds,
      'pictured_seed': seeds[0], 'config': summary['config'], 'metrics': summary['metrics'],
      'data': summary['data'], 'device': summary['device'], 'seeds': rows})
  table = ['| ' + ' | '.join(COLUMNS) + ' |', '|' + '---|' * len(COLUMNS)]
  table += ['| ' + ' | '.join(_fmt(r[c]) for c in COLUMNS) + ' |' for r in rows]
  io.write_text(os.path.join(args.out, 'seeds.md'),
                '# configs/rf_digits.py over seeds (`python -m scripts.rf_digits`)\n\n'
                + '\n'.join(table) + '\n')
  print('\n'.join(table))


if __name__ == '__main__':
  recon.setup_process()  # the CLI's process setup: CPU buffers, compile cache
  main()
