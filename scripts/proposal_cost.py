"""What escalation's random proposals cost: 64 full projection losses against rank-two updates.

Escalation (recon/escalate.py) scores, for each weak row j, 64 random replacements by the loss
of the set with row j replaced. Evaluated in full that is 64 losses of O(m^2 p) each; ranked by
`projection.replacement_losses` it is one O(m^2 p) basis per round (a Cholesky of the
candidates' Gram, shared by every slot) and O(m p) per proposal. This times both routes for one
slot (relu_tanh random features, float32, the attack's jitter, candidates near a planted set as
at a plateau), each the median of `--repeats` jitted calls after a compiling one, checks that
they rank the same proposal first and how far their values differ, and writes
results/proposal_cost.{json,md} with the machine, the device and the load average.

    python -m scripts.proposal_cost            # ~3 min on 2 CPU cores
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from typing import Any, Callable, Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from recon import features, io, machine  # noqa: E402
from recon.objectives import projection  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CASES = ((20, 100, 20000), (100, 16, 6400), (500, 16, 32000))  # (m, d, p)
TINY = ((4, 3, 48),)
PROPOSALS = 64
JITTER = 1e-6


def _median_seconds(fn: Callable[[], Any], repeats: int) -> float:
  jax.block_until_ready(fn())  # compile outside the clock
  times = []
  for _ in range(repeats):
    t = time.perf_counter()
    jax.block_until_ready(fn())
    times.append(time.perf_counter() - t)
  return float(np.median(times))


def slot_seconds(m: int, d: int, p: int, repeats: int) -> Dict[str, Any]:
  """Seconds to score one slot's proposals both ways at (m, d, p), and their agreement."""
  act = 'relu_tanh'
  v = features.random_weights(jax.random.PRNGKey(0), p, d, jnp.float32)
  sphere = lambda z: z / jnp.linalg.norm(z, axis=1, keepdims=True) * np.sqrt(d)  # noqa: E731
  x_true = sphere(jax.random.normal(jax.random.PRNGKey(1), (m, d)))
  theta = features.rf_features(v, x_true, act).T @ jax.random.normal(jax.random.PRNGKey(2), (m,))
  x = sphere(x_true + 0.01 * jax.random.normal(jax.random.PRNGKey(3), (m, d)))
  z = sphere(jax.random.normal(jax.random.PRNGKey(4), (PROPOSALS, d)))
  j = jnp.asarray(m // 2)
  loss = lambda xs: projection.projection_loss(features.rf_features(v, xs, act), theta,  # noqa: E731
                                               JITTER)
  full = jax.jit(lambda x, j, z: jax.lax.map(lambda zi: loss(x.at[j].set(zi)), z))
  basis_fn = jax.jit(lambda x: projection.replacement_basis(features.rf_features(v, x, act),
                                                            theta, JITTER))
  ranked = jax.jit(lambda b, j, z: projection.replacement_losses(
      b, j, features.rf_features(v, z, act)))
  basis = basis_fn(x)
  exact, fast = np.asarray(full(x, j, z)), np.asarray(ranked(basis, j, z))
  out: Dict[str, Any] = {
      'm': m, 'd': d, 'p': p, 'proposals': PROPOSALS,
      'full_s': _median_seconds(lambda: full(x, j, z), repeats),
      'basis_s': _median_seconds(lambda: basis_fn(x), repeats),
      'ranked_s': _median_seconds(lambda: ranked(basis, j, z), repeats),
      'same_best': bool(np.argmin(exact) == np.argmin(fast)),
      'max_rel_diff': float(np.max(np.abs(fast - exact) / np.maximum(np.abs(exact), 1e-30))),
      'loss_range': [float(np.min(exact)), float(np.max(exact))]}
  out['speedup_per_slot'] = out['full_s'] / out['ranked_s']
  return out


def main(argv: List[str]) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--repeats', type=int, default=3)
  parser.add_argument('--tiny', action='store_true', help='one tiny case (a smoke test)')
  parser.add_argument('--out', default=os.path.join(ROOT, 'results', 'proposal_cost'))
  args = parser.parse_args(argv)
  load = [os.getloadavg()[0]]
  records = [slot_seconds(*c, repeats=args.repeats) for c in (TINY if args.tiny else CASES)]
  load.append(os.getloadavg()[0])
  command = 'python -m scripts.proposal_cost'
  result = {'description': __doc__.split('\n\n')[0], 'command': command, 'records': records,
            'load_average': load, 'machine': machine.describe(),
            'device': f'1 x {jax.devices()[0].platform}', 'jax': jax.__version__}
  io.write_json(args.out + '.json', result)
  lines = ['# Escalation: the cost of scoring one slot\'s random proposals', '',
           f'Regenerate: `{command}`. Machine: {result["machine"]}; device {result["device"]}; '
           f'JAX {jax.__version__}; load average {load[0]:.1f} / {load[1]:.1f} (before / after).',
           f'{PROPOSALS} proposals for one row, relu_tanh random features, float32, median of '
           f'{args.repeats} jitted calls after a compiling one. "full": {PROPOSALS} projection '
           'losses; "ranked": `projection.replacement_losses` past the basis, which a round '
           'computes once for all its slots.', '',
           '| m | d | p | full, s | basis (once per round), s | ranked, s | full / ranked | '
           'same best | max rel. diff |', '|---|---|---|---|---|---|---|---|---|']
  for r in records:
    lines.append(f'| {r["m"]} | {r["d"]} | {r["p"]} | {r["full_s"]:.3g} | {r["basis_s"]:.3g} | '
                 f'{r["ranked_s"]:.3g} | {r["speedup_per_slot"]:.0f}x | {r["same_best"]} | '
                 f'{r["max_rel_diff"]:.1e} |')
  io.write_text(args.out + '.md', '\n'.join(lines) + '\n')
  print('\n'.join(lines))


if __name__ == '__main__':
  main(sys.argv[1:])
