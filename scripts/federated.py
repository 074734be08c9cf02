"""Federated clients' updates inverted: records back per client, the certificate, time per client,
beside the gradient-matching baseline; the baseline's settings chosen blind; the law for updates.

Three parts (--parts), each resumable (results/federated.json keeps every finished run; with
--work_dir each run's folder is kept and a finished one is read back instead of rerun):

  tune   the baseline's settings (Adam step, total-variation weight, steps) on shadow clients
         (--shadow_seeds, 1000+; never reported): every (lr, tv) of the grid is run for the
         largest step count and its matching loss (the cosine distance, TV left out) read along
         the descent; the choice is the (lr, tv) with the lowest mean matching loss over the
         shadow clients at the largest step count, and the fewest steps of the grid whose mean
         is within TUNE_SLACK of it. Nothing here looks at the truth.
  table  cells data:n:E:B:optimiser over --data x --n x --epochs x --batches x --optimizers on
         fresh seeds (--seeds, 100+), the width chosen so that p_L >= 10 d n (and the head's
         fan-in >= n (d + 1), the certificate's counting margin); recon's attack
         (configs/federated.py, settings chosen on shadow seeds 1000-1002) and the baseline at
         the tuned settings on the same clients.
  law    the E = 1, B = n SGD client on --law_data at p_L / (d n) in --ratios (the width
         exactly ceil(ratio d n / classes)): records back against the parameter count,
         results/federated.png.

    python -m scripts.federated --work_dir=/tmp/fedruns          # all three parts
    python -m scripts.federated --parts=table --n=8,32 --data=digits,faces --work_dir=/tmp/fedruns
    python -m scripts.federated --render_only                    # md and png from the JSON
"""
from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
import time
from typing import Any, Dict, List, Optional

from absl import app, flags

from configs import federated as federated_config
from scripts import common
import recon
from recon.runtime import io, machine

# data set -> (its config fields, d, classes)
DATA = {
    'digits': ({'data.name': 'digits', 'data.d': 64,
                'data.classes': tuple(range(10)), 'data.num_classes': 10}, 64, 10),
    # scikit-image's LFW crops at 5 x 5 (configs/rf_faces.py's size), face / non-face
    'faces': ({'data.name': 'lfw_faces', 'data.d': 25, 'data.image_size': 5,
               'data.classes': (0, 1), 'data.num_classes': 2}, 25, 2),
}
P_OVER_DN = 10.0
# The shadow clients the baseline is tuned on, and the slack of its step-count rule.
TUNE_CELLS = ('digits:8:1:8:sgd',)
TUNE_SLACK = 1.1
LAW_CELL = '{data}:{n}:1:{n}:sgd'
# The baseline's defaults, at which the first cells (E = 1, B = n) ran before it was tuned.
FIRST_SETTING = {'lr': 0.05, 'steps': 2000, 'tv': 0.0, 'tuned': False}

FLAGS = flags.FLAGS


def define_flags() -> None:
  flags.DEFINE_list('parts', ['tune', 'table', 'law'], 'Which parts to run: tune, table, law.')
  flags.DEFINE_list('data', ['digits'], 'Table: data sets (digits, faces).')
  flags.DEFINE_string('n', '8', 'Table: client sizes n (comma list).')
  flags.DEFINE_string('epochs', '1,5', 'Table: local epochs E (comma list).')
  flags.DEFINE_list('batches', ['n', 'n/4'], 'Table: batches B, as n or n/k.')
  flags.DEFINE_list('optimizers', ['sgd', 'adam'], "Table: the client's optimisers.")
  flags.DEFINE_list('cells', None, 'Table: explicit cells data:n:E:B:optimiser (instead of the '
                    'grid flags).')
  flags.DEFINE_string('seeds', '100-104', 'Fresh seeds (reported).')
  flags.DEFINE_string('shadow_seeds', '1000-1002', 'Tune: shadow seeds (never reported).')
  flags.DEFINE_string('tune_lrs', '0.01,0.03,0.1,0.3', "Tune: the baseline's Adam steps.")
  flags.DEFINE_string('tune_tvs', '0,0.001,0.01', 'Tune: its total-variation weights.')
  flags.DEFINE_string('tune_steps', '1000,2000,4000', 'Tune: its step counts (read off the '
                      'descent of a run of the largest).')
  flags.DEFINE_list('law_data', ['digits'], 'Law: data sets.')
  flags.DEFINE_string('law_n', '8', 'Law: client sizes.')
  flags.DEFINE_string('ratios', '1,2,4,10', 'Law: p_L / (d n).')
  flags.DEFINE_string('out', 'results/federated', 'OUT.{json,md,png}.')
  flags.DEFINE_string('work_dir', None, 'Runs folder kept between invocations: a finished run '
                      'is read back (default: a temporary one, removed).')
  flags.DEFINE_list('rescue', None, "attack.rescue of every run (default configs/federated.py's).")
  flags.DEFINE_bool('redo', False, 'Run again the runs already in OUT.json.')
  flags.DEFINE_bool('render_only', False, 'Only re-render OUT.md and OUT.png from OUT.json.')


def width_for(n: int, d: int, classes: int) -> int:
  """The smallest multiple of 64 with p_L = width * classes >= 10 d n and width >= n (d + 1)."""
  need = max(P_OVER_DN * d * n / classes, n * (d + 1))
  return int(64 * math.ceil(need / 64))


def law_width(ratio: float, n: int, d: int, classes: int) -> int:
  """The smallest width with p_L = width * classes >= ratio d n."""
  return int(math.ceil(ratio * d * n / classes - 1e-9))


def batch_of(text: str, n: int) -> int:
  """'n' -> n, 'n/4' -> n // 4 (at least 1), '3' -> 3."""
  if text == 'n':
    return n
  if text.startswith('n/'):
    return max(1, n // int(text[2:]))
  return int(text)


def grid_cells() -> List[str]:
  if FLAGS.cells:
    return list(FLAGS.cells)
  return [f'{name}:{n}:{e}:{batch_of(b, n)}:{o}' for name in FLAGS.data
          for n in common.ints(FLAGS.n) for e in common.ints(FLAGS.epochs)
          for b in FLAGS.batches for o in FLAGS.optimizers]


def cell_config(cell: str, seed: int, setting: Dict[str, Any], rescue=None,
                width: Optional[int] = None):
  """The config of one client: cell data:n:E:B:optimiser, the baseline at `setting`."""
  name, n, epochs, batch, optimizer = cell.split(':')
  if name not in DATA:
    raise app.UsageError(f'error: cell {cell!r}: data {name!r}; accepted: {", ".join(DATA)}')
  fields, d, classes = DATA[name]
  n, epochs, batch = int(n), int(epochs), int(batch)
  c = federated_config.get_config()
  with c.ignore_type():
    for path, value in fields.items():
      section, key = path.split('.')
      c[section][key] = value
  c.data.n = n
  c.victim.width = width or width_for(n, d, classes)
  c.federated.epochs = epochs
  c.federated.batch = batch
  c.federated.optimizer = optimizer
  if rescue is not None:
    c.attack.rescue = tuple(rescue)
  c.federated.baseline = 'gradient_matching'
  c.federated.baseline_lr = float(setting['lr'])
  c.federated.baseline_steps = int(setting['steps'])
  c.federated.baseline_tv = float(setting['tv'])
  c.seed = seed
  return c


def run_client(c, workdir: str) -> Dict[str, Any]:
  """One client: recon's attack and the baseline (recon.run), scored; read back where its
  folder holds a finished run (row.json)."""
  done = os.path.join(workdir, 'row.json')
  if os.path.isfile(done):
    return io.read_json(done)
  if os.path.isdir(workdir):  # a run stopped mid-way: start it again
    shutil.rmtree(workdir)
  load = os.getloadavg()[0]
  t = time.time()
  result = recon.run(c, workdir)
  seconds = time.time() - t
  m = result.metrics
  with open(os.path.join(workdir, 'records.json')) as f:
    records = json.load(f)
  with open(os.path.join(workdir, 'baseline.json')) as f:
    base = json.load(f)
  row = {
      'seed': c.seed, 'n': len(records), 'back': sum(bool(r['recovered']) for r in records),
      'pinned': sum(r['verdict'] == 'pinned' for r in records),
      'false_pinned': sum(r['verdict'] == 'pinned' and not r['recovered'] for r in records),
      'certified': bool(m.get('certified')),
      'false_certificate': bool(m.get('certified')) and not all(r['recovered'] for r in records),
      # the client's training and recon's attack, precision rung, certificate and report
      'seconds': seconds - base['seconds'], 'client_seconds': m.get('train_seconds'),
      'width': c.victim.width, 'p_L': m['p_L'], 'p_L_over_dn': m['p_L_over_dn'],
      'loss_at_truth': m['projection_loss_at_truth'], 'final_loss': m.get('final_loss'),
      'ssim_mean': m.get('ssim_mean'), 'load_avg_1min': load,
      'load_avg_1min_after': os.getloadavg()[0],
      'baseline': {'back': base['n_recovered'], 'seconds': base['seconds'],
                   'lr': base['lr'], 'steps': base['steps'], 'tv': base['tv'],
                   'final_loss': base['final_loss'], 'matching_loss': base['matching_loss'],
                   'matching_curve': base['matching_curve'], 'ssim_mean': base.get('ssim_mean')}}
  io.write_json(done, row)
  return row


def say(what: str, row: Dict[str, Any]) -> None:
  b = row['baseline']
  print(f'{what} seed {row["seed"]}: recon {row["back"]}/{row["n"]} back, certified '
        f'{row["certified"]}, {row["seconds"]:.0f} s; gradient matching {b["back"]}/{row["n"]}, '
        f'matching loss {b["matching_loss"]:.3g}, {b["seconds"]:.0f} s; load '
        f'{row["load_avg_1min"]:.1f}', flush=True)


# -- tune: the baseline's settings on shadow clients, by its matching loss -------------------
def tune(doc: Dict[str, Any], root: str, save) -> None:
  seeds, steps = common.ints(FLAGS.shadow_seeds), common.ints(FLAGS.tune_steps)
  if any(s < 1000 for s in seeds):
    raise app.UsageError('error: --shadow_seeds: seeds below 1000; accepted: shadow seeds >= 1000 '
                         '(the reported ones are 100+)')
  t = doc.setdefault('tuning', {'runs': []})
  t.update(shadow_seeds=seeds, cells=list(TUNE_CELLS),
           grid={'lr': common.floats(FLAGS.tune_lrs), 'tv': common.floats(FLAGS.tune_tvs),
                 'steps': steps},
           rule=(f'the (lr, tv) with the lowest mean matching loss (cosine distance between the '
                 f'simulated and the observed update, TV left out) over the shadow clients after '
                 f'{max(steps)} steps; then the fewest steps of the grid whose mean is within '
                 f'x{TUNE_SLACK:g} of that'))
  for cell in TUNE_CELLS:
    for lr in t['grid']['lr']:
      for tv in t['grid']['tv']:
        for seed in seeds:
          key = (cell, seed, lr, tv, max(steps))
          if not FLAGS.redo and any((r['cell'], r['seed'], r['lr'], r['tv'], r['steps']) == key
                                    for r in t['runs']):
            continue
          c = cell_config(cell, seed, {'lr': lr, 'tv': tv, 'steps': max(steps)}, FLAGS.rescue)
          # recon's own attack is not what is tuned here: one step, no rescue (its result unused)
          c.attack.max_steps, c.attack.rescue = 1, ()
          row = run_client(c, os.path.join(root, 'tune', cell.replace(':', '_'),
                                           f'lr{lr:g}_tv{tv:g}', str(seed)))
          b = row['baseline']
          common.upsert(t['runs'], {
              'cell': cell, 'seed': seed, 'lr': lr, 'tv': tv, 'steps': max(steps),
              'matching_curve': b['matching_curve'], 'matching_loss': b['matching_loss'],
              'seconds': b['seconds'], 'load_avg_1min': row['load_avg_1min']},
              key=lambda r: (r['cell'], r['seed'], r['lr'], r['tv'], r['steps']))
          print(f'tune {cell} lr {lr:g} tv {tv:g} seed {seed}: matching loss '
                f'{b["matching_loss"]:.3g} ({b["seconds"]:.0f} s)', flush=True)
          save()
  t['choice'], t['scores'] = choose(t)
  save()


def choose(t: Dict[str, Any]):
  """The tuned setting from the shadow runs' matching curves alone; and the mean curve per
  (lr, tv)."""
  steps = sorted(t['grid']['steps'])
  scores = []
  for lr in t['grid']['lr']:
    for tv in t['grid']['tv']:
      runs = [r for r in t['runs'] if r['lr'] == lr and r['tv'] == tv
              and r['seed'] in t['shadow_seeds'] and r['cell'] in t['cells']]
      if runs:
        scores.append({'lr': lr, 'tv': tv, 'curve': {
            str(s): sum(r['matching_curve'][str(s)] for r in runs) / len(runs) for s in steps}})
  # a diverged descent (nan) ranks last
  last = lambda s: s['curve'][str(steps[-1])] if math.isfinite(s['curve'][str(steps[-1])]) \
      else math.inf  # noqa: E731
  best = min(scores, key=last)
  target = TUNE_SLACK * best['curve'][str(steps[-1])]
  fewest = next(s for s in steps if best['curve'][str(s)] <= target)
  return {'lr': best['lr'], 'tv': best['tv'], 'steps': fewest}, scores


# -- table and law ------------------------------------------------------------------------
def setting_of(doc: Dict[str, Any]) -> Dict[str, Any]:
  if 'choice' not in doc.get('tuning', {}):
    raise app.UsageError('error: --parts: table or law before tune; accepted: run --parts=tune '
                         'first (the baseline\'s settings are chosen on shadow clients)')
  return doc['tuning']['choice']


def table(doc: Dict[str, Any], root: str, save) -> None:
  setting, seeds = setting_of(doc), common.ints(FLAGS.seeds)
  for cell in grid_cells():
    entry = next((e for e in doc['cells'] if e['cell'] == cell), None)
    if entry is None:
      entry = {'cell': cell, 'runs': []}
      doc['cells'].append(entry)
    for seed in seeds:
      if not FLAGS.redo and any(r['seed'] == seed for r in entry['runs']):
        continue
      c = cell_config(cell, seed, setting, FLAGS.rescue)
      row = run_client(c, os.path.join(root, 'table', cell.replace(':', '_'), str(seed)))
      say(cell, row)
      entry['rescue'] = list(c.attack.rescue)
      common.upsert(entry['runs'], row, key=lambda r: r['seed'])
      entry['runs'].sort(key=lambda r: r['seed'])
      save()


def law(doc: Dict[str, Any], root: str, save) -> None:
  setting, seeds = setting_of(doc), common.ints(FLAGS.seeds)
  for name in FLAGS.law_data:
    _, d, classes = DATA[name]
    for n in common.ints(FLAGS.law_n):
      for ratio in common.floats(FLAGS.ratios):
        cell = LAW_CELL.format(data=name, n=n)
        width = law_width(ratio, n, d, classes)
        point = next((p for p in doc['law'] if p['cell'] == cell and p['ratio'] == ratio), None)
        if point is None:
          point = {'cell': cell, 'ratio': ratio, 'width': width, 'runs': []}
          doc['law'].append(point)
        for seed in seeds:
          if not FLAGS.redo and any(r['seed'] == seed for r in point['runs']):
            continue
          c = cell_config(cell, seed, setting, FLAGS.rescue, width=width)
          row = run_client(c, os.path.join(root, 'law', cell.replace(':', '_'),
                                           f'ratio{ratio:g}', str(seed)))
          say(f'{cell} p_L/dn {ratio:g}', row)
          point['rescue'] = list(c.attack.rescue)
          common.upsert(point['runs'], row, key=lambda r: r['seed'])
          point['runs'].sort(key=lambda r: r['seed'])
          save()


# -- rendering ------------------------------------------------------------------------------
def median(xs):
  xs = sorted(x for x in xs if x is not None)
  return xs[len(xs) // 2] if xs else None


def mean(xs):
  xs = [x for x in xs if x is not None]
  return sum(xs) / len(xs) if xs else None


def cell_row(label: List[Any], runs: List[Dict[str, Any]], n: int) -> List[Any]:
  b = [r['baseline'] for r in runs]
  return label + [
      ', '.join(str(r['back']) for r in runs), f'{sum(r["back"] == r["n"] for r in runs)} of '
      f'{len(runs)}', f'{sum(r["certified"] for r in runs)} of {len(runs)}',
      sum(r['false_certificate'] for r in runs), median([r['loss_at_truth'] for r in runs]),
      mean([r['ssim_mean'] for r in runs]), median([r['seconds'] for r in runs]),
      ', '.join(str(x['back']) for x in b), f'{sum(x["back"] == n for x in b)} of {len(b)}',
      mean([x['ssim_mean'] for x in b]), median([x['seconds'] for x in b])]


CELL_HEADER = ['records back per seed', 'seeds all back', 'certified', 'false certificates',
               'projection loss at the truth (median)', 'SSIM (mean)', 's per client (median)',
               'gradient matching: back per seed', 'its seeds all back', 'its SSIM (mean)',
               'its s (median)']


def render(doc: Dict[str, Any]) -> str:
  blocks = []
  t = doc.get('tuning', {})
  if 'choice' in t:
    ch = t['choice']
    steps = sorted(t['grid']['steps'])
    blocks.append(
        f'Gradient matching\'s settings, chosen on shadow clients {", ".join(t["cells"])} seeds '
        f'{t["shadow_seeds"]}: {t["rule"]}. Chosen: Adam lr {ch["lr"]:g}, TV weight '
        f'{ch["tv"]:g}, {ch["steps"]} steps. Mean matching loss over the shadow clients:\n\n' +
        common.table(['lr', 'TV'] + [f'after {s} steps' for s in steps],
                     [[s['lr'], s['tv']] + [s['curve'][str(k)] for k in steps]
                      for s in t['scores']]))
  if doc['cells']:
    rows = []
    for cell in doc['cells']:
      name, n, epochs, batch, optimizer = cell['cell'].split(':')
      runs = cell['runs']
      rows.append(cell_row([name, int(n), int(epochs), int(batch), optimizer,
                            runs[0]['p_L_over_dn']], runs, int(n)))
    blocks.append(common.table(['data', 'n', 'E', 'B', 'optimiser', 'p_L/(dn)'] + CELL_HEADER,
                               rows))
  if doc.get('first_cells'):
    rows = []
    for cell in doc['first_cells']:
      name, n, epochs, batch, optimizer = cell['cell'].split(':')
      rows.append(cell_row([name, int(n), int(epochs), int(batch), optimizer,
                            cell['runs'][0]['p_L_over_dn']], cell['runs'], int(n)))
    blocks.append(
        'The first cells, measured before the baseline was tuned (the baseline at its defaults, '
        'Adam lr 0.05, 2000 steps, no TV; the time per client includes its descent; machine: '
        f'{doc.get("first_machine")}):\n\n' + common.table(
            ['data', 'n', 'E', 'B', 'optimiser', 'p_L/(dn)'] + CELL_HEADER, rows))
  if doc['law']:
    rows = [cell_row([p['cell'], p['runs'][0]['p_L_over_dn'], p['width']], p['runs'],
                     p['runs'][0]['n']) for p in doc['law'] if p['runs']]
    blocks.append('The law for updates (E = 1, B = n, SGD; the width exactly ratio d n / '
                  'classes):\n\n' + common.table(['client', 'p_L/(dn)', 'width'] + CELL_HEADER,
                                                  rows))
  blocks.append(
      'Time per client: the client\'s training and recon\'s attack, precision rung, certificate '
      'and report (the baseline\'s descent excluded), on the machine named above, shared with '
      'other jobs (load_avg_1min per run in federated.json). Gradient matching '
      '(recon/attack/gradient_matching.py) is given the labels, E, B, eta, the loss and the '
      'optimiser; the projection attack none of them. Its time is its descent alone. The '
      'projection loss at the truth is the squared share of the head\'s update outside the span '
      'of the true records\' head rows at W(0), a diagnostic the attack never sees (0 up to '
      'rounding for one GD step; Adam\'s first step is eta sign(g), outside that span).')
  return common.page(
      'Federated clients: one update inverted (scripts/federated.py)',
      f'Fresh seeds {doc["seeds"]}; recon\'s attack settings chosen on shadow seeds '
      f'{doc["shadow_seeds"]} ({doc["choice"]}). Machine: {doc["machine"]}. Command: '
      f'`{doc["command"]}`.', *blocks)


def plot(doc: Dict[str, Any], path: str) -> None:
  if not doc['law']:
    return
  plt = common.pyplot()
  fig, ax = plt.subplots(figsize=(5.5, 3.6))
  for cell in dict.fromkeys(p['cell'] for p in doc['law']):
    pts = sorted((p for p in doc['law'] if p['cell'] == cell and p['runs']),
                 key=lambda p: p['ratio'])
    xs = [p['runs'][0]['p_L_over_dn'] for p in pts]
    frac = lambda p, f: mean([f(r) / r['n'] for r in p['runs']])  # noqa: E731
    ax.plot(xs, [frac(p, lambda r: r['back']) for p in pts], 'o-', label=f'recon, {cell}')
    ax.plot(xs, [mean([r['back'] == r['n'] for r in p['runs']]) for p in pts], 's:',
            label='recon: seeds with every record back')
    ax.plot(xs, [frac(p, lambda r: r['baseline']['back']) for p in pts], '^--',
            label='gradient matching (knows labels, E, B, eta)')
  ax.set_xscale('log')
  ax.set_xlabel('p_L / (d n)')
  ax.set_ylabel('share of records back (mean over seeds)')
  ax.set_ylim(-0.03, 1.03)
  ax.set_title('A client\'s update (E = 1, B = n, SGD)', fontsize=10)
  ax.legend(fontsize=7)
  common.savefig(fig, path)


def main(argv) -> None:
  del argv
  out = FLAGS.out
  doc = common.load(out + '.json', None) or {}
  if 'tuning' not in doc and 'cells' in doc:  # cells from before the baseline was tuned: kept
    doc = {'first_cells': [dict(c, baseline_setting=FIRST_SETTING) for c in doc['cells']],
           'first_machine': doc.get('machine')}
  doc.setdefault('cells', [])
  doc.setdefault('law', [])
  doc.update(seeds=common.ints(FLAGS.seeds), shadow_seeds=[1000, 1001, 1002],
             choice="features at W(0); the certificate's target the head update's dominant "
                    "direction; the float64 precision rung (configs/federated.py)")
  doc.setdefault('command', common.command())

  def save():
    loads = [r['load_avg_1min'] for c in doc['cells'] + doc['law'] for r in c['runs']]
    loads += [r['load_avg_1min'] for r in doc.get('tuning', {}).get('runs', [])]
    doc['machine'] = machine.describe() + (
        f', shared with other jobs (1-min load average {min(loads):.1f} to {max(loads):.1f} '
        'over the runs)' if loads else '')
    common.save(out, doc, render(doc))
    plot(doc, out + '.png')

  if not FLAGS.render_only:
    doc['command'] = common.command()
    root = FLAGS.work_dir or tempfile.mkdtemp(prefix='federated-')
    try:
      for part, fn in (('tune', tune), ('table', table), ('law', law)):
        if part in FLAGS.parts:
          fn(doc, root, save)
    finally:
      if not FLAGS.work_dir:
        shutil.rmtree(root, ignore_errors=True)
  save()


if __name__ == '__main__':
  define_flags()
  app.run(main)
