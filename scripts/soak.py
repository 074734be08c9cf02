"""Soaks (docs/reliability.md#soak): results/soak.json; --ownership: results/soak_ownership.json.

processes: a short CLI random-features run (n 4, d 8, p 320, `--steps` steps, a checkpoint every
  100) in a fresh workdir, faults injected until it finishes: SIGKILL / SIGTERM / SIGINT at a
  random time, a concurrent second start (refused: exit 2, 'in use by pid'), and as root a full
  tmpfs disk (one 'error:' line, exit 2). After every fault: the documented exit status, at most
  one 'error:' line and no traceback, nothing half-made; each restart resumes, and the finished
  run equals an unbroken one bit for bit (else the run is lost).
--ownership: in-process runs (recon.run) on workdirs mixed with a user's files, links and
  repositories, killed at a random output write; no user file may be deleted, moved or changed.

    python -m scripts.soak --faults=200          # ~45 min on 2 shared CPU cores
    python -m scripts.soak --ownership --faults=200          # ~12 min
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Dict, List

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = ('sigkill', 'sigterm', 'sigint', 'concurrent', 'disk_full')

# -- processes: kills, signals, concurrent starts, full disks ---------------------------------


def _start(workdir: str, steps: int, resume: bool = True) -> subprocess.Popen:
  args = [f'--config={ROOT}/configs/rf_synthetic.py', '--config.data.n=4', '--config.data.d=8',
          '--config.victim.p=320', f'--config.attack.max_steps={steps}',
          '--config.run.chunk_steps=50', '--config.run.checkpoint_every_steps=100',
          '--config.run.checkpoint_every_seconds=0', '--config.run.log_every_seconds=1000']
  args += ['--config.run.resume=True'] if resume else []
  return subprocess.Popen([sys.executable, '-m', 'recon.main', *args, f'--workdir={workdir}'],
                          cwd=ROOT, env=dict(os.environ, JAX_PLATFORMS='cpu', PYTHONPATH=ROOT),
                          text=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)


def _stamp(workdir: str):
  try:
    return os.stat(os.path.join(workdir, 'summary.json')).st_mtime_ns
  except OSError:
    return None


def _half_made(workdir: str, rc: int, err: str, before=None) -> List[str]:
  """What is wrong with the workdir and stderr after a fault ([] if nothing); `before`:
  summary.json's stamp before the process started (a finished earlier run's)."""
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
  """stderr's error lines and each traceback's last line."""
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
    return x, json.load(f)['history']


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


def processes(args, settings: dict) -> dict:
  from recon.runtime import io, machine  # pylint: disable=import-outside-toplevel
  rng, t0 = random.Random(args.seed), time.time()
  tmp = tempfile.mkdtemp(prefix='recon-soak-')
  counts = {k: {'injected': 0, 'survived': 0} for k in KINDS}
  problems: List[str] = []
  trials = lost = 0
  can_mount = os.geteuid() == 0

  def write(complete):  # after every trial, so a stopped soak keeps what it did
    result = {'machine': machine.describe(), 'complete': complete, 'settings': settings,
              'seed': args.seed, 'trials': trials,
              'faults_injected': sum(c['injected'] for c in counts.values()),
              'faults_survived': sum(c['survived'] for c in counts.values()),
              'by_kind': counts, 'runs_lost': lost, 'half_made_or_wrong': problems,
              'disk_full_tested': can_mount, 'seconds': round(time.time() - t0, 1)}
    io.write_json(args.out, result)
    return result

  try:
    ref_dir = os.path.join(tmp, 'reference')
    proc = _start(ref_dir, args.steps, resume=False)
    _, err = proc.communicate(timeout=900)
    if proc.returncode != 0:
      raise SystemExit(f'the unbroken reference run failed: {err.strip()[-300:]}')
    reference = _final(ref_dir)
    while (done := sum(c['injected'] for c in counts.values())) < args.faults:
      base = os.path.join(tmp, f'trial{trials}')
      os.makedirs(base)
      ok = trial(rng, base, args.steps, min(args.faults - done, rng.randint(1, args.per_run)),
                 (args.min_wait, args.max_wait), reference, can_mount and args.faults - done > 1,
                 counts, problems)
      lost += int(not ok)
      trials += 1
      shutil.rmtree(base, ignore_errors=True)
      write(False)
      print(f'trial {trials}: {"ok" if ok else "LOST"}; faults so far '
            f'{sum(c["injected"] for c in counts.values())}', flush=True)
  finally:
    shutil.rmtree(tmp, ignore_errors=True)
  result = write(True)
  print(json.dumps({k: v for k, v in result.items() if k != 'settings'}, indent=1))
  return result


# -- ownership: no user file in or beside a workdir is ever deleted, moved or changed ----------


def _config(seed: int, mode: str):
  from configs import rf_synthetic  # pylint: disable=import-outside-toplevel
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
  import recon  # pylint: disable=import-outside-toplevel
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
    from recon.runtime import io  # pylint: disable=import-outside-toplevel
    self.calls += 1
    if self.calls == self.k:
      io.claim(path)
      if self.leave_temp:
        folder, name = os.path.split(os.path.abspath(path))
        fd, _ = tempfile.mkstemp(dir=folder, prefix=f'.{name}.', suffix='.tmp')
        os.close(fd)
      raise SystemExit(137)
    return self.real(path, write)


def ownership_soak(faults: int, seed: int, root: str) -> Dict[str, object]:
  from recon.runtime import io, ownership  # pylint: disable=import-outside-toplevel
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


def ownership_run(args) -> dict:
  from absl import logging  # pylint: disable=import-outside-toplevel
  from recon.runtime import io, machine  # pylint: disable=import-outside-toplevel
  before = logging.get_verbosity()
  logging.set_verbosity(logging.WARNING)  # the runs' INFO lines, hundreds of them
  try:
    with tempfile.TemporaryDirectory(prefix='soak_ownership_') as root:
      result = ownership_soak(args.faults, args.seed, root)
  finally:
    logging.set_verbosity(before)
  result.update(machine=machine.describe(), seed=args.seed,
                command=f'python -m scripts.soak --ownership --faults={args.faults} '
                        f'--seed={args.seed}')
  io.write_json(args.out, result)
  print(f'{result["faults"]} faults in {result["workdirs"]} workdirs: '
        f'{len(result["user_files_lost"])} user files lost, {len(result["wrong"])} wrong states '
        f'({result["seconds"]:.0f} s) -> {args.out}')
  return result


def main(argv=None) -> int:
  """0 when nothing was lost and every fault was survived; 1 otherwise; 2 on bad input."""
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--ownership', action='store_true', help='the ownership soak')
  parser.add_argument('--faults', type=int, default=200, help='faults to inject in all')
  parser.add_argument('--per-run', type=int, default=4, help='processes: faults per trial')
  parser.add_argument('--steps', type=int, default=600, help='processes: attack steps')
  parser.add_argument('--seed', type=int, default=None, help='default 0 (--ownership: 1)')
  parser.add_argument('--min-wait', type=float, default=0.5, help='processes: seconds')
  parser.add_argument('--max-wait', type=float, default=7.0, help='processes: seconds')
  parser.add_argument('--out', default=None, help='default results/soak[_ownership].json')
  args = parser.parse_args(argv)
  if args.faults < 1:
    print(f'error: --faults: {args.faults}; accepted: an int >= 1', file=sys.stderr)
    return 2
  if args.seed is None:
    args.seed = int(args.ownership)
  if args.out is None:
    name = 'soak_ownership.json' if args.ownership else 'soak.json'
    args.out = os.path.join(ROOT, 'results', name)
  if args.ownership:
    r = ownership_run(args)
    return int(bool(r['user_files_lost'] or r['wrong']))
  settings = {k: v for k, v in vars(args).items() if k != 'ownership'}
  r = processes(args, dict(settings, out=os.path.relpath(args.out, ROOT)))
  return int(bool(r['runs_lost'] or r['half_made_or_wrong']
                  or r['faults_survived'] != r['faults_injected']))


if __name__ == '__main__':
  raise SystemExit(main())
