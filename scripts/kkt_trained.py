"""KKT reconstruction from TRAINED networks on real images (issue #19; docs/kkt.md, "Trained networks").

Victim and attack: configs/kkt_haim.py (bias-free relu MLP D-1000-1000-1, GD on the logistic
loss; Haim et al.'s attack). Methods:
  haim        binary KKT loss ||theta - sum_i lambda_i y_i grad f(x_i)||^2, lambda >= lambda_min
  haim+split  the same with sample splitting every `attack.split.every` steps (Lanczos on HVPs)
  loo         Loo et al.'s ||theta_T - theta_0 - sum_i lambda_i grad f(x_i)||^2, free-sign lambda
  loo+split   the same with sample splitting
One victim per (dataset, n, width, seed), trained by the first method that needs it and loaded
by the others (identical weights). Evaluation (`recon.metrics.nearest_candidate_ssim`): for
every training image the candidate of highest NCC, SSIM after min-max rescaling.

  python -m scripts.kkt_trained --methods=haim,haim+split --seeds=0,1,2 --n=50 --dataset=lfw_faces
  python -m scripts.kkt_trained --methods=unseen --seeds=0,1,2 --n=50 --dataset=lfw_faces
(the measured setting: ~6-7 min per (method, seed) on 2 CPU cores, plus ~2 min per victim).
Appends rows to results/kkt_trained.json and re-renders results/kkt_trained.{md,png}. The JSON is
{'rows': [...], 'seeds': {'reported', 'tuning', 'rule'}}: the reported seeds are the rows'; the
tuning seeds (`--tuning_seeds`) are the victims any setting was chosen on or after
(results/kkt_tune.* ran on seed 100; seeds 0-2 were reported while the methods were built, and
are kept in results/kkt_trained_tuning_seeds.*).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import jax  # noqa: E402

from configs import kkt_haim  # noqa: E402
from recon.config import validate as config_lib  # noqa: E402
import recon  # noqa: E402
from recon import data, metrics  # noqa: E402
from recon.runtime import io  # noqa: E402
from scripts import common  # noqa: E402
plt = common.pyplot()

METHODS = ('haim', 'haim+split', 'loo', 'loo+split')
# Reference without any attack: 2n UNSEEN images of the same distribution as the candidates
# (what the SSIM metric gives an attacker who only knows the data distribution).
BASELINES = ('unseen',)
ROW_KEYS = ('method', 'dataset', 'n', 'width', 'seed', 'frac_ssim_0_5', 'frac_ssim_0_4',
            'ssim_median', 'train_loss', 'steps', 'wall_seconds', 'device')


def split_overrides(m: int, every: int) -> dict:
  """Sample splitting roughly as the authors run it: every K steps, Lanczos (20 steps) on
  HVPs, up to 30% of the candidates per round (growth rate 0.3), at most doubling m."""
  return {'attack.split.mode': 'every', 'attack.split.every': every, 'attack.split.budget': m,
          'attack.split.max_per_round': max(1, math.ceil(0.3 * m)),
          'attack.split.eig_method': 'lanczos', 'attack.split.lanczos_steps': 20,
          'attack.split.eig_tol': 1e-9}


def method_overrides(method: str, m: int, every: int) -> dict:
  if method not in METHODS:
    raise ValueError(f'method: unknown name {method!r}; accepted: {", ".join(METHODS)}')
  out = {}
  if method.startswith('loo'):  # free-sign duals on the weight change (Loo et al. 2023)
    # With theta_T - theta_0 every layer's equations hold at a held-out victim's truth
    # (a one-off diagnosis of a held-out victim, target 'delta'), so no layer is left out.
    out.update({'attack.objective': 'kkt_general', 'attack.kkt_target': 'delta',
                'attack.lambda_min': 0.0, 'attack.kkt_layers': 'all'})
  if method.endswith('+split'):
    out.update(split_overrides(m, every))
  return out


def make_config(method: str, dataset: str, n: int, seed: int, overrides: dict):
  c = kkt_haim.get_config()
  c.data.name, c.data.n, c.seed = dataset, n, seed
  if dataset == 'lfw_faces':
    c.data.classes, c.data.binary_rule = (0, 1), 'classes'
  c.run.overwrite = True
  c.run.log_every_seconds = 1e9
  c.update_from_flattened_dict(overrides)
  c.data.d = math.prod(data.image_shape(c.data))
  m = c.attack.n_candidates or 2 * c.data.n
  c.update_from_flattened_dict(method_overrides(method, m, c.attack.split.every))
  return c


def victim_truth(workroot: str, tag: str) -> np.ndarray:
  """The training inputs of victim `tag`, from a run on it that recorded them (scoring only)."""
  for name in sorted(os.listdir(workroot)):
    path = os.path.join(workroot, name, 'reconstruction.npz')
    if name.endswith('_' + tag) and not name.startswith('victim_') and os.path.exists(path):
      with np.load(path) as rec:
        if 'x_true' in rec:
          return np.asarray(rec['x_true'])
  raise FileNotFoundError(f'no run on victim {tag} under {workroot} recorded its training set; '
                          'run --methods=haim on it first')


def run_one(method: str, dataset: str, n: int, seed: int, workroot: str,
            overrides: dict) -> dict:
  """Runs one (method, victim) and returns its results row (plus arrays for the grid)."""
  t0 = time.time()
  c = make_config(method, dataset, n, seed, overrides)
  tag = f'{dataset}_n{n}_w{c.victim.width}_s{seed}'
  victim_dir = os.path.join(workroot, 'victim_' + tag)
  workdir = os.path.join(workroot, method.replace('+', '_') + '_' + tag)
  if os.path.isdir(os.path.join(victim_dir, 'model')):
    c.victim.checkpoint = victim_dir
  summary = recon.run(c, workdir, nonfinite_ok=True).summary
  if c.victim.checkpoint is None:  # first run on this victim: keep it for the others
    os.makedirs(victim_dir, exist_ok=True)
    import shutil  # pylint: disable=import-outside-toplevel
    shutil.copytree(os.path.join(workdir, 'model'), os.path.join(victim_dir, 'model'),
                    dirs_exist_ok=True)
    with open(os.path.join(victim_dir, 'train.json'), 'w') as f:
      json.dump({k: summary['metrics'].get(k) for k in ('train_loss', 'train_steps')}, f)
  with open(os.path.join(victim_dir, 'train.json')) as f:
    train = json.load(f)
  rec = dict(np.load(os.path.join(workdir, 'reconstruction.npz')))
  if 'x_true' not in rec:
    # A run whose data fields differ from the victim's (loo: objective kkt_general) gets no
    # ground truth from the checkpoint: score it against the victim's own training set.
    rec['x_true'] = victim_truth(workroot, tag)
  shape = data.image_shape(c.data)
  ev = metrics.nearest_candidate_ssim(rec['x_true'], rec['x_candidates'], shape)
  mm = summary['metrics']
  row = {'method': method, 'dataset': dataset, 'n': n, 'width': c.victim.width, 'seed': seed,
         'frac_ssim_0_5': ev['frac_ssim_0_5'], 'frac_ssim_0_4': ev['frac_ssim_0_4'],
         'ssim_median': ev['ssim_median'], 'ssim_mean': ev['ssim_mean'],
         'n_distinct_nearest': ev['n_distinct_nearest'],
         'train_loss': train['train_loss'], 'train_steps': train['train_steps'],
         'steps': int(mm['steps']), 'kkt_loss': float(mm['final_loss']),
         'n_candidates_final': int(rec['x_candidates'].shape[0]),
         'n_splits': (mm.get('splitting') or {}).get('n_splits', 0),
         'wall_seconds': time.time() - t0, 'device': str(jax.devices()[0].device_kind),
         'config': {k: config_lib.get_path(c, k) for k in (
             'attack.lr', 'attack.optimizer', 'attack.max_steps', 'attack.candidate_init_scale',
             'attack.lambda_min', 'attack.act_alpha', 'victim.first_init_scale',
             'victim.train.lr', 'victim.train.max_steps', 'run.dtype', 'attack.split.every',
             'attack.kkt_layers', 'attack.candidate_subspace', 'attack.schedule',
             'attack.decay_steps')}}
  row['_arrays'] = {'x_true': rec['x_true'], 'x_best': rec['x_candidates'][ev['nearest']],
                    'ssim': ev['ssim'], 'shape': shape}
  return row


def run_unseen(dataset: str, n: int, seed: int, overrides: dict) -> dict:
  """The 'unseen' reference row: n images as the training set, 2n other images of the same
  data set as candidates (both minus the training set's mean), same evaluation."""
  import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
  t0 = time.time()
  c = make_config('haim', dataset, 3 * n, seed, overrides)
  x, _, meta = data.load(c.data, jax.random.PRNGKey(seed), jnp.float64)
  pix = data.to_pixels(np.asarray(x), meta)
  perm = np.random.default_rng(seed).permutation(len(pix))
  tr, cand = pix[perm[:n]], pix[perm[n:]]
  mean = tr.mean()
  shape = data.image_shape(c.data)
  ev = metrics.nearest_candidate_ssim(tr - mean, cand - mean, shape)
  return {'method': 'unseen', 'dataset': dataset, 'n': n, 'width': 0, 'seed': seed,
          'frac_ssim_0_5': ev['frac_ssim_0_5'], 'frac_ssim_0_4': ev['frac_ssim_0_4'],
          'ssim_median': ev['ssim_median'], 'ssim_mean': ev['ssim_mean'],
          'n_distinct_nearest': ev['n_distinct_nearest'], 'train_loss': float('nan'),
          'steps': 0, 'kkt_loss': float('nan'), 'n_candidates_final': int(len(cand)),
          'wall_seconds': time.time() - t0, 'device': str(jax.devices()[0].device_kind),
          '_arrays': {'x_true': tr - mean, 'x_best': (cand - mean)[ev['nearest']],
                      'ssim': ev['ssim'], 'shape': shape}}


def save_arrays(out: str, row: dict) -> None:
  a = row.pop('_arrays')
  folder = out + '_runs'
  os.makedirs(folder, exist_ok=True)
  name = f"{row['method'].replace('+', '_')}_{row['dataset']}_n{row['n']}_s{row['seed']}.npz"
  np.savez_compressed(os.path.join(folder, name), x_true=a['x_true'], x_best=a['x_best'],
                      ssim=a['ssim'], shape=np.asarray(a['shape']))
  row['arrays'] = os.path.join(os.path.basename(folder), name)


def load_rows(path: str) -> list:
  """The rows of a results JSON ({'rows': [...]} or, results/kkt_tune.json, a bare list), [] if
  it is missing; the 'nan' / 'inf' strings recon.runtime.io writes back to floats."""
  got = common.load(path, [])
  back = {'nan': float('nan'), 'inf': float('inf'), '-inf': float('-inf')}
  return [{k: back.get(v, v) if isinstance(v, str) else v for k, v in r.items()}
          for r in (got['rows'] if isinstance(got, dict) else got)]


def seed_lists(rows: list, tuning: list) -> dict:
  """The reported seeds (those of `rows`) and the tuning seeds; a reported tuning seed raises."""
  reported = sorted({int(r['seed']) for r in rows})
  clash = sorted(set(reported) & set(tuning))
  if clash:
    raise ValueError(f'--seeds: {clash} are tuning seeds ({tuning}); report fresh seeds only')
  return {'reported': reported, 'tuning': list(tuning),
          'rule': 'reported seeds are fresh: none was run while a setting or method was chosen '
                  '(tuning: results/kkt_tune.* on seed 100; seeds 0-2 seen while the methods '
                  'were built, results/kkt_trained_tuning_seeds.*)'}


def render(out: str, rows: list, seeds: dict = None) -> None:
  """Markdown table (per row and mean +- std over seeds per setting) and the best-match grid."""
  groups = {}
  for r in rows:
    groups.setdefault((r['method'], r['dataset'], r['n'], r['width']), []).append(r)
  ms = lambda g, k: f"{np.mean([r[k] for r in g]):.3f} ± {np.std([r[k] for r in g]):.3f}"  # noqa: E731
  io.write_text(out + '.md', common.page(
      'KKT reconstruction from trained networks',
      'For every training image the candidate of highest NCC; SSIM after per-image min-max '
      'rescaling (dm-pix, window 3 below 16 px).' + (
          f" Seeds: reported {seeds['reported']}; tuning {seeds['tuning']} ({seeds['rule']})."
          if seeds else ''),
      common.table(['method', 'dataset', 'n', 'width', 'seed', 'frac SSIM>=0.5',
                    'frac SSIM>=0.4', 'median SSIM', 'KKT loss', 'train loss', 'steps',
                    'm final', 'wall s', 'device'],
                   [[r[k] for k in ('method', 'dataset', 'n', 'width', 'seed', 'frac_ssim_0_5',
                                    'frac_ssim_0_4', 'ssim_median')]
                    + [r.get('kkt_loss'), r['train_loss'], r['steps'],
                       r.get('n_candidates_final'), round(r['wall_seconds']), r['device']]
                    for r in rows]),
      '## Mean ± std over seeds',
      common.table(['method', 'dataset', 'n', 'seeds', 'frac SSIM>=0.5', 'frac SSIM>=0.4',
                    'median SSIM'],
                   [[m, ds, n, len(g), ms(g, 'frac_ssim_0_5'), ms(g, 'frac_ssim_0_4'),
                     ms(g, 'ssim_median')] for (m, ds, n, _), g in groups.items()])))
  # Grid: for the first seed of each method, training images (top) and their best candidate
  # (below), sorted by SSIM, best first.
  firsts = {}
  for r in rows:
    if 'arrays' in r and r['method'] not in firsts:
      firsts[r['method']] = r
  if not firsts:
    return
  cols = 16
  fig, axes = plt.subplots(2 * len(firsts), cols, figsize=(cols * 0.7, 2 * len(firsts) * 0.8),
                           squeeze=False)
  base = os.path.dirname(out)
  for k, (meth, r) in enumerate(firsts.items()):
    a = np.load(os.path.join(base, r['arrays']))
    shape = tuple(a['shape'])
    order = np.argsort(-a['ssim'])[:cols]
    for j in range(cols):
      for i, key in enumerate(('x_true', 'x_best')):
        ax = axes[2 * k + i, j]
        ax.axis('off')
        if j < len(order):
          ax.imshow(metrics.minmax_images(a[key][order[j]][None], shape)[0, :, :, 0],
                    cmap='gray')
          if i == 1:
            ax.set_title(f"{a['ssim'][order[j]]:.2f}", fontsize=6)
    axes[2 * k, 0].set_title(f"{meth} s{r['seed']}", fontsize=7, loc='left')
  common.savefig(fig, out + '.png', dpi=100)


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  ap.add_argument('--methods', default='haim')
  ap.add_argument('--seeds', default='0')
  ap.add_argument('--n', type=int, default=50)
  ap.add_argument('--dataset', default='digits')
  ap.add_argument('--out', default='results/kkt_trained')
  ap.add_argument('--workroot', default='/tmp/recon_kkt_trained')
  ap.add_argument('--tuning_seeds', default='0,1,2,100',
                  help='seeds any setting was chosen on or after (recorded, never run here)')
  ap.add_argument('--set', action='append', default=[],
                  help='config override PATH=VALUE (python literal), e.g. --set attack.max_steps=200')
  args = ap.parse_args(argv)
  overrides = common.overrides(args.set)
  os.makedirs(os.path.dirname(args.out) or '.', exist_ok=True)
  path = args.out + '.json'
  rows = load_rows(path)
  tuning = sorted(int(s) for s in args.tuning_seeds.split(',') if s.strip())
  for seed in [int(s) for s in args.seeds.split(',')]:
    for method in args.methods.split(','):
      if method in BASELINES:
        row = run_unseen(args.dataset, args.n, seed, overrides)
      else:
        row = run_one(method, args.dataset, args.n, seed, args.workroot, overrides)
      save_arrays(args.out, row)
      rows.append(row)
      print(json.dumps({k: row[k] for k in ROW_KEYS + ('kkt_loss',)}), flush=True)
      io.write_json(path, {'rows': rows, 'seeds': seed_lists(rows, tuning)})  # atomic
      render(args.out, rows, seed_lists(rows, tuning))
  return 0


if __name__ == '__main__':
  sys.exit(main())
