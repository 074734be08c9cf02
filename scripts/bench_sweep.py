"""Cost of a K-point sweep in one compiled call against K single runs of the same points.

Two K = 8 grids on the phase-transition problem (n=8, d=10, relu+tanh, SGD lr 2):
  seeds:  p = 800 (10 dn), seeds 0..7            -- batching only, no padding;
  widths: p in {100, 200, 400, 800} x seeds 0, 1 -- every width padded to 800.
Two measures per grid:
  steady: seconds of `steps` optimiser steps once compiled (best of `repeats`): the batched
          vmapped chunk over all K points vs each point's unbatched jitted chunk (the
          single-run path of recon.pipelines); ratio = (batched / K) / mean(single);
  end_to_end: wall seconds of `recon.sweep.grid.run` (compile, run, score, write) vs the sum of
          K `recon.pipelines.run` calls (each compiles its own program), `steps` steps each.
Target: batched <= 1.2 x one single run per point (ratio <= 1.2).

  python scripts/bench_sweep.py            # -> results/bench_sweep.json (~5 min on 2 cores)
  python scripts/bench_sweep.py --tiny --steps=5 --repeats=1 --out=/tmp/b.json  # smoke test
"""
from __future__ import annotations

import argparse
import functools
import os
import platform
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import numpy as np  # noqa: E402
from absl import logging  # noqa: E402

from configs import base, rf_phase_transition  # noqa: E402
from recon import data, pipelines  # noqa: E402
from recon.runtime import compile_cache, host, io, runs
from recon.attack import driver
from recon.attack import optimiser as optimize
from recon.sweep import grid as sweep
from recon.config import validate as config_lib  # noqa: E402
from recon.pipelines import random_features as rf_pipeline  # noqa: E402

GRIDS = {
    'seeds': {'victim.p': (800,), 'seed': tuple(range(8))},
    'widths': {'victim.p': (100, 200, 400, 800), 'seed': (0, 1)},
}
TINY_GRIDS = {  # --tiny: one K = 2 grid with padding (a smoke test, not a benchmark)
    'widths': {'victim.p': (40, 80), 'seed': (0,)},
}


def grid_config(axes, steps):
  c = rf_phase_transition.get_config()
  c.victim.activation = 'relu_tanh'
  c.attack.max_steps = steps
  c.run.chunk_steps = steps
  c.attack.tol = 0.0  # no early stop: every point runs exactly `steps` steps
  c.run.log_every_seconds = 1e9
  c.run.overwrite = True
  c.sweep = base.sweep()
  for path, values in axes.items():
    config_lib.set_path(c.sweep, path, values)
  return c


def single_program(cfg):
  """The single-run path of recon.pipelines, as a (state, chunk) pair."""
  dtype = runs.set_dtype(cfg.run.dtype)
  keys = runs.split_keys(cfg.seed)
  x, y, _ = data.load(cfg.data, keys['data'], dtype)
  problem = jax.jit(functools.partial(rf_pipeline.make_rf_problem, p_total=cfg.victim.p,
                                      activation=cfg.victim.activation))(keys, x, y)
  problem.pop('train_mse')
  loss_fn = rf_pipeline.rf_loss_fn(cfg.victim, cfg.attack)
  optimizer = optimize.make_optimizer(cfg.attack.optimizer, cfg.attack.lr, cfg.attack.momentum)
  constraint = optimize.sphere_constraint(float(np.sqrt(cfg.data.d)))
  state = optimize.init_state(driver.init_candidates(keys['init'], cfg.attack.n_candidates, cfg.data.d,
                                                         dtype), optimizer, loss_fn, problem,
                              constraint)
  chunk = driver.chunk_fn(cfg.attack, loss_fn, optimizer, constraint)
  return state, jax.jit(lambda s, stop: chunk(s, problem, stop))


def timed(fn, state, steps, repeats):
  fn(state, np.int32(2)).x.block_until_ready()  # compile
  best = float('inf')
  for _ in range(repeats):
    t0 = time.perf_counter()
    out = fn(state, np.int32(steps))
    out.x.block_until_ready()
    best = min(best, time.perf_counter() - t0)
  assert np.all(np.asarray(out.step) == steps), 'a run stopped early'
  return best


def bench(name, axes, steps, repeats, tmp):
  c = grid_config(axes, steps)
  (group,) = sweep.expand(c)
  k = len(group.points)
  prog = sweep.prepare_group(group)
  batched = timed(prog.chunk, prog.state, steps, repeats)
  singles = []
  for pt in group.points:
    state, chunk = single_program(pt.cfg)
    singles.append(timed(chunk, state, steps, repeats))
  t0 = time.time()
  sweep.run(c, os.path.join(tmp, name))
  e2e_batched = time.time() - t0
  e2e_single = 0.0
  for pt in group.points:
    t0 = time.time()
    pipelines.run(pt.cfg, os.path.join(tmp, f'{name}-{pt.index}'))
    e2e_single += time.time() - t0
  row = {
      'grid': name, 'axes': {a: list(v) for a, v in axes.items()}, 'k': k, 'steps': steps,
      'widths': [pt.cfg.victim.p for pt in group.points], 'padded_width': group.p_total,
      'steady': {
          'batched_seconds': batched, 'single_seconds': singles,
          'single_mean_seconds': float(np.mean(singles)),
          'batched_per_point_seconds': batched / k,
          'ratio_per_point': batched / k / float(np.mean(singles)),
          'speedup_vs_k_singles': float(np.sum(singles)) / batched},
      'end_to_end': {
          'batched_seconds': e2e_batched, 'k_singles_seconds': e2e_single,
          'ratio_per_point': e2e_batched / e2e_single},
  }
  print(f"{name}: steady batched {batched:.2f}s for {k} points vs single "
        f"{np.mean(singles):.2f}s each -> ratio/point {row['steady']['ratio_per_point']:.2f}; "
        f"end-to-end {e2e_batched:.1f}s vs {e2e_single:.1f}s")
  return row


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--steps', type=int, default=1000)
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--out', default='results/bench_sweep.json')
  parser.add_argument('--tiny', action='store_true', help='smoke test: one grid of 2 points')
  args = parser.parse_args(argv)
  logging.set_verbosity(logging.WARNING)
  rows = []
  with tempfile.TemporaryDirectory() as tmp:
    for name, axes in (TINY_GRIDS if args.tiny else GRIDS).items():
      rows.append(bench(name, axes, args.steps, args.repeats, tmp))
  dev = jax.devices()[0]
  io.write_json(args.out, {
      'what': __doc__.split('\n\n')[0],
      'device': f'{len(jax.devices())} x {dev.platform} ({dev.device_kind}), '
                f'{os.cpu_count()} CPU cores visible, shared with other jobs',
      'machine': platform.processor() or platform.machine(),
      'jax': jax.__version__, 'target_ratio_per_point': 1.2, 'rows': rows})


if __name__ == '__main__':
  host.keep_buffers_mapped()  # recon/runtime/host.py: reuse large CPU buffers
  compile_cache.enable()  # recon/runtime/compile_cache.py: reuse compiled programs
  main()
