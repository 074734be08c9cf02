"""The certificate's cost as the problem grows: wall time and peak memory per Jacobian method.

    python -m scripts.certificate_scale            # writes results/certificate_scale.{json,md}
    python -m scripts.certificate_scale --sizes=100x16x6400 --methods=gram,dense --out=/tmp/cs

Each (n, d, p, method) runs in a fresh process (so that its peak resident memory, ru_maxrss,
is its own): a random-features victim (relu_tanh, float32, V from a seeded key, theta =
Phi^+ y), candidates = the true rows plus relative noise `--noise` (on the sphere), the
float64 projection loss of the candidates, then `certificate.certify` with the features as
a `features.FeatureMap` (dense V; 'lean' regenerates V block by block from the key, as the
memory-lean attack does) and n known. Recorded: the certificate's wall time (the victim and
the loss are not timed), the process's peak RSS (the victim's own arrays included: the
`baseline_rss_mb` column is the RSS just before certify), the verdict, the pin radius, the
largest row radius and sigma_min / sigma_max.
"""
from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from typing import Any, Dict, List

from absl import app, flags

flags.DEFINE_string('sizes',
                    '100x16x6400:auto+dense+matrix_free:dense,100x48x48000:auto:dense+lean',
                    "comma-separated n x d x p[:methods[:features]] ('+'-separated lists)")
flags.DEFINE_string('methods', 'auto', "comma-separated: auto | dense | gram | matrix_free")
flags.DEFINE_string('features', 'dense', "comma-separated: dense (V materialised) | lean (V "
                    "regenerated block by block)")
flags.DEFINE_float('noise', 1e-7, 'relative noise on the true rows')
flags.DEFINE_float('tol', 1e-12, "the certificate's tol (1e-12: attack.polish.tol, what a run's "
                   "float64-polished set is certified against; 1e-9: attack.tol)")
flags.DEFINE_float('attack_tol', 1e-9, 'also report the pin radius at this tol (rescaled)')
flags.DEFINE_integer('seed', 0, 'victim seed')
flags.DEFINE_string('out', 'results/certificate_scale', 'output path without extension')
flags.DEFINE_string('one', '', 'internal: run one n x d x p x method and print its JSON')
FLAGS = flags.FLAGS


def _rss_mb() -> float:
  return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_one(n: int, d: int, p: int, method: str, feature_kind: str, noise: float,
            seed: int, tol: float, attack_tol: float) -> Dict[str, Any]:
  import jax
  import jax.numpy as jnp
  import numpy as np
  from recon.certify import certificate, float64_loss
  from recon.models import features, random_features
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


def _markdown(doc: Dict[str, Any]) -> str:
  from scripts import common  # pylint: disable=import-outside-toplevel
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


def main(argv):
  del argv
  if FLAGS.one:
    n, d, p, method = FLAGS.one.split('x', 3)
    print(json.dumps(run_one(int(n), int(d), int(p), method, FLAGS.features, FLAGS.noise,
                             FLAGS.seed, FLAGS.tol, FLAGS.attack_tol)))
    return
  from recon.runtime import machine
  rows: List[Dict[str, Any]] = []
  for spec in FLAGS.sizes.split(','):
    # n x d x p, optionally :methods:features ('+'-separated) overriding the flags.
    size, *rest = spec.split(':')
    methods = rest[0].split('+') if rest else FLAGS.methods.split(',')
    kinds = rest[1].split('+') if len(rest) > 1 else FLAGS.features.split(',')
    for method, kind in [(m, k) for k in kinds for m in methods]:
      cmd = [sys.executable, '-m', 'scripts.certificate_scale', f'--one={size}x{method}',
             f'--features={kind}', f'--noise={FLAGS.noise}', f'--seed={FLAGS.seed}',
             f'--tol={FLAGS.tol}', f'--attack_tol={FLAGS.attack_tol}']
      done = subprocess.run(cmd, capture_output=True, text=True)
      if done.returncode:
        raise RuntimeError(f'{" ".join(cmd)} failed:\n{done.stderr[-3000:]}')
      rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
      print(json.dumps(rows[-1]), flush=True)
  doc = {'machine': machine.describe(), 'load_average': os.getloadavg(), 'seed': FLAGS.seed,
         'noise': FLAGS.noise, 'tol': FLAGS.tol, 'attack_tol': FLAGS.attack_tol,
         'command': 'python -m scripts.certificate_scale ' + ' '.join(sys.argv[1:]),
         'rows': rows}
  from scripts import common  # pylint: disable=import-outside-toplevel
  common.save(FLAGS.out, doc, _markdown(doc))


if __name__ == '__main__':
  app.run(main)
