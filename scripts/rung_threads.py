"""The precision rung's sign sweep with NumPy's BLAS on one thread vs its default thread count.

The rung (recon/polish.py) interleaves hundreds of small NumPy / LAPACK calls (lstsq, QR, a
m (d - 1) square solve per Gauss-Newton trial) with jitted JAX calls; OpenBLAS's worker threads
then compete with XLA's for the cores. This times one greedy sign sweep (`polish.sign_sweep`,
one pass, 20 Gauss-Newton iterations per trial, float64) on a relu random-features problem
whose candidates are the training rows with the first quarter mirrored (x -> -x) and 5% noise
(a rung input like those relu runs leave), under `threadpoolctl.threadpool_limits` at each
thread count, after a warm-up that compiles the feature maps; both settings must end at the
same loss and flip the same rows. Writes results/rung_threads.{json,md} with the machine,
the device and the load average.

    python -m scripts.rung_threads            # ~4 min on 2 idle CPU cores
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
import threadpoolctl  # noqa: E402

from recon import certificate, float64_loss, io, machine, polish  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = ((32, 16, 768), (48, 16, 1152))  # (n, d, p): p = 1.5 dn


def problem(n: int, d: int, p: int, seed: int = 0):
  """(feature map, theta (float32), candidates (float64)) of a relu random-features victim."""
  k1, k2, k3 = jax.random.split(jax.random.PRNGKey(seed), 3)
  v = jax.random.normal(k1, (p, d)) / np.sqrt(d)
  x = jax.random.normal(k2, (n, d))
  x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * np.sqrt(d)

  def feature_fn(z):
    z = jnp.asarray(z)
    return jax.nn.relu(z @ v.astype(z.dtype).T) / np.sqrt(p)

  y = np.asarray(jax.random.normal(k3, (n,)), np.float64)
  phi = np.asarray(feature_fn(x), np.float64)
  theta = np.linalg.lstsq(phi, y, rcond=None)[0].astype(np.float32)  # Phi^+ y, (p,)
  x_hat = np.asarray(x, np.float64).copy()
  x_hat[:n // 4] = -x_hat[:n // 4]
  x_hat += 0.05 * np.random.default_rng(seed).normal(size=x_hat.shape)
  x_hat *= np.sqrt(d) / np.linalg.norm(x_hat, axis=1, keepdims=True)
  return feature_fn, theta, x_hat


def sweep(feature_fn, theta, x_hat, d: int, threads, lm_iters: int) -> Dict[str, Any]:
  with jax.enable_x64(True), threadpoolctl.threadpool_limits(limits=threads, user_api='blas'):
    f64 = float64_loss.Features64(feature_fn)
    float64_loss.loss64(f64, x_hat, theta)  # compile outside the clock
    certificate.tangent_jacobian(f64, x_hat, theta)
    t = time.perf_counter()
    _, loss, flipped, steps = polish.sign_sweep(f64, theta, x_hat, radius=float(np.sqrt(d)),
                                                tol=1e-12, lm_iters=lm_iters, sweeps=1)
    return {'seconds': time.perf_counter() - t, 'loss': float(loss),
            'rows_flipped': [int(j) for j in flipped], 'gauss_newton_steps': int(steps)}


def case(n: int, d: int, p: int, lm_iters: int) -> Dict[str, Any]:
  feature_fn, theta, x_hat = problem(n, d, p)
  default = [i['num_threads'] for i in threadpoolctl.threadpool_info()
             if i['user_api'] == 'blas']
  one = sweep(feature_fn, theta, x_hat, d, 1, lm_iters)
  many = sweep(feature_fn, theta, x_hat, d, None, lm_iters)
  return {'n': n, 'd': d, 'p': p, 'lm_iters': lm_iters, 'default_blas_threads': default,
          'one_thread': one, 'default_threads': many,
          'speedup': many['seconds'] / one['seconds'],
          'same_flips': one['rows_flipped'] == many['rows_flipped'],
          'loss_rel_diff': abs(one['loss'] - many['loss']) / max(abs(many['loss']), 1e-300)}


def main(argv: List[str]) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--lm_iters', type=int, default=20)
  parser.add_argument('--out', default=os.path.join(ROOT, 'results', 'rung_threads'))
  args = parser.parse_args(argv)
  load = [os.getloadavg()[0]]
  records = [case(*c, lm_iters=args.lm_iters) for c in CASES]
  load.append(os.getloadavg()[0])
  result = {'description': __doc__.split('\n\n')[0], 'command': 'python -m scripts.rung_threads',
            'records': records, 'load_average': load, 'machine': machine.describe(),
            'device': f'1 x {jax.devices()[0].platform}', 'numpy': np.__version__,
            'jax': jax.__version__}
  io.write_json(args.out + '.json', result)
  lines = ["# The precision rung's sign sweep: NumPy's BLAS on one thread vs its default", '',
           f'Regenerate: `{result["command"]}`. Machine: {result["machine"]}; device '
           f'{result["device"]}; JAX {jax.__version__}, NumPy {np.__version__}; load average '
           f'{load[0]:.1f} / {load[1]:.1f} (before / after).',
           'One greedy pass of `polish.sign_sweep` (relu random features, a quarter of the rows '
           f'mirrored, {args.lm_iters} Gauss-Newton iterations per trial, float64). '
           '`recon.polish.polish` runs with one BLAS thread.', '',
           '| n | d | p | default BLAS threads | s, default | s, one thread | speedup | '
           'rows flipped | same flips | loss rel. diff |', '|---|---|---|---|---|---|---|---|---|---|']
  for r in records:
    lines.append(f'| {r["n"]} | {r["d"]} | {r["p"]} | {r["default_blas_threads"]} | '
                 f'{r["default_threads"]["seconds"]:.1f} | {r["one_thread"]["seconds"]:.1f} | '
                 f'{r["speedup"]:.2f} | {len(r["one_thread"]["rows_flipped"])} | '
                 f'{r["same_flips"]} | {r["loss_rel_diff"]:.1e} |')
  with open(args.out + '.md', 'w') as f:
    f.write('\n'.join(lines) + '\n')
  print('\n'.join(lines))


if __name__ == '__main__':
  main(sys.argv[1:])
