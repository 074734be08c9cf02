"""One loss-and-gradient step of a network attack: dense head Jacobian rows vs a linear head's rows.

The networks pipeline computes the projection loss of a linear head on its penultimate rows H
against Theta (q, C) (`recon.objectives.parameter_gradients.head_rows`) instead of the dense
per-class Jacobian rows (n C x q C). Both give the same loss; this times one jitted
value-and-gradient of each (median of --repeats after a warm-up) for the two-layer net with
its rows at W(0) and W(T) stacked (attack.jacobian_at='init_and_trained'), at the sizes of the
leak-width runs and a 10-class head, and checks the two losses agree. Writes
results/bench_head_rows.{json,md} with the machine, the device and the load average.

    python -m scripts.bench_head_rows            # ~1 min on 2 CPU cores
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import jax  # noqa: E402
import numpy as np  # noqa: E402

from recon import io, machine  # noqa: E402
from recon.models import networks  # noqa: E402
from recon.objectives import parameter_gradients as pg  # noqa: E402
from recon.objectives import projection  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = ((32, 610, 2), (100, 1920, 2), (32, 256, 10))  # (candidates, width, classes), d = 16


def time_step(fn, x, repeats: int) -> float:
  jax.block_until_ready(fn(x))
  times = []
  for _ in range(repeats):
    t = time.perf_counter()
    jax.block_until_ready(fn(x))
    times.append(time.perf_counter() - t)
  return float(np.median(times))


def case(m: int, width: int, classes: int, repeats: int) -> Dict[str, Any]:
  model = networks.TwoLayer(width=width, out_dim=classes, activation='relu_tanh')
  x = jax.random.normal(jax.random.PRNGKey(1), (m, 16))
  p0 = model.init(jax.random.PRNGKey(0), x)['params']
  p1 = model.init(jax.random.PRNGKey(2), x)['params']
  apply = lambda p, z: model.apply({'params': p}, z)  # noqa: E731
  theta = pg.layer_delta(p1, p0, 'head')
  dense = jax.jit(jax.value_and_grad(lambda z: projection.projection_loss(
      pg.stacked_jacobian(apply, (p0, p1), z), theta, 1e-6)))
  rows = jax.jit(jax.value_and_grad(lambda z: projection.projection_loss(
      pg.head_rows(apply, (p0, p1), z), pg.head_target(theta, classes), 1e-6)))
  t_dense, t_rows = time_step(dense, x, repeats), time_step(rows, x, repeats)
  l_dense, l_rows = float(dense(x)[0]), float(rows(x)[0])
  return {'candidates': m, 'd': 16, 'width': width, 'classes': classes,
          'dense_rows': 2 * m * classes, 'head_rows': 2 * m, 'dense_ms': 1e3 * t_dense,
          'head_rows_ms': 1e3 * t_rows, 'speedup': t_dense / t_rows, 'loss_dense': l_dense,
          'loss_head_rows': l_rows, 'loss_rel_diff': abs(l_dense - l_rows) / abs(l_dense)}


def main(argv: List[str]) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--repeats', type=int, default=10)
  parser.add_argument('--out', default=os.path.join(ROOT, 'results', 'bench_head_rows'))
  args = parser.parse_args(argv)
  load = [os.getloadavg()[0]]
  records = [case(*c, repeats=args.repeats) for c in CASES]
  load.append(os.getloadavg()[0])
  result = {'description': __doc__.split('\n\n')[0], 'command': 'python -m scripts.bench_head_rows',
            'records': records, 'load_average': load, 'machine': machine.describe(),
            'device': f'1 x {jax.devices()[0].platform}'}
  io.write_json(args.out + '.json', result)
  lines = ['# A linear head: dense Jacobian rows vs its penultimate rows (one loss-and-gradient step)',
           '', f'Regenerate: `{result["command"]}`. Machine: {result["machine"]}; device '
           f'{result["device"]}; load average {load[0]:.1f} / {load[1]:.1f} (before / after).',
           'Two-layer net, d = 16, rows at W(0) and W(T) stacked; median of '
           f'{args.repeats} jitted steps.', '',
           '| candidates | width | classes | dense rows | head rows | dense ms | head rows ms | '
           'speed-up | loss rel. diff |', '|---|---|---|---|---|---|---|---|---|']
  for r in records:
    lines.append(f'| {r["candidates"]} | {r["width"]} | {r["classes"]} | {r["dense_rows"]} | '
                 f'{r["head_rows"]} | {r["dense_ms"]:.2f} | {r["head_rows_ms"]:.2f} | '
                 f'{r["speedup"]:.1f} | {r["loss_rel_diff"]:.1e} |')
  io.write_text(args.out + '.md', '\n'.join(lines) + '\n')
  print('\n'.join(lines))


if __name__ == '__main__':
  main(sys.argv[1:])
