"""Render the docs' tables of measured numbers from results/*.json (issue #68).

    python -m scripts.render_docs            # rewrite every rendered block in README.md and docs/
    python -m scripts.render_docs --check    # exit 1 naming each stale block, change nothing

A rendered block in a page is

    <!-- render: NAME -->
    ... (written by this script, never by hand)
    <!-- /render -->

and NAME is a function of BLOCKS below: it reads results/*.json (nothing else, no recon import)
and returns markdown. A re-run of a result script followed by this command updates the pages;
tests/test_docs_render.py fails while a block is stale. Prose outside the blocks carries no
measured number (tests/test_docs_render.py says what counts as one).
"""
import argparse
import json
import os
import re
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = re.compile(r'(<!-- render: (\w+) -->\n)(.*?)(<!-- /render -->)', re.S)
BLOCKS = {}


def block(fn):
  BLOCKS[fn.__name__] = fn
  return fn


def load(name, root=None):
  with open(os.path.join(root or ROOT, 'results', name), encoding='utf-8') as f:
    return json.load(f)


def fmt(x, digits=2):
  """A measured number as the tables print it: 3 significant figures, sci below 1e-3."""
  if x is None:
    return '–'
  if isinstance(x, bool):
    return 'yes' if x else 'no'
  if isinstance(x, int):
    return f'{x:,}'.replace(',', ' ') if abs(x) >= 10000 else str(x)
  if isinstance(x, str):
    return x
  if x != x:
    return 'nan'
  if x == 0:
    return '0'
  if abs(x) < 1e-3 or abs(x) >= 1e5:
    return f'{x:.{digits - 1}e}'
  if abs(x) >= 100:
    return f'{x:.0f}'
  return f'{x:.{digits}g}' if abs(x) < 1 else f'{x:.{digits + 1}g}'


def ratio(x):
  return f'{x:g}'


def table(header, rows):
  out = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
  out += ['| ' + ' | '.join(fmt(c) if not isinstance(c, str) else c for c in r) + ' |'
          for r in rows]
  return '\n'.join(out)


def mean(xs):
  xs = [x for x in xs if x is not None]
  return statistics.fmean(xs) if xs else None


def machine(m):
  return f'\n\nMachine: {m}.' if m else ''


# -- the blocks ---------------------------------------------------------------------------
# README.md: the jobs, each one run as a user runs it (scripts/job_times.py)
JOBS = {  # config: (what it does, where the depth is); the time comes from results/job_times.json
    'rf_synthetic': ('the default: random features on synthetic sphere data, n = 10, d = 10, '
                     'p = 10·d·n, relu+tanh', '[random features](docs/random_features.md)'),
    'rf_phase_transition': ('a sweep over widths, seeds and two activations: the phase transition '
                            'at p ≈ dn', '[random features](docs/random_features.md#the-phase-transition)'),
    'rf_digits': ("random features on scikit-learn's 8×8 digits (no download), with an image grid",
                  '[data](docs/data.md#showcase-digits)'),
    'rf_faces': ("random features on scikit-image's LFW crops (5×5, no download)",
                 '[data](docs/data.md#showcase-faces-and-photo-patches)'),
    'rf_cifar': ('the papers\' CIFAR-10 size (n = 100, d = 3072, p = 10·dn) on bundled photo patches '
                 'or CIFAR-10, memory-lean; a GPU job (on CPU shrink it: `--config.data.image_size=4 '
                 '--config.data.n=6`: {s})', '[data](docs/data.md#showcase-faces-and-photo-patches)'),
    'rf_logistic': ('random features trained by GD on the logistic loss', '[networks](docs/networks.md)'),
    'two_layer': ('a two-layer net trained by full-batch GD, attacked through its last layer',
                  '[networks](docs/networks.md)'),
    'resnet': ('a small ResNet (no batch norm), attacked through its head', '[networks](docs/networks.md)'),
    'vit': ('a small ViT, attacked through its head', '[networks](docs/networks.md)'),
    'rf_subspace': ('random features on data in a known subspace, searched inside it',
                    '[subspace](docs/subspace.md)'),
    'two_layer_subspace': ('a two-layer net; the data subspace estimated from ΔW1, searched inside it',
                           '[subspace](docs/subspace.md)'),
    'kkt_synthetic': ('the KKT attack on a cubic two-layer net trained toward max margin',
                      '[KKT](docs/kkt.md)'),
    'kkt_identifiability': ('exact recovery of a planted cubic KKT system (float64)',
                            '[KKT](docs/kkt.md#identifiability)'),
    'audit': ('attack a model you trained (Flax params or a PyTorch state_dict), scored against your '
              'data file: records.json and report.html', '[audit](docs/audit.md#bring-your-own-model)'),
    'leak_width': ("how wide before it leaks: your model family's threshold p* fitted on small "
                   'shadow problems, your width\'s margin p / p*',
                   '[audit](docs/audit.md#how-wide-before-it-leaks)'),
}


@block
def jobs(root=None):
  recs = {r['job']: r for r in load('job_times.json', root)['records']}
  rows = []
  for job, (what, docs) in JOBS.items():
    r = recs.get(job)
    secs = f'{round(r["seconds"])} s' if r and r['exit_status'] == 0 else 'not measured'
    if '{s}' in what:
      rows.append([f'`{job}.py`', what.format(s=secs), 'GPU', docs])
    else:
      rows.append([f'`{job}.py`', what, secs, docs])
  return table(['config', 'what it does', 'time', 'docs'], rows)


# docs/random_features.md
def _fresh(r):
  seeds = r['per_seed']['seed']
  return min(seeds) >= 100


def _pivot(recs, row_of, cols, value):
  cells = {}
  for r in sorted(recs, key=lambda r: (r['activation'], r['n'], r['d'], r['k'] or 0)):
    cells.setdefault(row_of(r), {})[r['p_over_dn'] if 'p_over_dn' in r else r['p_over_kn']] = value(r)
  return [[name] + [fmt(cells[name].get(c)) if c in cells[name] else '–' for c in cols]
          for name in cells]


@block
def recovery_law(root=None):
  recs = [r for r in load('recovery_law.json', root)['records']
          if r['method'] == 'default' and r['search'] == 'full' and r['n'] == 8 and r['k'] is None
          and _fresh(r)]
  cols = [0.25, 0.5, 1, 2, 4, 8, 10, 16]
  rows = _pivot(recs, lambda r: f'{r["activation"]}, d = {r["d"]}', cols,
                lambda r: r['recovery_rate'])
  allr = [r for r in load('recovery_law.json', root)['records'] if r['method'] == 'default']
  runs = sum(r['seeds'] for r in allr)
  cert = sum(round(r['certified_rate'] * r['seeds']) for r in allr)
  false = sum(r['false_certified'] for r in allr)
  return (table(['p / dn'] + [ratio(c) for c in cols], rows) +
          f'\n\nShare of fresh seeds (100–119) with every row recovered, n = 8, the default attack. '
          f'Over every point of the default method in results/recovery_law.json: {runs} runs, '
          f'{cert} certified, {false} false certificates (certified with a row missed).')


@block
def law_in_n(root=None):
  recs = [r for r in load('recovery_law.json', root)['records']
          if r['method'] == 'default' and r['search'] == 'full' and r['d'] == 16 and r['k'] is None
          and _fresh(r)]
  cols = [0.5, 1, 1.25, 1.5, 2, 3, 4, 10]
  rows = _pivot(recs, lambda r: f'{r["activation"]}, n = {r["n"]} ({r["seeds"]} seed'
                f'{"s" if r["seeds"] > 1 else ""})', cols,
                lambda r: r['recovery_rate'])
  return table(['p / dn'] + [ratio(c) for c in cols], rows)


@block
def methods(root=None):
  recs = [r for r in load('recovery_law.json', root)['records']
          if r['method'] != 'default' and r['search'] == 'full' and r['n'] == 8]
  cols = [1, 2, 4, 8, 10, 16]
  rows = []
  for method in ('previous', 'paper', 'paper_lr20_exact'):
    for act in ('relu', 'relu_tanh'):
      cells = {}
      for r in recs:
        if r['method'] == method and r['activation'] == act:
          cells.setdefault(r['p_over_dn'], []).append(r['recovery_rate'])
      if cells:
        rows.append([f'{method}, {act}'] + [
            f'{fmt(min(cells[c]))}–{fmt(max(cells[c]))}' if c in cells else '–' for c in cols])
  return table(['method, activation (range over d)'] + [ratio(c) for c in cols], rows)


@block
def law_table(root=None):
  data = load('law_table.json', root)
  rows = []
  for r in data['rows']:
    ms = lambda k: f'{fmt(r[k]["mean"])} ± {fmt(r[k]["std"])}'
    rows.append([r['activation'], r['regime'], r['p'], fmt(r['train_mse']['mean']),
                 ms('recon_error'), ms('dist_abs'), ms('frac_recovered')])
  s = data['setup']
  return (table(['activation', 'regime', 'p', 'train MSE', 'recon_error', 'dist_abs',
                 'frac_recovered'], rows) +
          f'\n\nMean ± SD over seeds {s["seeds"][0]}–{s["seeds"][-1]}; n = {s["n"]}, d = {s["d"]}, '
          f'{s["optimizer"]} lr {s["lr"]:g}.' + machine(s.get('machine')))


@block
def n_candidates(root=None):
  data = load('n_candidates.json', root)
  rows = [[r['n_candidates'], fmt(r['frac_recovered']['mean']), fmt(r['n_duplicates']['mean']),
           fmt(r['n_uncovered_samples']['mean']), fmt(r['projection_loss']['median'])]
          for r in data['rows']]
  return table(['n̂', 'frac_recovered', 'duplicates', 'uncovered samples', 'median loss'], rows)


@block
def certificate_probes(root=None):
  d = load('certificate_probes.json', root)
  rows = [[name, k['runs'], k['certified'], k['recovered'], k['false_certified'], k['crashed']]
          for name, k in (('(a) attack-produced sets, m = n', d['kind_a']),
                          ('  of which relu / quadratic off the sphere or on images',
                           d['kind_a_homogeneous_off_sphere_or_images']),
                          ('(b) structural checks', d['kind_b']))]
  return table(['probe', 'runs', 'certified', 'recovered', 'false certificates', 'crashed'],
               rows) + machine(d.get('machine'))


@block
def certificate_scale(root=None):
  d = load('certificate_scale.json', root)
  rows = [[f'({r["n"]}, {r["d"]}, {r["p"]})', r['features'],
           r['method_used'] + (' (auto)' if r['method'] == 'auto' else ''), fmt(r['seconds']),
           fmt(r['peak_rss_mb']), fmt(r['certified']), fmt(r['pin_radius']),
           fmt(r['pin_radius_at_attack_tol']), f'{r["rows_pinned"]} of {r["n"]}']
          for r in d['rows']]
  return table(['(n, d, p)', 'features', 'method', 'wall s', 'peak MB', 'certified',
                'pin radius', 'at attack tol', 'rows pinned'], rows) + machine(d.get('machine'))


@block
def truth_certificate(root=None):
  d = load('truth_certificate.json', root)
  rows = [[f'{r["data"]} ({r["n"]}, {r["d"]}, {r["p"]})', r['seed'], r['theta_dtype'],
           fmt(r['loss64']), fmt(r['rounding_floor']), fmt(r['rounding_floor_worst']),
           fmt(r['attack']['pin_radius']), fmt(r['polished']['pin_radius']), fmt(r['certifiable'])]
          for r in d['records']]
  return table(['victim', 'seed', 'θ* dtype', 'loss at the truth L*', 'floor F', 'worst case',
                'pin radius at attack tol', 'at the rung\'s level', 'certifiable'], rows) + \
      machine(d.get('machine'))


@block
def bench_sweep(root=None):
  d = load('bench_sweep.json', root)
  rows = [[r['grid'], f'{r["k"]} points, widths {sorted(set(r["widths"]))}',
           fmt(r['steady']['batched_seconds']), fmt(r['steady']['single_mean_seconds']),
           fmt(r['steady']['ratio_per_point']), fmt(r['end_to_end']['batched_seconds']),
           fmt(r['end_to_end']['k_singles_seconds'])]
          for r in d['rows']]
  return table(['grid', 'points', 'steady s, batched', 'steady s, one run', 'per-point ratio',
                'end to end s, sweep', 'K single runs s'], rows) + machine(d.get('machine'))

# docs/kkt.md
@block
def kkt_identifiability(root=None):
  rows = [[r['activation'], r['victim'], r['n_candidates'], r['init'], fmt(r['recon_error']),
           f'{r["n_recovered"]} of {r["n"]}', fmt(r['final_loss']),
           f'{r["neuron_gram_rank_span_x"]} / {r["neuron_gram_rank"]} of {r["neuron_gram_dim"]}']
          for r in load('kkt_identifiability.json', root)]
  return table(['activation', 'victim', 'n̂', 'init', 'recon_error', 'recovered', 'final loss',
                'neuron-Gram rank (span x / all)'], rows)


@block
def kkt_splitting(root=None):
  groups = {}
  for r in load('kkt_splitting.json', root):
    groups.setdefault((r['objective'], r['split']), []).append(r)
  rows = [[obj, split, len(rs), fmt(mean(r['recon_error'] for r in rs)),
           fmt(mean(r['n_recovered'] for r in rs)), fmt(mean(r['final_loss'] for r in rs)),
           fmt(mean(r['n_splits'] for r in rs)), fmt(mean(r['seconds'] for r in rs))]
          for (obj, split), rs in groups.items()]
  return table(['objective', 'split', 'seeds', 'mean recon_error', 'mean recovered',
                'mean final loss', 'mean splits', 'mean s'], rows)


@block
def kkt_trained(root=None):
  d = load('kkt_trained.json', root)
  groups = {}
  for r in d['rows']:
    groups.setdefault(r['method'], []).append(r)
  rows = []
  for method, rs in groups.items():
    v = [r['frac_ssim_0_5'] for r in rs]
    sd = statistics.stdev(v) if len(v) > 1 else 0.0
    rows.append([method, ', '.join(str(r['seed']) for r in rs), f'{fmt(mean(v))} ± {fmt(sd)}',
                 fmt(mean(r['ssim_median'] for r in rs)),
                 fmt(mean(r['n_distinct_nearest'] for r in rs))])
  return table(['method', 'seeds', 'share at SSIM ≥ 0.5 (mean ± sample SD)', 'median SSIM',
                'distinct nearest'], rows)

# docs/networks.md
@block
def network_law(root=None):
  d = load('network_law.json', root)
  cols = [0.25, 0.5, 1, 3, 10, 16]
  near = lambda x: min(cols, key=lambda c: abs(c - x) / c)
  cells = {}
  for r in d['records']:
    cells.setdefault((r['victim'], r['dataset']), {}).setdefault(near(r['p_L_over_dn']), []).append(
        r['recon_error'])
  rows = [[f'{v}, {ds}'] + [fmt(mean(c[x])) if x in c else '–' for x in cols]
          for (v, ds), c in cells.items()]
  return (table(['victim, data (mean recon_error)'] + [f'{ratio(c)}·dn' for c in cols], rows) +
          f'\n\nMean recon_error over the reported seeds {", ".join(map(str, d["seeds"]["reported"]))} '
          f'(n = 4; columns: p_L / dn).')


@block
def two_layer_threshold(root=None):
  d = load('two_layer_threshold.json', root)
  by = {}
  for r in d['runs']:
    by.setdefault(r['p_L_over_dn'], []).append(r)
  rows = [[fmt(round(x, 2)), ', '.join(fmt(r['recon_error']) for r in rs),
           ', '.join(fmt(r['frac_recovered']) for r in rs),
           ', '.join(fmt(r['projection_loss_at_truth']) for r in rs)]
          for x, rs in sorted(by.items())]
  return table(['p_L / dn', 'recon_error (per seed)', 'frac_recovered', 'loss at the true data'],
               rows)


@block
def network_showcase(root=None):
  d = load('network_showcase.json', root)
  rows = [[name, r['model'], fmt(r['p_L_over_dn']), fmt(r['n_params_total']), r['train_loss_name'],
           r['train_steps'], fmt(r['projection_loss_at_truth']), fmt(r['projection_loss']),
           fmt(r['recon_error']), fmt(r['frac_recovered']), r['jacobian_at'],
           fmt(r['wall_seconds'])]
          for name, r in d['runs'].items()]
  return table(['config', 'model', 'p_L / dn', 'params', 'train loss', 'train steps',
                'loss at truth', 'loss reached', 'recon_error', 'frac_recovered', 'features',
                'wall s'], rows)

# docs/performance.md
@block
def bench_steps(root=None):
  d = load('bench.json', root)
  rows = [[f'({r["n"]}, {r["d"]}, {r["p"]})', fmt(r['dense_step_s'] * 1e3),
           fmt(r['dense_over_roofline']), fmt(r['lean_stored_over_dense']),
           fmt(r['lean_stored_bm_over_dense']), fmt(r['regenerate_v_s'] * 1e3),
           fmt(r['regenerate_v_bm_s'] * 1e3)]
          for r in d['step']]
  return table(['(n, d, p)', 'dense step ms', 'dense / roofline', 'lean (stored) / dense',
                'lean (stored, box-muller) / dense', 'regenerate V ms (threefry)',
                'regenerate V ms (box-muller)'], rows) + machine(d.get('machine'))


@block
def bench_memory(root=None):
  m = load('bench.json', root)['memory_at_scale']
  rows = [[mode, fmt(m[key]['argument_mb']), fmt(m[key]['temp_mb']), fmt(m[key]['total_mb'])]
          for mode, key in (('dense (V stored)', 'dense_memory'), ('lean, two_pass', 'lean_memory'),
                            ('lean, stored Z', 'lean_stored_memory'))]
  return (f'One compiled step at (n, d, p) = ({m["n"]}, {m["d"]}, {m["p"]}), compiled only:\n\n' +
          table(['features', 'arguments MB', 'temporaries MB', 'total MB'], rows))


@block
def bench_pipeline(root=None):
  d = load('bench.json', root)['ttr_pipeline']
  groups = {}
  for r in d['rows']:
    groups.setdefault((r['method'], r['n'], r['d'], r['p'], r['activation']), []).append(r)
  rows = []
  for (method, n, dd, p, act), rs in groups.items():
    rows.append([method, f'({n}, {dd}, {p})', act, f'{sum(r["all_recovered"] for r in rs)} of {len(rs)}',
                 f'{sum(bool(r["certified"]) for r in rs)} of {len(rs)}',
                 fmt(statistics.median(r['wall_s'] for r in rs)),
                 fmt(statistics.median(r['steps'] for r in rs))])
  return (table(['method', '(n, d, p)', 'activation', 'every row back', 'certified',
                 'median wall s', 'median steps'], rows) +
          f'\n\nSeeds {", ".join(map(str, d["seeds"]))}, the CLI run whole (start-up, fit, attack, '
          f'rescue, certificate).' + machine(d.get('machine')))

# docs/reliability.md
@block
def soak(root=None):
  rows = []
  for name in ('soak.json', 'soak_short.json'):
    s = load(name, root)
    kinds = ', '.join(f'{k} {v.get("injected", v.get("count", ""))}'.strip()
                      for k, v in s['by_kind'].items())
    rows.append([f'[{name}](../results/{name})', s['faults_injected'], s['trials'],
                 s['faults_survived'], s['runs_lost'], len(s['half_made_or_wrong']),
                 fmt(s['seconds'] / 60)])
  o = load('soak_ownership.json', root)
  return (table(['record', 'faults', 'trials', 'faults survived', 'runs lost', 'half-made or wrong',
                 'minutes'], rows) +
          f'\n\n[soak_ownership.json](../results/soak_ownership.json): {o["faults"]} faults in '
          f'{o["workdirs"]} workdirs, {o["user_files_checked"]} user-file checks, '
          f'{len(o["user_files_lost"])} user files lost, {len(o["wrong"])} wrong states.')

# -- rendering ----------------------------------------------------------------------------
def pages(root=None):
  root = root or ROOT
  out = [os.path.join(root, 'README.md')]
  docs = os.path.join(root, 'docs')
  out += sorted(os.path.join(docs, f) for f in os.listdir(docs) if f.endswith('.md'))
  return out


def render_text(text, root=None, where=''):
  """(new text, [names of blocks whose content changed]); an unknown name raises KeyError."""
  stale = []

  def one(m):
    name = m.group(2)
    if name not in BLOCKS:
      raise KeyError(f'{where}: unknown render block {name!r} (known: {", ".join(sorted(BLOCKS))})')
    body = BLOCKS[name](root).rstrip('\n') + '\n'
    if body != m.group(3):
      stale.append(name)
    return m.group(1) + body + m.group(4)

  return BLOCK.sub(one, text), stale


def render(root=None, check=False):
  """Render every page under root; returns ['page: block', ...] that were (or are) stale."""
  root = root or ROOT
  stale = []
  for path in pages(root):
    with open(path, encoding='utf-8') as f:
      text = f.read()
    rel = os.path.relpath(path, root)
    new, names = render_text(text, root, rel)
    stale += [f'{rel}: {n}' for n in names]
    if names and not check:
      with open(path, 'w', encoding='utf-8') as f:
        f.write(new)
  return stale


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--check', action='store_true',
                      help='change nothing; exit 1 naming each stale block')
  parser.add_argument('--root', default=ROOT, help='the repository root (default: this checkout)')
  args = parser.parse_args(argv)
  try:
    stale = render(args.root, check=args.check)
  except (KeyError, OSError, ValueError) as e:
    print(f'error: {e}', file=sys.stderr)
    return 2
  if args.check and stale:
    for s in stale:
      print(f'stale: {s} (run python -m scripts.render_docs)', file=sys.stderr)
    return 1
  for s in stale:
    print(f'rendered: {s}')
  return 0


if __name__ == '__main__':
  sys.exit(main())
