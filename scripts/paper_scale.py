"""The paper's CIFAR-10 table at its own size (issue #20): n = 100, d = 3072, p from n to 10 dn.

    python scripts/paper_scale.py                          # every missing point, full size
    python scripts/paper_scale.py --points=10dn --activations=relu      # one accelerator window
    python scripts/paper_scale.py --render_only            # md + png from the json, list missing
    python scripts/paper_scale.py --image_size=8 --n=10 --max_steps=6000 \\
        --out=results/paper_scale_cpu_reduced               # the CPU-reduced table (d = 192)

One `recon.run` of configs/rf_cifar.py per (activation, p); every finished point is
appended to OUT.json at once (atomic write; a point run again replaces its record, the old
one is kept under `superseded`), then OUT.md (table), OUT.png (recon_error against p/dn with
the paper's three points) and OUT_grid_<activation>.png (truth | reconstruction at the
largest p done) are re-rendered from the json, and the points still missing are printed.
Records state the device (jax.devices()[0].device_kind), the matmul precision, the feature
mode used and the scale ('full': n = 100, d = 3072; else 'reduced').
Data: photo_patches (bundled), or --dataset=cifar10 --data_dir=DIR (the python-version
batches; --classes=0,1 for +-1 labels). Run dirs: results/runs/paper_scale/<out name>/<point>.
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from configs import rf_cifar  # noqa: E402
from recon.runtime import io  # noqa: E402
from scripts import common  # noqa: E402

# The reference curve: the law-of-reconstruction paper (Iurada, Bombari, Tommasi, Mondelli,
# ICLR 2026), its CIFAR-10 random-features table (n = 100, d = 3072, relu): the reconstruction
# error rho at three widths. Read off the paper's table, rounded as the paper states them.
PAPER_CIFAR10 = {'n': 1.0, 'dn': 0.5, '10dn': 0.0}
PAPER_SOURCE = ('Iurada, Bombari, Tommasi, Mondelli (ICLR 2026), CIFAR-10 random-features '
                'table, n=100, d=3072: rho ~1.0 at p=n, ~0.5 at p=dn, ~0 at p=10dn')
POINTS = ('n', 'dn/2', 'dn', '2dn', '5dn', '10dn')
ACTIVATIONS = ('relu', 'relu_tanh')
FULL = {'n': 100, 'image_size': 32}
FIELDS = ('dataset', 'n', 'd', 'p', 'p_over_dn', 'activation', 'train_mse', 'recon_error',
          'dist_abs', 'frac_recovered', 'ssim_mean', 'certified', 'steps', 'wall_seconds',
          'device', 'device_kind')


def p_of(point: str, n: int, d: int) -> int:
  return {'n': n, 'dn/2': d * n // 2, 'dn': d * n, '2dn': 2 * d * n, '5dn': 5 * d * n,
          '10dn': 10 * d * n}[point]


def point_key(r) -> tuple:
  return (r['dataset'], r['n'], r['d'], r['activation'], r['point'], r.get('seed', 0))


def parse_list(text: str, allowed, what: str):
  items = [s.strip() for s in text.split(',') if s.strip()]
  bad = [s for s in items if s not in allowed]
  if bad:
    raise SystemExit(f'error: --{what}: unknown {bad}; accepted: {",".join(allowed)}')
  return items


def load(path: str):
  if os.path.exists(path):
    return io.read_json(path)
  return {'what': 'paper CIFAR-10 table at its own size (issue #20)', 'paper': PAPER_SOURCE,
          'records': [], 'superseded': []}


def add_record(path: str, record) -> None:
  """Appends (or replaces, keeping the old one under `superseded`) and writes atomically."""
  doc = load(path)
  old = [r for r in doc['records'] if point_key(r) == point_key(record)]
  doc['records'] = [r for r in doc['records'] if point_key(r) != point_key(record)] + [record]
  doc.setdefault('superseded', []).extend(old)
  io.write_json(path, doc)


def build_config(args, activation: str, point: str):
  from recon.config import validate as config_lib  # pylint: disable=import-outside-toplevel
  c = rf_cifar.get_config()
  c.data.name = args.dataset
  if args.data_dir:
    c.data.dir = args.data_dir
  if args.classes:
    c.data.classes = tuple(int(s) for s in args.classes.split(','))
  c.data.image_size = args.image_size
  c.data.n = args.n
  c.victim.p = p_of(point, args.n, c.data.d)
  c.victim.activation = activation
  c.seed = args.seed
  c.run.overwrite = True
  c.run.matmul_precision = args.matmul_precision
  if activation == 'relu_tanh':
    c.attack.lr = 0.05  # docs/width_precision_data_notes.md: relu_tanh at 8x8 converged with 0.05
  if args.max_steps:
    c.attack.max_steps = c.attack.decay_steps = args.max_steps
  for item in args.set or ():
    path, _, value = item.partition('=')
    old = config_lib.get_path(c, path)
    if isinstance(old, bool):
      value = value.lower() in ('1', 'true', 'yes')
    elif isinstance(old, (tuple, list)):  # names separated by commas ('reseed,polish')
      value = tuple(v.strip() for v in value.split(',') if v.strip())
    elif old is not None:
      value = type(old)(value)
    config_lib.set_path(c, path, value)
  return c


def run_point(args, activation: str, point: str):
  import jax  # pylint: disable=import-outside-toplevel

  import recon  # pylint: disable=import-outside-toplevel
  c = build_config(args, activation, point)
  workdir = os.path.join(args.runs_dir, os.path.basename(args.out),
                         f'{activation}_{point.replace("/", "_")}_s{args.seed}')
  t0 = time.time()
  summary = recon.run(c, workdir, nonfinite_ok=True).summary
  wall = time.time() - t0
  m = summary['metrics']
  dev = jax.devices()[0]
  full = c.data.n == FULL['n'] and c.data.image_size == FULL['image_size']
  record = {
      'dataset': c.data.name, 'n': c.data.n, 'd': c.data.d, 'p': c.victim.p, 'p_over_dn': c.victim.p / (c.data.d * c.data.n),
      'activation': activation, 'train_mse': m.get('train_mse'),
      'recon_error': m.get('recon_error'), 'dist_abs': m.get('dist_abs'),
      'frac_recovered': m.get('frac_recovered'), 'ssim_mean': m.get('ssim_mean'),
      'certified': m.get('certified'), 'steps': m.get('steps'), 'wall_seconds': round(wall, 1),
      'device': dev.platform, 'device_kind': dev.device_kind, 'n_devices': jax.device_count(),
      'point': point, 'seed': c.seed, 'scale': 'full' if full else 'reduced',
      'image_size': c.data.image_size, 'matmul_precision': c.run.matmul_precision,
      'memory_lean': m.get('memory_lean'), 'weight_rng': c.victim.weight_rng,
      'feature_mode': c.victim.feature_mode, 'lr': c.attack.lr, 'max_steps': c.attack.max_steps,
      'status': m.get('status'), 'final_loss': m.get('final_loss'), 'jax': jax.__version__,
      'certificate_reasons': (m.get('certificate') or {}).get('reasons'),
      'jacobian': (m.get('certificate') or {}).get('jacobian'),
      'escalate_mode': 'auto' if 'escalate' in c.attack.rescue else 'off',
      'escalations_tried': m.get('escalations_tried'),
      'reseeded': m.get('reseeded'), 'n_recovered': m.get('n_recovered'),
      'ssim_min': m.get('ssim_min'), 'recon_error_max': m.get('recon_error_max'),
      'xla_flags': os.environ.get('XLA_FLAGS', ''),
      'workdir': workdir, 'date': time.strftime('%Y-%m-%dT%H:%M:%S')}
  add_record(args.out + '.json', record)
  grid = os.path.join(workdir, 'grid.png')
  if os.path.exists(grid):  # kept next to the json: the run dirs are not committed
    os.makedirs(os.path.join(args.out + '_grids'), exist_ok=True)
    shutil.copyfile(grid, os.path.join(args.out + '_grids', f'{activation}_{point.replace("/", "_")}.png'))
  print(f'{activation:9s} p={point:5s} ({c.victim.p}) recon_error {record["recon_error"]:.4f} '
        f'frac_recovered {record["frac_recovered"]:.2f} train_mse {record["train_mse"]:.2e} '
        f'steps {record["steps"]} {wall:.0f} s on {dev.device_kind}', flush=True)
  return record


def missing(doc, args):
  have = {(r['activation'], r['point']) for r in doc['records']
          if r['dataset'] == args.dataset and r['n'] == args.n and
          r['d'] == args.image_size ** 2 * 3}
  return [(a, p) for a in ACTIVATIONS for p in POINTS if (a, p) not in have]


def render(args) -> None:
  plt = common.pyplot()
  doc = load(args.out + '.json')
  recs = sorted(doc['records'], key=lambda r: (r['dataset'], r['activation'], r['p']))
  name = os.path.basename(args.out)
  todo = missing(doc, args)
  notes = [f'- {r["activation"]} p={r["point"]}: {r["note"]}' for r in recs if r.get('note')]
  io.write_text(args.out + '.md', common.page(
      f"{name}: the paper's CIFAR-10 table",
      f'Reference: {PAPER_SOURCE}.' + (
          " **Reduced size** (not the paper's n = 100, d = 3072): rows state n and d; max_steps "
          'may be capped. The full-size table needs a GPU.'
          if any(r['scale'] == 'reduced' for r in recs) else ''),
      common.table(['dataset', 'act', 'n', 'd', 'p', 'p/dn', 'paper ρ', 'train_mse',
                    'recon_error', 'dist_abs', 'frac_rec', 'SSIM', 'cert', 'steps (max)',
                    'wall s', 'device', 'precision'],
                   [[r['dataset'], r['activation'], r['n'], r['d'], r['p'], r['p_over_dn'],
                     PAPER_CIFAR10.get(r['point']), r['train_mse'], r['recon_error'],
                     r['dist_abs'], r['frac_recovered'], r['ssim_mean'], r['certified'],
                     f"{r['steps']} ({r['max_steps']})", r['wall_seconds'], r['device_kind'],
                     r['matmul_precision']] for r in recs]),
      '\n'.join(['Notes:'] + notes) if notes else '',
      f'Missing ({args.dataset}, n={args.n}, d={args.image_size ** 2 * 3}): '
      + (', '.join(f'{a} p={p}' for a, p in todo) or 'none')))
  fig, ax = plt.subplots(figsize=(6.5, 4.2))
  for (ds, act), style in ((k, s) for k, s in zip(
      sorted({(r['dataset'], r['activation']) for r in recs}), ('o-', 's-', '^--', 'v--'))):
    rs = [r for r in recs if r['dataset'] == ds and r['activation'] == act]
    ax.plot([r['p_over_dn'] for r in rs], [r['recon_error'] for r in rs], style,
            label=f'{ds} {act} (n={rs[0]["n"]}, d={rs[0]["d"]})')
  ax.plot([1 / 3072, 1.0, 10.0],  # p = n is p/dn = 1/d at the paper's d
          [PAPER_CIFAR10['n'], PAPER_CIFAR10['dn'], PAPER_CIFAR10['10dn']], 'k*', ms=12,
          label='paper (CIFAR-10, n=100, d=3072)')
  ax.set_xscale('log')
  ax.set_xlabel('p / dn')
  ax.set_ylabel('recon_error ρ')
  ax.set_title(name)
  ax.grid(alpha=0.3)
  ax.legend(fontsize=8)
  common.savefig(fig, args.out + '.png', dpi=110)
  # Grid: the largest p done per activation (copied at run time from its run dir).
  for act in ACTIVATIONS:
    done = [r for r in recs if r['activation'] == act and os.path.exists(os.path.join(
        args.out + '_grids', f'{act}_{r["point"].replace("/", "_")}.png'))]
    if done:
      best = max(done, key=lambda r: r['p'])
      shutil.copyfile(os.path.join(args.out + '_grids', f'{act}_{best["point"].replace("/", "_")}.png'),
                      f'{args.out}_grid_{act}.png')
  print(f'wrote {args.out}.md, {args.out}.png ({len(recs)} records)')
  print('missing: ' + (', '.join(f'{a} p={p}' for a, p in todo) or 'none'))
  if todo:
    print('fill them: ' + fill_command(args, todo))


def fill_command(args, todo) -> str:
  acts = sorted({a for a, _ in todo})
  pts = [p for p in POINTS if any(q == p for _, q in todo)]
  cmd = (f'XLA_PYTHON_CLIENT_PREALLOCATE=false python scripts/paper_scale.py '
         f'--points={",".join(pts)} --activations={",".join(acts)} --out={args.out}')
  if args.n != FULL['n'] or args.image_size != FULL['image_size']:
    cmd += f' --n={args.n} --image_size={args.image_size}'
  if args.dataset != 'photo_patches':
    cmd += f' --dataset={args.dataset} --data_dir={args.data_dir or "DIR"}'
  return cmd


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument('--points', default=','.join(POINTS), help='subset of ' + ','.join(POINTS))
  ap.add_argument('--activations', default=','.join(ACTIVATIONS))
  ap.add_argument('--n', type=int, default=FULL['n'])
  ap.add_argument('--image_size', type=int, default=FULL['image_size'],
                  help='a divisor of 32; d = image_size^2 * 3')
  ap.add_argument('--dataset', default='photo_patches', choices=('photo_patches', 'cifar10'))
  ap.add_argument('--data_dir', default=None)
  ap.add_argument('--classes', default=None, help='e.g. 0,1 (cifar10: +-1 labels)')
  ap.add_argument('--seed', type=int, default=0)
  ap.add_argument('--max_steps', type=int, default=None,
                  help='cap max_steps (and the cosine decay); default: the config\'s 30000')
  ap.add_argument('--matmul_precision', default='highest', choices=('highest', 'high', 'default'))
  ap.add_argument('--set', action='append',
                  help='PATH=VALUE on the config, e.g. attack.lr=0.02 (repeatable)')
  ap.add_argument('--out', default=None, help='path stem; default results/paper_scale (full '
                  'size) or results/paper_scale_reduced (any other n, image_size)')
  ap.add_argument('--runs_dir', default=os.path.join('results', 'runs', 'paper_scale'),
                  help='run folders go to RUNS_DIR/<out name>/<activation>_<point>_s<seed>')
  ap.add_argument('--render_only', action='store_true')
  args = ap.parse_args(argv)
  if args.dataset == 'cifar10' and not args.data_dir:
    raise SystemExit('error: --dataset=cifar10 needs --data_dir (the python-version batches)')
  if args.out is None:
    full = args.n == FULL['n'] and args.image_size == FULL['image_size']
    args.out = os.path.join('results', 'paper_scale' if full else 'paper_scale_reduced')
  os.makedirs(os.path.dirname(args.out) or '.', exist_ok=True)
  if not args.render_only:
    import recon  # pylint: disable=import-outside-toplevel
    recon.setup_process()
    for act in parse_list(args.activations, ACTIVATIONS, 'activations'):
      for point in parse_list(args.points, POINTS, 'points'):
        run_point(args, act, point)
        render(args)
  render(args)


if __name__ == '__main__':
  main()
