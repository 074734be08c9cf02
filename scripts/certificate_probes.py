"""Held-out probes of the blind certificate: settings the certificate was not designed on.

A certificate is false when it holds while a training sample is not recovered (relative
distance >= `metrics.RECOVERED_THRESHOLD`) in the metric its own claim names (`certified_up_to`:
order, each row's sign, each row's norm; `recon.certify.symmetry`); `judge` scores the true rows
against the candidates in exactly that metric. Two classes of probe:

  (a) attack-produced sets with m = n (the only kind that can be false): the shipped attack
      (configs/rf_synthetic.py), one sweep per probe over fresh seeds x widths near and above
      the counting threshold, on rows on the sphere, off it (a data file, norms in NORMS),
      digits, faces or in CLUSTERS tight clusters; for relu, relu_tanh, gelu, tanh,
      softplus_tanh and quadratic (relu and quadratic are homogeneous: certified up to norm).
  (b) structural refusals and certificate-level checks, which must be said: fewer candidates
      than samples, an invisible sample, a duplicate, a near duplicate, a collapsed pair.

false_certified and claims_wider (a claim wider than the activation's symmetry) must be 0.
Seeds from --first_seed (300) are fresh (the attack was tuned on 0-19, these sizes on 0-4).
Results: results/certificate_probes.{json,md} (--render_only re-renders the md).

    python -m scripts.certificate_probes            # ~25 min on 2 CPU cores
    python -m scripts.certificate_probes --preset=tiny --out=/tmp/probes
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from typing import Any, Dict, List, Optional, Sequence, Tuple

from absl import app, flags, logging
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
FLAGS = flags.FLAGS


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


def render(doc: Dict[str, Any], out: str) -> None:
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


def define_flags() -> None:
  flags.DEFINE_enum('preset', 'default', sorted(PRESETS), 'Probe sizes.')
  flags.DEFINE_integer('first_seed', FIRST_SEED, 'The first probe seed (fresh seeds only).')
  flags.DEFINE_string('out', 'results/certificate_probes', 'Output path without suffix.')
  flags.DEFINE_bool('render_only', False, 'Only re-render the md from the JSON.')


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  recon.setup_process()  # the CLI's process setup: CPU buffers, compile cache
  path = FLAGS.out + '.json'
  if FLAGS.render_only:
    doc = io.read_json(path)
  else:
    t = time.time()
    records = run_all(PRESETS[FLAGS.preset], FLAGS.first_seed)
    doc = document(records, FLAGS.preset, time.time() - t)
    os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
    io.write_text(path, json.dumps(io.normalized(doc), indent=1) + '\n')
  render(doc, FLAGS.out)
  a = doc['kind_a']
  print(f'kind (a): {a["false_certified"]} false certificates in {a["runs"]} probes; '
        f'{doc["false_certified"]} false in all {doc["runs"]} -> {path}')


if __name__ == '__main__':
  define_flags()
  app.run(main)
