"""The KKT results (docs/kkt.md): results/kkt_identifiability.*, kkt_splitting.* (synthetic
victims, float64) and kkt_trained.* (trained MLPs on images, configs/kkt_haim.py; rows appended).

  python -m scripts.kkt --part=identifiability   # or splitting; --tiny: a smoke test
  python -m scripts.kkt --part=trained --methods=unseen,haim,haim+split,loo,loo+split \
      --seeds=200,201,202 --dataset=lfw_faces
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import json
import math
import os
import shutil
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np
from absl import logging

from configs import kkt_haim, kkt_identifiability, kkt_synthetic
import recon
from recon import data, metrics
from recon.config import validate as config_lib
from recon.pipelines import kkt as ke
from recon.pipelines import reconstruct, victims
from recon.runtime import io, runs
from scripts import common
plt = common.pyplot()

OUT = 'results'  # --out_dir
TINY = False  # --tiny: few training and attack steps, fewer variants

# -- synthetic victims: identifiability and splitting ----------------------------------------


def shrink(c):
  """--tiny: few victim-training and attack steps (the config otherwise unchanged)."""
  if TINY:
    for path, most in (('victim.train.max_steps', 100), ('victim.train.stationary_steps', 100),
                       ('attack.max_steps', 20), ('run.chunk_steps', 10),
                       ('attack.split.every', 10)):
      config_lib.set_path(c, path, min(config_lib.get_path(c, path), most))
  return c


def resolved(c, overrides):
  c.run.overwrite = True
  c.run.log_every_seconds = 1e9
  c.update_from_flattened_dict(overrides)
  return victims.resolve(shrink(c))


def synthetic(cfg, kind):
  keys = runs.split_keys(cfg.seed)
  k_x, k_y = jax.random.split(keys['data'])
  x = data.sphere_rows(k_x, cfg.data.n, cfg.data.d, jnp.float64)
  return x, ke.balanced_labels(k_y, cfg.data.n, kind, cfg.data.num_classes, jnp.float64), keys


def attack(cfg, net, p0, p, x, y, duals, keys, kind, workdir, x0=None):
  radius = float(np.median(np.linalg.norm(np.asarray(x), axis=1)))
  a = ke.build_attack(cfg.attack, cfg.data.n, cfg.seed, net, p0, p, kind, cfg.data.num_classes,
                      x.shape[1], radius, keys['init'], jnp.float64, planted=(x, y, duals))
  if x0 is not None:
    a = dataclasses.replace(a, x0=dict(a.x0, x=x0) if isinstance(a.x0, dict) else x0)
  settings = reconstruct.tail(cfg.data, cfg.victim, cfg.attack, cfg.run, cfg.seed, cfg.to_dict())
  return reconstruct.reconstruct_and_report(settings, workdir, a, x_true=x, y=y, meta={})['metrics']


VICTIMS = {  # name: (config overrides, KKT target)
    'planted': ({'victim.train.polish': False, 'victim.train.weight_decay': 0.0}, 'planted'),
    'weight_decay': ({'victim.train.polish': False, 'victim.train.weight_decay': 1e-3}, 'theta'),
    'max_margin': ({'victim.train.polish': True, 'victim.train.weight_decay': 0.0}, 'theta'),
}
VICTIM_NAMES = {'planted': 'planted oracle (exact KKT at GD weights)',
                'weight_decay': 'weight-decay exact stationary point',
                'max_margin': 'max-margin polished (SLSQP)'}


def identifiability(restarts=3, noise_level=0.03):
  """activation x victim x n_candidates (n, 2n) x init (truth + 3% noise; the best of R random
  restarts by the blind loss), with configs/kkt_identifiability.py's attack."""
  rows, t_start = [], time.time()
  restarts = 1 if TINY else restarts
  for act in ('cubic',) if TINY else ('cubic', 'quadratic'):
    for victim, (overrides, target) in list(VICTIMS.items())[:1 if TINY else None]:
      cfg = resolved(kkt_identifiability.get_config(), {
          'victim.activation': act, 'attack.kkt.target': target, 'attack.max_steps': 600,
          'run.chunk_steps': 200, **overrides})
      x, y, keys = synthetic(cfg, 'binary')
      net, p0, p, info = ke.train_victim(cfg.data, cfg.victim, cfg.attack, x, y, keys['model'])
      duals = info.pop('duals')
      n, d = x.shape
      for n_hat in (n, 2 * n):
        cfg_n = copy.deepcopy(cfg)
        with cfg_n.unlocked():
          cfg_n.attack.n_candidates = n_hat
        noise = jax.random.normal(jax.random.PRNGKey(5), (n_hat, d), jnp.float64)
        inits = [('truth+3% noise', jnp.tile(x, (n_hat // n, 1)) + noise_level * noise)]
        inits += [(f'random r{r}', jax.random.normal(jax.random.PRNGKey(1000 + r), (n_hat, d),
                                                      jnp.float64)) for r in range(restarts)]
        got = [(init, attack(cfg_n, net, p0, p, x, y, duals, keys, 'binary',
                             f'{OUT}/runs/kkt_id/{act}_{victim}_{n_hat}', x0))
               for init, x0 in inits]
        random_runs = [r for r in got if r[0].startswith('random')]
        best = min(random_runs, key=lambda r: r[1]['final_loss'])  # blind choice
        for init, m in (got[0], best):
          label = init if init.startswith('truth') else f'random, best of {restarts} by loss'
          rows.append({
              'activation': act, 'victim': victim, 'n_candidates': n_hat, 'n': n, 'init': label,
              **{k: m[k] for k in ('recon_error', 'recon_error_max', 'n_recovered', 'final_loss',
                                   'steps', 'status')},
              **{k: info[k] for k in ('neuron_gram_rank', 'neuron_gram_dim',
                                      'neuron_gram_rank_span_x', 'neuron_gram_dim_span_x',
                                      'train_loss')},
              'train_grad_norm': info.get('train_grad_norm'),
              'restarts': ([{'final_loss': r[1]['final_loss'], 'recon_error': r[1]['recon_error']}
                            for r in random_runs] if label.startswith('random') else None)})
          print({k: v for k, v in rows[-1].items() if k != 'restarts'},
                f'{time.time() - t_start:.0f}s', flush=True)
  io.write_json(f'{OUT}/kkt_identifiability.json', rows)
  io.write_text(f'{OUT}/kkt_identifiability.md', common.table(
      ['activation', 'victim', 'n_hat', 'init', 'recon_error', 'recovered (of n)', 'final loss',
       'neuron-Gram rank in Sym^2(span X) (in Sym^2(R^d))'],
      [[r['activation'], VICTIM_NAMES[r['victim']], 'n' if r['n_candidates'] == r['n'] else '2n',
        r['init'], r['recon_error'], f"{r['n_recovered']} / {r['n']}", r['final_loss'],
        f"{r['neuron_gram_rank_span_x']} / {r['neuron_gram_dim_span_x']} "
        f"({r['neuron_gram_rank']} / {r['neuron_gram_dim']})"] for r in rows]) + '\n')
  fig, axes = plt.subplots(1, 2, figsize=(10, 3.5), sharey=True)
  for ax, act in zip(axes, ('cubic', 'quadratic')):
    rs = [r for r in rows if r['activation'] == act]
    colors = [{'planted': 'C0', 'weight_decay': 'C1'}.get(r['victim'], 'C2') for r in rs]
    ax.bar(range(len(rs)), [max(r['recon_error'], 1e-16) for r in rs], color=colors)
    ax.set_yscale('log')
    ax.set_xticks(range(len(rs)), [f"{'n' if r['n_candidates'] == r['n'] else '2n'}\n"
                                   f"{'truth' if r['init'].startswith('truth') else 'rand'}"
                                   for r in rs], fontsize=7)
    ax.set_title(f'{act}: blue planted, orange weight decay, green max margin', fontsize=8)
  axes[0].set_ylabel('recon_error (log)')
  common.savefig(fig, f'{OUT}/kkt_identifiability.png', dpi=110)


def splitting(seeds=(0, 1, 2)):
  """Three objectives on trained cubic victims, sample splitting every K steps against none."""
  rows, methods = [], [('kkt_binary', 2), ('kkt_multiclass', 3), ('projection', 2)]
  for objective, classes in methods:
    for seed in seeds[:1] if TINY else seeds:
      cfg = resolved(kkt_synthetic.get_config(), {
          'attack.objective': objective, 'data.num_classes': classes,
          'victim.activation': 'cubic', 'data.d': 6, 'data.n': 6, 'victim.width': 24,
          'victim.train.max_steps': 5000, 'victim.train.polish': False,
          'attack.kkt.target': 'planted' if objective != 'projection' else 'theta',
          'attack.max_steps': 6000, 'seed': seed, 'attack.split.every': 2000,
          'attack.split.budget': 6, 'attack.split.max_per_round': 2})
      kind = 'multiclass' if objective == 'kkt_multiclass' else 'binary'
      x, y, keys = synthetic(cfg, kind)
      net, p0, p, info = ke.train_victim(cfg.data, cfg.victim, cfg.attack, x, y, keys['model'])
      duals = info.pop('duals')
      for split in ('none', 'every'):
        c = copy.deepcopy(cfg)
        with c.unlocked():
          c.attack.split.mode = split
        t = time.time()
        m = attack(c, net, p0, p, x, y, duals, keys, kind, f'{OUT}/runs/kkt_split')
        rows.append({'objective': objective, 'seed': seed, 'split': split,
                     'recon_error': m['recon_error'], 'n_recovered': m['n_recovered'],
                     'final_loss': m['final_loss'],
                     'n_splits': m.get('splitting', {}).get('n_splits', 0),
                     'n_candidates_end': m['n_candidates'], 'seconds': time.time() - t})
        print(rows[-1], flush=True)
        io.write_json(f'{OUT}/kkt_splitting.json', rows)
  groups = [(o, sp, [r for r in rows if r['objective'] == o and r['split'] == sp])
            for o, _ in methods for sp in ('none', 'every')]
  ms = lambda rs, k: f"{np.mean([r[k] for r in rs]):.3f} ± {np.std([r[k] for r in rs]):.3f}"  # noqa: E731
  io.write_text(f'{OUT}/kkt_splitting.md', common.table(
      ['objective', 'splitting', 'recon_error (mean ± std)', 'recovered of 6 (mean ± std)',
       'final loss (median)', 'splits'],
      [[o, sp, ms(rs, 'recon_error'), ms(rs, 'n_recovered'),
        float(np.median([r['final_loss'] for r in rs])),
        float(np.mean([r['n_splits'] for r in rs]))] for o, sp, rs in groups if rs]) + '\n')
  fig, ax = plt.subplots(figsize=(5, 3))
  for i, (o, sp, rs) in enumerate(groups):
    e = [r['recon_error'] for r in rs]
    ax.scatter([i // 2 + 0.2 * (i % 2)] * len(e), e, c=f'C{i % 2}', label=sp if i < 2 else None)
  ax.set_xticks(range(len(methods)), [m for m, _ in methods])
  ax.set_ylabel('recon_error per seed')
  ax.legend(title='splitting')
  common.savefig(fig, f'{OUT}/kkt_splitting.png', dpi=120)


# -- trained networks (issue #19): haim / loo, with or without splitting; the unseen reference --

METHODS = ('haim', 'haim+split', 'loo', 'loo+split')
BASELINES = ('unseen',)  # 2n images the victim never saw as the candidates: the reference level
ROW_KEYS = ('method', 'dataset', 'n', 'width', 'seed', 'frac_ssim_0_5', 'frac_ssim_0_4',
            'ssim_median', 'train_loss', 'steps', 'wall_seconds', 'device')
SSIM_KEYS = ('frac_ssim_0_5', 'frac_ssim_0_4', 'ssim_median', 'ssim_mean', 'n_distinct_nearest')


def method_overrides(method: str, m: int, every: int) -> dict:
  if method not in METHODS:
    raise ValueError(f'method: unknown name {method!r}; accepted: {", ".join(METHODS)}')
  out = {}
  if method.startswith('loo'):  # free-sign duals on theta_T - theta_0 (Loo et al. 2023)
    out.update({'attack.objective': 'kkt_general', 'attack.kkt.target': 'delta',
                'attack.kkt.lambda_min': 0.0, 'attack.kkt.layers': 'all'})
  if method.endswith('+split'):  # as the authors: Lanczos on HVPs, 30% per round, m at most 2x
    out.update({'attack.split.mode': 'every', 'attack.split.every': every,
                'attack.split.budget': m, 'attack.split.max_per_round': max(1, math.ceil(0.3 * m)),
                'attack.split.eig_method': 'lanczos', 'attack.split.lanczos_steps': 20,
                'attack.split.eig_tol': 1e-9})
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
  """One (method, victim): its row. The victim is trained by the first method on it, then
  loaded by the others (identical weights)."""
  t0 = time.time()
  c = make_config(method, dataset, n, seed, overrides)
  tag = f'{dataset}_n{n}_w{c.victim.width}_s{seed}'
  victim_dir = os.path.join(workroot, 'victim_' + tag)
  workdir = os.path.join(workroot, method.replace('+', '_') + '_' + tag)
  if os.path.isdir(os.path.join(victim_dir, 'model')):
    c.victim.checkpoint = victim_dir
  summary = recon.run(c, workdir, nonfinite_ok=True).summary
  if c.victim.checkpoint is None:  # first run on this victim: keep it for the others
    shutil.copytree(os.path.join(workdir, 'model'), os.path.join(victim_dir, 'model'),
                    dirs_exist_ok=True)
    with open(os.path.join(victim_dir, 'train.json'), 'w') as f:
      json.dump({k: summary['metrics'].get(k) for k in ('train_loss', 'train_steps')}, f)
  with open(os.path.join(victim_dir, 'train.json')) as f:
    train = json.load(f)
  rec = dict(np.load(os.path.join(workdir, 'reconstruction.npz')))
  if 'x_true' not in rec:  # loo's data fields differ from the victim's: score on its own set
    rec['x_true'] = victim_truth(workroot, tag)
  shape = data.image_shape(c.data)
  ev = metrics.nearest_candidate_ssim(rec['x_true'], rec['x_candidates'], shape)
  mm = summary['metrics']
  return {'method': method, 'dataset': dataset, 'n': n, 'width': c.victim.width, 'seed': seed,
          **{k: ev[k] for k in SSIM_KEYS},
          'train_loss': train['train_loss'], 'train_steps': train['train_steps'],
          'steps': int(mm['steps']), 'kkt_loss': float(mm['final_loss']),
          'n_candidates_final': int(rec['x_candidates'].shape[0]),
          'n_splits': (mm.get('splitting') or {}).get('n_splits', 0),
          'wall_seconds': time.time() - t0, 'device': str(jax.devices()[0].device_kind),
          'config': {k: config_lib.get_path(c, k) for k in (
              'attack.lr', 'attack.optimizer', 'attack.max_steps',
              'attack.kkt.candidate_init_scale', 'attack.kkt.lambda_min', 'attack.kkt.act_alpha',
              'victim.first_init_scale', 'victim.train.lr', 'victim.train.max_steps', 'run.dtype',
              'attack.split.every', 'attack.kkt.layers', 'attack.kkt.candidate_subspace',
              'attack.schedule', 'attack.decay_steps')},
          '_arrays': {'x_true': rec['x_true'], 'x_best': rec['x_candidates'][ev['nearest']],
                      'ssim': ev['ssim'], 'shape': shape}}


def run_unseen(dataset: str, n: int, seed: int, overrides: dict) -> dict:
  """The 'unseen' row: n images as the training set, 2n other images of the same data set as
  candidates (both minus the training set's mean), scored as the attacks."""
  t0 = time.time()
  c = make_config('haim', dataset, 3 * n, seed, overrides)
  x, _, meta = data.load(c.data, jax.random.PRNGKey(seed), jnp.float64)
  pix = data.to_pixels(np.asarray(x), meta)
  perm = np.random.default_rng(seed).permutation(len(pix))
  tr, cand = pix[perm[:n]], pix[perm[n:]]
  mean, shape = tr.mean(), data.image_shape(c.data)
  ev = metrics.nearest_candidate_ssim(tr - mean, cand - mean, shape)
  return {'method': 'unseen', 'dataset': dataset, 'n': n, 'width': 0, 'seed': seed,
          **{k: ev[k] for k in SSIM_KEYS}, 'train_loss': float('nan'),
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
  """The rows of a results JSON ({'rows': [...]} or a bare list), [] if it is missing; the
  'nan' / 'inf' strings recon.runtime.io writes back to floats."""
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
  """OUT.md (per row, and mean ± std over seeds per setting) and OUT.png: for the first seed of
  each method, training images over their best candidates, best SSIM first."""
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
  firsts = {}
  for r in rows:
    if 'arrays' in r:
      firsts.setdefault(r['method'], r)
  if not firsts:
    return
  cols = 16
  fig, axes = plt.subplots(2 * len(firsts), cols, figsize=(cols * 0.7, 2 * len(firsts) * 0.8),
                           squeeze=False)
  for k, (meth, r) in enumerate(firsts.items()):
    a = np.load(os.path.join(os.path.dirname(out), r['arrays']))
    shape, order = tuple(a['shape']), np.argsort(-a['ssim'])[:cols]
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


def trained(args) -> None:
  overrides, path = common.overrides(args.set), args.out + '.json'
  os.makedirs(os.path.dirname(args.out) or '.', exist_ok=True)
  rows, tuning = load_rows(path), sorted(common.ints(args.tuning_seeds))
  for seed in common.ints(args.seeds):
    for method in args.methods.split(','):
      if method in BASELINES:
        row = run_unseen(args.dataset, args.n, seed, overrides)
      else:
        row = run_one(method, args.dataset, args.n, seed, args.workroot, overrides)
      save_arrays(args.out, row)
      rows.append(row)
      print(json.dumps({k: row[k] for k in ROW_KEYS + ('kkt_loss',)}), flush=True)
      io.write_json(path, {'rows': rows, 'seeds': seed_lists(rows, tuning)})
      render(args.out, rows, seed_lists(rows, tuning))


def main(argv=None) -> int:
  global OUT, TINY
  ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  ap.add_argument('--part', choices=('identifiability', 'splitting', 'trained'), required=True)
  ap.add_argument('--out_dir', default=OUT, help='identifiability, splitting: results folder')
  ap.add_argument('--tiny', action='store_true', help='identifiability, splitting: smoke test')
  ap.add_argument('--methods', default='haim', help='trained: ' + ','.join(METHODS + BASELINES))
  ap.add_argument('--seeds', default='0')
  ap.add_argument('--n', type=int, default=50)
  ap.add_argument('--dataset', default='digits')
  ap.add_argument('--out', default='results/kkt_trained')
  ap.add_argument('--workroot', default='/tmp/recon_kkt_trained')
  ap.add_argument('--tuning_seeds', default='0,1,2,100', help='recorded, never run here')
  ap.add_argument('--set', action='append', default=[], help='config override PATH=VALUE')
  args = ap.parse_args(argv)
  if args.part == 'trained':
    trained(args)
    return 0
  jax.config.update('jax_enable_x64', True)  # the synthetic KKT systems are solved in float64
  logging.set_verbosity(logging.WARNING)
  OUT, TINY = args.out_dir, args.tiny
  {'identifiability': identifiability, 'splitting': splitting}[args.part]()
  return 0


if __name__ == '__main__':
  recon.setup_process()  # the CLI's process setup: CPU buffers, compile cache
  sys.exit(main())
