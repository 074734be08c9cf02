"""The Python API: one call from a config to a result you can hold.

    import recon
    cfg = recon.get_config('audit', {'victim.module': 'my_models:MLP', ...})
    result = recon.run(cfg, workdir='audits/mlp')
    result.metrics['frac_recovered'], result.certified, result.records[:3], result.candidates

`run` is the command line's `execute` (recon/execution.py: the same validation, workdir lock,
checkpoints, resume and outputs) without the process: a refusal or failure raises `RunError`
(its `exit_code` is the CLI's exit status, its message the CLI's one line) instead of exiting.
A sweep (`config.sweep` set) returns its sweep.json as `summary` and no candidates.
"""
from __future__ import annotations

import copy
import dataclasses
import importlib.util
import json
import os
from typing import Any, Dict, List, Optional

import ml_collections
import numpy as np

from recon import config as config_lib
from recon import errors, execution

CONFIGS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'configs')


class RunError(errors.ReconError):
  """A run that was refused or failed; `exit_code` is what the CLI would have exited with."""

  def __init__(self, message: str, exit_code: int):
    super().__init__(message)
    self.exit_code = exit_code


@dataclasses.dataclass
class Result:
  """What a run wrote, read back: summary.json (or sweep.json), records.json, the candidates."""
  workdir: str
  summary: Dict[str, Any]
  records: List[Dict[str, Any]]
  candidates: Optional[np.ndarray]  # (m, d): reconstruction.npz's x_candidates

  @property
  def metrics(self) -> Dict[str, Any]:
    return self.summary.get('metrics') or {}

  @property
  def certified(self) -> bool:
    return bool(self.metrics.get('certified'))

  def __repr__(self) -> str:
    m = self.metrics
    return (f'Result(workdir={self.workdir!r}, frac_recovered={m.get("frac_recovered")}, '
            f'certified={m.get("certified")}, records={len(self.records)})')


def get_config(job: str = 'rf_synthetic',
               overrides: Optional[Dict[str, Any]] = None) -> ml_collections.ConfigDict:
  """configs/<job>.py's config with `overrides` ({'data.n': 8, ...}) applied (a checkout or an
  editable install: the configs/ folder beside the package)."""
  path = os.path.join(CONFIGS, f'{job}.py')
  if not os.path.isfile(path):
    names = sorted(f[:-3] for f in os.listdir(CONFIGS) if f.endswith('.py')) if os.path.isdir(
        CONFIGS) else []
    raise RunError(f'job: no config {job!r} in {CONFIGS}; accepted: {", ".join(names)}',
                   errors.EXIT_REFUSED)
  execution_root = os.path.dirname(CONFIGS)
  import sys  # pylint: disable=import-outside-toplevel
  if execution_root not in sys.path:
    sys.path.insert(0, execution_root)  # the config files `from configs import base`
  spec = importlib.util.spec_from_file_location(f'_recon_job_{job}', path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  config = module.get_config()
  for field, value in (overrides or {}).items():
    if field not in config_lib.FIELDS and not field.startswith('sweep.'):
      raise RunError(f'config.{field}: unknown field{config_lib.near_names(field, config_lib.FIELDS)}'
                     '; accepted: a field configs/base.py defines', errors.EXIT_REFUSED)
    with config.ignore_type():
      config_lib.set_path(config, field, value)
  return config


def run(config: Any, workdir: Optional[str] = None) -> Result:
  """Runs `config` (validated whole, once) into `workdir` (default results/runs/<name>-<time>);
  the Result of what it wrote. Raises RunError with the CLI's one line on any refusal.
  `config` itself is left as it was (the run resolves paths and sizes on a copy)."""
  config = copy.deepcopy(config)
  workdir = os.path.abspath(os.path.expanduser(
      workdir or execution.default_workdir(getattr(config, 'name', 'run'))))
  lines: List[str] = []
  code = execution.execute(config, workdir, say=lines.append)
  if code != errors.EXIT_OK:
    raise RunError(lines[-1] if lines else f'the run ended with exit status {code}', code)
  return load(workdir)


def load(workdir: str) -> Result:
  """The Result of a finished run's workdir (or a sweep's)."""
  name = 'summary.json' if os.path.exists(os.path.join(workdir, 'summary.json')) else 'sweep.json'
  with open(os.path.join(workdir, name)) as f:
    summary = json.load(f)
  records = []
  if os.path.exists(os.path.join(workdir, 'records.json')):
    with open(os.path.join(workdir, 'records.json')) as f:
      records = json.load(f)
  candidates = None
  npz = os.path.join(workdir, 'reconstruction.npz')
  if os.path.exists(npz):
    with np.load(npz, allow_pickle=False) as f:
      if 'x_candidates' in f.files:
        candidates = f['x_candidates']
  return Result(workdir, summary, records, candidates)
