"""Wall time of every job in the README's table, run as a user runs it.

Each job is `python -m recon.main --config=configs/<job>.py --workdir=<fresh folder>` in a new
process, timed from process start to exit (interpreter start, imports, compilation, the run,
the outputs), with an empty compilation cache (RECON_COMPILATION_CACHE pointed at a fresh
folder: a first run on a new machine; a re-run with a warm cache is faster). Two jobs need more
than the bare command, as the README says:

  rf_cifar  the README's CPU shrink (`--config.data.image_size=4 --config.data.n=6`); the full
            size is a GPU job
  audit     docs/audit.md's two files (`my_models.py`, `train_mlp.py`) written to a folder and
            the training script run there first (its time recorded apart), then the page's
            audit command with W(0)

Every record carries the command, the exit status, the job's last output line (its headline),
the one-minute load average before and after (a timing taken on a busy machine says so), the
machine and the device. Writes results/job_times.{json,md}; `--jobs` runs a subset and keeps the
other records of the JSON.

    python -m scripts.job_times                      # every job, ~15 min on 2 CPU cores
    python -m scripts.job_times --jobs=rf_synthetic,vit
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Dict, List, Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from recon.runtime import io, machine  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The README's table, in its order: job -> the overrides its row names.
JOBS: Dict[str, List[str]] = {
    'rf_synthetic': [], 'rf_phase_transition': [], 'rf_digits': [], 'rf_faces': [],
    'rf_cifar': ['--config.data.image_size=4', '--config.data.n=6'],
    'rf_logistic': [], 'two_layer': [], 'resnet': [], 'vit': [], 'rf_subspace': [],
    'two_layer_subspace': [], 'kkt_synthetic': [], 'kkt_identifiability': [],
    'audit': ['--config.victim.module=my_models:MLP', '--config.victim.checkpoint=mlp.msgpack',
              '--config.victim.init_checkpoint=mlp_init.msgpack', '--config.attack.knows_init=True',
              '--config.data.path=train.npz', '--config.data.n=8', '--config.data.d=16'],
    'leak_width': [],
}


def doc_files() -> Dict[str, str]:
  """{file name: code} of the blocks docs/audit.md marks `<!-- file: NAME -->`."""
  with open(os.path.join(ROOT, 'docs', 'audit.md')) as f:
    text = f.read()
  return dict(re.findall(r'<!-- file: (\S+) -->\n```python\n(.*?)```', text, re.S))


def load_average() -> Optional[float]:
  try:
    return os.getloadavg()[0]
  except OSError:
    return None


# absl's log prefix: 'I1127 17:31:05.882651 139629676145536 execution.py:217] '
_LOG_PREFIX = re.compile(r'^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d+\s+\d+ \S+:\d+\] ')


def last_line(text: str) -> str:
  """The output's last non-empty line, without absl's log prefix."""
  lines = [l.strip() for l in text.splitlines() if l.strip()]
  return _LOG_PREFIX.sub('', lines[-1])[-300:] if lines else ''


def time_job(job: str, scratch: str, timeout: float) -> dict:
  """One job's record (see the module docstring)."""
  cwd, env = ROOT, dict(os.environ)
  env['RECON_COMPILATION_CACHE'] = tempfile.mkdtemp(prefix='cache_', dir=scratch)
  env['PYTHONPATH'] = ROOT + os.pathsep + env.get('PYTHONPATH', '')
  prep = None
  if job == 'audit':  # the page's files, its training script, then its command
    cwd = tempfile.mkdtemp(prefix='audit_', dir=scratch)
    for name, code in doc_files().items():
      with open(os.path.join(cwd, name), 'w') as f:
        f.write(code)
    env['PYTHONPATH'] = cwd + os.pathsep + env['PYTHONPATH']
    t0 = time.time()
    subprocess.run([sys.executable, 'train_mlp.py'], cwd=cwd, env=env, check=True,
                   capture_output=True, timeout=timeout)
    prep = time.time() - t0
  command = [sys.executable, '-m', 'recon.main', f'--config={ROOT}/configs/{job}.py',
             f'--workdir={os.path.join(scratch, "work_" + job)}', *JOBS[job]]
  before = load_average()
  t0 = time.time()
  try:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)
    rc, out = done.returncode, done.stdout + done.stderr
  except subprocess.TimeoutExpired as e:
    rc, out = 'timeout', (e.stdout or b'').decode(errors='replace') if isinstance(
        e.stdout, bytes) else (e.stdout or '')
  seconds = time.time() - t0
  rec = {'job': job, 'config': f'configs/{job}.py', 'overrides': JOBS[job],
         'command': 'python -m recon.main ' + ' '.join(command[3:]).replace(ROOT + '/', ''),
         'seconds': round(seconds, 1), 'exit_status': rc, 'last_line': last_line(out),
         'load_before': before, 'load_after': load_average(), 'cache': 'cold (empty folder)',
         'machine': machine.describe(), 'device': 'cpu'}
  if prep is not None:
    rec['prepare_seconds'] = round(prep, 1)
    rec['prepare'] = 'python train_mlp.py (docs/audit.md)'
  return rec


def render_md(records: List[dict]) -> str:
  from scripts import common  # pylint: disable=import-outside-toplevel
  return common.page(
      "Wall time of the README's jobs",
      'Each job run as `python -m recon.main --config=configs/JOB.py` in a new process with an '
      'empty compilation cache (a first run on a new machine), timed from process start to '
      'exit; load: the one-minute load average before / after (2 cores: above ~2 the machine '
      'was shared).' + (f" Machine: {records[0]['machine']}." if records else ''),
      common.table(['job', 'seconds', 'exit', 'load before / after', 'overrides', 'last line'],
                   [[r['job'], round(r['seconds']), r['exit_status'],
                     f"{common.fmt(r['load_before'])} / {common.fmt(r['load_after'])}",
                     ' '.join(r['overrides']) + (f" (after `{r['prepare']}`, "
                                                 f"{r['prepare_seconds']:.0f} s)"
                                                 if 'prepare_seconds' in r else ''),
                     r['last_line'].replace('|', '/')] for r in records]))


def main(argv=None) -> int:
  ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  ap.add_argument('--jobs', default=','.join(JOBS), help='comma-separated subset of: ' +
                  ', '.join(JOBS))
  ap.add_argument('--out', default=os.path.join(ROOT, 'results', 'job_times'))
  ap.add_argument('--timeout', type=float, default=1800.0, help='seconds per job')
  args = ap.parse_args(argv)
  jobs = [j for j in args.jobs.split(',') if j]
  unknown = [j for j in jobs if j not in JOBS]
  if unknown:
    print(f'--jobs: unknown {unknown}; accepted: {", ".join(JOBS)}', file=sys.stderr)
    return 2
  path = args.out + '.json'
  old = io.read_json(path)['records'] if os.path.exists(path) else []
  by_job = {r['job']: r for r in old}
  with tempfile.TemporaryDirectory(prefix='job_times_') as scratch:
    for job in jobs:
      rec = time_job(job, scratch, args.timeout)
      by_job[job] = rec
      print(f'{job}: {rec["seconds"]:.1f} s, exit {rec["exit_status"]}, load '
            f'{rec["load_before"]} -> {rec["load_after"]}: {rec["last_line"][:120]}', flush=True)
      records = [by_job[j] for j in JOBS if j in by_job]
      io.write_json(path, {'records': records})  # after every job: an interrupted run keeps
      io.write_text(args.out + '.md', render_md(records))
  return 0


if __name__ == '__main__':
  sys.exit(main())
