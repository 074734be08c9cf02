"""What the sign quotient costs per attack step: the projection loss with and without it.

The quotient (recon/sign_quotient.py) projects range(V) out of the candidates' features, a
second m p d product per step besides sigma(X V^T) and its Gram. This times one jitted
value-and-gradient of the random-features loss (`rf_pipeline.rf_loss`, relu, float32, the
attack's jitter) at the sizes the docs quote, plain and quotiented, each the median of
`--repeats` calls after a compiling one, and writes results/sign_quotient_cost.{json,md} with the
machine, the device and the load average. The ratio is why `attack.sign_quotient` 'auto' keeps
the plain loss where it sees the signs anyway (n_candidates <= d).

    python -m scripts.sign_quotient_cost            # ~1 min on 2 CPU cores
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

from recon import features, io, machine, sign_quotient  # noqa: E402
from recon.pipelines import random_features as rf_pipeline  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = ((20, 100, 20000), (32, 16, 2048), (100, 16, 6400))  # (m, d, p)
TINY = ((4, 3, 48),)


def step_seconds(m: int, d: int, p: int, repeats: int) -> Dict[str, Any]:
  """Median seconds of one value-and-gradient call, plain and quotiented, at (m, d, p)."""
  v = features.random_weights(jax.random.PRNGKey(0), p, d, jnp.float32)
  x = jax.random.normal(jax.random.PRNGKey(1), (m, d))
  x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * np.sqrt(d)
  theta = jax.random.normal(jax.random.PRNGKey(2), (p,))
  q = sign_quotient.basis(v, 'relu')
  plain = {'v': v, 'mask': jnp.ones((p,)), 'theta': theta}
  problems = {'plain': plain,
              'quotient': dict(plain, quotient=q, theta_quotient=sign_quotient.target(theta, q))}
  out: Dict[str, Any] = {'m': m, 'd': d, 'p': p}
  for name, problem in problems.items():
    fn = jax.jit(jax.value_and_grad(
        lambda xs, pr: rf_pipeline.rf_loss(xs, pr, activation='relu', jitter=1e-6)))
    jax.block_until_ready(fn(x, problem))  # compile outside the clock
    times = []
    for _ in range(repeats):
      t = time.perf_counter()
      jax.block_until_ready(fn(x, problem))
      times.append(time.perf_counter() - t)
    out[f'{name}_ms'] = 1e3 * float(np.median(times))
  out['ratio'] = out['quotient_ms'] / out['plain_ms']
  return out


def main(argv: List[str]) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--repeats', type=int, default=50)
  parser.add_argument('--tiny', action='store_true', help='one tiny case (a smoke test)')
  parser.add_argument('--out', default=os.path.join(ROOT, 'results', 'sign_quotient_cost'))
  args = parser.parse_args(argv)
  load = [os.getloadavg()[0]]
  records = [step_seconds(*c, repeats=args.repeats) for c in (TINY if args.tiny else CASES)]
  load.append(os.getloadavg()[0])
  command = 'python -m scripts.sign_quotient_cost'
  result = {'description': __doc__.split('\n\n')[0], 'command': command, 'records': records,
            'load_average': load, 'machine': machine.describe(),
            'device': f'1 x {jax.devices()[0].platform}', 'jax': jax.__version__}
  io.write_json(args.out + '.json', result)
  lines = ['# The sign quotient: cost per attack step', '',
           f'Regenerate: `{command}`. Machine: {result["machine"]}; device {result["device"]}; '
           f'JAX {jax.__version__}; load average {load[0]:.1f} / {load[1]:.1f} (before / after).',
           'One jitted value-and-gradient of the relu random-features projection loss (float32), '
           f'median of {args.repeats} calls after a compiling one.', '',
           '| m | d | p | plain, ms | quotient, ms | ratio |', '|---|---|---|---|---|---|']
  for r in records:
    lines.append(f'| {r["m"]} | {r["d"]} | {r["p"]} | {r["plain_ms"]:.2f} | '
                 f'{r["quotient_ms"]:.2f} | {r["ratio"]:.2f} |')
  io.write_text(args.out + '.md', '\n'.join(lines) + '\n')
  print('\n'.join(lines))


if __name__ == '__main__':
  main(sys.argv[1:])
