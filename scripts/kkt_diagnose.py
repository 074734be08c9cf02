"""How near a TRAINED victim is to a KKT point, layer by layer (issue #19; docs/kkt.md).

For a victim saved by scripts/kkt_trained.py (WORKROOT/victim_<tag>/model) this evaluates the
binary KKT fit at the TRUE training data with least-squares-optimal duals,
  rho_B = ||M_B (t - J lambda*)||^2 / ||M_B t||^2,
for the full parameter vector and for every layer B alone (lambda* fitted on B's equations
only, and also the share of ||t||^2 each layer holds), for t = theta and t = theta - theta_0.
This is a DIAGNOSTIC of the victim (it uses the truth), never a tuning signal for a reported
victim; on a held-out victim it decides which layers' equations the attack uses
(`kkt_layers`, docs/kkt.md "How hyper-parameters were chosen").

  python -m scripts.kkt_diagnose --dataset=lfw_faces --seeds=100
Writes results/kkt_diagnose.{json,md} (rows appended).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402

from recon import io, victims  # noqa: E402
from recon.objectives import kkt  # noqa: E402
from recon.pipelines import kkt as pk  # noqa: E402
from scripts import kkt_trained  # noqa: E402


def layer_fits(apply_vec, params, theta, target, x, y) -> dict:
  """{layer or 'all': (share of ||t||^2, rho at the truth with lstsq duals, #negative duals)}."""
  jac = kkt.dual_jacobian(x, y, theta, apply_vec=apply_vec, kind='binary', out_dim=1)
  names = ['all'] + sorted(params['params'])
  out = {}
  for name in names:
    mask = jnp.ones_like(theta) if name == 'all' else kkt.layer_mask(params, [name])
    t = target * mask
    lam = jnp.linalg.lstsq(jac * mask[:, None], t, rcond=1e-6)[0]  # default rcond = eps * P cuts most of J
    r = t - (jac @ lam) * mask
    out[name] = {'share': float(jnp.sum(t ** 2) / jnp.sum(target ** 2)),
                 'rho_truth': float(jnp.sum(r ** 2) / jnp.sum(t ** 2)),
                 'n_negative_duals': int(jnp.sum(lam < 0))}
  return out


def diagnose(dataset: str, n: int, seed: int, workroot: str, overrides: dict) -> dict:
  t0 = time.time()
  c = kkt_trained.make_config('haim', dataset, n, seed, overrides)
  victim_dir = os.path.join(workroot, f'victim_{dataset}_n{n}_w{c.victim.width}_s{seed}')
  if not os.path.isdir(os.path.join(victim_dir, 'model')):
    raise SystemExit(f'{victim_dir}: no saved victim; run scripts.kkt_trained on seed {seed} '
                     'first')
  dtype = jnp.float32
  model = victims.load_model(victim_dir)
  net, params0, params, _ = pk._loaded_victim(c, model, c.data.d, 1, dtype)  # pylint: disable=protected-access
  keys = pk.runs.split_keys(c.seed)
  x, y, _ = pk.load_images(c, keys['data'], dtype)
  theta, apply_vec = kkt.flatten_model(net.apply, params)
  theta0 = kkt.flatten_model(net.apply, params0)[0]
  row = {'dataset': dataset, 'n': n, 'width': c.victim.width, 'seed': seed,
         'train_steps': c.victim.train.max_steps, 'train_lr': c.victim.train.lr}
  for tname, target in (('theta', theta), ('delta', theta - theta0)):
    row[tname] = layer_fits(apply_vec, params, theta, target, x, y)
  row['wall_seconds'] = time.time() - t0
  return row


def render(out: str, rows: list) -> None:
  lines = ['# KKT fit at the TRUE training data (scripts/kkt_diagnose.py)', '',
           'rho = ||M(t - J lambda*)||^2 / ||M t||^2 with least-squares duals lambda* fitted on '
           'the layer\'s own equations; share = ||M t||^2 / ||t||^2. A diagnostic of the victim '
           '(uses the truth).', '',
           '| dataset | n | seed | target | layer | share of norm^2 | rho at truth | negative duals |',
           '|---|---|---|---|---|---|---|---|']
  for r in rows:
    for tname in ('theta', 'delta'):
      for layer, v in r[tname].items():
        lines.append(f"| {r['dataset']} | {r['n']} | {r['seed']} | {tname} | {layer} | "
                     f"{v['share']:.4f} | {v['rho_truth']:.3f} | {v['n_negative_duals']} |")
  with open(out + '.md', 'w') as fh:
    fh.write('\n'.join(lines) + '\n')


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  ap.add_argument('--dataset', default='lfw_faces')
  ap.add_argument('--n', type=int, default=50)
  ap.add_argument('--seeds', default='100')
  ap.add_argument('--out', default='results/kkt_diagnose')
  ap.add_argument('--workroot', default='/tmp/recon_kkt_trained')
  args = ap.parse_args(argv)
  path = args.out + '.json'
  rows = json.load(open(path)) if os.path.exists(path) else []
  for seed in [int(s) for s in args.seeds.split(',')]:
    row = diagnose(args.dataset, args.n, seed, args.workroot, {})
    rows = [r for r in rows if (r['dataset'], r['n'], r['seed']) != (args.dataset, args.n, seed)]
    rows.append(row)
    print(json.dumps(row), flush=True)
    io.write_json(path, rows)  # atomic: an interrupted run leaves the old file
    render(args.out, rows)
  return 0


if __name__ == '__main__':
  sys.exit(main())
