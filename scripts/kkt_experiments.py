"""KKT reconstruction and sample-splitting experiments (docs/kkt.md).

Regenerate (2 CPU cores; identifiability: about 3 minutes with the compilation cache starting
empty, 5.5 without; the others 15-30 minutes before the cache):
  python -m scripts.kkt_experiments --part=identifiability
  python -m scripts.kkt_experiments --part=id_ablation  (about 5 minutes)
  python -m scripts.kkt_experiments --part=splitting
  python -m scripts.kkt_experiments --part=digits
Writes results/kkt_<part>.json, .md and .png (--out_dir elsewhere). A smoke test (tiny
victims, a few steps, one activation and victim): --part=identifiability --tiny --out_dir=/tmp/k
"""
from __future__ import annotations

import argparse
import copy
import dataclasses
import os
import sys
import time

import jax
import jax.numpy as jnp
import numpy as np

jax.config.update('jax_enable_x64', True)
from absl import logging  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import recon  # noqa: E402
from recon import data  # noqa: E402
from recon.runtime import io, runs
from recon.pipelines import reconstruct, victims  # noqa: E402
from recon.pipelines import kkt as ke
from recon.config import validate as config_lib  # noqa: E402
from configs import kkt_synthetic  # noqa: E402
from scripts import common  # noqa: E402
plt = common.pyplot()

OUT = 'results'  # --out_dir
TINY = False  # --tiny: a smoke test (few training and attack steps, fewer variants)


def shrink(c):
  """--tiny: few victim-training and attack steps (the config otherwise unchanged)."""
  if TINY:
    for path, most in (('victim.train.max_steps', 100), ('victim.train.stationary_steps', 100),
                       ('attack.max_steps', 20), ('run.chunk_steps', 10),
                       ('attack.split.every', 10)):
      config_lib.set_path(c, path, min(config_lib.get_path(c, path), most))
  return c


def base_config(overrides):
  """configs/kkt_synthetic.py with `overrides` ({field path: value}), resolved."""
  c = kkt_synthetic.get_config()
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
  a = ke.build_attack(cfg, net, p0, p, kind, cfg.data.num_classes, x.shape[1], radius, keys['init'],
                      jnp.float64, planted=(x, y, duals))
  if x0 is not None:
    a = dataclasses.replace(a, x0=dict(a.x0, x=x0) if isinstance(a.x0, dict) else x0)
  s = reconstruct.reconstruct_and_report(cfg, workdir, a, x_true=x, y=y, meta={})
  return s['metrics']


VICTIMS = {
    # name: (config overrides, KKT target)
    'planted': ({'victim.train.polish': False, 'victim.train.weight_decay': 0.0}, 'planted'),
    'weight_decay': ({'victim.train.polish': False, 'victim.train.weight_decay': 1e-3}, 'theta'),
    'max_margin': ({'victim.train.polish': True, 'victim.train.weight_decay': 0.0}, 'theta'),
}
VICTIM_NAMES = {'planted': 'planted oracle (exact KKT at GD weights)',
                'weight_decay': 'weight-decay exact stationary point',
                'max_margin': 'max-margin polished (SLSQP)'}


def identifiability(restarts=3, noise_level=0.03):
  """activation x victim x n_candidates (n, 2n) x init (R random restarts picked by the
  blind loss; truth + 3% noise). Attack: variable projection (duals eliminated),
  gradient-RMS equation weights, L-BFGS in float64 (configs/kkt_identifiability.py)."""
  from configs import kkt_identifiability  # pylint: disable=import-outside-toplevel
  rows = []
  t_start = time.time()
  if TINY:
    restarts = 1
  for act in ('cubic',) if TINY else ('cubic', 'quadratic'):
    for victim, (overrides, target) in list(VICTIMS.items())[:1 if TINY else None]:
      c = kkt_identifiability.get_config()
      c.run.overwrite = True
      c.run.log_every_seconds = 1e9
      c.victim.activation = act
      c.attack.kkt_target = target
      c.attack.max_steps = 600
      c.run.chunk_steps = 200
      c.update_from_flattened_dict(overrides)
      cfg = victims.resolve(shrink(c))
      x, y, keys = synthetic(cfg, 'binary')
      net, p0, p, info = ke.train_victim(cfg, x, y, keys['model'])
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
        runs = []
        for init, x0 in inits:
          m = attack(cfg_n, net, p0, p, x, y, duals, keys, 'binary',
                     f'{OUT}/runs/kkt_id/{act}_{victim}_{n_hat}', x0)
          runs.append((init, m))
        random_runs = [r for r in runs if r[0].startswith('random')]
        best = min(random_runs, key=lambda r: r[1]['final_loss'])  # blind choice
        for init, m in (runs[0], best):
          label = init if init.startswith('truth') else f'random, best of {restarts} by loss'
          rows.append({
              'activation': act, 'victim': victim, 'n_candidates': n_hat, 'n': n,
              'init': label, 'recon_error': m['recon_error'],
              'recon_error_max': m['recon_error_max'], 'n_recovered': m['n_recovered'],
              'final_loss': m['final_loss'], 'steps': m['steps'], 'status': m['status'],
              'neuron_gram_rank': info['neuron_gram_rank'],
              'neuron_gram_dim': info['neuron_gram_dim'],
              'neuron_gram_rank_span_x': info['neuron_gram_rank_span_x'],
              'neuron_gram_dim_span_x': info['neuron_gram_dim_span_x'],
              'train_loss': info['train_loss'],
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
    vals = [max(r['recon_error'], 1e-16) for r in rs]
    colors = ['C0' if r['victim'] == 'planted' else 'C1' if r['victim'] == 'weight_decay'
              else 'C2' for r in rs]
    ax.bar(range(len(rs)), vals, color=colors)
    ax.set_yscale('log')
    ax.set_xticks(range(len(rs)), [f"{'n' if r['n_candidates'] == r['n'] else '2n'}\n"
                                   f"{'truth' if r['init'].startswith('truth') else 'rand'}"
                                   for r in rs], fontsize=7)
    ax.set_title(f'{act}: blue planted, orange weight decay, green max margin', fontsize=8)
  axes[0].set_ylabel('recon_error (log)')
  common.savefig(fig, f'{OUT}/kkt_identifiability.png', dpi=110)


ABLATION = (  # (name, config overrides): which ingredient makes the planted cubic case exact
    ('Adam lr 0.01, duals optimised, unweighted', {'attack.optimizer': 'adam', 'attack.lr': 0.01, 'attack.lambda_solve': 'optimize', 'attack.residual_weights': 'none'}),
    ('L-BFGS, duals optimised, gradient-RMS weights', {'attack.optimizer': 'lbfgs', 'attack.lr': 1.0, 'attack.lambda_solve': 'optimize', 'attack.residual_weights': 'gradient_rms'}),
    ('L-BFGS, duals eliminated, unweighted', {'attack.optimizer': 'lbfgs', 'attack.lr': 1.0, 'attack.lambda_solve': 'eliminate', 'attack.residual_weights': 'none'}),
    ('L-BFGS, duals eliminated, gradient-RMS weights', {'attack.optimizer': 'lbfgs', 'attack.lr': 1.0, 'attack.lambda_solve': 'eliminate', 'attack.residual_weights': 'gradient_rms'}),
)


def identifiability_ablation(max_steps=1500):
  """Cubic, planted oracle, n_hat = n: each optimisation ingredient on or off."""
  from configs import kkt_identifiability  # pylint: disable=import-outside-toplevel
  rows = []
  c = kkt_identifiability.get_config()
  c.run.overwrite = True
  c.run.log_every_seconds = 1e9
  c.attack.max_steps = max_steps
  c.run.chunk_steps = 250
  cfg = victims.resolve(shrink(c))
  x, y, keys = synthetic(cfg, 'binary')
  net, p0, p, info = ke.train_victim(cfg, x, y, keys['model'])
  duals = info.pop('duals')
  noise = jax.random.normal(jax.random.PRNGKey(5), x.shape, jnp.float64)
  order = np.argsort(-np.asarray(y), kind='stable')  # candidate labels: +1 first (binary form)
  inits = (('truth+3% noise', (x + 0.03 * noise)[order]),
           # the identifiability part's restarts r0 and r2 (r0 ends at a local minimum there)
           ('random r0', jax.random.normal(jax.random.PRNGKey(1000), x.shape, jnp.float64)),
           ('random r2', jax.random.normal(jax.random.PRNGKey(1002), x.shape, jnp.float64)))
  for name, overrides in ABLATION:
    cv = copy.deepcopy(cfg)
    cv.update_from_flattened_dict(overrides)
    for init, x0 in inits:
      t = time.time()
      m = attack(cv, net, p0, p, x, y, duals, keys, 'binary', f'{OUT}/runs/kkt_id_ablation', x0)
      rows.append({'variant': name, 'init': init, 'recon_error': m['recon_error'],
                   'n_recovered': m['n_recovered'], 'final_loss': m['final_loss'],
                   'steps': m['steps'], 'status': m['status'], 'seconds': time.time() - t})
      print(rows[-1], flush=True)
  io.write_json(f'{OUT}/kkt_id_ablation.json', rows)
  io.write_text(f'{OUT}/kkt_id_ablation.md', common.table(
      [f'attack (cubic, planted oracle, n_hat = n, at most {max_steps} steps)', 'init',
       'recon_error', 'recovered (of 6)', 'final loss', 'steps (status)'],
      [[r['variant'], r['init'], r['recon_error'], r['n_recovered'], r['final_loss'],
        f"{r['steps']} ({r['status']})"] for r in rows]) + '\n')


def splitting_comparison(seeds=(0, 1, 2)):
  rows = []
  methods = [('kkt_binary', 2), ('kkt_multiclass', 3), ('projection', 2)]
  if TINY:
    seeds = seeds[:1]
  for objective, classes in methods:
    for seed in seeds:
      cfg = base_config({
          'attack.objective': objective, 'data.num_classes': classes,
          'victim.activation': 'cubic', 'data.d': 6, 'data.n': 6, 'victim.width': 24,
          'victim.train.max_steps': 5000, 'victim.train.polish': False,
          'attack.kkt_target': 'planted' if objective != 'projection' else 'theta',
          'attack.max_steps': 6000, 'seed': seed, 'attack.split.every': 2000,
          'attack.split.budget': 6, 'attack.split.max_per_round': 2})
      kind = 'multiclass' if objective == 'kkt_multiclass' else 'binary'
      x, y, keys = synthetic(cfg, kind)
      net, p0, p, info = ke.train_victim(cfg, x, y, keys['model'])
      duals = info.pop('duals')
      for split in ('none', 'every'):
        c = copy.deepcopy(cfg)
        with c.unlocked():
          c.attack.split.mode = split
        t = time.time()
        m = attack(c, net, p0, p, x, y, duals, keys, kind, f'{OUT}/runs/kkt_split')
        sp = m.get('splitting', {})
        rows.append({'objective': objective, 'seed': seed, 'split': split,
                     'recon_error': m['recon_error'], 'n_recovered': m['n_recovered'],
                     'final_loss': m['final_loss'], 'n_splits': sp.get('n_splits', 0),
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
  for i, (objective, _) in enumerate(methods):
    for j, split in enumerate(('none', 'every')):
      e = [r['recon_error'] for r in rows if r['objective'] == objective and r['split'] == split]
      ax.scatter([i + 0.2 * j] * len(e), e, c=f'C{j}', label=split if i == 0 else None)
  ax.set_xticks(range(len(methods)), [m for m, _ in methods])
  ax.set_ylabel('recon_error per seed')
  ax.legend(title='splitting')
  common.savefig(fig, f'{OUT}/kkt_splitting.png', dpi=120)


def digits(n=10):
  """Digits loaded here from sklearn: this selection (random odd / even images, mean-subtracted
  pixels) differs from recon.data's 'digits' data set, so results/kkt_digits.* stay reproducible."""
  from sklearn.datasets import load_digits  # pylint: disable=import-outside-toplevel
  ds = load_digits()
  rng = np.random.RandomState(0)
  idx = np.concatenate([rng.choice(np.where(ds.target % 2 == c)[0], n // 2, replace=False)
                        for c in (1, 0)])
  x = ds.data[idx] / 16.0
  x = x - x.mean(0)  # mean-subtracted pixels (Haim et al.), then rows on the sqrt(d)-sphere
  x = x / np.linalg.norm(x, axis=1, keepdims=True) * np.sqrt(64)
  y = np.where(ds.target[idx] % 2 == 1, 1.0, -1.0)
  x, y = jnp.asarray(x), jnp.asarray(y)
  rows = {}
  for act, target in (('cubic', 'planted'), ('cubic', 'theta')):
    cfg = base_config({
        'victim.activation': act, 'data.d': 64, 'data.n': n, 'victim.width': 64,
        'victim.train.max_steps': 5000, 'victim.train.lr': 0.05, 'victim.train.polish': False,
        'attack.kkt_target': target, 'attack.max_steps': 15000, 'attack.n_candidates': n})
    keys = runs.split_keys(0)
    net, p0, p, info = ke.train_victim(cfg, x, y, keys['model'])
    duals = info.pop('duals')
    m = attack(cfg, net, p0, p, x, y, duals, keys, 'binary', f'{OUT}/runs/kkt_digits_{target}')
    rec = np.load(f'{OUT}/runs/kkt_digits_{target}/reconstruction.npz')
    rows[target] = {'recon_error': m['recon_error'], 'n_recovered': m['n_recovered'],
                    'final_loss': m['final_loss'], 'train_loss': info['train_loss'],
                    'normalized_margin': info['normalized_margin'],
                    'x_matched': rec['x_matched']}
    print(target, {k: v for k, v in rows[target].items() if k != 'x_matched'}, flush=True)
  io.write_json(f'{OUT}/kkt_digits.json',
                {k: {a: b for a, b in v.items() if a != 'x_matched'} for k, v in rows.items()})
  fig, axes = plt.subplots(1 + len(rows), n, figsize=(n * 0.9, 3))
  show = lambda a, img: (a.imshow(img.reshape(8, 8), cmap='gray'), a.axis('off'))
  for i in range(n):
    show(axes[0, i], np.asarray(x[i]))
    for r, (k, v) in enumerate(rows.items()):
      show(axes[r + 1, i], v['x_matched'][i])
  axes[0, 0].set_title('train', fontsize=7, loc='left')
  for r, k in enumerate(rows):
    axes[r + 1, 0].set_title(f'KKT target={k}', fontsize=7, loc='left')
  common.savefig(fig, f'{OUT}/kkt_digits.png', dpi=100)


if __name__ == '__main__':
  recon.setup_process()  # the CLI's process setup: CPU buffers, compile cache
  parser = argparse.ArgumentParser()
  parser.add_argument('--part', choices=('identifiability', 'id_ablation', 'splitting',
                                         'digits'),
                      required=True)
  parser.add_argument('--out_dir', default=OUT, help='results folder (runs go to OUT/runs/)')
  parser.add_argument('--tiny', action='store_true', help='smoke test: tiny budgets')
  args = parser.parse_args()
  OUT, TINY = args.out_dir, args.tiny
  logging.set_verbosity(logging.WARNING)
  {'identifiability': identifiability, 'id_ablation': identifiability_ablation,
   'splitting': splitting_comparison,
   'digits': digits}[args.part]()
