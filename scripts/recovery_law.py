"""The width law as a phase diagram: recovery and certification rates against p / (d n).

For each point (method, activation, d, k, n, p) the random-features attack runs for
`--seeds` seeds (configs/rf_synthetic.py; for k set, data in a planted k-dim subspace of
R^d, configs/rf_subspace.py's data) and records

  recovery_rate    share of seeds with every row recovered (frac_recovered = 1)
  certified_rate   share of seeds whose run certified itself (metrics.certified)
  false_certified  seeds certified although a row was not recovered (must be 0)
  median_seconds   median wall time of a run

Methods: `default` (Adam + cosine decay + escalation on a plateau + the float64 precision
rung on uncertified runs, and for relu with more candidates than dimensions the sign quotient:
the shipped default), `plain` (the default on the plain projection loss, no sign quotient),
`previous` (the same without escalation, the rung or the quotient) and `paper`, the reference code's optimiser ported step for step
(`scripts/paper_baseline.py`: momentum SGD at a constant lr, relu back-propagated as leaky
relu, tol 1e-7, no rescue), its lr the blind choice per (activation, d) recorded in
results/paper_baseline.json, its budget 10x the steps the default took at the same point
(at least --max_steps). Records of an earlier port (lr 20, exact relu gradient, tol 1e-9, the
default's budget) are kept as method `paper_lr20_exact`. For k set, `search` is 'full' (candidates in R^d) or
'subspace' (candidates in the known subspace: random features have no first layer to
estimate it from, so the attacker is given the basis).

Results append to results/recovery_law.json (a point already there is skipped), and
results/recovery_law.{md,png} are re-rendered from the JSON each time (`--render_only`).
Presets: `--preset=full` is the issue's grid (d in {8, 16, 32}, p/dn 0.25..16, 20 seeds;
hours on 2 CPU cores); `--preset=reduced` is what a 2-core CPU finishes in minutes;
`--preset=in_n --n=N` the law in n at d = 16 (p/dn 0.5..10 with 1.25 and 1.5 near the
threshold), drawn as one curve per n in the png's last panel (`plain` rows dashed); `--ks`
picks the subspace rows' k. `--data=photo_patches` runs the full-space points on the bundled
photographs' patches (d = 3 image_size^2; their clustering and, per seed, which rows were missed
are recorded); `--work_dir=DIR` keeps each point's sweep there, saved every 5 minutes, so that a
point of hours (n = 500) stopped mid-way resumes when the same command runs again.

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
import matplotlib
matplotlib.use('Agg')
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
import numpy as np

from configs import rf_synthetic
import recon
from recon import metrics
from recon.runtime import io, machine
from scripts import paper_baseline

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
    c.attack.subspace = 'known' if pt['search'] == 'subspace' else 'none'
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


def relabel_old_paper(rec: Dict[str, Any]) -> Dict[str, Any]:
  """A `paper` record of the earlier port (no `port` field) becomes OLD_PAPER."""
  if rec['method'] == 'paper' and rec.get('port') != 'faithful':
    rec['method'] = OLD_PAPER
  return rec


def write_records(path: str, records: List[Dict[str, Any]]) -> None:
  """{"records": [...]} with one record per line (atomic, as `recon.runtime.io` writes)."""
  io.write_text(path, '{"records": [\n' + ',\n'.join(json.dumps(io.normalized(r))
                                                      for r in records) + '\n]}\n')


def with_pin_columns(rec: Dict[str, Any]) -> Dict[str, Any]:
  """Records written before rows were pinned only at tol held the any-loss test under the
  pinned names: move them to rows_within / within_wrong and derive the at-tol columns from
  the seed's status (converged = loss at tol)."""
  ps = rec.get('per_seed')
  if not isinstance(ps, dict) or 'rows_pinned' not in ps or 'rows_within' in ps:
    return rec
  ps['rows_within'], ps['within_wrong'] = ps['rows_pinned'], ps['pinned_wrong']
  at_tol = [s == 'converged' for s in ps['status']]
  ps['rows_pinned'] = [v if t else (None if v is None else 0)
                       for v, t in zip(ps['rows_within'], at_tol)]
  ps['pinned_wrong'] = [v if t else (None if v is None else 0)
                        for v, t in zip(ps['within_wrong'], at_tol)]
  rec['false_within_rows'] = int(sum(v or 0 for v in ps['within_wrong']))
  rec['false_pinned_rows'] = int(sum(v or 0 for v in ps['pinned_wrong']))
  return rec


def free_before_rung(r: Dict[str, Any]) -> Optional[int]:
  """Rows free by the blind row test when the precision rung took the run over (None: the
  rung did not look at it)."""
  info = r.get('polish') or {}
  if 'free_rows' in info:
    return int(info['free_rows'])
  within = (info.get('certificate_before') or {}).get('rows_within')
  return None if within is None else int(r['n_candidates']) - int(within)


def compact_seeds(per_seed) -> Dict[str, list]:
  """Per-seed details as columns ({field: [value per seed]}), floats to 3 significant digits
  (a list of per-seed dicts, the older format, is converted)."""
  if isinstance(per_seed, dict):
    return per_seed
  out: Dict[str, list] = {}
  for rec in per_seed:
    for k, v in rec.items():
      out.setdefault(k, []).append(float(f'{v:.3g}') if isinstance(v, float) else v)
  return out


def data_stats(pt: Dict[str, Any], seeds: int) -> Dict[str, list]:
  """Per seed, how clustered the training rows are (the ground truth, for the analysis only):
  rows with another row within the recovered threshold (relative distance 0.1) and within 0.2,
  rows with another row within 0.1 of their mirror image (-x_j near x_i: standardised patches
  come in near-antipodal pairs, bright against dark), the median nearest-neighbour distance,
  and the share of sum ||x_i||^2 in the top 5 singular directions."""
  out: Dict[str, list] = {'close_0p1': [], 'close_0p2': [], 'antipodal_0p1': [],
                          'median_nn': [], 'top5_energy': []}
  c = config_for(pt, 1, 1)
  for seed in range(pt.get('first_seed', 0), pt.get('first_seed', 0) + seeds):
    x = np.asarray(recon.load_data(c, seed)[0], np.float64)
    norms = np.linalg.norm(x, axis=1)[:, None]
    dist = np.linalg.norm(x[:, None] - x[None], axis=-1) / norms
    anti = np.linalg.norm(x[:, None] + x[None], axis=-1) / norms
    np.fill_diagonal(dist, np.inf)
    np.fill_diagonal(anti, np.inf)
    nn = dist.min(axis=1)
    sv2 = np.linalg.svd(x, compute_uv=False) ** 2
    out['close_0p1'].append(int((nn < 0.1).sum()))
    out['close_0p2'].append(int((nn < 0.2).sum()))
    out['antipodal_0p1'].append(int((anti.min(axis=1) < 0.1).sum()))
    out['median_nn'].append(float(f'{np.median(nn):.3g}'))
    out['top5_energy'].append(float(f'{sv2[:5].sum() / sv2.sum():.3g}'))
  return out


def miss_analysis(x_true: np.ndarray, x_hat: np.ndarray, threshold: float = 0.1) -> Dict[str, int]:
  """Which rows a run missed (ground truth, for the analysis only): recovered rows among those
  with another training row within `threshold` (clustered) and among the others; rows trapped
  at their mirror image (a candidate within the threshold of -x_i that is within the threshold
  of no training row: a candidate on an antipodal training row is that row, not a trap); and
  collapsed candidates (another candidate within the threshold and the same nearest training
  row: two candidates on one sample, not two on neighbouring samples)."""
  norms = np.linalg.norm(x_true, axis=1)
  rel = lambda a, b: np.linalg.norm(a[:, None] - b[None], axis=-1) / norms[:, None]  # noqa: E731
  ok = np.asarray(metrics.per_sample_errors(x_true, x_hat, sign_invariant=False)) < threshold
  nn = rel(x_true, x_true)
  np.fill_diagonal(nn, np.inf)
  close = nn.min(axis=1) < threshold
  on_a_row = rel(x_true, x_hat).min(axis=0) < threshold  # (m,) candidate j near some x_i
  trapped = (rel(x_true, -x_hat) < threshold) & ~on_a_row[None]  # (n, m)
  nearest = np.argmin(rel(x_true, x_hat), axis=0)  # (m,) each candidate's nearest row
  cand = np.linalg.norm(x_hat[:, None] - x_hat[None], axis=-1) / np.linalg.norm(
      x_hat, axis=1)[:, None]
  np.fill_diagonal(cand, np.inf)
  collapsed = ((cand < threshold) & (nearest[:, None] == nearest[None])).any(axis=1)
  return {'back_clustered': int(ok[close].sum()), 'clustered': int(close.sum()),
          'back_isolated': int(ok[~close].sum()), 'isolated': int((~close).sum()),
          'mirror_rows': int(trapped.any(axis=1).sum()),
          'collapsed_candidates': int(collapsed.sum())}


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
    misses = []
    if pt.get('data', DATA[0]) != DATA[0]:  # real data: which rows were missed, and how
      with np.load(os.path.join(workdir, 'sweep.npz')) as f:
        misses = [miss_analysis(f[f'x_true_{r["index"]}'], f[f'x_hat_{r["index"]}'])
                  for r in out['records']]
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
  if pt.get('data', DATA[0]) != DATA[0]:
    per_seed.update(data_stats(pt, seeds))
    per_seed.update({k: [m[k] for m in misses] for k in (misses[0] if misses else {})})
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


def width_at(rows: List[Dict[str, Any]], rate: float):
  """The smallest-p record from which on every larger record recovers >= rate, or None."""
  found = None
  for r in reversed(rows):
    if r['recovery_rate'] < rate:
      break
    found = r
  return found


SHARE_FLOOR = 0.01


def polished_cell(ps: Dict[str, list], i: int) -> str:
  """The misses table's rung column: rows replaced, 'none', or '-' (not applied / not recorded)."""
  rows = ps.get('polished', [None] * (i + 1))[i]
  if rows is None:
    return '-'
  loss = ps.get('polished_loss', [None] * (i + 1))[i]
  flips = ps.get('flipped', [None] * (i + 1))[i]
  text = (str(rows) if rows else 'none') + (f', {flips} flipped' if flips else '')
  return text + ('' if loss is None else f' (float64 loss {loss:.1g})')


def misses(records: List[Dict[str, Any]], floor: float) -> List[str]:
  """Markdown: every seed of a `default` point at p >= 4 dn that missed a row, with the
  smallest share of theta a training sample carries (ground truth, `metrics.sample_shares`),
  and the recovery rate over seeds whose every sample carries >= `floor`."""
  rows, kept, kept_ok = [], 0, 0
  for r in sorted(records, key=lambda r: (r['activation'], r['d'], r['k'] or 0, r['search'],
                                          r['p'])):
    ps = r.get('per_seed')
    if (r['method'] != 'default' or r['p_over_dn'] < 4 or not isinstance(ps, dict)
        or 'min_share' not in ps or r.get('data', DATA[0]) != DATA[0]):  # real data: own section
      continue
    for i, seed in enumerate(ps['seed']):
      share = ps['min_share'][i]
      if share is not None and share >= floor:
        kept += 1
        kept_ok += bool(ps['recovered'][i])
      if ps['recovered'][i]:
        continue
      pinned = ps.get('rows_within', ps['rows_pinned'])[i]
      rows.append(f'| {r["activation"]} | {data_label(r)} | {r["k"] or ""} | {r["search"]} | '
                  f'{r["p_over_dn"]:.3g} | {seed} | {ps["frac_recovered"][i]:.3g} | '
                  f'{ps["final_loss"][i]:.2g} | {"-" if share is None else f"{share:.1e}"} | '
                  f'{"-" if pinned is None else pinned} of {r["n"]} | '
                  f'{"yes" if ps["certified"][i] else "no"} | {polished_cell(ps, i)} |')
  if not rows and not kept:
    return []
  out = ['', '## Misses of the default above the threshold (p >= 4 dn)', '',
         'Every seed that left a row unrecovered, with the smallest share of theta a training '
         'sample carries, min_i |alpha_i| ||phi(x_i)|| / ||theta|| (theta = Phi^T alpha; '
         'computed from the ground truth for this analysis only, never used by the attack), and '
         'how many candidates the blind row test holds within the threshold at the loss '
         'reached (`row_within`).', '',
         '| activation | d | k | search | p/dn | seed | frac recovered | loss | min share | '
         'rows within | certified | rows replaced by the precision rung |',
         '|' + '---|' * 12] + (rows or ['| none |' + ' |' * 11])
  if kept:
    out += ['', f'Seeds whose every sample carries >= {floor:g} of theta: {kept_ok} of {kept} '
            f'recovered ({kept_ok / kept:.3f}).']
  return out


def rung_summary(records: List[Dict[str, Any]]) -> List[str]:
  """Markdown: what the precision rung (recon/certify/rung.py) did over the default's runs."""
  kept = replaced = ok = cert = 0
  for r in records:
    ps = r.get('per_seed')
    if r['method'] != 'default' or not isinstance(ps, dict) or 'polished' not in ps:
      continue
    flips = ps.get('flipped', [0] * len(ps['polished']))
    for i, rows in enumerate(ps['polished']):
      if rows is None:
        continue
      kept += 1
      if rows or flips[i]:
        replaced += 1
        ok += bool(ps['recovered'][i])
        cert += bool(ps['certified'][i])
  if not kept:
    return []
  return ['', f'Precision rung (`polish`, default method): a float64 polish kept on {kept} '
          f'uncertified runs; it flipped (relu) or replaced a row in {replaced}, of which {ok} '
          f'ended with every row recovered and {cert} certified.']


def on_accelerator(record: Dict[str, Any]) -> bool:
  """Whether a record ran on an accelerator (its `device` is not the CPU)."""
  return 'cpu' not in str(record.get('device', 'cpu'))


def law_in_n(records: List[Dict[str, Any]]) -> List[str]:
  """Markdown: the default's full-space rows at d = 16 on fresh seeds, one row per (activation,
  n), and the `plain` method's (relu without the sign quotient) as 'ACT, plain loss'; recovery
  (certified) per p/dn, then the cost: median wall seconds per seed, median steps,
  and the 1-min load average around the point (records that carry it)."""
  rows = [dict(r, activation=r['activation'] + ('' if r['method'] == 'default' else
                                                 ', plain loss'))
          for r in records if r['method'] in ('default', 'plain') and r['d'] == 16
          and r['k'] is None and r.get('first_seed', 0) >= 100
          and r.get('data', DATA[0]) == DATA[0]]
  ns = sorted({r['n'] for r in rows})
  if len(ns) < 2:
    return []
  ratios = sorted({round(r['p_over_dn'], 6) for r in rows if r['n'] > 8})
  ratios = [x for x in sorted({round(r['p_over_dn'], 6) for r in rows}) if x in ratios]
  pick = {(r['activation'], r['n'], round(r['p_over_dn'], 6)): r for r in rows}
  head = '| activation | n | seeds | ' + ' | '.join(f'{x:g}' for x in ratios) + ' |'
  rule = '|' + '---|' * (len(ratios) + 3)
  rate = lambda v: '0' if v == 0 else f'{v:.2f}'  # noqa: E731
  table, cost = [head, rule], [head.replace('| seeds ', '| load ', 1), rule]
  for act in sorted({r['activation'] for r in rows}):
    for n in ns:
      got = [pick.get((act, n, x)) for x in ratios]
      if not any(got):
        continue
      seeds = '/'.join(str(v) for v in sorted({r['seeds'] for r in got if r}))
      cells = ['–' if r is None else rate(r['recovery_rate']) if
               r['recovery_rate'] == r['certified_rate'] else
               f'{rate(r["recovery_rate"])} ({rate(r["certified_rate"])})' for r in got]
      table.append(f'| {act} | {n} | {seeds} | ' + ' | '.join(cells) + ' |')
      loads = [v for r in got if r and r.get('load') and not on_accelerator(r)
               for v in r['load']]
      load = f'{min(loads):.1f}–{max(loads):.1f}' if loads else '-'
      cost.append(f'| {act} | {n} | {load} | ' + ' | '.join(
          '–' if r is None else f'{r["median_seconds"]:.1f} s, {r["median_steps"]:.0f}'
          + (' †' if on_accelerator(r) else '') + (' ‡' if 'recertify_seconds' in r else '')
          for r in got) + ' |')
  accel = sorted({r['machine'] for r in rows if on_accelerator(r)})
  again = [r for r in rows if 'recertify_seconds' in r]
  return ['', '## The law in n (d = 16, default method, fresh seeds)', '',
          'Share of seeds with every row recovered (certified where it differs) against p/dn, '
          'one row per n (`--preset=in_n --n=N --first_seed=100`; n = 8 from the full '
          'preset). The counting limit is p = n(d + 1), p/dn = 1.06 at d = 16.', ''] + table + [
          '', 'Cost per point: wall seconds per seed (the vectorised call over its seeds) and '
          'median steps per seed; load: the 1-min load average before and after the point '
          '(CPU points).', ''] + cost + (
              ['', '† on ' + ' | '.join(accel) + ' (the others on the CPU that the Machine line '
               'names).'] if accel else []) + (
              ['', '‡ the certificate and the precision rung re-derived afterwards on the second '
               'machine named (`scripts/recertify_sweep.py`): ' + '; '.join(
                   f'{r["activation"]} n = {r["n"]}, {r["p_over_dn"]:g} dn: '
                   f'{r["recertify_seconds"]:.0f} s there' for r in again)
               + '; the seconds in the table are the descent machine\'s.'] if again else [])


def real_data(records: List[Dict[str, Any]]) -> List[str]:
  """Markdown: the points on photo patches, per seed (rows back, loss, how clustered the rows
  are: rows with another row within the recovered threshold, top-5 energy share)."""
  rows = [r for r in records if r.get('data', DATA[0]) != DATA[0]]
  if not rows:
    return []
  out = ['', '## Photo patches (real, correlated rows)', '',
         '`--data=photo_patches`: the bundled photographs\' patches block-averaged to d = 3 s^2, '
         'standardised and put on the sqrt(d)-sphere. Per seed: share of rows recovered, final '
         'loss, certified; then the rows\' clustering (ground truth, analysis only): rows with '
         'another training row within the recovered threshold (0.1 relative) and within 0.2, '
         'rows with another row within 0.1 of their mirror image (antipodal), the median '
         'nearest-neighbour distance, and the share of the rows\' energy in the top 5 of '
         'd singular directions.', '',
         '| activation | d | n | p/dn | seed | rows back | loss | steps / budget | certified | '
         'rows with a neighbour < 0.1 / < 0.2 | antipodal | median nn | top-5 energy | s / seed |',
         '|' + '---|' * 14]
  for r in sorted(rows, key=lambda r: (r['activation'], r['d'], r['n'], r['p'])):
    ps = r['per_seed']
    for i, seed in enumerate(ps['seed']):
      stat = lambda k: ps[k][i] if k in ps else '-'  # noqa: E731
      out.append(f'| {r["activation"]} | {r["d"]} | {r["n"]} | {r["p_over_dn"]:.3g} | {seed} | '
                 f'{ps["frac_recovered"][i]:.2f} | {ps["final_loss"][i]:.2g} | '
                 f'{ps["steps"][i]} / {r["max_steps"]} | '
                 f'{"yes" if ps["certified"][i] else "no"} | {stat("close_0p1")} / '
                 f'{stat("close_0p2")} | {stat("antipodal_0p1")} | {stat("median_nn")} | '
                 f'{stat("top5_energy")} | '
                 f'{r["median_seconds"]:.0f} |')
  same = lambda a, b: all(a[k] == b[k] for k in ('activation', 'd', 'n', 'p'))  # noqa: E731
  controls = [c for c in records if c.get('data', DATA[0]) == DATA[0] and c['k'] is None
              and c['method'] == 'default' and any(same(c, r) for r in rows)]
  if controls:
    out += ['', 'Sphere rows at the same (activation, d, n, p), the control:', '',
            '| activation | d | n | p/dn | seeds | rows back (per seed) | certified | steps / '
            'budget (median) | s / seed |', '|' + '---|' * 9]
    out += [f'| {c["activation"]} | {c["d"]} | {c["n"]} | {c["p_over_dn"]:.3g} | '
            f'{seed_cell(c)} | {", ".join(f"{v:.2f}" for v in c["per_seed"]["frac_recovered"])} '
            f'| {sum(c["per_seed"]["certified"])} of {c["seeds"]} | {c["median_steps"]:.0f} / '
            f'{c["max_steps"]} | {c["median_seconds"]:.0f} |' for c in controls]
  found = [(r, dict(zip(r['per_seed'], v)), '') for r in rows if 'mirror_rows' in r['per_seed']
           for v in zip(*r['per_seed'].values())]
  found += [(r, m, f' ({m["note"]})') for r in rows for m in r.get('reruns', [])]
  if found:
    out += ['', 'Which rows were missed (the candidates against the true rows; ground truth, '
            'analysis only): rows back among the clustered ones (another row within 0.1) and '
            'among the others, rows trapped at their mirror image (a candidate within 0.1 of '
            '-x on no training row), candidates with another candidate within 0.1 on the same '
            'nearest row (collapsed); - where the candidates were not kept.', '',
            '| activation | d | p/dn | seed | clustered rows back | other rows back | mirror rows | '
            'collapsed candidates |', '|' + '---|' * 8]
    dash = lambda v: '-' if v is None else v  # noqa: E731
    for r, m, note in found:
      out.append(f'| {r["activation"]} | {r["d"]} | {r["p_over_dn"]:.3g} | {m["seed"]}{note} | '
                 f'{m["back_clustered"]} of {m["clustered"]} | {m["back_isolated"]} of '
                 f'{m["isolated"]} | {dash(m.get("mirror_rows"))} | '
                 f'{dash(m.get("collapsed_candidates"))} |')
  return out


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
  pinned = [r for r in records if 'false_pinned_rows' in r and 'rows_within' in r['per_seed']]
  if pinned:
    count = lambda name: sum(sum(v or 0 for v in r['per_seed'][name]) for r in pinned)  # noqa: E731
    lines += ['', f'Rows the certificate pins one by one (`certificate.row_pinned`: loss at tol, '
              f'row radius below the threshold, also in runs not certified as a whole): '
              f'{count("rows_pinned")} pinned rows in {len(pinned)} points, of which '
              f'{sum(r["false_pinned_rows"] for r in pinned)} are not within the recovered '
              f'threshold of their sample. The same radius test at any loss (`row_within`, '
              f'evidence only): {count("rows_within")} rows, of which '
              f'{sum(r["false_within_rows"] for r in pinned)} are wrong.']
  lines += rung_summary(records)
  lines += law_in_n(records)
  lines += real_data(records)
  lines += misses(records, SHARE_FLOOR)
  lines += ['', '## Width needed for 95% recovery', '',
            'The smallest measured width from which on every larger measured width recovers '
            '>= 95% of seeds ("-": none does). Full space against d n; planted k-dim subspace '
            'against k n and d n.', '',
            '| method | activation | d | k | search | n | p/dn at 95% | p/kn at 95% | seeds |',
            '|---|---|---|---|---|---|---|---|---|']
  for key, rows in sorted(curves(records).items(),
                          key=lambda kv: (kv[0][3] is not None, kv[0][0], kv[0][1], kv[0][2],
                                          kv[0][3] or 0, kv[0][4], kv[0][5])):
    method, act, d, k, search, n = key
    at = width_at(rows, 0.95)
    dn = '-' if at is None else f'{at["p_over_dn"]:.3g}'
    kn = '' if k is None else ('-' if at is None else f'{at["p_over_kn"]:.3g}')
    lines.append(f'| {method} | {act} | {d} | {k or ""} | {search} | {n} | {dn} | {kn} | '
                 f'{min(r["seeds"] for r in rows)} |')
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
  fig.tight_layout()
  fig.savefig(out + '.png', dpi=110)
  plt.close(fig)


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
  for r in records:
    if 'per_seed' in r:
      r['per_seed'] = compact_seeds(r['per_seed'])
      with_pin_columns(r)
    relabel_old_paper(r)
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
