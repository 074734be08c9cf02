"""Soak test of `python -m recon.main` under faults: kills, signals, full disks, concurrent starts.

Each trial runs a short random-features run (issue #33's S, longer: n 4, d 8, p 320,
`--steps` steps, a checkpoint every 100) in a fresh workdir and injects faults until the
run finishes:

  sigkill / sigterm / sigint   the signal at a random time in [--min-wait, --max-wait] s;
  concurrent                   a second process started on the same workdir meanwhile (it
                               must be refused: exit 2, 'in use by pid');
  disk_full                    the workdir on a small tmpfs that fills (root only; the run
                               must end in one 'error:' line, exit 2), grown afterwards.

After every fault it checks that nothing is half-made: the exit status is the documented
one, at most one 'error:' line and no traceback, no summary.json unless the process
finished, summary.json (when there) and model/model.json parse. Each restart passes
`--config.run.resume=True`. When the run finishes, its reconstruction.npz and loss history
must equal an unbroken run's bit for bit; a trial that does not is a run lost.

Results: results/soak.json (machine, settings, seeds, faults injected / survived by kind,
runs lost, half-made states seen, seconds).

    python -m scripts.soak --faults=200          # ~45 min on 2 shared CPU cores
    python -m scripts.soak --faults=6 --out=/tmp/soak.json
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = ('sigkill', 'sigterm', 'sigint', 'concurrent', 'disk_full')


def _args(steps: int) -> List[str]:
  return [f'--config={ROOT}/configs/rf_synthetic.py', '--config.data.n=4', '--config.data.d=8',
          '--config.victim.p=320', f'--config.attack.max_steps={steps}',
          '--config.run.chunk_steps=50', '--config.run.checkpoint_every_steps=100',
          '--config.run.checkpoint_every_seconds=0', '--config.run.log_every_seconds=1000']


def _env() -> Dict[str, str]:
  return dict(os.environ, JAX_PLATFORMS='cpu', PYTHONPATH=ROOT)


def _start(workdir: str, steps: int, resume: bool = True) -> subprocess.Popen:
  extra = ['--config.run.resume=True'] if resume else []
  return subprocess.Popen([sys.executable, '-m', 'recon.main', *_args(steps), *extra,
                           f'--workdir={workdir}'], cwd=ROOT, env=_env(), text=True,
                          stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _stamp(workdir: str):
  try:
    return os.stat(os.path.join(workdir, 'summary.json')).st_mtime_ns
  except OSError:
    return None


def _half_made(workdir: str, rc: int, err: str, before=None) -> List[str]:
  """What is wrong with the workdir and the process's stderr after a fault ([] if nothing);
  `before`: summary.json's stamp before the process started (a finished earlier run's)."""
  bad = []
  lines = [l for l in err.splitlines() if l.startswith('error:')]
  if len(lines) > 1 or 'Traceback' in err:
    bad.append(f'stderr: {len(lines)} error lines, traceback {"Traceback" in err}')
  summary = os.path.join(workdir, 'summary.json')
  if os.path.exists(summary) and _stamp(workdir) != before:
    try:
      with open(summary) as f:
        summary_json = json.load(f)
      status = summary_json.get('status')
    except ValueError:
      bad.append('summary.json is not JSON')
      status, summary_json = 'unreadable', {}
    finished = status is None and 'metrics' in summary_json
    if rc != 0 and status != 'failed' and not finished:
      bad.append(f'summary.json beside exit status {rc}')
  model = os.path.join(workdir, 'model', 'model.json')
  if os.path.exists(os.path.join(workdir, 'model')) and not os.path.isfile(model):
    bad.append('model/ without model.json')
  elif os.path.isfile(model):
    try:
      with open(model) as f:
        json.load(f)
    except ValueError:
      bad.append('model.json is not JSON')
  return bad


def _gist(err: str) -> str:
  """The lines of stderr that say what went wrong: error lines, and each traceback's header
  and last line."""
  lines = err.splitlines()
  keep = [l for i, l in enumerate(lines) if l.startswith(('error:', 'Exception ignored'))
          or (l and not l.startswith((' ', 'Traceback', 'I', 'W')) and i > 0
              and lines[i - 1].startswith(' '))]
  return ' | '.join(keep)[-600:]


def _mount(path: str, size: str, remount: bool = False) -> bool:
  opts = f'remount,size={size}' if remount else f'size={size}'
  cmd = ['mount', '-o', opts, path] if remount else ['mount', '-t', 'tmpfs', '-o', opts,
                                                     'tmpfs', path]
  return subprocess.run(cmd, capture_output=True).returncode == 0


def _final(workdir: str):
  import numpy as np  # pylint: disable=import-outside-toplevel
  with np.load(os.path.join(workdir, 'reconstruction.npz')) as f:
    x = f['x_candidates'].tobytes()
  with open(os.path.join(workdir, 'summary.json')) as f:
    history = json.load(f)['history']
  return x, history


def trial(rng: random.Random, base: str, steps: int, faults: int, waits, reference,
          can_mount: bool, counts: Dict[str, Dict[str, int]], problems: List[str]) -> bool:
  """One run with `faults` faults, then to completion; True when it ends bit-identical."""
  workdir = os.path.join(base, 'w')
  mounted = False
  if can_mount and rng.random() < 0.2 and _mount(base, '60k'):  # starts on a full disk
    mounted = True
    counts['disk_full']['injected'] += 1
    proc = _start(workdir, steps)
    _, err = proc.communicate(timeout=600)
    ok = proc.returncode == 2 and 'no space left' in err and not _half_made(workdir, 2, err)
    if not ok:
      problems.append(f'disk_full: rc {proc.returncode}; {_half_made(workdir, 2, err)}; '
                      f'{err.strip().splitlines()[-1:] if err.strip() else ""}')
    _mount(base, '16m', remount=True)
    survived_disk = ok
  for _ in range(faults):
    kind = rng.choice(KINDS[:4])
    counts[kind]['injected'] += 1
    before = _stamp(workdir)
    proc = _start(workdir, steps)
    time.sleep(rng.uniform(*waits))
    second = None
    if kind == 'concurrent':
      second = _start(workdir, steps)
      _, err2 = second.communicate(timeout=600)
      proc.wait(timeout=600)
      _, err = proc.communicate()
      # The second is refused while the first runs (or, the first finished, resumes it).
      ok = proc.returncode == 0 and (second.returncode == 0 or (
          second.returncode == 2 and 'in use by pid' in err2))
      ok = ok and not _half_made(workdir, 0, err, before) and not _half_made(workdir, 0, err2,
                                                                          before)
      if not ok:
        problems.append(f'concurrent: rc {proc.returncode}, {second.returncode}: '
                        f'{(err + err2).strip()[-300:]}')
    else:
      sig = {'sigkill': signal.SIGKILL, 'sigterm': signal.SIGTERM, 'sigint': signal.SIGINT}[kind]
      if proc.poll() is None:
        proc.send_signal(sig)
      _, err = proc.communicate(timeout=600)
      rc = proc.returncode
      expected = {0, -9} if kind == 'sigkill' else {0, 128 + sig}
      bad = _half_made(workdir, rc, err if kind != 'sigkill' else '', before)
      ok = rc in expected and not bad
      if not ok:
        problems.append(f'{kind}: rc {rc}; {bad}; {_gist(err)}')
    counts[kind]['survived'] += int(ok)
  proc = _start(workdir, steps)  # finish it
  _, err = proc.communicate(timeout=900)
  same = proc.returncode == 0 and _final(workdir) == reference
  if not same:
    problems.append(f'final: rc {proc.returncode} (0 and not identical: data lost): '
                    f'{err.strip()[-300:]}')
  if os.path.isdir(workdir) and any(e.endswith('.tmp') for e in os.listdir(workdir)):
    problems.append('temporary files left after a finished run')
  if mounted:
    counts['disk_full']['survived'] += int(survived_disk and same)
    subprocess.run(['umount', '-l', base], capture_output=True)
  return same


def main(argv=None) -> Dict[str, Any]:
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--faults', type=int, default=200, help='faults to inject in all')
  parser.add_argument('--per-run', type=int, default=4, help='faults per trial (at most)')
  parser.add_argument('--steps', type=int, default=600)
  parser.add_argument('--seed', type=int, default=0)
  parser.add_argument('--min-wait', type=float, default=0.5)
  parser.add_argument('--max-wait', type=float, default=7.0)
  parser.add_argument('--out', default=os.path.join(ROOT, 'results', 'soak.json'))
  args = parser.parse_args(argv)
  rng = random.Random(args.seed)
  t0 = time.time()
  tmp = tempfile.mkdtemp(prefix='recon-soak-')
  counts = {k: {'injected': 0, 'survived': 0} for k in KINDS}
  problems: List[str] = []
  trials = lost = 0
  can_mount = os.geteuid() == 0
  try:
    ref_dir = os.path.join(tmp, 'reference')
    proc = _start(ref_dir, args.steps, resume=False)
    _, err = proc.communicate(timeout=900)
    if proc.returncode != 0:
      raise SystemExit(f'the unbroken reference run failed: {err.strip()[-300:]}')
    reference = _final(ref_dir)
    while sum(c['injected'] for c in counts.values()) < args.faults:
      left = args.faults - sum(c['injected'] for c in counts.values())
      base = os.path.join(tmp, f'trial{trials}')
      os.makedirs(base)
      ok = trial(rng, base, args.steps, min(left, rng.randint(1, args.per_run)),
                 (args.min_wait, args.max_wait), reference, can_mount and left > 1, counts,
                 problems)
      lost += int(not ok)
      trials += 1
      shutil.rmtree(base, ignore_errors=True)
      _write(args, counts, trials, lost, problems, can_mount, t0, complete=False)
      print(f'trial {trials}: {"ok" if ok else "LOST"}; faults so far '
            f'{sum(c["injected"] for c in counts.values())}', flush=True)
  finally:
    shutil.rmtree(tmp, ignore_errors=True)
  result = _write(args, counts, trials, lost, problems, can_mount, t0, complete=True)
  print(json.dumps({k: v for k, v in result.items() if k != 'settings'}, indent=1))
  return result


def _write(args, counts, trials, lost, problems, can_mount, t0, complete: bool):
  """results JSON (rewritten after every trial, so a stopped soak keeps what it did)."""
  from recon.runtime import io, machine  # pylint: disable=import-outside-toplevel
  result = {
      'machine': machine.describe(), 'complete': complete,
      'settings': dict(vars(args), out=os.path.relpath(args.out, ROOT)), 'seed': args.seed,
      'trials': trials,
      'faults_injected': sum(c['injected'] for c in counts.values()),
      'faults_survived': sum(c['survived'] for c in counts.values()),
      'by_kind': counts, 'runs_lost': lost, 'half_made_or_wrong': problems,
      'disk_full_tested': can_mount, 'seconds': round(time.time() - t0, 1),
  }
  io.write_json(args.out, result)
  return result


if __name__ == '__main__':
  main()
