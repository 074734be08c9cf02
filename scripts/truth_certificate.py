"""The certificate at the true training rows: the most any attack on a victim can certify.

    python -m scripts.truth_certificate                   # photo patches, seeds 100-102 and 1000
    python -m scripts.truth_certificate --data=synthetic_sphere --seeds=300,301,302
    python -m scripts.truth_certificate --dtype=float64 --seeds=100
    python -m scripts.truth_certificate --workdirs=results/runs/digits_audit --out=/tmp/tc
    python -m scripts.truth_certificate --render_only

For each seed: the victim of configs/rf_synthetic.py at the size of issue #30 (photo patches:
the bundled photographs' 4x4x3 patches, (n, d, p) = (100, 48, 48 000), p = 10 dn; sphere data:
(100, 16, 6 400), p = 4 dn), relu_tanh, in `--dtype`, trained by a one-step run (the attack
does nothing: one step, no rescue, no Jacobian test), then `recon.truth_certificate` on its
workdir: the float64 loss at the true rows, the rounding floor theta's dtype leaves (the
statistical estimate, its bound and the worst case), and the certificate of the true rows at
attack.tol and as the precision rung judges (its loss test and radius level; ground
truth, for analysis: nothing here is an input to an attack or a choice). Where neither
certifies the truth, no attack can be certified on that victim. Records are appended to
OUT.json as they finish (a (data, dtype, seed) run again replaces its record); OUT.md
re-rendered. Wall seconds are the certificate's two judgements (the victim not timed).
`--workdirs`: finished random-features runs instead (an audit of your own data: is any of it
certifiable from these weights at all?), each recorded under its config's data, dtype and seed.
"""
from __future__ import annotations

import argparse
import os
import time

import recon
from configs import rf_synthetic
from recon.runtime import io, machine
from scripts import common

SIZES = {'photo_patches': (100, 48, 48000), 'synthetic_sphere': (100, 16, 6400)}


def victim_config(data: str, seed: int, dtype: str, size=None):
  """configs/rf_synthetic.py's victim at `size` (default SIZES[data]); an attack of one step."""
  c = rf_synthetic.get_config()
  (c.data.n, c.data.d, c.victim.p) = size or SIZES[data]
  c.victim.activation = 'relu_tanh'
  if data == 'photo_patches':
    c.data.name, c.data.image_size = data, 4
  c.seed, c.run.overwrite, c.run.dtype = seed, True, dtype
  c.attack.max_steps, c.attack.rescue, c.attack.certify_jacobian = 1, (), 'off'
  return c


def record(data: str, seed: int, dtype: str, workdir: str) -> dict:
  t0 = time.time()
  out = recon.truth_certificate(workdir)
  return {'data': data, 'seed': seed, 'dtype': dtype, 'seconds': round(time.time() - t0, 1),
          'load': list(os.getloadavg()), **out}


def _judged(j: dict) -> list:
  worst = (j.get('least_pinned') or [{}])[0]
  return [j['certified'], j['pin_radius'], j['rows_pinned'],
          f"row {worst['row']}: {worst['radius']:.2g} (share rank {worst['share_rank']})"
          if worst else '-']


def render(out: str) -> None:
  doc = io.read_json(out + '.json')
  rows = [[r['data'], f"({r['n']}, {r['d']}, {r['p']})", r['dtype'], r['seed'], r['loss64'],
           r['rounding_floor'], r.get('rounding_floor_expected'), r.get('rounding_floor_worst'),
           r['attack']['tol'], *_judged(r['attack']), r['polished']['tol'],
           r['polished'].get('radius_loss'), *_judged(r['polished']), round(r['seconds'])]
          for r in sorted(doc['records'], key=lambda r: (r['data'], r['dtype'], r['seed']))]
  named = [f"{r['data']} {r['dtype']} seed {r['seed']}" for r in doc['records']
           if r['certifiable']]
  io.write_text(out + '.md', common.page(
      'The certificate at the true training rows',
      f"Machine: {doc['machine']}. Victims: configs/rf_synthetic.py, relu_tanh, theta stored in "
      "the dtype column. The certificate of the TRUE rows (ground truth, for analysis only), "
      "judged at the run's attack.tol (pin radius at max(L, tol)) and as the precision rung "
      'judges (loss test against max(attack.polish.tol, 4 F), radii at the level '
      "max(L / (1 - q), F)). F: the statistical bound on theta's rounding floor; expected: its "
      'expected value; worst: (eps S)^2. Where neither certifies, no attack can be certified on '
      "that victim. share rank: the row's rank by its share of theta (0: the smallest).",
      common.table(['data', '(n, d, p)', 'dtype', 'seed', 'loss at truth', 'F', 'expected',
                    'worst', 'attack.tol', 'certified', 'pin radius', 'rows pinned',
                    'least pinned row', 'rung tol', 'radius level', 'certified', 'pin radius',
                    'rows pinned', 'least pinned row', 's'], rows),
      f"Certifiable: {len(named)} of {len(doc['records'])} victims "
      f"({', '.join(named) or 'none'})."))


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument('--data', default='photo_patches', choices=tuple(SIZES))
  ap.add_argument('--seeds', default='100,101,102,1000')
  ap.add_argument('--dtype', default='float32', choices=('float32', 'float64'))
  ap.add_argument('--tiny', action='store_true', help='n = 8 at the same d and p / dn: a smoke run')
  ap.add_argument('--out', default=os.path.join('results', 'truth_certificate'))
  ap.add_argument('--runs_dir', default=os.path.join('results', 'runs', 'truth_certificate'))
  ap.add_argument('--workdirs', default='',
                  help='comma-separated finished random-features runs (instead of new victims)')
  ap.add_argument('--render_only', action='store_true')
  args = ap.parse_args(argv)
  if not args.render_only:
    recon.setup_process()
    n, d, p = SIZES[args.data]
    size = (8, d, p * 8 // n) if args.tiny else (n, d, p)  # tiny: n = 8 at the same p / dn
    if args.workdirs:
      todo = []
      for workdir in args.workdirs.split(','):
        cfg = recon.load(workdir).summary.get('config') or {}
        todo.append(((cfg.get('data') or {}).get('name'), cfg.get('seed'),
                     (cfg.get('run') or {}).get('dtype'), workdir))
    else:
      todo = [(args.data, int(s), args.dtype,
               os.path.join(args.runs_dir, f'{args.data}_{args.dtype}_s{int(s)}'))
              for s in args.seeds.split(',') if s.strip()]
    for data, seed, dtype, workdir in todo:
      if not args.workdirs:
        recon.run(victim_config(data, seed, dtype, size), workdir)
      rec = record(data, seed, dtype, workdir)
      doc = common.load(args.out + '.json', {'what': 'the certificate at the true training rows',
                                              'records': []})
      doc['machine'] = machine.describe()
      common.upsert(doc['records'], rec, lambda r: (r['data'], r['dtype'], r['seed']))
      io.write_json(args.out + '.json', doc)
      render(args.out)
      print(f"{data} {dtype} seed {seed}: certifiable {rec['certifiable']} "
            f"(pin radius {rec['attack']['pin_radius']:.2g} at {rec['attack']['tol']:.2g}, "
            f"{rec['polished']['pin_radius']:.2g} at the level "
            f"{rec['polished']['radius_loss']:.2g})", flush=True)
  render(args.out)


if __name__ == '__main__':
  main()
