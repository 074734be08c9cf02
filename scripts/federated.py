"""Federated clients' updates inverted: records back per client, the certificate, time per client.

Each cell is one client setting -- a data set, n records, E local epochs in batches of B with
SGD or Adam -- run on fresh seeds (--seeds, 100+) with configs/federated.py's attack, the width
chosen so that p_L >= 10 d n (and the head's fan-in >= n (d + 1), the certificate's counting
margin on the head update's dominant direction). The settings of the attack (features at W(0),
the certificate's target, the precision rung) were chosen on shadow seeds 1000-1002
(configs/federated.py) and are not tuned here. Writes results/federated.{json,md}.

    python -m scripts.federated                       # the first cells: n in {8, 32}, E = 1, B = n
    python -m scripts.federated --cells=digits:8:1:8:sgd --seeds=100 --out=/tmp/fed
"""
from __future__ import annotations

import json
import math
import os
import tempfile
import time
from typing import Any, Dict, List

from absl import app, flags

from configs import federated as federated_config
import recon
from recon.runtime import io

# data set -> (its config fields, d, classes)
DATA = {
    'digits': ({'data.name': 'digits', 'data.d': 64,
                'data.classes': tuple(range(10)), 'data.num_classes': 10}, 64, 10),
    # scikit-image's LFW crops at 5 x 5 (configs/rf_faces.py's size), face / non-face
    'faces': ({'data.name': 'lfw_faces', 'data.d': 25, 'data.image_size': 5,
               'data.classes': (0, 1), 'data.num_classes': 2}, 25, 2),
}
FIRST_CELLS = ('digits:8:1:8:sgd', 'faces:8:1:8:sgd', 'digits:32:1:32:sgd', 'faces:32:1:32:sgd')
P_OVER_DN = 10.0


def define_flags() -> None:
  flags.DEFINE_list('cells', list(FIRST_CELLS), 'Cells data:n:E:B:optimiser.')
  flags.DEFINE_list('seeds', ['100', '101', '102', '103', '104'], 'Fresh seeds (reported).')
  flags.DEFINE_string('out', 'results', 'Folder of federated.{json,md}.')
  flags.DEFINE_string('workdir', None, 'Runs folder (default: a temporary one).')
  flags.DEFINE_list('rescue', None, "attack.rescue of every run (default configs/federated.py's).")
  flags.DEFINE_bool('append', False, 'Add the cells to OUT/federated.json instead of replacing it.')


def width_for(n: int, d: int, classes: int) -> int:
  """The smallest multiple of 64 with p_L = width * classes >= 10 d n and width >= n (d + 1)."""
  need = max(P_OVER_DN * d * n / classes, n * (d + 1))
  return int(64 * math.ceil(need / 64))


def cell_config(cell: str, seed: int, rescue=None):
  name, n, epochs, batch, optimizer = cell.split(':')
  fields, d, classes = DATA[name]
  n, epochs, batch = int(n), int(epochs), int(batch)
  c = federated_config.get_config()
  with c.ignore_type():
    for path, value in fields.items():
      section, key = path.split('.')
      c[section][key] = value
  c.data.n = n
  c.victim.width = width_for(n, d, classes)
  c.federated.epochs = epochs
  c.federated.batch = batch
  c.federated.optimizer = optimizer
  if rescue is not None:
    c.attack.rescue = tuple(rescue)
  c.federated.baseline = 'gradient_matching'  # its defaults: lr 0.05, 2000 steps, no TV
  c.seed = seed
  return c


def run_cell(cell: str, seeds: List[int], root: str, rescue=None) -> Dict[str, Any]:
  runs = []
  for seed in seeds:
    c = cell_config(cell, seed, rescue)
    workdir = os.path.join(root, cell.replace(':', '_'), str(seed))
    t = time.time()
    result = recon.run(c, workdir)
    seconds = time.time() - t
    m = result.metrics
    with open(os.path.join(workdir, 'records.json')) as f:
      records = json.load(f)
    with open(os.path.join(workdir, 'baseline.json')) as f:
      base = json.load(f)
    runs.append({
        'seed': seed, 'n': len(records), 'back': sum(bool(r['recovered']) for r in records),
        'pinned': sum(r['verdict'] == 'pinned' for r in records),
        'false_pinned': sum(r['verdict'] == 'pinned' and not r['recovered'] for r in records),
        'certified': bool(m.get('certified')),
        'false_certificate': bool(m.get('certified')) and not all(r['recovered'] for r in records),
        'seconds': seconds, 'client_seconds': m.get('train_seconds'),
        'p_L': m['p_L'], 'p_L_over_dn': m['p_L_over_dn'],
        'loss_at_truth': m['projection_loss_at_truth'], 'final_loss': m.get('final_loss'),
        'ssim_mean': m.get('ssim_mean'), 'load_avg_1min': os.getloadavg()[0],
        'baseline': {'back': base['n_recovered'], 'seconds': base['seconds'],
                     'final_loss': base['final_loss'], 'ssim_mean': base.get('ssim_mean')}})
    print(f'{cell} seed {seed}: {runs[-1]["back"]}/{runs[-1]["n"]} back, certified '
          f'{runs[-1]["certified"]}, {seconds:.0f} s; gradient matching '
          f'{base["n_recovered"]}/{len(records)} back, {base["seconds"]:.0f} s', flush=True)
  return {'cell': cell, 'rescue': list(c.attack.rescue), 'runs': runs}


def render(doc: Dict[str, Any]) -> str:
  lines = ['# Federated clients: one update inverted (scripts/federated.py)', '',
           f'Fresh seeds {doc["seeds"]}; attack settings chosen on shadow seeds '
           f'{doc["shadow_seeds"]} ({doc["choice"]}). Machine: {doc["machine"]}.', '',
           '| data | n | E | B | optimiser | p_L/(dn) | records back per seed | seeds all back | '
           'certified | false certificates | s per client (median) | gradient matching: back '
           'per seed | its s (median) | float64 rung |',
           '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
  for cell in doc['cells']:
    name, n, epochs, batch, optimizer = cell['cell'].split(':')
    runs = cell['runs']
    secs = sorted(r['seconds'] for r in runs)
    lines.append(
        f'| {name} | {n} | {epochs} | {batch} | {optimizer} | {runs[0]["p_L_over_dn"]:.3g} | '
        f'{", ".join(str(r["back"]) for r in runs)} (of {n}) | '
        f'{sum(r["back"] == r["n"] for r in runs)} of {len(runs)} | '
        f'{sum(r["certified"] for r in runs)} of {len(runs)} | '
        f'{sum(r["false_certificate"] for r in runs)} | {secs[len(secs) // 2]:.0f} | '
        f'{", ".join(str(r["baseline"]["back"]) for r in runs)} | '
        f'{sorted(r["baseline"]["seconds"] for r in runs)[len(runs) // 2]:.1f} | '
        f'{"yes" if "polish" in cell.get("rescue", ()) else "no"} |')
  lines += ['', 'Time per client: the whole run (local training, attack, precision rung, '
            'certificate, report) on the machine named above, shared with other jobs '
            '(load_avg_1min per run in federated.json). Gradient matching (the peers\' attack, '
            'recon/attack/gradient_matching.py) is given the labels, E, B, eta, the loss and the '
            'optimiser; the projection attack none of them. Its settings are its defaults (Adam '
            'lr 0.05, 2000 steps, no TV), not tuned on these seeds; its time is its descent alone.',
            '']
  return '\n'.join(lines)


def main(argv) -> None:
  del argv
  f = flags.FLAGS
  seeds = [int(s) for s in f.seeds]
  root = f.workdir or tempfile.mkdtemp(prefix='federated-')
  doc = {'seeds': seeds, 'shadow_seeds': [1000, 1001, 1002],
         'choice': "features at W(0); the certificate's target the head update's dominant "
                   "direction; the float64 precision rung (configs/federated.py)",
         'machine': f'{os.cpu_count()} CPU cores', 'cells': []}
  os.makedirs(f.out, exist_ok=True)
  if f.append:
    doc['cells'] = io.read_json(os.path.join(f.out, 'federated.json'))['cells']
  for cell in f.cells:  # written after every cell: a stopped run keeps the cells it finished
    doc['cells'].append(run_cell(cell, seeds, root, f.rescue))
    loads = [r['load_avg_1min'] for c in doc['cells'] for r in c['runs']]
    doc['machine'] = (f'{os.cpu_count()} CPU cores shared with other jobs (1-min load average '
                      f'{min(loads):.1f} to {max(loads):.1f} over the runs)')
    io.write_json(os.path.join(f.out, 'federated.json'), doc)
    io.write_text(os.path.join(f.out, 'federated.md'), render(doc))


if __name__ == '__main__':
  define_flags()
  app.run(main)
