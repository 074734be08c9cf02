"""The subspace results (docs/subspace.md#results): results/subspace_<part>.{json,png} (and .csv).

    python -m scripts.subspace --part=rf_width     # ~10 min on 2 CPU cores
    python -m scripts.subspace --part=two_layer    # ~8 min
    python -m scripts.subspace --part=digits       # ~2 min; --tiny --out_dir=/tmp/s: smoke test
"""
from __future__ import annotations

import argparse
import os

import numpy as np
from absl import logging
from sklearn.datasets import load_digits

import recon
from recon.runtime import io
from scripts import common
plt = common.pyplot()

OUT = 'results'  # --out_dir: results there, runs under OUT/runs/
RF_P_OVER_KN = (0.5, 1, 2, 4, 8, 16, 32, 64, 128)


def rf_width(tiny: bool) -> None:
  """Random features on data in a k-dim subspace (configs/rf_subspace.py), widths p from 0.5 kn
  to 8 dn, two seeds: search in R^d ('none') against search in span(U) ('known')."""
  ratios, seeds, max_steps = ((1, 8), (0,), 30) if tiny else (RF_P_OVER_KN, (0, 1), 3000)
  base = recon.get_config('rf_subspace')
  k, n, d = base.data.planted_dim, base.data.n, base.data.d
  rows = []
  for ratio in ratios:
    p = int(round(ratio * k * n))
    for mode in ('none', 'known'):
      for seed in seeds:
        cfg = recon.get_config('rf_subspace')
        cfg.victim.p, cfg.attack.subspace.mode, cfg.seed = p, mode, seed
        cfg.attack.max_steps, cfg.run.overwrite = max_steps, True
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
                           'lr': base.attack.lr, 'max_steps': max_steps, 'seeds': list(seeds)},
                 'rows': rows})
  common.save_csv(os.path.join(OUT, 'subspace_rf_width.csv'), rows)
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
  labels = {'none': f'full space (search in R^{d})', 'known': f'subspace-aware (search in R^{k})'}
  for ax, key, name in ((axes[0], 'p_over_kn', 'p / (k n)'), (axes[1], 'p_over_dn', 'p / (d n)')):
    for mode, color in (('none', 'tab:red'), ('known', 'tab:blue')):
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


WIDTHS = (96, 192)
SEEDS = (0, 1)
TL_MODES = ('none', 'estimated', 'known')
WEIGHT_DECAYS = (0.0, 1e-4, 1e-3, 1e-2)
MAX_STEPS = 3000
TRAIN_MAX_STEPS = None  # None: the config's; --tiny sets a few
KEYS = ('recon_error', 'frac_recovered', 'final_loss', 'steps', 'train_final_loss',
        'train_steps_taken', 'delta_w1_rel', 'subspace_k', 'auto_k', 'estimated_k',
        'max_principal_angle_deg', 'estimate_max_principal_angle_deg',
        'subspace_residual_true', 'singular_values_top')


# The fields the parts vary (recorded under these names in the results), and their paths.
FIELDS = {'width': 'victim.width', 'subspace': 'attack.subspace.mode', 'seed': 'seed',
          'weight_decay': 'victim.train.weight_decay', 'subspace_dim': 'attack.subspace.dim'}


def tl_config(**fields):
  cfg = recon.get_config('two_layer_subspace')
  cfg.attack.max_steps, cfg.run.overwrite = MAX_STEPS, True
  if TRAIN_MAX_STEPS is not None:
    cfg.victim.train.max_steps = TRAIN_MAX_STEPS
  cfg.update_from_flattened_dict({FIELDS[k]: v for k, v in fields.items()})
  return cfg


def tl_run(part: str, **fields):
  cfg = tl_config(**fields)
  tag = '-'.join(f'{k}{v}' for k, v in fields.items())
  workdir = os.path.join(OUT, 'runs', 'subspace_two_layer', f'{part}-{tag}')
  m = recon.run(cfg, workdir, nonfinite_ok=True).summary
  m = m['metrics']
  row = {'part': part, 'width': cfg.victim.width, 'seed': cfg.seed, 'subspace': cfg.attack.subspace.mode,
         'weight_decay': cfg.victim.train.weight_decay, 'p_over_kn': cfg.victim.width / (cfg.data.planted_dim * cfg.data.n),
         'p_over_dn': cfg.victim.width / (cfg.data.d * cfg.data.n)}
  row.update({k: m.get(k) for k in KEYS})
  print({k: v for k, v in row.items() if k != 'singular_values_top'}, flush=True)
  return row


def two_layer(tiny: bool) -> None:
  """A GD-trained two-layer net on data in a k-dim subspace (configs/two_layer_subspace.py),
  attacked from dW2. A: full space against the subspace estimated from dW1 and the true one, at
  the same widths; B: weight decay against the estimate (principal angles, residual, auto k)."""
  # pylint: disable-next=global-statement
  global WIDTHS, SEEDS, WEIGHT_DECAYS, MAX_STEPS, TRAIN_MAX_STEPS
  if tiny:
    WIDTHS, SEEDS, WEIGHT_DECAYS, MAX_STEPS, TRAIN_MAX_STEPS = (24, 48), (0,), (0.0, 1e-3), 30, 50
  rows = []
  for width in WIDTHS:
    for mode in TL_MODES:
      for seed in SEEDS:
        if mode == 'known' and width != WIDTHS[-1]:
          continue
        rows.append(tl_run('A', width=width, subspace=mode, seed=seed))
  for wd in WEIGHT_DECAYS:
    rows.append(tl_run('B', weight_decay=wd, subspace='estimated', subspace_dim=4))
  base = tl_config()
  io.write_json(os.path.join(OUT, 'subspace_two_layer.json'),
                {'setup': {'n': base.data.n, 'd': base.data.d, 'k': base.data.planted_dim,
                           'activation': base.victim.activation, 'train_lr': base.victim.train.lr,
                           'train_tol': base.victim.train.tol, 'train_max_steps': base.victim.train.max_steps,
                           'gradient_at': base.attack.subspace.gradient_at, 'n_candidates': base.attack.n_candidates,
                           'lr': base.attack.lr, 'max_steps': MAX_STEPS},
                 'rows': rows})
  flat = [{k: v for k, v in r.items() if k != 'singular_values_top'} for r in rows]
  common.save_csv(os.path.join(OUT, 'subspace_two_layer.csv'), flat)
  fig, axes = plt.subplots(1, 3, figsize=(14, 3.8))
  ax = axes[0]
  labels = {'none': 'full space (R^64)', 'estimated': 'subspace from dW1', 'known': 'true subspace'}
  for i, mode in enumerate(TL_MODES):
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


N = 6  # digits: images


def digits_rows(n: int):
  digits = load_digits()
  idx = [int(np.flatnonzero(digits.target == c)[0]) for c in range(n)]
  x = digits.data[idx].astype(np.float64)
  x = (x - x.mean()) / x.std()
  x = x * (np.sqrt(x.shape[1]) / np.linalg.norm(x, axis=1, keepdims=True))
  y = (digits.target[idx] - (n - 1) / 2) / np.std(np.arange(n))
  return x.astype(np.float32), y.astype(np.float32)


def digits(tiny: bool) -> None:
  """The two-layer attack on N digit images (the first of each class, standardised, on the
  sqrt(d) sphere; not planted in a subspace), written to a data file each run reads: subspace
  from dW1 against the full space."""
  max_steps = 30 if tiny else 3000
  x, y = digits_rows(N)
  path = os.path.join(OUT, 'runs', 'subspace_digits', f'digits{N}.npz')
  os.makedirs(os.path.dirname(path), exist_ok=True)
  io.write_npz(path, x=x.reshape(N, 8, 8), y=y)  # (H, W) images: the runs' pictures and SSIM
  results = {}
  for mode in ('none', 'estimated'):
    cfg = recon.get_config('two_layer_subspace')
    cfg.name, cfg.data.n, cfg.attack.subspace.mode = 'digits', N, mode
    cfg.attack.max_steps, cfg.run.overwrite = max_steps, True
    if tiny:
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
                           'gradient_at': cfg.attack.subspace.gradient_at, 'n_candidates': cfg.attack.n_candidates},
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


def main(argv=None) -> None:
  global OUT  # pylint: disable=global-statement
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument('--part', choices=('rf_width', 'two_layer', 'digits'), required=True)
  ap.add_argument('--out_dir', default=OUT, help='results folder (runs go to OUT/runs/)')
  ap.add_argument('--tiny', action='store_true', help='smoke test: small nets, few steps')
  args = ap.parse_args(argv)
  OUT = args.out_dir
  logging.set_verbosity(logging.WARNING)
  {'rf_width': rf_width, 'two_layer': two_layer, 'digits': digits}[args.part](args.tiny)


if __name__ == '__main__':
  recon.setup_process()  # the CLI's process setup: CPU buffers, compile cache
  main()
