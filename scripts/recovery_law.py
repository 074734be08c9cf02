"""The width law as a phase diagram: recovery and certification rates against p / (d n).

Per point (method, activation, d, k, n, p) the random-features attack runs `--seeds` seeds
(configs/rf_synthetic.py; with k, data in a planted k-dim subspace, searched in full space or in
the known subspace) and records recovery_rate (seeds with every row recovered), certified_rate,
false_certified (certified with a row missed: must be 0) and median_seconds.

Methods: `default` (the shipped attack), `plain` (no sign quotient), `previous` (no escalation,
rung or quotient) and `paper`, the reference code's optimiser ported (scripts/paper_baseline.py)
at its blind lr from results/paper_baseline.json and 10x the default's steps; records of an
earlier port stay as `paper_lr20_exact`. Presets: `full` (the issue's grid, hours on 2 cores),
`reduced` (minutes), `tiny`, `in_n --n=N` (the law in n at d = 16). `--data=photo_patches` runs
the bundled photographs' patches; `--work_dir=DIR` keeps each point's sweep there (a stopped
point of hours resumes). Points append to results/recovery_law.json (present ones are skipped;
--redo runs them again); .md and .png are re-rendered from it (--render_only).

    python -m scripts.recovery_law --preset=reduced
    python -m scripts.recovery_law --preset=full --methods=default --activations=relu
"""
from __future__ import annotations

import itertools
import json
import logging as std_logging
import os
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

from absl import app, flags, logging
import numpy as np

from configs import rf_synthetic
import recon
from recon.runtime import io, machine
from scripts import common, paper_baseline
plt = common.pyplot()

PRESETS = {
    'full': dict(n=8, ds=(8, 16, 32), ratios=(0.25, 0.5, 1, 2, 4, 8, 10, 16), seeds=20,
                 ks=(2, 4, 8, 16), k_d=64, k_ratios=(0.5, 1, 2, 4, 8)),
    'reduced': dict(n=4, ds=(8,), ratios=(0.5, 1, 2, 4, 10), seeds=5, ks=(2,), k_d=32,
                    k_ratios=(1, 4)),
    'tiny': dict(n=3, ds=(4,), ratios=(0.5, 4), seeds=2, ks=(), k_d=8, k_ratios=()),
    # The law in n (issue #30 item 3): d = 16 around the threshold; `--n` sets n (8, 32, 100)
    # and `--seeds` the seeds (20 below n = 100, >= 10 at n = 100).
    'in_n': dict(n=32, ds=(16,), ratios=(0.5, 1, 1.25, 1.5, 2, 4, 10), seeds=20, ks=(),
                 k_d=16, k_ratios=()),
}
FLAGS = flags.FLAGS
METHODS = {
    'default': {},
    'previous': {'attack.rescue': (), 'attack.sign_quotient': 'off'},
    # The default on the plain projection loss (relu-like activations: no sign quotient).
    'plain': {'attack.sign_quotient': 'off'},
    'paper': {},  # paper_baseline.paper_overrides(activation) and the calibrated lr
}
PAPER_BUDGET_FACTOR = 10  # the paper's port gets this many times the default's steps
PAPER_CALIBRATION = 'results/paper_baseline.json'
OLD_PAPER = 'paper_lr20_exact'  # records of the earlier, unfaithful port
FIELDS = ('method', 'activation', 'd', 'k', 'search', 'n', 'p', 'p_over_dn', 'p_over_kn',
          'seeds', 'recovery_rate', 'certified_rate', 'false_certified', 'median_seconds',
          'max_steps', 'device')

# Seeds 0-19 are where the shipped attack's constants were chosen (escalation window,
# restart_after, the rung's design, from 20-seed sweeps at n = d = 8); `--first_seed=100`
# runs fresh seeds that no choice was made on. A record keeps its seed list.
TUNING_SEEDS = tuple(range(20))


# `--data`: the rows of a point. 'synthetic_sphere' is configs/rf_synthetic.py's data;
# 'photo_patches' the bundled photographs' 32x32x3 patches block-averaged to `--image_size`
# (4: 4x4x3, d = 48), standardised and put on the sqrt(d)-sphere as the synthetic rows are.
DATA = ('synthetic_sphere', 'photo_patches')


def point_key(r: Dict[str, Any]) -> tuple:
  return (r['method'], r['activation'], r['d'], r['k'], r['search'], r['n'], r['p'],
          r.get('first_seed', 0), r.get('data', DATA[0]))


def data_label(r: Dict[str, Any]) -> str:
  """The d column: '48 (photo patches)' for real rows, the number for synthetic ones."""
  return str(r['d']) + ('' if r.get('data', DATA[0]) == DATA[0] else
                        f' ({r["data"].replace("_", " ")})')


def photo_points(pts: List[Dict[str, Any]], image_size: int) -> List[Dict[str, Any]]:
  """The full-space points of `pts` on photo patches of side `image_size`: d = 3 s^2 and p the
  same p/dn (the d axis of the preset does not apply; subspace rows have no photo form)."""
  d, out = 3 * image_size ** 2, []
  for pt in pts:
    if pt['k'] is not None:
      continue
    q = dict(pt, d=d, data='photo_patches', p=max(1, int(round(pt['p'] / pt['d'] * d))))
    if point_key(q) not in {point_key(o) for o in out}:
      out.append(q)
  return out


def points(preset: Dict[str, Any], methods, activations, subspace: bool) -> List[Dict[str, Any]]:
  """Every (method, activation, d, k, search, n, p) of the grid."""
  out, n = [], preset['n']
  for method, act in itertools.product(methods, activations):
    for d, r in itertools.product(preset['ds'], preset['ratios']):
      out.append(dict(method=method, activation=act, d=d, k=None, search='full', n=n,
                      p=max(1, int(round(r * d * n)))))
    if subspace:
      for k, r, search in itertools.product(preset['ks'], preset['k_ratios'],
                                            ('full', 'subspace')):
        out.append(dict(method=method, activation=act, d=preset['k_d'], k=k, search=search,
                        n=n, p=max(1, int(round(r * k * n)))))
  return out


PROGRESS_SECONDS = 30.0  # a point's progress line at most this often (its step, its losses)


def config_for(pt: Dict[str, Any], seeds: int, max_steps: int):
  """The point's sweep config: its seeds as one vectorised sweep (`recon.run`)."""
  c = rf_synthetic.get_config()
  c.update_from_flattened_dict({
      'data.n': pt['n'], 'data.d': pt['d'], 'victim.p': pt['p'],
      'victim.activation': pt['activation'], 'attack.max_steps': max_steps,
      'run.log_every_seconds': PROGRESS_SECONDS, 'run.checkpoint_every_seconds': 0.0,
      **METHODS[pt['method']]})
  if pt['method'] == 'paper':
    lr = paper_baseline.calibrated_lr(PAPER_CALIBRATION, pt['activation'], pt['n'], pt['d'])
    if lr is None:
      raise ValueError(f'method paper: no blind lr for {pt["activation"]} n={pt["n"]} '
                       f'd={pt["d"]} in {PAPER_CALIBRATION}; run python -m '
                       'scripts.paper_baseline first')
    c.update_from_flattened_dict({**paper_baseline.paper_overrides(pt['activation']),
                                  'attack.lr': lr})
  if pt.get('data', DATA[0]) == 'photo_patches':
    side = int(round(np.sqrt(pt['d'] / 3)))
    if 3 * side * side != pt['d']:
      raise ValueError(f'photo_patches: d={pt["d"]} is not 3 s^2')
    c.data.name, c.data.image_size = 'photo_patches', side
  if pt['k'] is not None:
    c.data.name = 'synthetic_subspace'
    c.data.planted_dim = pt['k']
    c.attack.subspace.mode = 'known' if pt['search'] == 'subspace' else 'none'
  first = pt.get('first_seed', 0)
  c.sweep.seed = tuple(range(first, first + seeds))
  return c


def paper_budget(pt: Dict[str, Any], records: List[Dict[str, Any]], max_steps: int) -> int:
  """The paper port's step budget at `pt`: PAPER_BUDGET_FACTOR x the default's median steps
  at the same point (at least `max_steps`)."""
  key = point_key(dict(pt, method='default'))
  steps = [r['median_steps'] for r in records if point_key(r) == key and 'median_steps' in r]
  return max(max_steps, int(PAPER_BUDGET_FACTOR * steps[0])) if steps else (
      PAPER_BUDGET_FACTOR * max_steps)


def write_records(path: str, records: List[Dict[str, Any]]) -> None:
  """{"records": [...]} with one record per line (atomic, as `recon.runtime.io` writes)."""
  io.write_text(path, '{"records": [\n' + ',\n'.join(json.dumps(io.normalized(r))
                                                      for r in records) + '\n]}\n')


def free_before_rung(r: Dict[str, Any]) -> Optional[int]:
  """Rows free by the blind row test when the precision rung took the run over (None: the
  rung did not look at it)."""
  info = r.get('polish') or {}
  if 'free_rows' in info:
    return int(info['free_rows'])
  within = (info.get('certificate_before') or {}).get('rows_within')
  return None if within is None else int(r['n_candidates']) - int(within)


def compact_seeds(per_seed) -> Dict[str, list]:
  """Per-seed details as columns ({field: [value per seed]}), floats to 3 significant digits."""
  out: Dict[str, list] = {}
  for rec in per_seed:
    for k, v in rec.items():
      out.setdefault(k, []).append(float(f'{v:.3g}') if isinstance(v, float) else v)
  return out


CHECKPOINT_SECONDS = 300.0  # with --work_dir: the running sweep's state saved this often


def point_dir(pt: Dict[str, Any]) -> str:
  """The folder name of a point's sweep under --work_dir."""
  return '_'.join(str(v) for v in point_key(pt)).replace('.', 'p')


def run_point(pt: Dict[str, Any], seeds: int, max_steps: int,
              work_dir: Optional[str] = None,
              memory_budget_gb: Optional[float] = None) -> Dict[str, Any]:
  """All seeds of one point as one vectorised sweep; rates over seeds and per-seed details.
  `memory_budget_gb` replaces run.sweep_memory_budget_gb (the sweep's and the precision
  rung's size cap).

  With `work_dir` the sweep runs in WORK_DIR/<point> with its state saved every
  CHECKPOINT_SECONDS and resumed there (a point stopped mid-way, e.g. at n = 500, continues
  where it stopped; its seconds count every segment); else in a temporary folder."""
  with tempfile.TemporaryDirectory() as tmp:
    t, load_before = time.time(), os.getloadavg()[0]
    c = config_for(pt, seeds, max_steps)
    if memory_budget_gb:
      c.run.sweep_memory_budget_gb = float(memory_budget_gb)
    workdir = os.path.join(work_dir, point_dir(pt)) if work_dir else os.path.join(tmp, 'sweep')
    if work_dir:
      c.run.checkpoint_every_seconds, c.run.resume = CHECKPOINT_SECONDS, True
    if os.path.isfile(os.path.join(workdir, 'sweep.json')):  # finished earlier: read back
      out = recon.load(workdir).summary
      t -= out['wall_seconds']
    else:
      out = recon.run(c, workdir).summary
    seconds = time.time() - t + sum(g.get('resumed_seconds', 0.0) for g in out['groups'])
    cpu = [g.get('cpu_seconds') for g in out['groups']]
  per_seed = compact_seeds([dict(
      seed=r['seed'], recovered=r['frac_recovered'] == 1.0, certified=bool(r['certified']),
      frac_recovered=r['frac_recovered'], max_error=float(r['recon_error_max']),
      final_loss=r['final_loss'], steps=r['steps'], status=r['status'],
      escalations=r.get('escalations_accepted', 0),
      restarts_kept=r.get('escalation_restarts_kept', 0),
      min_share=r.get('sample_share_min'),
      rows_pinned=r['certificate'].get('rows_pinned'),
      pinned_wrong=r.get('rows_pinned_wrong'),
      rows_within=r['certificate'].get('rows_within'),
      within_wrong=r.get('rows_within_wrong'),
      close_pairs=r['certificate'].get('duplicate_pairs'),
      close_pairs_apart=r['certificate'].get('duplicate_pairs_resolved'),
      pin_radius=r['certificate'].get('pin_radius'),
      free_before_rung=free_before_rung(r),
      polished=(len(r['polish']['rows_replaced']) if r.get('polish', {}).get('kept') else
                None),
      polished_loss=(r['polish']['loss_after'] if r.get('polish', {}).get('kept') else None),
      flipped=(len(set(r['polish'].get('rows_flipped', []))) if r.get('polish', {}).get('kept')
               else None))
      for r in out['records']])
  recovered, certified = per_seed['recovered'], per_seed['certified']
  k = pt['k']
  if pt['method'] == 'paper':
    pt = dict(pt, port='faithful', lr=paper_baseline.calibrated_lr(
        PAPER_CALIBRATION, pt['activation'], pt['n'], pt['d']))
  first = pt.get('first_seed', 0)
  return dict(pt, first_seed=first, seed_list=[first, first + seeds - 1],
              tuning_seeds=[TUNING_SEEDS[0], TUNING_SEEDS[-1]],
              p_over_dn=pt['p'] / (pt['d'] * pt['n']),
              p_over_kn=None if k is None else pt['p'] / (k * pt['n']), seeds=seeds,
              recovery_rate=float(np.mean(recovered)), certified_rate=float(np.mean(certified)),
              false_certified=int(sum(c and not r for c, r in zip(certified, recovered))),
              false_pinned_rows=int(sum(v or 0 for v in per_seed['pinned_wrong'])),
              false_within_rows=int(sum(v or 0 for v in per_seed['within_wrong'])),
              median_seconds=seconds / seeds, batch_seconds=seconds,
              batch_cpu_seconds=None if None in cpu else sum(cpu),  # all segments, all threads
              median_steps=float(np.median(per_seed['steps'])),
              max_steps=max_steps, device=out['device'],
              machine=out.get('machine') or machine.describe(),  # recertified: both machines
              load=[round(load_before, 2), round(os.getloadavg()[0], 2)],  # 1-min averages
              per_seed=per_seed,
              **({'recertify_seconds': out['recertify_seconds']}  # recon.recertify's, if run
                 if out.get('recertify_seconds') is not None else {}))


def seed_cell(r: Dict[str, Any]) -> str:
  """'20 (seeds 100-119)'; records without a seed list ran seeds 0.. ."""
  first, last = r.get('seed_list', [0, r['seeds'] - 1])
  return f'{r["seeds"]} ({first}-{last})'


def curves(records: List[Dict[str, Any]]) -> Dict[tuple, List[Dict[str, Any]]]:
  """Records grouped by (method, activation, d, k, search, n), each sorted by p; records on
  other seeds than 0.. carry their first seed in the method (`default@100`)."""
  out: Dict[tuple, List[Dict[str, Any]]] = {}
  for r in records:
    method = (r['method'] + ('' if r.get('data', DATA[0]) == DATA[0] else f'/{r["data"]}')
              + (f'@{r["first_seed"]}' if r.get('first_seed') else ''))
    out.setdefault((method, r['activation'], r['d'], r['k'], r['search'], r['n']),
                   []).append(r)
  return {k: sorted(v, key=lambda r: r['p']) for k, v in out.items()}


def render(records: List[Dict[str, Any]], out: str) -> None:
  """Writes OUT.md (the table) and OUT.png (recovery rate vs p/dn, and vs p/kn)."""
  lines = ['# Recovery law (random features): recovery and certification rates', '',
           'Regenerate: `python -m scripts.recovery_law --preset=full` (append any subset; '
           'see the script). recovery: every row within recovered_threshold; certified: the '
           'run\'s blind certificate; false_certified: certified runs that missed a row.', '',
           '| method | activation | d | k | search | n | p | p/dn | p/kn | seeds | recovery | '
           'certified | false cert. | s / seed | device |',
           '|' + '---|' * 15]
  for r in sorted(records, key=lambda r: (r['k'] is not None, r['method'], r['activation'],
                                          r['d'], r['k'] or 0, r['search'], r['p'])):
    pkn = '' if r['p_over_kn'] is None else f'{r["p_over_kn"]:.3g}'
    lines.append(f'| {r["method"]} | {r["activation"]} | {data_label(r)} | {r["k"] or ""} | '
                 f'{r["search"]} | {r["n"]} | {r["p"]} | {r["p_over_dn"]:.3g} | {pkn} | '
                 f'{seed_cell(r)} | {r["recovery_rate"]:.2f} | {r["certified_rate"]:.2f} | '
                 f'{r["false_certified"]} | {r["median_seconds"]:.1f} | {r["device"]} |')
  machines = sorted({r.get('machine', '?') for r in records})
  lines += ['', 'Machine: ' + '; '.join(machines) + '. Wall time per seed is the vectorised '
            "call's wall time over the seeds, on a machine shared with other jobs."]
  runs = sum(r['seeds'] for r in records)
  certified = sum(round(r['certified_rate'] * r['seeds']) for r in records)
  lines += ['', f'False certificates: {sum(r["false_certified"] for r in records)} of '
            f'{certified} certified runs ({runs} runs in all).']
  io.write_text(out + '.md', '\n'.join(lines) + '\n')
  acts = sorted({r['activation'] for r in records})
  if not acts:
    return
  ns = sorted({r['n'] for r in records if r['k'] is None and r['method'] == 'default'})
  by_n = len(ns) > 1  # the law in n: a third panel, one curve per n (default method, d = 16)
  # The d panel shows n = 8 (the grid), else the smallest n measured.
  base_n = min(ns, key=lambda n: (n != 8, n)) if ns else None
  fig, axes = plt.subplots(len(acts), 3 if by_n else 2,
                           figsize=(16.5 if by_n else 11, 3.6 * len(acts)), squeeze=False)
  styles = {'default': '-', 'previous': ':', 'paper': '--', OLD_PAPER: '-.'}
  colors = plt.rcParams['axes.prop_cycle'].by_key()['color']
  for row, act in zip(axes, acts):
    full = {k: v for k, v in curves(records).items() if k[1] == act and k[3] is None
            and (base_n is None or k[5] == base_n)}
    ds = sorted({k[2] for k in full})
    for (method, _, d, _, _, _), rows in sorted(full.items(),
                                                key=lambda kv: tuple(map(str, kv[0]))):
      row[0].plot([r['p_over_dn'] for r in rows], [r['recovery_rate'] for r in rows],
                  styles.get(method, '-'), marker='o', ms=3, color=colors[ds.index(d) % 10],
                  label=f'{method} d={d}')
    sub = {k: v for k, v in curves(records).items()
           if k[1] == act and k[3] is not None and k[0] == 'default'}
    ks = sorted({k[3] for k in sub})
    for (_, _, d, k, search, _), rows in sorted(sub.items(),
                                                key=lambda kv: tuple(map(str, kv[0]))):
      row[1].plot([r['p_over_kn'] for r in rows], [r['recovery_rate'] for r in rows],
                  '-' if search == 'subspace' else '--', marker='o', ms=3,
                  color=colors[ks.index(k) % 10], label=f'k={k} (d={d}) {search} search')
    if not sub:
      row[1].text(0.5, 0.5, 'not run', ha='center', va='center', transform=row[1].transAxes)
    row[0].set_title(f'{act}: full space' + (f', n = {base_n}' if base_n else '') +
                     ' (line style: method)')
    row[1].set_title(f'{act}: data in a k-dim subspace (default method)')
    if by_n:
      law = {k: v for k, v in curves(records).items()
             if k[1] == act and k[3] is None and k[2] == 16
             and k[0].startswith(('default', 'plain@')) and k[5] in ns}
      for (method, _, _, _, _, n), rows in sorted(law.items(), key=lambda kv: (kv[0][5], kv[0][0])):
        plain = method.startswith('plain')
        row[2].plot([r['p_over_dn'] for r in rows], [r['recovery_rate'] for r in rows],
                    '--' if plain else '-' if '@' in method else ':', marker='o', ms=3,
                    color=colors[ns.index(n) % 10],
                    label=f'n={n} ({rows[0]["seeds"]} seeds{", tuning" if "@" not in method else ""}'
                          f'{", plain loss" if plain else ""})')
      row[2].axvline(17 / 16, color='gray', ls='-.', lw=0.8)  # counting limit p = n (d + 1)
      row[2].set_title(f'{act}: the law in n (d = 16, default; dash-dot: p = n(d+1))')
    for ax, xl in zip(row, ('p / (d n)', 'p / (k n)', 'p / (d n)')):
      ax.set_xscale('log')
      ax.set_ylim(-0.05, 1.05)
      ax.axhline(0.95, color='gray', ls=':', lw=0.8)
      ax.axvline(1.0, color='gray', ls='--', lw=0.8)
      ax.set_xlabel(xl)
      ax.set_ylabel('recovery rate')
      if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=6)
  common.savefig(fig, out + '.png', dpi=110)


def define_flags() -> None:
  """The command line's flags (defined only when run as a script: importing the module for
  its functions defines none, so other scripts' flags of the same name do not collide)."""
  flags.DEFINE_enum('preset', 'reduced', sorted(PRESETS), 'Grid to run.')
  flags.DEFINE_list('methods', sorted(METHODS), 'Methods to run.')
  flags.DEFINE_list('activations', ['relu', 'relu_tanh'], 'Activations.')
  flags.DEFINE_integer('seeds', None, 'Seeds per point (default: the preset\'s).')
  flags.DEFINE_integer('first_seed', 0, 'First seed of each point (0-19 are the tuning seeds; '
                       '100: fresh seeds).')
  flags.DEFINE_integer('n', None, 'Training-set size n (default: the preset\'s).', lower_bound=1)
  flags.DEFINE_list('ds', None, 'Full-space dimensions d (default: the preset\'s).')
  flags.DEFINE_list('ratios', None, 'Full-space widths p / dn (default: the preset\'s).')
  flags.DEFINE_bool('full_space', True, 'Run the full-space rows (k = None).')
  flags.DEFINE_list('ks', None, "Subspace dimensions k (default: the preset's).")
  flags.DEFINE_integer('max_steps', 20000, 'Steps per run.')
  flags.DEFINE_bool('subspace', True, 'Also run the planted-subspace rows.')
  flags.DEFINE_string('out', 'results/recovery_law', 'Output path without suffix.')
  flags.DEFINE_bool('render_only', False, 'Only re-render md/png from the JSON.')
  flags.DEFINE_enum('data', DATA[0], DATA, "The points' rows: synthetic sphere data, or the "
                    'bundled photographs\' patches at --image_size (full-space points only; '
                    '--ds does not apply, d = 3 image_size^2).')
  flags.DEFINE_integer('image_size', 4, 'Patch side for --data=photo_patches (a divisor of 32).')
  flags.DEFINE_string('work_dir', None,
                      "Keep each point's sweep in WORK_DIR/<point>, its running state saved "
                      'every 5 min, and resume a point stopped mid-way (default: a temporary '
                      'folder, nothing kept). A point finished there is read back, not run again.')
  flags.DEFINE_float('memory_budget_gb', None,
                     "run.sweep_memory_budget_gb for every point (default: the config's 8 GB): "
                     'the padded sweep group and the precision rung must fit it', lower_bound=0.1)
  flags.DEFINE_bool('redo', False, 'Re-run the selected points already in the JSON (their '
                    'records are replaced); default: skip them.')


PROGRESS_PREFIXES = ('sweep ', 'sweep:', 'precision rung: rows re-searched', 'precision rung: loss',
                     'escalation: step', 'escalation: new candidate sets')


def progress_only(record: std_logging.LogRecord) -> bool:
  """The console filter of a long point: warnings and errors, and of the INFO lines only the
  vectorised call's progress ('sweep ...: step ...', every few seconds) and the precision rung's
  (a line per pass and its outcome); the per-run detail stays off."""
  return (record.levelno >= std_logging.WARNING
          or record.getMessage().startswith(PROGRESS_PREFIXES))


def main(argv):
  del argv
  logging.set_verbosity(logging.INFO)
  logging.get_absl_handler().addFilter(progress_only)
  recon.setup_process()  # the CLI's process setup: CPU buffers, compile cache
  path = FLAGS.out + '.json'
  records = io.read_json(path)['records'] if os.path.exists(path) else []
  if not FLAGS.render_only:
    for name in FLAGS.methods:
      if name not in METHODS:
        print(f'error: --methods: unknown {name!r}; accepted: {", ".join(METHODS)}',
              file=sys.stderr)
        sys.exit(2)
    preset = dict(PRESETS[FLAGS.preset])
    if FLAGS.n:
      preset['n'] = FLAGS.n
    if FLAGS.ds:
      preset['ds'] = tuple(int(d) for d in FLAGS.ds)
    if FLAGS.ratios:
      preset['ratios'] = tuple(float(r) for r in FLAGS.ratios)
    if not FLAGS.full_space:
      preset['ds'] = ()
    if FLAGS.ks:
      preset['ks'] = tuple(int(k) for k in FLAGS.ks)
    seeds = FLAGS.seeds or preset['seeds']
    done = set() if FLAGS.redo else {point_key(r) for r in records}
    grid = points(preset, FLAGS.methods, FLAGS.activations, FLAGS.subspace)
    if FLAGS.data == 'photo_patches':
      grid = photo_points(grid, FLAGS.image_size)
    todo = [dict(pt, first_seed=FLAGS.first_seed) for pt in grid
            if point_key(dict(pt, first_seed=FLAGS.first_seed)) not in done]
    for i, pt in enumerate(todo):
      budget = (paper_budget(pt, records, FLAGS.max_steps) if pt['method'] == 'paper' else
                FLAGS.max_steps)
      rec = run_point(pt, seeds, budget, FLAGS.work_dir, FLAGS.memory_budget_gb)
      records = [r for r in records if point_key(r) != point_key(rec)] + [rec]
      os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
      write_records(path, records)  # after every point: resumable
      print(f'[{i + 1}/{len(todo)}] {rec["method"]} {rec["activation"]} d={rec["d"]} '
            f'k={rec["k"]} {rec["search"]} p/dn={rec["p_over_dn"]:.3g}: recovery '
            f'{rec["recovery_rate"]:.2f} certified {rec["certified_rate"]:.2f} false '
            f'{rec["false_certified"]} ({rec["median_seconds"]:.1f} s/run)', flush=True)
  if records:
    write_records(path, records)
  render(records, FLAGS.out)
  print(f'{len(records)} points in {path}', flush=True)


if __name__ == '__main__':
  define_flags()
  app.run(main)
