"""How long notebooks/audit.ipynb takes, run as a user runs it: a fresh kernel, top to bottom.

The notebook (a user-defined Flax MLP trained, saved and audited through `recon.run`) is
executed by nbclient in an empty folder, with recon's compilation cache off (a fresh Colab
runtime compiles everything), `repeats` times. Per run: the wall time from the kernel's start to
its shutdown, the CPU time the kernel used (user + system), each tagged cell's wall time
(nbclient's execute_input -> execute_reply), the machine's 1-minute load average before the run
(a shared machine's wall times stretch with it), and what the audit found (frac_recovered,
recon_error, steps, the run's own wall_seconds). docs/colab.md quotes these as the runtime
estimate. Results: results/notebook_timing.{json,md}.

    python -m scripts.notebook_timing                 # ~2 min on 2 CPU cores
    python -m scripts.notebook_timing --repeats=1 --out=/tmp/nbt
"""
from __future__ import annotations

import datetime
import os
import resource
import shutil
import statistics
import sys
import tempfile
import time
from typing import Any, Dict, Optional

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(ROOT, 'notebooks', 'audit.ipynb')



def kernel_env(**extra: str) -> Dict[str, str]:
  """The kernel's environment: this checkout's recon first on the path (so the notebook's install
  cell finds it and installs nothing), the caller's variables, `extra`."""
  env = dict(os.environ)
  paths = [ROOT] + [p for p in sys.path if p and os.path.isabs(p) and p != ROOT]
  env['PYTHONPATH'] = os.pathsep.join(paths)
  env.update(extra)
  return env


def _cell_seconds(cell) -> Optional[float]:
  timing = cell.get('metadata', {}).get('execution', {})
  start, end = timing.get('iopub.execute_input'), timing.get('shell.execute_reply')
  if not (start and end):
    return None
  parse = lambda s: datetime.datetime.fromisoformat(s.replace('Z', '+00:00'))
  return (parse(end) - parse(start)).total_seconds()


def execute(folder: str, notebook: str = NOTEBOOK, env: Optional[Dict[str, str]] = None,
            timeout: int = 600):
  """Executes a copy of `notebook` in `folder` (its working directory) in a fresh kernel.

  Returns (the executed notebook, wall seconds, the kernel's CPU seconds). A cell that raises
  raises nbclient's CellExecutionError here, naming the cell.
  """
  import nbclient  # pylint: disable=import-outside-toplevel
  import nbformat  # pylint: disable=import-outside-toplevel
  os.makedirs(folder, exist_ok=True)
  path = os.path.join(folder, os.path.basename(notebook))
  shutil.copyfile(notebook, path)
  nb = nbformat.read(path, as_version=4)
  client = nbclient.NotebookClient(nb, timeout=timeout, kernel_name='python3',
                                   resources={'metadata': {'path': folder}})
  before = resource.getrusage(resource.RUSAGE_CHILDREN)
  start = time.perf_counter()
  client.execute(env=env if env is not None else kernel_env())
  wall = time.perf_counter() - start
  after = resource.getrusage(resource.RUSAGE_CHILDREN)
  cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
  nbformat.write(nb, path)
  return nb, wall, cpu


def one_run(folder: str, env: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
  """One timed execution in `folder` (left there: the executed audit.ipynb, the audit's workdir
  audit_mlp/); `env` defaults to the kernel's with the compilation cache off."""
  import recon  # pylint: disable=import-outside-toplevel
  load = os.getloadavg()[0]
  nb, wall, cpu = execute(folder, env=env or kernel_env(RECON_COMPILATION_CACHE='off'))
  cells = {}
  for cell in nb.cells:
    tags = cell.get('metadata', {}).get('tags', [])
    if cell.cell_type == 'code' and tags:
      cells[tags[0]] = _cell_seconds(cell)
  m = recon.load(os.path.join(folder, 'audit_mlp')).metrics
  return {'load_average_before': round(load, 2), 'wall_seconds': wall, 'kernel_cpu_seconds': cpu,
          'cell_seconds': cells,
          'audit': {k: m[k] for k in ('frac_recovered', 'n_recovered', 'n', 'd', 'p_L',
                                       'recon_error', 'final_loss', 'steps', 'wall_seconds')}}


def run_all(out: str, repeats: int) -> Dict[str, Any]:
  from recon.runtime import io, machine  # pylint: disable=import-outside-toplevel
  runs = []
  for i in range(repeats):
    with tempfile.TemporaryDirectory(prefix='recon-notebook-') as folder:
      runs.append(one_run(folder))
    print(f'run {i}: {runs[-1]["wall_seconds"]:.1f} s wall, '
          f'{runs[-1]["kernel_cpu_seconds"]:.1f} s CPU', flush=True)
  record = {'machine': machine.describe(), 'notebook': 'notebooks/audit.ipynb',
            'compilation_cache': 'off', 'runs': runs,
            'median_wall_seconds': statistics.median(r['wall_seconds'] for r in runs),
            'median_kernel_cpu_seconds': statistics.median(r['kernel_cpu_seconds'] for r in runs),
            'median_audit_cell_seconds': statistics.median(r['cell_seconds']['audit']
                                                           for r in runs)}
  os.makedirs(out, exist_ok=True)
  io.write_json(os.path.join(out, 'notebook_timing.json'), record)
  io.write_text(os.path.join(out, 'notebook_timing.md'), render(record))
  return record


def render(record: Dict[str, Any]) -> str:
  names = list(record['runs'][0]['cell_seconds'])
  lines = ['# notebooks/audit.ipynb, executed top to bottom', '',
           f'Machine: {record["machine"]}. A fresh kernel per run, recon\'s compilation cache '
           'off (`scripts/notebook_timing.py`). Wall times stretch with the shared machine\'s '
           'load; the kernel\'s CPU time does not.', '',
           '| run | load before | wall s | kernel CPU s | ' + ' | '.join(names)
           + ' | recovered | recon_error |',
           '|---|---|---|---|' + '---|' * len(names) + '---|---|']
  for i, r in enumerate(record['runs']):
    a = r['audit']
    lines.append(f'| {i} | {r["load_average_before"]:.1f} | {r["wall_seconds"]:.1f} | '
                 f'{r["kernel_cpu_seconds"]:.1f} | '
                 + ' | '.join(f'{r["cell_seconds"][k]:.1f}' for k in names)
                 + f' | {a["n_recovered"]}/{a["n"]} | {a["recon_error"]:.4f} |')
  return '\n'.join(lines) + '\n'


def main(argv=None):
  # argparse, not absl flags: tests import several scripts into one process, and absl's
  # global flag names ('out') would collide.
  import argparse  # pylint: disable=import-outside-toplevel
  parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  parser.add_argument('--out', default='results', help='folder of notebook_timing.{json,md}')
  parser.add_argument('--repeats', type=int, default=2,
                      help='how many times the notebook is executed')
  args = parser.parse_args(argv)
  run_all(args.out, args.repeats)


if __name__ == '__main__':
  main()
