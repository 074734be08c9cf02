"""Soak of recon's workdir ownership: no user file is ever deleted, moved or changed.

Workdirs mix recon's outputs with a user's things, and runs are stopped at random writes:

  plant      before a run, the user adds to a finished workdir: notes, a file shaped like
             recon's temporaries ('.summary.json.user.tmp', '.notes.x1y2z3.tmp'), a symbolic
             link to a file outside, a git repository; or drops files beside the workdir;
  kill       the run dies (SystemExit, as SIGKILL would leave it) at its k-th output write,
             k random: after the write claimed its name, leaving the write's temporary file
             (a stale '.NAME.XXXX.tmp' of recon's) or not;
  overwrite / resume / plain   the next run's mode, random.

After every run: every user file still there with its bytes (links as links), the exit
status documented (0 finished, 2 refused, 137 killed), a workdir holding user files refused,
and a recon workdir holding nothing its manifest does not list. In-process (recon.run)
so that hundreds of faults fit in minutes; `scripts/soak.py` kills real processes.

Results: results/soak_ownership.json (machine, seed, faults by kind, user files checked and
lost, seconds).

    python -m scripts.soak_ownership --faults=200          # ~12 min on 2 shared CPU cores
    python -m scripts.soak_ownership --faults=12 --out=/tmp/soak_ownership.json
"""
from __future__ import annotations

import argparse
import hashlib
import os
import random
import subprocess
import sys
import tempfile
import time
from typing import Dict

from configs import rf_synthetic
import recon
from recon.runtime import io, machine, ownership


def _config(seed: int, mode: str):
  c = rf_synthetic.get_config()
  c.data.n, c.data.d, c.victim.p, c.attack.max_steps, c.seed = 3, 4, 120, 200, seed
  c.run.chunk_steps, c.run.checkpoint_every_steps, c.run.checkpoint_every_seconds = 50, 50, 0.0
  c.run.overwrite, c.run.resume = mode == 'overwrite', mode == 'resume'
  return c


def _fingerprint(root: str) -> Dict[str, str]:
  """{path: sha256 of the bytes, or 'link -> target'} of every user file under root."""
  out = {}
  for folder, dirs, names in os.walk(root):
    for name in names + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
      path = os.path.join(folder, name)
      if os.path.islink(path):
        out[path] = 'link -> ' + os.readlink(path)
      else:
        with open(path, 'rb') as f:
          out[path] = hashlib.sha256(f.read()).hexdigest()
  return out


def _plant(rng: random.Random, workdir: str, outside: str) -> str:
  """A user's things in (or, for 'beside', next to) a workdir; returns the kind."""
  kind = rng.choice(['notes', 'temp_shaped', 'link', 'git', 'beside'])
  if kind == 'beside':
    return kind  # the user's files live in `outside` only
  os.makedirs(workdir, exist_ok=True)
  if kind == 'notes':
    with open(os.path.join(workdir, 'notes.txt'), 'w') as f:
      f.write(f'mine {rng.random()}')
  elif kind == 'temp_shaped':
    for name in ('.summary.json.user.tmp', '.notes.x1y2z3.tmp'):
      with open(os.path.join(workdir, name), 'w') as f:
        f.write('mine')
  elif kind == 'link':
    os.symlink(os.path.join(outside, 'precious.txt'), os.path.join(workdir, 'alias'))
  else:
    subprocess.run(['git', 'init', '-q', os.path.join(workdir, 'repo')], check=True)
  return kind


def _execute(config, workdir: str) -> int:
  """recon.run's exit status (0, or the RunError's) as the command line would give it."""
  try:
    recon.run(config, workdir)
  except recon.RunError as e:
    return e.exit_code
  return 0


class _Killer:
  """io._atomic_write that dies at its k-th call (after the claim; with the temporary file
  left behind or not), as a process killed mid-write would."""

  def __init__(self, real, k: int, leave_temp: bool):
    self.real, self.k, self.leave_temp, self.calls = real, k, leave_temp, 0

  def __call__(self, path, write):
    self.calls += 1
    if self.calls == self.k:
      io.claim(path)
      if self.leave_temp:
        folder, name = os.path.split(os.path.abspath(path))
        fd, _ = tempfile.mkstemp(dir=folder, prefix=f'.{name}.', suffix='.tmp')
        os.close(fd)
      raise SystemExit(137)
    return self.real(path, write)


def soak(faults: int, seed: int, root: str) -> Dict[str, object]:
  rng = random.Random(seed)
  outside = os.path.join(root, 'user_files')
  os.makedirs(outside)
  with open(os.path.join(outside, 'precious.txt'), 'w') as f:
    f.write('do not lose me')
  counts: Dict[str, int] = {}
  lost, wrong, runs, checked, t0 = [], [], 0, 0, time.time()
  real = io._atomic_write  # pylint: disable=protected-access
  w = 0
  while runs < faults:
    workdir = os.path.join(root, f'w{w}')
    w += 1
    first = _execute(_config(w, 'plain'), workdir)
    counts['finished_first'] = counts.get('finished_first', 0) + (first == 0)
    kind = _plant(rng, workdir, outside) if rng.random() < 0.5 else 'none'
    counts[f'plant_{kind}'] = counts.get(f'plant_{kind}', 0) + 1
    user = _fingerprint(outside)
    user.update({p: h for p, h in _fingerprint(workdir).items()
                 if os.path.relpath(p, workdir).split(os.sep)[0] not in ownership.owned(workdir)
                 and os.path.basename(p) not in ownership.BOOKKEEPING})
    checked += len(user)
    for _ in range(rng.randint(2, 4)):
      mode = rng.choices(['overwrite', 'resume', 'plain'], weights=[5, 3, 2])[0]
      killer = _Killer(real, rng.randint(1, 6), rng.random() < 0.5) if rng.random() < 0.6 \
          else None
      io._atomic_write = killer or real  # pylint: disable=protected-access
      try:
        code = _execute(_config(w + 1000 * rng.randint(0, 1), mode), workdir)
      except SystemExit as e:
        code = e.code
      finally:
        io._atomic_write = real  # pylint: disable=protected-access
      runs += 1
      fault = f'{mode}{"_killed" if code == 137 else ""}'
      counts[fault] = counts.get(fault, 0) + 1
      after = _fingerprint(root)
      lost += [p for p, h in user.items() if after.get(p) != h]
      if kind not in ('none', 'beside') and code not in (2,):
        wrong.append(f'{workdir}: a workdir holding user files gave exit {code}, not 2')
      if code not in (0, 2, 137):
        wrong.append(f'{workdir}: exit {code}')
      if kind in ('none', 'beside') and ownership.foreign(workdir):
        wrong.append(f'{workdir}: unlisted entries {ownership.foreign(workdir)}')
  return {'faults': runs, 'workdirs': w, 'by_kind': dict(sorted(counts.items())),
          'user_files_checked': checked,  # per workdir: the user's files there and beside
          'user_files_lost': sorted(set(lost)), 'wrong': wrong,
          'seconds': time.time() - t0}


def main_(argv=None) -> int:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--faults', type=int, default=200)
  parser.add_argument('--seed', type=int, default=1)
  parser.add_argument('--out', default=os.path.join('results', 'soak_ownership.json'))
  args = parser.parse_args(argv)
  if args.faults < 1:
    print(f'error: --faults: {args.faults}; accepted: an int >= 1', file=sys.stderr)
    return 2
  from absl import logging  # pylint: disable=import-outside-toplevel
  before = logging.get_verbosity()
  logging.set_verbosity(logging.WARNING)  # the runs' INFO lines, hundreds of them
  try:
    with tempfile.TemporaryDirectory(prefix='soak_ownership_') as root:
      result = soak(args.faults, args.seed, root)
  finally:
    logging.set_verbosity(before)
  result.update(machine=machine.describe(), seed=args.seed,
                command=f'python -m scripts.soak_ownership --faults={args.faults} '
                        f'--seed={args.seed}')
  io.write_json(args.out, result)
  print(f'{result["faults"]} faults in {result["workdirs"]} workdirs: '
        f'{len(result["user_files_lost"])} user files lost, {len(result["wrong"])} wrong states '
        f'({result["seconds"]:.0f} s) -> {args.out}')
  return 0 if not result['user_files_lost'] and not result['wrong'] else 1


if __name__ == '__main__':
  raise SystemExit(main_())
