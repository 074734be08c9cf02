"""Render the docs' tables of measured numbers from results/*.json (issue #68).

    python -m scripts.render_docs            # rewrite every rendered block in README.md and docs/
    python -m scripts.render_docs --check    # exit 1 naming each stale block, change nothing

A rendered block in a page is

    <!-- render: NAME -->
    ... (written by this script, never by hand)
    <!-- /render -->

and NAME is a function of BLOCKS below: it reads results/*.json (nothing else, no recon import)
and returns markdown. Most blocks are one table row per record, declared in TABLES; the others
pivot or aggregate. A re-run of a result script followed by this command updates the pages;
tests/test_docs_render.py fails while a block is stale. Prose outside the blocks carries no
measured number (tests/test_docs_render.py says what counts as one).
"""
import argparse
import json
import math
import os
import re
import statistics
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = re.compile(r'(<!-- render: (\w+) -->\n)(.*?)(<!-- /render -->)', re.S)
BLOCKS = {}
SUP = str.maketrans('0123456789-', '⁰¹²³⁴⁵⁶⁷⁸⁹⁻')


def block(fn):
  BLOCKS[fn.__name__] = fn
  return fn


def load(name, root=None):
  with open(os.path.join(root or ROOT, 'results', name), encoding='utf-8') as f:
    return json.load(f)


def fmt(x, digits=2):
  """A measured number as the tables print it: 3 significant figures, sci below 1e-3."""
  if x is None or isinstance(x, (bool, str)):
    return {None: '–', True: 'yes', False: 'no'}[x] if not isinstance(x, str) else x
  if isinstance(x, int):
    return f'{x:,}'.replace(',', ' ') if abs(x) >= 10000 else str(x)
  if x != x or x == 0:
    return 'nan' if x != x else '0'
  if abs(x) < 1e-3 or abs(x) >= 1e5:
    return f'{x:.{digits - 1}e}'
  if abs(x) >= 100:
    return f'{x:.0f}'
  return f'{x:.{digits}g}' if abs(x) < 1 else f'{x:.{digits + 1}g}'


def table(header, rows):
  out = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
  return '\n'.join(out + ['| ' + ' | '.join(map(fmt, r)) + ' |' for r in rows])


def get(r, key):
  """r's field `key`: a function of r, or a dotted path ('steady.batched_seconds')."""
  if callable(key):
    return key(r)
  for k in key.split('.'):
    r = r[k]
  return r


def per_record(recs, spec):
  """A table of one row per record; spec: [(header, key)], a bare key being its own header."""
  spec = [(c, c) if isinstance(c, str) else c for c in spec]
  return table([h for h, _ in spec], [[get(r, k) for _, k in spec] for r in recs])


def groups(recs, key):
  out = {}
  for r in recs:
    out.setdefault(key(r), []).append(r)
  return out


def pivot(recs, row, col, cell, cols, corner, col_name=lambda c: f'{c:g}'):
  """A row per row(r) (in order of first appearance), a column per c of cols: cell(records)."""
  g = groups(recs, lambda r: (row(r), col(r)))
  return table([corner] + [col_name(c) for c in cols],
               [[n] + [cell(g[n, c]) if (n, c) in g else '–' for c in cols]
                for n in dict.fromkeys(row(r) for r in recs)])


def mean(xs):
  xs = [x for x in xs if x is not None]
  return statistics.fmean(xs) if xs else None


# pylint: disable=unnecessary-lambda-assignment
machine = lambda m: f'\n\nMachine: {m}.' if m else ''
MACHINE = lambda d: machine(d.get('machine'))
joined = lambda xs, f=fmt: ', '.join(f(x) for x in xs)
size = lambda r: f'({r["n"]}, {r["d"]}, {r["p"]})'
of = lambda k, total: lambda r: f'{r[k]} of {r[total]}'
scaled = lambda k, factor: lambda r: r[k] * factor
mean_sd = lambda k: lambda r: f'{fmt(r[k]["mean"])} ± {fmt(r[k]["std"])}'
named = lambda d: [dict(r, name=k) for k, r in d.items()]
# pylint: enable=unnecessary-lambda-assignment


# -- README.md: the jobs, each one run as a user runs it (scripts/job_times.py) -------------
JOBS = {  # config: (what it does, its page[#anchor] in docs/); the time: results/job_times.json
    'rf_synthetic': ('the default: random features on synthetic sphere data, n = 10, d = 10, '
                     'p = 10·d·n, relu+tanh', 'random_features'),
    'rf_phase_transition': ('a sweep over widths, seeds and two activations: the phase '
                            'transition at p ≈ dn', 'random_features#the-phase-transition'),
    'rf_digits': ("random features on scikit-learn's 8×8 digits (no download), with an image "
                  'grid', 'data#showcase-digits'),
    'rf_faces': ("random features on scikit-image's LFW crops (5×5, no download)",
                 'data#showcase-faces-and-photo-patches'),
    'rf_cifar': ("the papers' CIFAR-10 size (n = 100, d = 3072, p = 10·dn) on bundled photo "
                 'patches or CIFAR-10, memory-lean; a GPU job (on CPU shrink it: '
                 '`--config.data.image_size=4 --config.data.n=6`: {s})',
                 'data#showcase-faces-and-photo-patches'),
    'rf_logistic': ('random features trained by GD on the logistic loss', 'networks'),
    'two_layer': ('a two-layer net trained by full-batch GD, attacked through its last layer',
                  'networks'),
    'resnet': ('a small ResNet (no batch norm), attacked through its head', 'networks'),
    'vit': ('a small ViT, attacked through its head', 'networks'),
    'rf_subspace': ('random features on data in a known subspace, searched inside it',
                    'subspace'),
    'two_layer_subspace': ('a two-layer net; the data subspace estimated from ΔW1, searched '
                           'inside it', 'subspace'),
    'kkt_synthetic': ('the KKT attack on a cubic two-layer net trained toward max margin', 'kkt'),
    'kkt_identifiability': ('exact recovery of a planted cubic KKT system (float64)',
                            'kkt#identifiability'),
    'audit': ('attack a model you trained (Flax params or a PyTorch state_dict), scored against '
              'your data file: records.json and report.html', 'audit#bring-your-own-model'),
    'leak_width': ("how wide before it leaks: your model family's threshold p* fitted on small "
                   "shadow problems, your width's margin p / p*", 'audit#how-wide-before-it-leaks'),
}
PAGE_NAMES = {'random_features': 'random features', 'kkt': 'KKT'}


@block
def jobs(root=None):
  recs, rows = {r['job']: r for r in load('job_times.json', root)['records']}, []
  for job, (what, page) in JOBS.items():
    r, name = recs.get(job), page.split('#')[0]
    secs = f'{round(r["seconds"])} s' if r and r['exit_status'] == 0 else 'not measured'
    link = f'[{PAGE_NAMES.get(name, name)}](docs/{name}.md{page[len(name):]})'
    rows.append([f'`{job}.py`', what.format(s=secs), 'GPU' if '{s}' in what else secs, link])
  return table(['config', 'what it does', 'time', 'docs'], rows)


# -- one row per record: name -> (results file, where its records are (a dotted path, a
# function of the file, or '' for the file itself), the columns, a function of the file
# giving the text after the table, or None)
TABLES = {
    # docs/random_features.md
    'n_candidates': ('n_candidates.json', 'rows', [
        ('n̂', 'n_candidates'), ('frac_recovered', 'frac_recovered.mean'),
        ('duplicates', 'n_duplicates.mean'), ('uncovered samples', 'n_uncovered_samples.mean'),
        ('median loss', 'projection_loss.median')], None),
    'law_table': ('law_table.json', 'rows', [
        'activation', 'regime', 'p', ('train MSE', 'train_mse.mean'),
        ('recon_error', mean_sd('recon_error')), ('dist_abs', mean_sd('dist_abs')),
        ('frac_recovered', mean_sd('frac_recovered'))], lambda d: (lambda s: (
            f'\n\nMean ± SD over seeds {s["seeds"][0]}–{s["seeds"][-1]}; n = {s["n"]}, '
            f'd = {s["d"]}, {s["optimizer"]} lr {s["lr"]:g}.' + MACHINE(s)))(d['setup'])),
    'certificate_probes': ('certificate_probes.json', lambda d: [dict(d[k], name=name) for name, k in (
        ('(a) attack-produced sets, m = n', 'kind_a'),
        ('  of which relu / quadratic off the sphere or on images',
         'kind_a_homogeneous_off_sphere_or_images'),
        ('(b) structural checks', 'kind_b'))], [
            ('probe', 'name'), 'runs', 'certified', 'recovered',
            ('false certificates', 'false_certified'), 'crashed'], MACHINE),
    'certificate_scale': ('certificate_scale.json', 'rows', [
        ('(n, d, p)', size), 'features',
        ('method', lambda r: r['method_used'] + (' (auto)' if r['method'] == 'auto' else '')),
        ('wall s', 'seconds'), ('peak MB', 'peak_rss_mb'), 'certified',
        ('pin radius', 'pin_radius'), ('at attack tol', 'pin_radius_at_attack_tol'),
        ('rows pinned', of('rows_pinned', 'n'))], MACHINE),
    'truth_certificate': ('truth_certificate.json', 'records', [
        ('victim', lambda r: f'{r["data"]} {size(r)}'), 'seed', ('θ* dtype', 'theta_dtype'),
        ('loss at the truth L*', 'loss64'), ('floor F', 'rounding_floor'),
        ('worst case', 'rounding_floor_worst'), ('pin radius at attack tol', 'attack.pin_radius'),
        ('at the rung\'s level', 'polished.pin_radius'), 'certifiable'], MACHINE),
    'bench_sweep': ('bench_sweep.json', 'rows', [
        'grid', ('points', lambda r: f'{r["k"]} points, widths {sorted(set(r["widths"]))}'),
        ('steady s, batched', 'steady.batched_seconds'),
        ('steady s, one run', 'steady.single_mean_seconds'),
        ('per-point ratio', 'steady.ratio_per_point'),
        ('end to end s, sweep', 'end_to_end.batched_seconds'),
        ('K single runs s', 'end_to_end.k_singles_seconds')], MACHINE),
    # docs/kkt.md
    'kkt_identifiability': ('kkt_identifiability.json', '', [
        'activation', 'victim', ('n̂', 'n_candidates'), 'init', 'recon_error',
        ('recovered', of('n_recovered', 'n')), ('final loss', 'final_loss'),
        ('neuron-Gram rank (span x / all)', lambda r: f'{r["neuron_gram_rank_span_x"]} / '
         f'{r["neuron_gram_rank"]} of {r["neuron_gram_dim"]}')], None),
    # docs/networks.md
    'network_showcase': ('network_showcase.json', lambda d: named(d['runs']), [
        ('config', 'name'), 'model', ('p_L / dn', 'p_L_over_dn'), ('params', 'n_params_total'),
        ('train loss', 'train_loss_name'), ('train steps', 'train_steps'),
        ('loss at truth', 'projection_loss_at_truth'), ('loss reached', 'projection_loss'),
        'recon_error', 'frac_recovered', ('features', 'jacobian_at'), ('wall s', 'wall_seconds')],
                         None),
    # docs/performance.md
    'bench_steps': ('bench.json', 'step', [
        ('(n, d, p)', size), ('dense step ms', scaled('dense_step_s', 1e3)),
        ('dense / roofline', 'dense_over_roofline'),
        ('lean (stored) / dense', 'lean_stored_over_dense'),
        ('lean (stored, box-muller) / dense', 'lean_stored_bm_over_dense'),
        ('regenerate V ms (threefry)', scaled('regenerate_v_s', 1e3)),
        ('regenerate V ms (box-muller)', scaled('regenerate_v_bm_s', 1e3))], MACHINE),
    # docs/subspace.md
    'subspace_digits': ('subspace_digits.json', lambda d: named(d['runs']), [
        ('search', lambda r: 'full space' if r['name'] == 'none' else 'span of ΔW1'),
        ('dimension', 'search_dim'), 'recon_error', 'frac_recovered'], None),
    # docs/data.md
    'rf_digits': ('rf_digits/metrics.json', 'seeds', [
        'seed', 'frac_recovered', 'frac_recovered_ssim',
        ('SSIM mean', lambda r: fmt(r['ssim_mean'], 3)),
        ('SSIM min', lambda r: fmt(r['ssim_min'], 3)), 'recon_error', 'steps', 'status',
        ('wall s', 'wall_seconds')], None),
    # docs/colab.md
    'paper_scale_gpu': ('paper_scale_gpu.json', 'records', [
        ('p / dn', 'p_over_dn'), ('precision', 'matmul_precision'), ('train MSE', 'train_mse'),
        ('steps (status)', lambda r: f'{r["steps"]} ({r["status"]})'),
        ('final loss', 'final_loss'), 'recon_error', ('wall s', 'wall_seconds')], None),
}


def _one_per_record(file, where, spec, after):
  def render(root=None):
    d = load(file, root)
    return per_record(get(d, where) if where else d, spec) + (after(d) if after else '')
  return render


BLOCKS.update({name: _one_per_record(*args) for name, args in TABLES.items()})


# -- docs/random_features.md ----------------------------------------------------------------
def _law(root, keep, cols, row_of):
  recs = [r for r in load('recovery_law.json', root)['records']
          if r['method'] == 'default' and r['search'] == 'full' and r['k'] is None and
          min(r['per_seed']['seed']) >= 100 and keep(r)]
  return pivot(sorted(recs, key=lambda r: (r['activation'], r['n'], r['d'], r['k'] or 0)),
               row_of, lambda r: r['p_over_dn'], lambda rs: fmt(rs[-1]['recovery_rate']), cols,
               'p / dn')


@block
def recovery_law(root=None):
  allr = [r for r in load('recovery_law.json', root)['records'] if r['method'] == 'default']
  cert = sum(round(r['certified_rate'] * r['seeds']) for r in allr)
  return (_law(root, lambda r: r['n'] == 8, [0.25, 0.5, 1, 2, 4, 8, 10, 16],
               lambda r: f'{r["activation"]}, d = {r["d"]}') +
          f'\n\nShare of fresh seeds (100–119) with every row recovered, n = 8, the default '
          f'attack. Over every point of the default method in results/recovery_law.json: '
          f'{sum(r["seeds"] for r in allr)} runs, {cert} certified, '
          f'{sum(r["false_certified"] for r in allr)} false certificates (certified with a row '
          f'missed).')


@block
def law_in_n(root=None):
  return _law(root, lambda r: r['d'] == 16, [0.5, 1, 1.25, 1.5, 2, 3, 4, 10],
              lambda r: f'{r["activation"]}, n = {r["n"]} ({r["seeds"]} seed'
              f'{"s" if r["seeds"] > 1 else ""})')


@block
def methods(root=None):
  order = [f'{m}, {a}' for m in ('previous', 'paper', 'paper_lr20_exact')
           for a in ('relu', 'relu_tanh')]
  name = lambda r: f'{r["method"]}, {r["activation"]}'
  rate = lambda rs, f: fmt(f(r['recovery_rate'] for r in rs))
  recs = [r for r in load('recovery_law.json', root)['records']
          if r['method'] != 'default' and r['search'] == 'full' and r['n'] == 8]
  return pivot(sorted(recs, key=lambda r: order.index(name(r))), name, lambda r: r['p_over_dn'],
               lambda rs: f'{rate(rs, min)}–{rate(rs, max)}', [1, 2, 4, 8, 10, 16],
               'method, activation (range over d)')


# -- docs/kkt.md ------------------------------------------------------------------------------
@block
def kkt_splitting(root=None):
  g = groups(load('kkt_splitting.json', root), lambda r: (r['objective'], r['split']))
  keys = ('recon_error', 'n_recovered', 'final_loss', 'n_splits', 'seconds')
  return table(['objective', 'split', 'seeds', 'mean recon_error', 'mean recovered',
                'mean final loss', 'mean splits', 'mean s'],
               [[o, s, len(rs)] + [mean(r[k] for r in rs) for k in keys]
                for (o, s), rs in g.items()])


@block
def kkt_trained(root=None):
  rows = []
  for method, rs in groups(load('kkt_trained.json', root)['rows'], lambda r: r['method']).items():
    v = [r['frac_ssim_0_5'] for r in rs]
    sd = statistics.stdev(v) if len(v) > 1 else 0.0
    rows.append([method, joined((r['seed'] for r in rs), str), f'{fmt(mean(v))} ± {fmt(sd)}',
                 mean(r['ssim_median'] for r in rs), mean(r['n_distinct_nearest'] for r in rs)])
  return table(['method', 'seeds', 'share at SSIM ≥ 0.5 (mean ± sample SD)', 'median SSIM',
                'distinct nearest'], rows)


# -- docs/networks.md ---------------------------------------------------------------------------
@block
def network_law(root=None):
  d, cols = load('network_law.json', root), [0.25, 0.5, 1, 3, 10, 16]
  return (pivot(d['records'], lambda r: f'{r["victim"]}, {r["dataset"]}',
                lambda r: min(cols, key=lambda c: abs(c - r['p_L_over_dn']) / c),
                lambda rs: fmt(mean(r['recon_error'] for r in rs)), cols,
                'victim, data (mean recon_error)', lambda c: f'{c:g}·dn') +
          f'\n\nMean recon_error over the reported seeds {joined(d["seeds"]["reported"], str)} '
          f'(n = 4; columns: p_L / dn).')


@block
def two_layer_threshold(root=None):
  by = groups(load('two_layer_threshold.json', root)['runs'], lambda r: r['p_L_over_dn'])
  keys = ('recon_error', 'frac_recovered', 'projection_loss_at_truth')
  return table(['p_L / dn', 'recon_error (per seed)', 'frac_recovered', 'loss at the true data'],
               [[fmt(round(x, 2))] + [joined(r[k] for r in rs) for k in keys]
                for x, rs in sorted(by.items())])


# -- docs/performance.md --------------------------------------------------------------------------
@block
def bench_memory(root=None):
  m = load('bench.json', root)['memory_at_scale']
  rows = [[mode, m[key]['argument_mb'], m[key]['temp_mb'], m[key]['total_mb']]
          for mode, key in (('dense (V stored)', 'dense_memory'), ('lean, two_pass', 'lean_memory'),
                            ('lean, stored Z', 'lean_stored_memory'))]
  return (f'One compiled step at (n, d, p) = ({m["n"]}, {m["d"]}, {m["p"]}), compiled only:\n\n' +
          table(['features', 'arguments MB', 'temporaries MB', 'total MB'], rows))


@block
def bench_pipeline(root=None):
  d = load('bench.json', root)['ttr_pipeline']
  g = groups(d['rows'], lambda r: (r['method'], r['n'], r['d'], r['p'], r['activation']))
  rows = [[method, f'({n}, {dd}, {p})', act, f'{sum(r["all_recovered"] for r in rs)} of {len(rs)}',
           f'{sum(bool(r["certified"]) for r in rs)} of {len(rs)}',
           statistics.median(r['wall_s'] for r in rs), statistics.median(r['steps'] for r in rs)]
          for (method, n, dd, p, act), rs in g.items()]
  return (table(['method', '(n, d, p)', 'activation', 'every row back', 'certified',
                 'median wall s', 'median steps'], rows) +
          f'\n\nSeeds {joined(d["seeds"], str)}, the CLI run whole (start-up, fit, attack, '
          f'rescue, certificate).' + machine(d.get('machine')))


# -- docs/reliability.md --------------------------------------------------------------------------
@block
def soak(root=None):
  o = load('soak_ownership.json', root)
  return (per_record([dict(load(n, root), name=n) for n in ('soak.json', 'soak_short.json')], [
      ('record', lambda s: f'[{s["name"]}](../results/{s["name"]})'), ('faults', 'faults_injected'),
      'trials', ('faults survived', 'faults_survived'), ('runs lost', 'runs_lost'),
      ('half-made or wrong', lambda s: len(s['half_made_or_wrong'])),
      ('minutes', lambda s: s['seconds'] / 60)]) +
          f'\n\n[soak_ownership.json](../results/soak_ownership.json): {o["faults"]} faults in '
          f'{o["workdirs"]} workdirs, {o["user_files_checked"]} user-file checks, '
          f'{len(o["user_files_lost"])} user files lost, {len(o["wrong"])} wrong states.')


# -- docs/audit.md --------------------------------------------------------------------------------
def _ci(fit):
  lo, hi = fit['c_ci']
  return f'{fmt(fit["c"])} ' + ('(a clean gap)' if lo == hi else f'[{fmt(lo)}, {fmt(hi)}]')


def _family(f):
  kind, act = f['family'].split('/')[:2]
  extra = [x for x, on in (('the rung', f['attack'].get('polish') == 'auto'),
                           ('the sign quotient', f['attack'].get('sign_quotient') == 'on'),
                           ('float64', f.get('dtype') == 'float64')) if on]
  name = 'two-layer MSE net' if kind == 'two_layer' else act.replace('relu_tanh', 'relu+tanh')
  return ', '.join([name] + extra)


@block
def leak_width(root=None):
  fams = list(load('leak_width.json', root)['families'].values())
  return per_record(fams, [
      ('family (attack extras)', _family), ('shadow n', lambda f: joined(f['shadow_n'], str)),
      ('target n', 'n_target'), ('c, constant law', lambda f: _ci(f['shadow_fit'])),
      ('c, trend in n', lambda f: _ci(f['trend_fit'])),
      ('c measured at n', lambda f: _ci(f['measured_fit'])),
      ('constant / measured', 'prediction_ratio'), ('trend / measured', 'trend_prediction_ratio')
  ]) + (f'\n\nc with its 95% bootstrap interval; shadows on seeds '
        f'{joined(fams[0]["shadow_seeds"], str)}, the target on fresh seeds.' + MACHINE(fams[0]))


@block
def audit_regimes(root=None):
  d = load('audit_regimes.json', root)
  cell = lambda t: (f'{t["recovered_all"]} of {t["seeds"]} seeds '
                    f'(mean share {fmt(t["mean_frac_recovered"])})')
  rows = [[name.replace('_lr', ', lr ').replace('gd', 'GD').replace('adam', 'Adam'),
           d['first_layer_moved'][name]] +
          [cell(t[a]) for a in ('init_trained', 'init_stacked', 'no_init')]
          for name, t in d['table'].items()]
  losses = d['choice']['median_final_loss'].items()
  return (table(['regime', 'first layer moved (median)', 'W(0) known, features at W(T)',
                 'W(0) known, W(0) and W(T) stacked', 'W(0) unknown'], rows) +
          f'\n\nSeeds {joined(d["reported_seeds"], str)}; n = {d["n"]}, d = {d["d"]}, hidden '
          f'{d["hidden"]}. Median final loss on the tuning seeds: '
          f'{", ".join(f"{k} {fmt(v)}" for k, v in losses)}.' + MACHINE(d))


@block
def update_span(root=None):
  d = load('update_span.json', root)
  keys = ('at_trained', 'at_init', 'stacked', 'adam_scaled_stacked')

  def cell(recs, k):
    xs = [r[k] for r in recs if k in r]
    return f'{fmt(statistics.median(xs))} ({fmt(min(xs))}–{fmt(max(xs))})' if xs else '–'
  rows = [[name, *[cell(recs, k) for k in keys]]
          for name, recs in groups(d['records'], lambda r: r['regime']).items()]
  return (table(['optimiser', 'outside the span at W(T)', 'at W(0)', 'along the trajectory',
                 "Adam's rescaled rows along the trajectory"], rows) +
          f'\n\nMedian (min–max) over seeds {joined(d["seeds"], str)}; n = {d["n"]}, d = '
          f'{d["d"]}, hidden {d["hidden"]}, {d["steps"]} steps.' + MACHINE(d))


# -- docs/defences.md -----------------------------------------------------------------------------
def _strength(defence, x):
  if defence != 'dp':
    return 'none' if x == 0 else fmt(x)
  e = round(math.log10(x)) if x else None
  return 'ε = ' + ('∞' if not x else f'10{str(e).translate(SUP)}' if x >= 1000 and 10 ** e == x
                   else fmt(x))


def _crossover(key, c):
  s = lambda x: _strength(key.split('/')[1], x)
  if c is None or c['still_recovered_at'] is None:
    return '–' if c is None else 'not recovered undefended'
  stop = 'not stopped' if c['stopped_at'] is None else s(c['stopped_at'])
  return f'{s(c["still_recovered_at"])} → {stop}'


@block
def defences(root=None):
  d = load('defences.json', root)
  cross, certs = d['meta']['crossovers'], d['meta']['certificates'].values()
  rows = [[f'`{p.split("/")[0]}` / {p.split("/", 1)[1].replace("_", " ")}'] +
          [_crossover(p, cross.get(f'{p}/{w}')) for w in (4, 10)]
          for p in dict.fromkeys(k.rsplit('/', 1)[0] for k in cross)]
  dp = [r for r in d['records'] if r['defence'] == 'dp' and r['strength'] <= 64]
  back = round(sum(r['frac_recovered'] * r['n'] for r in dp))
  return (table(['victim / defence', 'p_L = 4·dn', '10·dn'], rows) +
          f'\n\nThe strongest measured defence at which at least half the rows still come back '
          f'(mean over the seeds) → the next one, at which they do not. DP at ε ≤ 64: {back} of '
          f'{sum(r["n"] for r in dp)} rows back in {len(dp)} runs. Certified runs: '
          f'{sum(c["certified"] for c in certs)}, false certificates: '
          f'{sum(c["false_certified"] for c in certs)}.' + MACHINE(d['meta']))


# -- docs/subspace.md -----------------------------------------------------------------------------
def _errors(rs, subspace):
  return joined(r['recon_error'] for r in rs if r['subspace'] == subspace) or '–'


@block
def subspace_rf_width(root=None):
  g = groups(load('subspace_rf_width.json', root)['rows'],
             lambda r: (r['p'], f'{r["p_over_kn"]:g}', f'{r["p_over_dn"]:g}'))
  return table(['p', 'p / kn', 'p / dn', 'full space (R^d), per seed', 'inside the subspace (R^k)'],
               [list(k) + [_errors(rs, 'none'), _errors(rs, 'known')] for k, rs in g.items()])


@block
def subspace_two_layer(root=None):
  rows = load('subspace_two_layer.json', root)['rows']
  a = groups([r for r in rows if r['part'] == 'A'], lambda r: r['width'])
  one = table(['width (p / kn, p / dn)', 'full space', 'U from ΔW1', 'true U'], [
      [f'{w} ({rs[0]["p_over_kn"]:g}, {rs[0]["p_over_dn"]:g})'] +
      [_errors(rs, s) for s in ('none', 'estimated', 'known')] for w, rs in a.items()])
  two = per_record([r for r in rows if r['part'] == 'B'], [
      'weight_decay', ('max principal angle °', 'max_principal_angle_deg'),
      ('true data outside U', 'subspace_residual_true'), ('automatic k', 'auto_k'),
      ('recon_error (k = 4)', 'recon_error')])
  return f'recon_error per seed:\n\n{one}\n\nWeight decay (seed 0):\n\n{two}'


# -- docs/testing.md ------------------------------------------------------------------------------
@block
def mutations(root=None):
  d = load('mutations.json', root)
  s = d['score']
  count = lambda k: lambda r: r['counts'][k]  # noqa: E731
  shards = per_record(d.get('shards', []), [
      'shard', ('modules', lambda r: ', '.join(m.split('/')[-1] for m in r['modules'])),
      ('mutants run', lambda r: f'{r["sampled"]} of {r["generated"]}'),
      ('killed', count('killed')), ('survived', count('survived')),
      ('equivalent', count('equivalent')), ('timeout', count('timeout')),
      ('no tests', count('no_tests')),
      ('score', lambda r: '–' if r['counts']['score'] is None else
       f'{100 * r["counts"]["score"]:.0f}%')])
  return (f'{s["caught_fast"]} of {s["total"]} mutations caught by the fast tier, '
          f'{s["caught_slow_only"]} more only by a slow test, {s["survived"]} survived '
          f'({d["command"]}, commit {d["commit"]}). Per shard, score = (killed + timeout) / '
          f'(mutants run − equivalent):\n\n{shards}\n\nThe survivors:\n\n' +
          per_record([m for m in d['mutations'] if m['outcome'] != 'caught'], [
              ('mutation', lambda m: f'`{m["id"]}`'), 'what', 'outcome',
              ('slow test or note', lambda m: m['note'] or ', '.join(
                  f'`{t.split("/")[-1]}`' for t in m['slow_tests']))]))


# -- docs/federated.md: a client's update inverted, beside gradient matching (scripts/federated.py)
def _median(xs):
  xs = sorted(x for x in xs if x is not None)
  return xs[len(xs) // 2] if xs else None


def _federated_cells(label, runs, n):
  base = [r['baseline'] for r in runs]
  return label + [
      ', '.join(str(r['back']) for r in runs), f'{sum(r["back"] == r["n"] for r in runs)} of '
      f'{len(runs)}', f'{sum(r["certified"] for r in runs)} of {len(runs)}',
      sum(r['false_certificate'] for r in runs), _median([r['loss_at_truth'] for r in runs]),
      mean([r['ssim_mean'] for r in runs]), _median([r['seconds'] for r in runs]),
      ', '.join(str(b['back']) for b in base), f'{sum(b["back"] == n for b in base)} of '
      f'{len(base)}', mean([b['ssim_mean'] for b in base]), _median([b['seconds'] for b in base])]


FEDERATED_HEADER = ['records back per seed', 'seeds all back', 'certified', 'false certificates',
                    'loss at the truth (median)', 'SSIM', 's per client (median)',
                    'gradient matching: back per seed', 'its seeds all back', 'its SSIM',
                    'its s (median)']


@block
def federated(root=None):
  d, rows = load('federated.json', root), []
  for cell in d['cells']:
    name, n, epochs, batch, optimizer = cell['cell'].split(':')
    rows.append(_federated_cells([name, int(n), int(epochs), int(batch), optimizer,
                                  cell['runs'][0]['p_L_over_dn']], cell['runs'], int(n)))
  first = [_federated_cells([c['cell'].split(':')[0], int(c['cell'].split(':')[1]),
                             c['runs'][0]['p_L_over_dn']], c['runs'], int(c['cell'].split(':')[1]))
           for c in d.get('first_cells', [])]
  header = ['data', 'n', 'E', 'B', 'optimiser', 'p_L / dn'] + FEDERATED_HEADER
  return table(header, rows) + (
      f'\n\nFresh seeds {joined(d["seeds"])}; the attack\'s settings chosen on shadow seeds '
      f'{joined(d["shadow_seeds"])}, the baseline\'s on shadow clients seeds '
      f'{joined(d["tuning"]["shadow_seeds"])}.' + MACHINE(d)) + (
      '\n\nThe first cells (E = 1, B = n, SGD), measured before the baseline was tuned: the '
      'baseline at its defaults (Adam lr 0.05, 2000 steps, no TV), the time per client including '
      'its descent, seeds 100–104.\n\n' + table(['data', 'n', 'p_L / dn'] + FEDERATED_HEADER,
                                                first) + machine(d.get('first_machine'))
      if first else '')


@block
def federated_law(root=None):
  d = load('federated.json', root)
  rows = [_federated_cells([p['cell'], p['runs'][0]['p_L_over_dn'], p['width']], p['runs'],
                           p['runs'][0]['n']) for p in d['law'] if p['runs']]
  return table(['client', 'p_L / dn', 'width'] + FEDERATED_HEADER, rows) + (
      f'\n\nFresh seeds {joined(d["seeds"])}.' + MACHINE(d))


@block
def federated_tuning(root=None):
  t = load('federated.json', root)['tuning']
  steps, ch = sorted(t['grid']['steps']), t['choice']
  return table(['Adam lr', 'TV weight'] + [f'matching loss after {s} steps' for s in steps],
               [[s['lr'], s['tv']] + [s['curve'][str(k)] for k in steps] for s in t['scores']]) + (
      f'\n\nMean over shadow clients {", ".join(t["cells"])}, seeds {joined(t["shadow_seeds"])}. '
      f'Chosen: Adam lr {fmt(ch["lr"])}, TV weight {fmt(ch["tv"])}, {ch["steps"]} steps.')


# -- rendering --------------------------------------------------------------------------------
def pages(root=None):
  docs = os.path.join(root or ROOT, 'docs')
  return [os.path.join(root or ROOT, 'README.md')] + sorted(
      os.path.join(docs, f) for f in os.listdir(docs) if f.endswith('.md'))


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
  stale = []
  for path in pages(root):
    rel = os.path.relpath(path, root or ROOT)
    with open(path, encoding='utf-8') as f:
      new, names = render_text(f.read(), root, rel)
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
  for s in stale:
    if args.check:
      print(f'stale: {s} (run python -m scripts.render_docs)', file=sys.stderr)
    else:
      print(f'rendered: {s}')
  return 1 if args.check and stale else 0


if __name__ == '__main__':
  sys.exit(main())
