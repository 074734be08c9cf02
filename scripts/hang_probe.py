"""The sweep hang, reproduced: one escalation round of a vectorised two-layer sweep, per JAX.

Sweeps at larger n stopped making progress on the 2-core CPU (every thread idle, the main thread
waiting on a device buffer; docs/reliability.md, "A hang in jaxlib 0.10's CPU runtime"). Located:
the escalation round's proposals program (`recon.escalate`, the best of `n_proposals` random
points for every weak row of every run, vmapped over runs and over the rows in batches) never
completes on jax/jaxlib 0.10.2 at this size: n = 100, d = 16, two-layer width 1396
(p_L = 1.75 dn), five victims at once, escalation checked at step 100. This script runs that
sweep (300 steps, first escalation round at step 100) in a child process per Python interpreter
given, and calls a child hung when its CPU time stops growing for --stall_seconds.
`--proposals` replaces the 64 random points escalation draws per weak row
(`recon.refine.best_replacement`, patched in the child: no config field sets it); `--batch`
chooses how the rows are ranked: 'shipped' (`recon.refine.proposal_batch`: one row after another
on the CPU of a jaxlib < 0.12, the workaround) or 'batched' (LOO_BATCH rows per vmapped batch
everywhere, the form that hangs). Writes results/hang_probe.{json,md} with each interpreter's
JAX version, machine and outcome.

    python -m scripts.hang_probe --python=.venv/bin/python,.venv-newest/bin/python \
        --batch=batched,shipped
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from recon import io, machine  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CHILD = '''
import sys, time, jax
from absl import logging
logging.set_verbosity(logging.WARNING)
from configs import two_layer
from recon import refine, sweep
_best, _n = refine.best_replacement, int(sys.argv[2])
refine.best_replacement = lambda key, x, j, loss_fn, prob, constraint, n, *rest: _best(
    key, x, j, loss_fn, prob, constraint, _n, *rest)
if sys.argv[3] == 'batched':  # the form before the workaround, on every backend
  refine.proposal_batch = lambda k, limit, *a, **kw: max(1, min(limit, k))
c = two_layer.get_config()
c.data.n, c.data.d, c.data.num_classes = 100, 16, 2
c.attack.update(optimizer='adam', lr=0.05, schedule='cosine', decay_steps=20000, tol=1e-9,
                jacobian_at='init_and_trained', max_steps=300, rescue=('escalate',))
c.attack.escalate.update(every=100, window=100)
c.run.chunk_steps, c.run.log_every_seconds = 100, 1e9
c.sweep.seed, c.sweep.victim.width = (0, 1, 2, 3, 4), (1396,)
print('JAX', jax.__version__, flush=True)
t = time.time()
sweep.run(c, sys.argv[1])
print('DONE', time.time() - t, flush=True)
'''


def cpu_seconds(pid: int) -> float:
  with open(f'/proc/{pid}/stat') as f:
    fields = f.read().rsplit(')', 1)[1].split()
  return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')


BATCH = ('shipped', 'batched')


def probe(python: str, proposals: int, stall: float, limit: float,
          batch: str = 'shipped') -> Dict[str, Any]:
  work = tempfile.mkdtemp(prefix='hang_probe_')
  proc = subprocess.Popen([python, '-c', CHILD, os.path.join(work, 'sweep'), str(proposals), batch],
                          cwd=ROOT, env={**os.environ, 'PYTHONPATH': ROOT},
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
  t0, last_cpu, last_change, outcome = time.time(), -1.0, time.time(), None
  while proc.poll() is None:
    time.sleep(2.0)
    try:
      cpu = cpu_seconds(proc.pid)
    except OSError:
      break
    if cpu > last_cpu + 0.05:
      last_cpu, last_change = cpu, time.time()
    elif time.time() - last_change > stall:
      outcome = f'hung: CPU time stopped at {cpu:.0f} s for {stall:.0f} s'
    if outcome is None and time.time() - t0 > limit:
      outcome = f'stopped at the {limit:.0f} s limit (still running)'
    if outcome:
      proc.kill()
      break
  out = proc.communicate()[0]
  version = next((l.split()[1] for l in out.splitlines() if l.startswith('JAX ')), None)
  done = next((float(l.split()[1]) for l in out.splitlines() if l.startswith('DONE ')), None)
  if outcome is None:
    outcome = 'completed' if done is not None else f'failed (exit {proc.returncode})'
  return {'python': python, 'jax': version, 'proposals': proposals, 'batch': batch,
          'outcome': outcome,
          'seconds': done if done is not None else time.time() - t0,
          'tail': out.strip().splitlines()[-1:] if done is None else []}


def main(argv: List[str]) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--python', default=sys.executable,
                      help='Comma-separated interpreters, each with recon installed.')
  parser.add_argument('--proposals', default='64', help='Comma-separated proposal counts.')
  parser.add_argument('--batch', default='shipped',
                      help=f'Comma-separated forms of the proposals round, of {BATCH}.')
  parser.add_argument('--stall_seconds', type=float, default=60.0)
  parser.add_argument('--limit_seconds', type=float, default=600.0)
  parser.add_argument('--out', default=os.path.join(ROOT, 'results', 'hang_probe'))
  args = parser.parse_args(argv)
  batches = args.batch.split(',')
  bad = [b for b in batches if b not in BATCH]
  if bad:
    parser.error(f'--batch: {bad[0]!r} is not one of {BATCH}')
  load = [os.getloadavg()[0]]
  records = [probe(py, int(k), args.stall_seconds, args.limit_seconds, b)
             for py in args.python.split(',') for k in args.proposals.split(',')
             for b in batches]
  load.append(os.getloadavg()[0])
  result = {'description': __doc__.split('\n\n')[0], 'command': 'python -m scripts.hang_probe '
            + ' '.join(argv), 'records': records, 'load_average': load,
            'machine': machine.describe()}
  io.write_json(args.out + '.json', result)
  lines = ['# The sweep hang: one escalation round of a two-layer sweep at n = 100, per JAX', '',
           f'Regenerate: `{result["command"]}`. Machine: {result["machine"]}; load average '
           f'{load[0]:.1f} / {load[1]:.1f} (before / after).', '',
           '| JAX | proposals | rows ranked | outcome | seconds |', '|---|---|---|---|---|']
  lines += [f'| {r["jax"]} | {r["proposals"]} | {r.get("batch", "batched")} | {r["outcome"]} '
            f'| {r["seconds"]:.0f} |' for r in records]
  io.write_text(args.out + '.md', '\n'.join(lines) + '\n')
  print('\n'.join(lines))


if __name__ == '__main__':
  main(sys.argv[1:])
