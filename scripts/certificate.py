"""The certificate's results (docs/certificate.md), one subcommand each:

  probes  results/certificate_probes.*: held-out settings (fresh seeds 300+), a certificate false
          when it holds while a sample is not recovered in the metric its claim names (`judge`)
  scale   results/certificate_scale.*: wall time and peak memory per Jacobian method and size,
          each (n, d, p, method) in a fresh process (its own ru_maxrss)
  truth   results/truth_certificate.*: the certificate at the TRUE rows (the most any attack on
          a victim can certify); records appended, a (data, dtype, seed) run again replaced

    python -m scripts.certificate probes [--preset=tiny --out=/tmp/probes]   # ~25 min
    python -m scripts.certificate scale [--sizes=100x16x6400 --methods=gram,dense]
    python -m scripts.certificate truth [--data=synthetic_sphere --seeds=300,301 | --workdirs=W]
    python -m scripts.certificate probes|truth --render_only
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from absl import logging
import jax
import jax.numpy as jnp
import numpy as np

from configs import rf_synthetic
import recon
from recon import metrics
from recon.certify import certificate, float64_loss, symmetry
from recon.models import features, random_features
from recon.runtime import io, machine
from scripts import common

# -- probes: held-out settings ------------------------------------------------------------------

ACTIVATIONS = ('relu', 'relu_tanh', 'gelu', 'tanh', 'softplus_tanh', 'quadratic')
DATA_KINDS = ('sphere', 'off_sphere', 'digits', 'faces', 'clustered')
DATA_CODE = {k: i for i, k in enumerate(DATA_KINDS)}  # the files' row seeds
PRESETS = {
    'default': dict(
        n=6, d=12, ratios=(1.5, 3.0, 10.0),
        sphere=dict(activations=ACTIVATIONS + ('sin', 'cubic'), seeds=8),
        # Files per activation (homogeneous ones: more, they are what the norm claim is about)
        # and seeds per file.
        off_sphere=dict(files_homogeneous=4, files_other=1, seeds=5),
        digits=dict(image_size=4, seeds=8),  # d = 16
        faces=dict(image_size=5, seeds=6),  # d = 25
        clustered=dict(files_homogeneous=2, files_other=1, seeds=5, spreads=(0.1, 0.2)),
        fewer=('relu_tanh', 'relu', 'tanh'), fewer_seeds=10, cert_seeds=20),
    'tiny': dict(
        n=3, d=4, ratios=(10.0,),
        sphere=dict(activations=('tanh',), seeds=1),
        off_sphere=dict(files_homogeneous=1, files_other=0, seeds=2, activations=('relu',)),
        digits=dict(image_size=2, seeds=1, activations=('quadratic',)),
        faces=dict(image_size=5, seeds=1, activations=('relu',)),
        clustered=dict(files_homogeneous=1, files_other=0, seeds=1, spreads=(0.2,),
                       activations=('relu',)),
        fewer=('relu_tanh',), fewer_seeds=1, cert_seeds=1),
}
FIRST_SEED = 300
TUNING_SEEDS = ('0-19 (the shipped attack: recovery_law); 0-4 (these probes\' sizes and '
                'running time)')
NORMS = (0.5, 1.5)  # off_sphere: row norms uniform in this range times sqrt(d)
CLUSTERS = 2  # clustered: clusters per training set
NEAR = 0.05  # relative distance of the near_duplicate and collapsed probes' close pair
MAX_STEPS = 20000


def claimed_symmetry(certified_up_to: str) -> Tuple[bool, bool]:
  """(sign_invariant, scale_invariant) of the metric a claim names (`Symmetry.certified_up_to`:
  '... the sign of each row', '... the norm of each row')."""
  return 'sign of each row' in certified_up_to, 'norm of each row' in certified_up_to


def judge(x_true, x_hat, certified: bool, certified_up_to: str,
          threshold: float = metrics.RECOVERED_THRESHOLD) -> Dict[str, Any]:
  """One candidate set scored in the metric its claim names: frac_recovered, the worst row, and
  `false` (certified with a row not recovered); a false one keeps every row's distance and
  norms. `frac_recovered_with_norm`: the same claim's metric without the norm's freedom."""
  x_true = np.asarray(x_true, np.float64).reshape(len(x_true), -1)
  x_hat = np.asarray(x_hat, np.float64).reshape(len(x_hat), -1)
  sign, scale = claimed_symmetry(certified_up_to)
  rec = metrics.reconstruction_metrics(x_true, x_hat, threshold, sign, scale)
  m = metrics.match(x_true, x_hat, sign, scale)
  matched = np.zeros(len(x_true), bool)
  matched[m['rows']] = True
  dist = m['dist'].min(axis=1)  # an uncovered row (m < n): its nearest candidate, never recovered
  dist[m['rows']] = m['dist'][m['rows'], m['cols']]
  missed = np.flatnonzero(~matched | ~(dist < threshold))
  out = dict(frac_recovered=float(rec['frac_recovered']), max_distance=float(dist.max()),
             worst_row=int(np.argmax(dist)), false=bool(certified and missed.size > 0),
             metric=dict(sign_invariant=sign, scale_invariant=scale))
  if scale:
    out['frac_recovered_with_norm'] = float(
        metrics.reconstruction_metrics(x_true, x_hat, threshold, sign, False)['frac_recovered'])
    out['norm_error_median'] = float(rec['norm_error_median'])
  if out['false']:
    cols = np.argmin(m['dist'], axis=1)
    cols[m['rows']] = m['cols']
    d = x_true.shape[1]
    out.update(missed_rows=missed.tolist(), distances=dist.tolist(),
               row_norms_over_sqrt_d=(np.linalg.norm(x_true, axis=1) / np.sqrt(d)).tolist(),
               candidate_norms_over_sqrt_d=(np.linalg.norm(x_hat[cols], axis=1)
                                            / np.sqrt(d)).tolist())
  return out


def claim_wider(activation: str, certified_up_to: str) -> bool:
  """True when a claim frees a symmetry the activation's features do not have (the metric
  would then be more lenient than the truth allows)."""
  sym = symmetry.of_activation(activation)
  sign, scale = claimed_symmetry(certified_up_to)
  return (sign and not sym.sign_invariant) or (scale and not sym.scale_invariant)


def sweep_config(activation: str, n: int, d: int, p: int, m: int, seeds,
                 ratios: Optional[Sequence[float]] = None,
                 data: Optional[Dict[str, Any]] = None) -> Any:
  """The shipped random-features attack at one setting, its seeds (and widths p = r dn, r in
  `ratios`) as one vectorised sweep."""
  c = rf_synthetic.get_config()
  c.update_from_flattened_dict({
      'data.n': n, 'data.d': d, 'victim.p': p, 'victim.activation': activation,
      'attack.max_steps': MAX_STEPS, 'attack.n_candidates': m,
      'run.log_every_seconds': 1e9, 'run.checkpoint_every_seconds': 0.0, **(data or {})})
  c.sweep.seed = tuple(seeds)
  if ratios is not None:
    c.sweep.victim.p_over_dn = tuple(float(r) for r in ratios)
  return c


def attack_probe(kind: str, activation: str, n: int, d: int, p: int, m: int, seeds,
                 ratios: Optional[Sequence[float]] = None, data: Optional[Dict[str, Any]] = None,
                 data_kind: str = 'sphere', extra: Optional[Dict[str, Any]] = None
                 ) -> Dict[str, Any]:
  """One attack-level probe: per run (seed x width), the certificate and recovery in the metric
  its claim names (`judge`)."""
  t = time.time()
  try:
    records, arrays, device = _sweep(sweep_config(activation, n, d, p, m, seeds, ratios, data))
    crashed = []
  except recon.RunError as e:  # one point's crash ends a sweep: run its seeds one by one
    print(f'  sweep {kind} {activation} seeds {_seed_ranges(seeds)} crashed ({e}); '
          'running its seeds one by one', flush=True)
    records, arrays, crashed, device = [], {}, [], None
    for seed in seeds:
      try:
        r1, a1, device = _sweep(sweep_config(activation, n, d, p, m, [seed], ratios, data))
      except recon.RunError as e1:
        crashed.append(dict(seed=int(seed), error=str(e1)[:300]))
        continue
      base = len(arrays)
      for r in r1:
        arrays[base + r['index']] = a1[r['index']]
        records.append(dict(r, index=base + r['index']))
  seconds = time.time() - t
  per_seed, norms = [], []
  for r in records:
    x_true, x_hat = arrays[r['index']]
    j = judge(x_true, x_hat, bool(r['certified']), r['certified_up_to'])
    norms.append(np.linalg.norm(x_true.reshape(len(x_true), -1), axis=1) / np.sqrt(d))
    width = (int(round(r['p_over_dn'] * d * n)) if 'p_over_dn' in r else p)  # sweep._width
    s = dict(seed=int(r['seed']), p=max(1, width), certified=bool(r['certified']),
             candidates_certified=bool(r['candidates_certified']),
             certified_up_to=r['certified_up_to'], final_loss=float(r['final_loss']),
             frac_recovered_sweep_record=float(r['frac_recovered']),
             claim_wider=claim_wider(activation, r['certified_up_to']), **j)
    if 'p_over_dn' in r:
      s['p_over_dn'] = float(r['p_over_dn'])
    if not s['certified'] and r['certificate'].get('reasons'):
      s['reason'] = str(r['certificate']['reasons'][0])[:160]
    per_seed.append(s)
  norms = np.concatenate(norms) if norms else np.ones(1)
  ups = sorted({s['certified_up_to'] for s in per_seed})
  head = dict(level='attack', probe_class='a' if m == n else 'b', kind=kind, data=data_kind,
              activation=activation, homogeneous=symmetry.of_activation(activation).scale_invariant,
              n=n, d=d, p=p if ratios is None else None,
              p_over_dn=None if ratios is None else [float(r) for r in ratios],
              n_candidates=m, certified_up_to=' / '.join(ups),
              row_norm_over_sqrt_d=[float(norms.min()), float(norms.max())],
              seconds=seconds, device=device, crashed_seeds=crashed, **(extra or {}))
  return _summarise(head, per_seed)


def _sweep(config) -> Tuple[List[Dict[str, Any]], Dict[int, Tuple[np.ndarray, np.ndarray]], str]:
  """Runs one sweep: its records, {index: (true rows, candidates)} and its device."""
  with tempfile.TemporaryDirectory() as workdir:
    out = recon.run(config, os.path.join(workdir, 's')).summary
    rows = np.load(os.path.join(workdir, 's', 'sweep.npz'))
    arrays = {r['index']: (rows[f'x_true_{r["index"]}'], rows[f'x_hat_{r["index"]}'])
              for r in out['records']}
  return out['records'], arrays, out['device']


def _truth(key, n: int, d: int, p: int, activation: str, duplicate: bool):
  kx, kv, ky = jax.random.split(key, 3)
  x = jax.random.normal(kx, (n, d))
  x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * jnp.sqrt(d)
  if duplicate:
    x = x.at[n - 1].set(x[0])
  v = features.random_weights(kv, p, d)
  ff = lambda z: features.rf_features(v, z, activation)  # noqa: E731
  return x, ff, jax.random.normal(ky, (n,))


def _near(key, x0):
  """A point at relative distance ~NEAR from x0 on its sphere (a random tangent direction)."""
  u = jax.random.normal(key, x0.shape)
  u = u - (u @ x0) / (x0 @ x0) * x0
  z = x0 + NEAR * jnp.linalg.norm(x0) * u / jnp.linalg.norm(u)
  return z / jnp.linalg.norm(z) * jnp.linalg.norm(x0)


def certificate_probe(kind: str, activation: str, n: int, d: int, p: int,
                      seeds) -> Dict[str, Any]:
  """Certificate-level probes on constructed candidate sets (no attack run)."""
  per_seed = []
  sym = symmetry.of_activation(activation)
  for seed in seeds:
    x, ff, y = _truth(jax.random.PRNGKey(seed), n, d, p, activation, kind.startswith('dup'))
    near = _near(jax.random.fold_in(jax.random.PRNGKey(seed), 1), x[0])
    if kind == 'near_duplicate':
      x = x.at[1].set(near)
    phi = ff(x)
    if kind in ('invisible', 'collapsed'):
      # Sample n-1's label is the others' prediction, so theta carries it at ~rounding level.
      theta_rest = random_features.min_norm_solution(phi[:-1], y[:-1])
      y = y.at[-1].set(phi[-1] @ theta_rest)
      x_hat = x[:-1] if kind == 'invisible' else x.at[-1].set(near)
    elif kind == 'duplicate_m_n_minus_1':
      x_hat = x[:-1]
    else:  # duplicate_m_n: the set with its duplicate; near_duplicate: the set itself
      x_hat = x
    theta = random_features.min_norm_solution(phi, y)
    with jax.enable_x64(True):  # the float64 loss the precision rung hands the certificate
      loss = float64_loss.loss64(ff, x_hat, theta)
    cert = certificate.certify(final_loss=loss, tol=1e-9, x_hat=np.asarray(x_hat), p=p,
                               activation=activation, n_known=n, feature_fn=ff, theta=theta)
    j = judge(np.asarray(x), np.asarray(x_hat), bool(cert['certified']),
              cert['certified_up_to'])
    share = metrics.sample_shares(np.asarray(phi), np.asarray(theta))
    per_seed.append(dict(seed=int(seed), certified=bool(cert['certified']),
                         candidates_certified=bool(cert['candidates_certified']),
                         frac_recovered=j['frac_recovered'], false=j['false'],
                         final_loss=loss,
                         min_share=float(share.min()),
                         unseen_share=cert['evidence'].get('unseen_share')))
  return _summarise(dict(level='certificate', probe_class='b', kind=kind, data='sphere',
                         activation=activation, homogeneous=sym.scale_invariant, n=n, d=d,
                         p=p, n_candidates=int(len(x_hat)),
                         certified_up_to=sym.certified_up_to), per_seed)


def _summarise(head: Dict[str, Any], per_seed: List[Dict[str, Any]]) -> Dict[str, Any]:
  certified = [s['certified'] for s in per_seed]
  recovered = [s['frac_recovered'] == 1.0 for s in per_seed]
  false = [s.get('false', c and not r) for s, c, r in zip(per_seed, certified, recovered)]
  return dict(head, seeds=sorted({s['seed'] for s in per_seed}), runs=len(per_seed),
              certified=int(sum(certified)),
              candidates_certified=int(sum(s['candidates_certified'] for s in per_seed)),
              recovered=int(sum(recovered)),
              false_certified=int(sum(false)),
              claims_wider=int(sum(s.get('claim_wider', False) for s in per_seed)),
              crashed=len(head.get('crashed_seeds') or []), per_seed=per_seed)


def off_sphere_rows(rng: np.random.Generator, n: int, d: int) -> np.ndarray:
  """n rows, directions uniform, norms uniform in NORMS * sqrt(d)."""
  x = rng.normal(size=(n, d))
  x /= np.linalg.norm(x, axis=1, keepdims=True)
  return x * (np.sqrt(d) * rng.uniform(*NORMS, size=(n, 1)))


def clustered_rows(rng: np.random.Generator, n: int, d: int, spread: float) -> np.ndarray:
  """n rows on the sqrt(d) sphere in CLUSTERS clusters: each row a tangent step of relative
  length `spread` from its cluster's centre, put back on the sphere."""
  centres = rng.normal(size=(CLUSTERS, d))
  centres /= np.linalg.norm(centres, axis=1, keepdims=True)
  rows = []
  for i in range(n):
    c = centres[i % CLUSTERS]
    u = rng.normal(size=d)
    u -= (u @ c) * c
    z = c + spread * u / np.linalg.norm(u)
    rows.append(z / np.linalg.norm(z))
  return np.asarray(rows) * np.sqrt(d)


def write_file(path: str, x: np.ndarray, rng: np.random.Generator) -> None:
  """An auditor's data file: rows and labels y = x g + 0.5 eps (as `synthetic_sphere`)."""
  g = rng.normal(size=x.shape[1]) / np.sqrt(x.shape[1])
  np.savez(path, x=x.astype(np.float32),
           y=(x @ g + 0.5 * rng.normal(size=len(x))).astype(np.float32))


def _seed_list(first: int, count: int) -> List[int]:
  return list(range(first, first + count))


def attack_jobs(preset: Dict[str, Any], first_seed: int, files_dir: str) -> List[Dict[str, Any]]:
  """Kind (a)'s probes as attack_probe keyword arguments (data files written to files_dir)."""
  n, d, ratios = preset['n'], preset['d'], preset['ratios']
  jobs = []

  def job(kind, act, dd, seeds, data=None, extra=None):
    jobs.append(dict(kind=kind, activation=act, n=n, d=dd, p=int(ratios[-1] * dd * n), m=n,
                     seeds=seeds, ratios=ratios, data=data, data_kind=kind, extra=extra))

  spec = preset['sphere']
  for act in spec['activations']:
    job('sphere', act, d, _seed_list(first_seed, spec['seeds']))
  for kind in ('off_sphere', 'clustered'):
    spec = preset[kind]
    for act in spec.get('activations', ACTIVATIONS):
      homogeneous = symmetry.of_activation(act).scale_invariant
      for f in range(spec['files_homogeneous'] if homogeneous else spec['files_other']):
        data_seed = [first_seed, DATA_CODE[kind], f]
        rng = np.random.default_rng(data_seed)
        extra = dict(data_seed=data_seed)
        if kind == 'off_sphere':
          x = off_sphere_rows(rng, n, d)
        else:
          spread = spec['spreads'][f % len(spec['spreads'])]
          x = clustered_rows(rng, n, d, spread)
          extra['spread'] = spread
        path = os.path.join(files_dir, f'{kind}_{f}.npz')
        if not os.path.exists(path):
          write_file(path, x, rng)
        job(kind, act, d, _seed_list(first_seed + f * spec['seeds'], spec['seeds']),
            {'data.name': 'file', 'data.path': path, 'data.preprocess': 'none'}, extra)
  for kind, name in (('digits', 'digits'), ('faces', 'lfw_faces')):
    spec = preset[kind]
    size = spec['image_size']
    for act in spec.get('activations', ACTIVATIONS):
      job(kind, act, size * size, _seed_list(first_seed, spec['seeds']),
          {'data.name': name, 'data.image_size': size, 'data.preprocess': 'standardize'},
          dict(image_size=size))
  return jobs


def run_all(preset: Dict[str, Any], first_seed: int = FIRST_SEED) -> List[Dict[str, Any]]:
  n, d = preset['n'], preset['d']
  p = 10 * d * n
  records = []
  with tempfile.TemporaryDirectory() as files_dir:
    jobs = attack_jobs(preset, first_seed, files_dir)
    jobs += [dict(kind='fewer', activation=a, n=n, d=d, p=p, m=n - 1,
                  seeds=_seed_list(first_seed, preset['fewer_seeds']))
             for a in preset['fewer']]
    for i, job in enumerate(jobs):
      records.append(attack_probe(**job))
      r = records[-1]
      print(f'[{i + 1}/{len(jobs)}] ({r["probe_class"]}) {r["data"]} {r["activation"]} '
            f'm={r["n_candidates"]}: certified {r["certified"]}/{r["runs"]}, recovered '
            f'{r["recovered"]}, false {r["false_certified"]} ({r["seconds"]:.0f} s)', flush=True)
  cert_seeds = _seed_list(first_seed, preset['cert_seeds'])
  for kind in ('invisible', 'duplicate_m_n_minus_1', 'duplicate_m_n'):
    records.append(certificate_probe(kind, 'relu_tanh', n, d, p, cert_seeds))
  for kind in ('near_duplicate', 'collapsed'):
    for act in preset['fewer']:  # relu-like and odd: how close pairs are pinned differs
      records.append(certificate_probe(kind, act, n, d, p, cert_seeds))
  return records


def _seed_ranges(seeds: Sequence[int]) -> str:
  seeds, out = sorted(set(seeds)), []
  for s in seeds:
    if out and s == out[-1][1] + 1:
      out[-1][1] = s
    else:
      out.append([s, s])
  return ', '.join(f'{a}-{b}' if b > a else f'{a}' for a, b in out)


def _totals(recs: List[Dict[str, Any]]) -> Dict[str, int]:
  return {k: int(sum(r[k] for r in recs))
          for k in ('runs', 'certified', 'recovered', 'false_certified', 'claims_wider',
                    'crashed')}


def by_setting(records: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
  """Kind (a) summed per (data, activation), in the order met."""
  out: Dict[Tuple[str, str], Dict[str, Any]] = {}
  for r in records:
    if r['probe_class'] != 'a':
      continue
    key = (r['data'], r['activation'])
    row = out.setdefault(key, dict(data=r['data'], activation=r['activation'],
                                   homogeneous=r['homogeneous'], d=r['d'], sweeps=0,
                                   certified_up_to=set(), norms=[np.inf, -np.inf],
                                   **{k: 0 for k in _totals([])}))
    row['sweeps'] += 1
    row['certified_up_to'].add(r['certified_up_to'])
    row['norms'] = [min(row['norms'][0], r['row_norm_over_sqrt_d'][0]),
                    max(row['norms'][1], r['row_norm_over_sqrt_d'][1])]
    for k, v in _totals([r]).items():
      row[k] += v
  rows = list(out.values())
  for row in rows:
    row['certified_up_to'] = ' / '.join(sorted(row['certified_up_to']))
  return rows


def document(records: List[Dict[str, Any]], preset: str = 'default',
             wall_seconds: Optional[float] = None) -> Dict[str, Any]:
  a = [r for r in records if r['probe_class'] == 'a']
  b = [r for r in records if r['probe_class'] == 'b']
  hard = [r for r in a if r['homogeneous'] and r['data'] in ('off_sphere', 'digits', 'faces')]
  seeds = [s for r in records for s in r['seeds']]
  return dict(
      machine=machine.describe(), preset=preset, wall_seconds=wall_seconds,
      seeds=_seed_ranges(seeds), tuning_seeds=TUNING_SEEDS,
      data_seeds=[r['data_seed'] for r in a if 'data_seed' in r],
      norms=list(NORMS), threshold=metrics.RECOVERED_THRESHOLD,
      runs=sum(r['runs'] for r in records),
      attack_runs=sum(r['runs'] for r in records if r['level'] == 'attack'),
      false_certified=sum(r['false_certified'] for r in records),
      kind_a=_totals(a), kind_b=_totals(b),
      kind_a_homogeneous_off_sphere_or_images=_totals(hard),
      by_setting=by_setting(records), records=records)


def _norms(pair) -> str:
  return f'{pair[0]:.2f}-{pair[1]:.2f}'


def render_probes(doc: Dict[str, Any], out: str) -> None:
  a, b, hard = doc['kind_a'], doc['kind_b'], doc['kind_a_homogeneous_off_sphere_or_images']
  false = [f"- {r['data']} {r['kind']} {r['activation']} seed {s['seed']}: up to "
           f"{s.get('certified_up_to', r['certified_up_to'])}, rows {s.get('missed_rows')} at "
           f"{s.get('distances')}" for r in doc['records'] for s in r['per_seed'] if s.get('false')]
  io.write_text(out + '.md', common.page(
      'Certificate probes: held-out settings, fresh seeds',
      f"Machine: {doc['machine']}; preset {doc['preset']}. Probe seeds {doc['seeds']} (fresh); "
      f"tuning seeds {doc['tuning_seeds']}. A certificate is false when it holds while a sample "
      f"is not recovered (relative error >= {doc['threshold']}) in the metric its own claim names "
      f"(`certified_up_to`). Kind (a), attack-produced sets with m = n: {a['false_certified']} "
      f"false in {a['runs']} ({a['certified']} certified, {a['recovered']} recovered); of them "
      f"homogeneous off the sphere or on images: {hard['false_certified']} false in "
      f"{hard['runs']}. Claims wider than the symmetry: {a['claims_wider']}; crashed seeds: "
      f"{a['crashed']}. Kind (b), structural checks: {b['false_certified']} false in "
      f"{b['runs']}.",
      '## Kind (a) per data and activation',
      common.table(['data', 'activation', 'd', 'sweeps', 'runs', 'certified', 'recovered',
                    'false certified', '‖x‖/√d', 'certified up to'],
                   [[r['data'], r['activation'], r['d'], r['sweeps'], r['runs'], r['certified'],
                     r['recovered'], r['false_certified'], _norms(r['norms']),
                     r['certified_up_to']] for r in by_setting(doc['records'])]),
      '## Every probe',
      common.table(['class', 'level', 'probe', 'activation', 'n', 'm', 'd', 'p or p/dn', 'runs',
                    'certified', 'recovered', 'false certified', 'seeds'],
                   [[r['probe_class'], r['level'], r['kind'], r['activation'], r['n'],
                     r['n_candidates'], r['d'], r['p'] if r.get('p_over_dn') is None else
                     '/'.join(f'{x:g}' for x in r['p_over_dn']), r['runs'], r['certified'],
                     r['recovered'], r['false_certified'], _seed_ranges(r['seeds'])]
                    for r in doc['records']]),
      '## False certificates\n\n' + ('\n'.join(false) or 'none')))


# -- scale: the certificate's cost as the problem grows ----------------------------------------

def _rss_mb() -> float:
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def scale_one(n: int, d: int, p: int, method: str, feature_kind: str, noise: float,
            seed: int, tol: float, attack_tol: float) -> Dict[str, Any]:
  kx, kv, ky, kn = jax.random.split(jax.random.PRNGKey(seed), 4)
  x = jax.random.normal(kx, (n, d))
  x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * jnp.sqrt(d)
  y = jax.random.normal(ky, (n,))
  if feature_kind == 'lean':
    fmap = features.rf_feature_map_lean(kv, 'relu_tanh', p, 4096, jnp.float32)
  else:
    fmap = features.rf_feature_map(features.random_weights(kv, p, d), 'relu_tanh')
  theta = random_features.min_norm_solution(fmap(x), y)
  x_hat = x + noise * jnp.linalg.norm(x[0]) * jax.random.normal(kn, x.shape) / jnp.sqrt(d)
  x_hat = np.asarray(x_hat / jnp.linalg.norm(x_hat, axis=1, keepdims=True) * jnp.sqrt(d))
  with jax.enable_x64(True):
    loss = float64_loss.loss64(fmap, x_hat, theta)
  base = _rss_mb()
  t0 = time.time()
  cert = certificate.certify(final_loss=loss, tol=tol, x_hat=x_hat, p=p,
                             activation='relu_tanh', n_known=n, feature_fn=fmap, theta=theta,
                             jacobian_method=method)
  seconds = time.time() - t0
  ev = cert['evidence']
  return {'n': n, 'd': d, 'p': p, 'p_over_dn': p / (d * n), 'method': method,
          'method_used': ev.get('jacobian_method'), 'features': feature_kind,
          'jacobian': ev['jacobian'], 'seconds': round(seconds, 2),
          'peak_rss_mb': round(_rss_mb(), 1), 'baseline_rss_mb': round(base, 1),
          'dense_jacobian_entries': p * n * d, 'loss': loss, 'certified': cert['certified'],
          'tol': tol, 'pin_radius': ev.get('pin_radius'),
          # The radius scales as sqrt(max(L, tol)): the same spectrum at the attack's tol.
          'attack_tol': attack_tol,
          'pin_radius_at_attack_tol': None if ev.get('pin_radius') is None else
          ev['pin_radius'] * float(np.sqrt(max(loss, attack_tol) / max(loss, tol))),
          'rows_pinned': ev.get('rows_pinned'),
          'row_pin_radius_max': max(ev['row_pin_radius']) if 'row_pin_radius' in ev else None,
          'row_radius_kind': ev.get('row_radius_kind'),
          'sigma_ratio': ev.get('jacobian_sigma_ratio'), 'rank': ev.get('jacobian_rank'),
          'full_rank': ev.get('jacobian_full_rank'),
          'eigensolver_iterations': ev.get('eigensolver', {}).get('iterations'),
          'reasons': cert['reasons']}


def scale_markdown(doc: Dict[str, Any]) -> str:
  return common.page(
      'The certificate at scale',
      f'Machine: {doc["machine"]}; load {", ".join(f"{v:.1f}" for v in doc["load_average"])}. '
      f'Command: `{doc["command"]}`. relu_tanh random features, float32, seed {doc["seed"]}; '
      f'candidates = the true rows plus relative noise {doc["noise"]:g}; the certificate at tol '
      f'{doc["tol"]:g}, its pin radius also at the attack\'s tol {doc["attack_tol"]:g}. Peak = '
      'the process\'s peak RSS, "before" = the RSS just before the certificate.',
      common.table(['n', 'd', 'p', 'p/dn', 'features', 'method', 'wall s', 'peak MB',
                    'before MB', 'certified', 'pin radius', 'at attack tol', 'max row radius',
                    'rows pinned', 'sigma ratio', 'rank'],
                   [[r['n'], r['d'], r['p'], r['p_over_dn'], r['features'],
                     r['method_used'] or r['jacobian'], r['seconds'], round(r['peak_rss_mb']),
                     round(r['baseline_rss_mb']), r['certified'], r['pin_radius'],
                     r['pin_radius_at_attack_tol'], r['row_pin_radius_max'], r['rows_pinned'],
                     r['sigma_ratio'], f"{r['rank']} of {r['full_rank']}"] for r in doc['rows']]))


# -- truth: the certificate at the true training rows ------------------------------------------

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


def truth_record(data: str, seed: int, dtype: str, workdir: str) -> dict:
  t0 = time.time()
  out = recon.truth_certificate(workdir)
  return {'data': data, 'seed': seed, 'dtype': dtype, 'seconds': round(time.time() - t0, 1),
          'load': list(os.getloadavg()), **out}


def _judged(j: dict) -> list:
  worst = (j.get('least_pinned') or [{}])[0]
  return [j['certified'], j['pin_radius'], j['rows_pinned'],
          f"row {worst['row']}: {worst['radius']:.2g} (share rank {worst['share_rank']})"
          if worst else '-']


def render_truth(out: str) -> None:
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


def run_probes(args) -> None:
  logging.set_verbosity(logging.WARNING)
  path = args.out + '.json'
  if args.render_only:
    doc = io.read_json(path)
  else:
    recon.setup_process()  # the CLI's process setup: CPU buffers, compile cache
    t = time.time()
    doc = document(run_all(PRESETS[args.preset], args.first_seed), args.preset, time.time() - t)
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    io.write_text(path, json.dumps(io.normalized(doc), indent=1) + '\n')
  render_probes(doc, args.out)
  a = doc['kind_a']
  print(f'kind (a): {a["false_certified"]} false certificates in {a["runs"]} probes; '
        f'{doc["false_certified"]} false in all {doc["runs"]} -> {path}')


def run_scale(args) -> None:
  if args.one:
    n, d, p, method = args.one.split('x', 3)
    print(json.dumps(scale_one(int(n), int(d), int(p), method, args.features, args.noise,
                               args.seed, args.tol, args.attack_tol)))
    return
  rows: List[Dict[str, Any]] = []
  for spec in args.sizes.split(','):
    size, *rest = spec.split(':')  # n x d x p[:methods[:features]], overriding the flags
    methods = rest[0].split('+') if rest else args.methods.split(',')
    kinds = rest[1].split('+') if len(rest) > 1 else args.features.split(',')
    for method, kind in [(m, k) for k in kinds for m in methods]:
      cmd = [sys.executable, '-m', 'scripts.certificate', 'scale', f'--one={size}x{method}',
             f'--features={kind}', f'--noise={args.noise}', f'--seed={args.seed}',
             f'--tol={args.tol}', f'--attack_tol={args.attack_tol}']
      done = subprocess.run(cmd, capture_output=True, text=True)
      if done.returncode:
        raise RuntimeError(f'{" ".join(cmd)} failed:\n{done.stderr[-3000:]}')
      rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
      print(json.dumps(rows[-1]), flush=True)
  doc = {'machine': machine.describe(), 'load_average': os.getloadavg(), 'seed': args.seed,
         'noise': args.noise, 'tol': args.tol, 'attack_tol': args.attack_tol,
         'command': common.command(), 'rows': rows}
  common.save(args.out, doc, scale_markdown(doc))


def run_truth(args) -> None:
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
      todo = [(args.data, s, args.dtype,
               os.path.join(args.runs_dir, f'{args.data}_{args.dtype}_s{s}'))
              for s in common.ints(args.seeds)]
    for data, seed, dtype, workdir in todo:
      if not args.workdirs:
        recon.run(victim_config(data, seed, dtype, size), workdir)
      rec = truth_record(data, seed, dtype, workdir)
      doc = common.load(args.out + '.json', {'what': 'the certificate at the true training rows',
                                              'records': []})
      doc['machine'] = machine.describe()
      common.upsert(doc['records'], rec, lambda r: (r['data'], r['dtype'], r['seed']))
      io.write_json(args.out + '.json', doc)
      render_truth(args.out)
      print(f"{data} {dtype} seed {seed}: certifiable {rec['certifiable']} "
            f"(pin radius {rec['attack']['pin_radius']:.2g} at {rec['attack']['tol']:.2g}, "
            f"{rec['polished']['pin_radius']:.2g} at the level "
            f"{rec['polished']['radius_loss']:.2g})", flush=True)
  render_truth(args.out)


def main(argv=None) -> None:
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  sub = ap.add_subparsers(dest='part', required=True)
  pr = sub.add_parser('probes')
  pr.add_argument('--preset', default='default', choices=sorted(PRESETS))
  pr.add_argument('--first_seed', type=int, default=FIRST_SEED, help='fresh seeds only')
  pr.add_argument('--out', default='results/certificate_probes', help='path without suffix')
  pr.add_argument('--render_only', action='store_true')
  sc = sub.add_parser('scale')
  sc.add_argument('--sizes', default='100x16x6400:auto+dense+matrix_free:dense,'
                  '100x48x48000:auto:dense+lean',
                  help="n x d x p[:methods[:features]] ('+'-separated), comma-separated")
  sc.add_argument('--methods', default='auto', help='auto | dense | gram | matrix_free, ...')
  sc.add_argument('--features', default='dense', help='dense | lean (V regenerated), ...')
  sc.add_argument('--noise', type=float, default=1e-7, help='relative noise on the true rows')
  sc.add_argument('--tol', type=float, default=1e-12, help="the certificate's tol "
                  '(attack.polish.tol: what a float64-polished set is certified against)')
  sc.add_argument('--attack_tol', type=float, default=1e-9, help='pin radius also at this tol')
  sc.add_argument('--seed', type=int, default=0)
  sc.add_argument('--out', default='results/certificate_scale')
  sc.add_argument('--one', default='', help='internal: one n x d x p x method, JSON printed')
  tr = sub.add_parser('truth')
  tr.add_argument('--data', default='photo_patches', choices=tuple(SIZES))
  tr.add_argument('--seeds', default='100,101,102,1000')
  tr.add_argument('--dtype', default='float32', choices=('float32', 'float64'))
  tr.add_argument('--tiny', action='store_true', help='n = 8 at the same d and p / dn')
  tr.add_argument('--out', default=os.path.join('results', 'truth_certificate'))
  tr.add_argument('--runs_dir', default=os.path.join('results', 'runs', 'truth_certificate'))
  tr.add_argument('--workdirs', default='', help='finished random-features runs, comma-separated')
  tr.add_argument('--render_only', action='store_true')
  args = ap.parse_args(argv)
  {'probes': run_probes, 'scale': run_scale, 'truth': run_truth}[args.part](args)


if __name__ == '__main__':
  main()
