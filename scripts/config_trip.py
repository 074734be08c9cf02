"""The config's trip through the house: which modules see the whole config, in what order.

Runs small jobs in-process through `recon.run` (the entry point behind `recon.main`) under
`sys.setprofile` and records every call of a function of `recon` that receives the *whole*
config -- a ConfigDict with the sections data, victim, attack, run, sweep and the seed -- as an
argument. A section (`cfg.attack`) or a typed value does not count: handing those down is the
design (issue #29 item 3: a composition root reads the config, the builders below get their
sections).

From the calls in time order, merged while they stay in one module:
  rooms    the distinct modules the config enters;
  moves    the changes of module between consecutive calls;
  climbs   the moves back up: from a module to one that imports it (directly or through
           others; the import graph has no circle, tests/test_layering.py);
  entries  per module, how many times the config enters it (max_entries: the largest).
Targets (issue #29): at most 10 climbs, no module entered more than 3 times.

Writes results/config_trip.{json,md} with the per-job trip, the machine and the device.

    python -m scripts.config_trip            # ~1 min on 2 CPU cores
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import jax  # noqa: E402
import ml_collections  # noqa: E402

import recon  # noqa: E402
from recon.runtime import io, machine  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = os.path.join(ROOT, 'recon') + os.sep
# The whole config: its sections and the top-level fields (the sweep section alone also has
# data, victim, attack and run: its axes mirror the config's paths).
WHOLE = ('data', 'victim', 'attack', 'run', 'seed', 'sweep')
MAX_CLIMBS, MAX_ENTRIES = 10, 3
# (name, configs/<job>.py, overrides): small sizes, one job per pipeline family.
JOBS = (
    ('random_features', 'rf_synthetic',
     {'data.n': 4, 'data.d': 4, 'victim.p': 160, 'attack.max_steps': 200}),
    ('two_layer', 'two_layer',
     {'data.n': 4, 'victim.width': 64, 'victim.train.max_steps': 200, 'attack.max_steps': 200}),
    ('kkt', 'kkt_synthetic',
     {'data.n': 4, 'victim.train.max_steps': 200, 'attack.max_steps': 200}),
    ('subspace', 'two_layer_subspace',
     {'data.n': 4, 'victim.train.max_steps': 200, 'attack.max_steps': 200}),
    ('sweep', 'rf_synthetic',
     {'data.n': 4, 'data.d': 4, 'victim.p': 160, 'attack.max_steps': 200, 'sweep.seed': (0, 1)}),
)


def is_whole_config(value: Any) -> bool:
  if not isinstance(value, (ml_collections.ConfigDict, ml_collections.FrozenConfigDict)):
    return False
  try:
    return all(name in value for name in WHOLE)
  except TypeError:
    return False


def module_of(path: str) -> str:
  rel = os.path.relpath(path, ROOT)[:-3].split(os.sep)
  return '.'.join(rel[:-1] if rel[-1] == '__init__' else rel)


def record_calls(fn) -> List[str]:
  """'module:function' of the recon functions that receive the whole config while `fn()`
  runs, in order (one entry per call)."""
  calls: List[str] = []

  def profile(frame, event, arg):
    del arg
    if event != 'call':
      return
    path = frame.f_code.co_filename
    if not path.startswith(PACKAGE):
      return
    code = frame.f_code
    names = code.co_varnames[:code.co_argcount + code.co_kwonlyargcount]
    if any(is_whole_config(frame.f_locals.get(n)) for n in names):
      calls.append(f'{module_of(path)}:{code.co_name}')

  sys.setprofile(profile)
  try:
    fn()
  finally:
    sys.setprofile(None)
  return calls


def upper_of(graph: Dict[str, set]) -> Dict[str, set]:
  """{module: every module that imports it, directly or through others}."""
  importers: Dict[str, set] = {m: set() for m in graph}
  for m, deps in graph.items():
    for dep in deps:
      importers.setdefault(dep, set()).add(m)
  out = {}
  for m in importers:
    seen, todo = set(), [m]
    while todo:
      for up in importers.get(todo.pop(), ()):
        if up not in seen:
          seen.add(up)
          todo.append(up)
    out[m] = seen
  return out


def trip(calls: List[str], upper: Dict[str, set]) -> Dict[str, Any]:
  """Rooms, moves, climbs and entries of a call sequence ('module:function' in time order)."""
  functions: Dict[str, List[str]] = {}
  for call in calls:
    m, f = call.split(':')
    functions.setdefault(m, [])
    if f not in functions[m]:
      functions[m].append(f)
  calls = [c.split(':')[0] for c in calls]
  path = [m for i, m in enumerate(calls) if i == 0 or calls[i - 1] != m]
  moves = list(zip(path, path[1:]))
  climbs = [(a, b) for a, b in moves if b in upper.get(a, ())]
  entries: Dict[str, int] = {}
  for m in path:
    entries[m] = entries.get(m, 0) + 1
  return {'calls': len(calls), 'rooms': len(entries), 'moves': len(moves),
          'climbs': len(climbs), 'entries': dict(sorted(entries.items(), key=lambda kv: -kv[1])),
          'max_entries': max(entries.values()) if entries else 0, 'path': path,
          'climb_moves': [f'{a} -> {b}' for a, b in climbs], 'functions': functions}


def job(name: str, config_job: str, overrides: Dict[str, Any], upper) -> Dict[str, Any]:
  config = recon.get_config(config_job, overrides)
  with tempfile.TemporaryDirectory(prefix=f'config_trip_{name}_') as workdir:
    t = time.time()
    calls = record_calls(lambda: recon.run(config, os.path.join(workdir, 'run')))
    seconds = time.time() - t
  out = {'job': name, 'config': f'configs/{config_job}.py', 'overrides': overrides,
         'seconds': seconds}
  out.update(trip(calls, upper))
  out['within_target'] = out['climbs'] <= MAX_CLIMBS and out['max_entries'] <= MAX_ENTRIES
  return out


def import_graph() -> Dict[str, set]:
  sys.path.insert(0, os.path.join(ROOT, 'tests'))
  import test_layering  # pylint: disable=import-outside-toplevel
  return test_layering.import_graph()


def main(argv: List[str]) -> None:
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--out', default=os.path.join(ROOT, 'results', 'config_trip'))
  args = parser.parse_args(argv)
  recon.setup_process()
  upper = upper_of(import_graph())
  records = [job(*j, upper=upper) for j in JOBS]
  result = {'description': __doc__.split('\n\n')[0], 'command': 'python -m scripts.config_trip',
            'targets': {'max_climbs': MAX_CLIMBS, 'max_entries': MAX_ENTRIES},
            'records': records, 'machine': machine.describe(),
            'device': f'1 x {jax.devices()[0].platform}'}
  io.write_json(args.out + '.json', result)
  lines = ["# The config's trip: the modules that receive the whole config", '',
           f'Regenerate: `{result["command"]}`. Machine: {result["machine"]}; device '
           f'{result["device"]}. Targets: at most {MAX_CLIMBS} climbs back up, no module '
           f'entered more than {MAX_ENTRIES} times (issue #29). See the script for the terms.',
           '', '| job | calls | rooms | moves | climbs | most entries | within target |',
           '|---|---|---|---|---|---|---|']
  for r in records:
    top = next(iter(r['entries'].items()))
    lines.append(f'| {r["job"]} | {r["calls"]} | {r["rooms"]} | {r["moves"]} | {r["climbs"]} | '
                 f'{top[1]} ({top[0]}) | {r["within_target"]} |')
  for r in records:
    lines += ['', f'## {r["job"]}', '', 'Entries (and the functions that take the config): ' +
              '; '.join(f'{m} {k} ({", ".join(r["functions"][m])})'
                        for m, k in r['entries'].items()) + '.', '',
              'Path: ' + ' → '.join(r['path']) + '.', '',
              'Climbs: ' + (', '.join(r['climb_moves']) or 'none') + '.']
  with open(args.out + '.md', 'w') as f:
    f.write('\n'.join(lines) + '\n')
  print('\n'.join(lines[:7 + len(records)]))


if __name__ == '__main__':
  main(sys.argv[1:])
