"""Single showcase runs: ResNet, ViT and random features trained by GD on the logistic loss.

Runs configs/resnet.py, configs/vit.py and configs/rf_logistic.py (seed 0, their
defaults) and writes their metrics to results/network_showcase.json and a
Markdown table results/network_showcase.md. Regenerate with

    python -m scripts.network_showcase

(about 10 minutes on 2 CPU cores, most of it XLA compilation of the Jacobian-in-the-loss;
a smoke test: --tiny --only=two_layer,rf_logistic --out=/tmp/s/network_showcase).
"""
from __future__ import annotations

import os
import sys
import tempfile

from absl import app, flags, logging

from configs import resnet, rf_logistic, two_layer, vit
import recon
from recon.runtime import io

_OUT = flags.DEFINE_string('out', 'results/network_showcase', 'Output path without suffix.')
_ONLY = flags.DEFINE_list('only', ['two_layer', 'resnet', 'vit', 'rf_logistic'], 'Which runs.')
_TINY = flags.DEFINE_bool('tiny', False, 'Smoke test: 50 training and 30 reconstruction steps '
                          '(use with --out elsewhere).')

CONFIGS = {'two_layer': two_layer, 'resnet': resnet, 'vit': vit, 'rf_logistic': rf_logistic}
KEEP = ('model', 'width', 'num_classes', 'n', 'd', 'image_shape', 'p_L', 'p_L_over_dn',
        'n_params_total', 'train_loss_name', 'train_lr', 'train_steps', 'train_final_loss',
        'train_reached_tol', 'projection_loss_at_truth', 'projection_loss', 'recon_error',
        'recon_error_max', 'frac_recovered', 'dist_abs', 'feature_residual', 'steps', 'status',
        'jacobian_at',
        'wall_seconds')


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  runs = {}
  if os.path.exists(_OUT.value + '.json'):  # keep the runs not redone
    runs = io.read_json(_OUT.value + '.json')['runs']
  for name in _ONLY.value:
    cfg = CONFIGS[name].get_config()
    cfg.run.overwrite, cfg.run.log_every_seconds = True, 1e9
    if _TINY.value:
      cfg.victim.train.max_steps, cfg.attack.max_steps = 50, 30
    with tempfile.TemporaryDirectory() as workdir:
      summary = recon.run(cfg, workdir, nonfinite_ok=True).summary
    runs[name] = {k: summary['metrics'].get(k) for k in KEEP}
    runs[name]['threat_model'] = summary['threat_model']
    print(name, {k: runs[name][k] for k in ('p_L_over_dn', 'recon_error', 'frac_recovered')},
          file=sys.stderr, flush=True)
  os.makedirs(os.path.dirname(_OUT.value) or '.', exist_ok=True)
  io.write_json(_OUT.value + '.json', {'command': 'python -m scripts.network_showcase',
                                       'runs': runs})
  runs = {k: runs[k] for k in CONFIGS if k in runs}
  cols = ('model', 'n', 'd', 'p_L', 'p_L_over_dn', 'train_loss_name', 'train_steps',
          'train_final_loss', 'train_reached_tol', 'projection_loss_at_truth', 'projection_loss',
          'recon_error', 'frac_recovered', 'jacobian_at', 'wall_seconds')
  fmt = lambda v: f'{v:.3g}' if isinstance(v, float) else str(v)
  lines = ['| config | ' + ' | '.join(cols) + ' |', '|' + '---|' * (len(cols) + 1)]
  lines += [f'| {name} | ' + ' | '.join(fmt(r.get(c)) for c in cols) + ' |'
            for name, r in runs.items()]
  io.write_text(_OUT.value + '.md', '\n'.join(lines) + '\n')
  print(f'wrote {_OUT.value}.json and .md', file=sys.stderr)


if __name__ == '__main__':
  recon.setup_process()  # the CLI's process setup: CPU buffers, compile cache
  app.run(main)
