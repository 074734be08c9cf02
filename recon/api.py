"""The Python API: one call from a config to a result you can hold.

    import recon
    cfg = recon.get_config('audit', {'victim.module': 'my_models:MLP', ...})
    result = recon.run(cfg, workdir='audits/mlp')
    result.metrics['frac_recovered'], result.certified, result.records[:3], result.candidates

`run` is the command line's `execute` (recon/execution.py: the same validation, workdir lock,
checkpoints, resume and outputs) without the process: a refusal or failure raises `RunError`
(its `exit_code` is the CLI's exit status, its message the CLI's one line) instead of exiting.
A sweep (`config.sweep` set) returns its sweep.json as `summary` and no candidates.

The public surface (docs/api.md) is `PUBLIC_NAMES` on the package `recon` plus the modules in
`PUBLIC_MODULES`; scripts/ use nothing else (tests/test_scripts_api.py checks it).
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

from recon.config import validate as config_lib
from recon import errors, execution, metrics

# What `import recon` offers (recon/__init__.py serves them on first use).
PUBLIC_NAMES = ('get_config', 'run', 'load', 'Result', 'RunError', 'registry', 'setup_process',
                'load_data', 'leak_width_shadows', 'recertify', 'sample_shares',
                'truth_certificate')
# Modules that are public as a whole, each a small stable job of its own:
PUBLIC_MODULES = (
    'recon.registry',  # the registered victims, objectives, data sets, pipelines (extending)
    'recon.config.validate',    # the config schema: FIELDS, get_path / set_path, sweep_axes, validate
    'recon.data',      # the data sets a config names: load, image_shape, to_pixels, ...
    'recon.metrics',   # scoring candidates against the truth (matching, distances, SSIM)
    'recon.runtime.io',        # atomic writes and reads of result files (json, text, npz)
    'recon.runtime.machine',   # the one-line machine / device description a result records
    'recon.audit.rero',      # what DP promises against reconstruction (Hayes et al.'s bounds)
    'recon.audit.threshold',  # the leak-width law: threshold fits, bootstraps, rates of shadow runs
)

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
  def certified(self) -> Optional[bool]:
    """True / False: the blind certificate's verdict on the whole set; None: this attack has
    no certificate (trained networks, KKT), so nothing was certified either way."""
    value = self.metrics.get('certified')
    return None if value is None else bool(value)

  def __repr__(self) -> str:
    m = self.metrics
    return (f'Result(workdir={self.workdir!r}, frac_recovered={m.get("frac_recovered")}, '
            f'certified={m.get("certified")}, records={len(self.records)})')


def configs_dir() -> str:
  """The folder of the job configs: configs/ beside the package (a checkout, an editable
  install), else the copy an installed wheel carries (PREFIX/share/recon/configs, setup.cfg's
  data_files), found through the installed distribution's file list."""
  if os.path.isdir(CONFIGS):
    return CONFIGS
  import importlib.metadata  # pylint: disable=import-outside-toplevel
  try:
    dist = importlib.metadata.distribution('recon')
  except importlib.metadata.PackageNotFoundError:
    return CONFIGS
  for f in dist.files or ():
    if str(f).replace(os.sep, '/').endswith('share/recon/configs/base.py'):
      return os.path.dirname(os.path.abspath(str(dist.locate_file(f))))
  return CONFIGS


def get_config(job: str = 'rf_synthetic',
               overrides: Optional[Dict[str, Any]] = None) -> ml_collections.ConfigDict:
  """configs/<job>.py's config with `overrides` ({'data.n': 8, ...}) applied (`configs_dir`:
  a checkout's configs/, or an installed wheel's copy)."""
  folder = configs_dir()
  path = os.path.join(folder, f'{job}.py')
  if not os.path.isfile(path):
    names = sorted(f[:-3] for f in os.listdir(folder) if f.endswith('.py')) if os.path.isdir(
        folder) else []
    raise RunError(f'job: no config {job!r} in {folder}; accepted: {", ".join(names)}',
                   errors.EXIT_REFUSED)
  execution_root = os.path.dirname(folder)
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


def run(config: Any, workdir: Optional[str] = None, *, nonfinite_ok: bool = False) -> Result:
  """Runs `config` (validated whole, once) into `workdir` (default results/runs/<name>-<time>);
  the Result of what it wrote. Raises RunError with the CLI's one line on any refusal.
  `config` itself is left as it was (the run resolves paths and sizes on a copy).

  A run that stopped on non-finite values (the CLI's exit status 3) raises too, unless
  `nonfinite_ok`: then its Result (summary status 'nonfinite', the outputs of the last finite
  state) comes back like any other, for a grid in which divergence is one of the outcomes."""
  config = copy.deepcopy(config)
  workdir = os.path.abspath(os.path.expanduser(
      workdir or execution.default_workdir(getattr(config, 'name', 'run'))))
  lines: List[str] = []
  code = execution.execute(config, workdir, say=lines.append)
  if code != errors.EXIT_OK and not (nonfinite_ok and code == errors.EXIT_NONFINITE):
    raise RunError(lines[-1] if lines else f'the run ended with exit status {code}', code)
  return load(workdir)


def setup_process() -> Optional[str]:
  """What the command line does once per process before its first run, for a script that
  calls `run` many times: keep XLA's large CPU buffers mapped between steps (recon/runtime/host.py)
  and turn on JAX's persistent compilation cache (recon/runtime/compile_cache.py). Idempotent; returns
  the cache folder (None when the cache is off). A bad RECON_HOST_MALLOC raises ValueError."""
  from recon.runtime import compile_cache, host  # pylint: disable=import-outside-toplevel
  host.keep_buffers_mapped()
  return compile_cache.enable()


def load_data(config: Any, seed: int, dtype: Any = None):
  """(X (n, d), y (n,), meta): the training set a run of `config` with seed `seed` draws
  (its data key, `recon.runtime.runs.split_keys(seed)['data']`); meta['indices'] names the images an
  image data set picked. dtype: default float32."""
  import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
  from recon import data  # pylint: disable=import-outside-toplevel
  from recon.runtime import runs
  return data.load(config.data, runs.split_keys(seed)['data'],
                   jnp.float32 if dtype is None else dtype)


def leak_width_shadows(config: Any, ns: List[int], ratios: List[float], seeds: List[int],
                       workdir: str) -> Dict[str, Any]:
  """The leak-width pipeline's shadow problems (recon/audit/leak_width.py) without its fit:
  `config` (configs/leak_width.py's sections) describes the family; its shadows run at sizes
  `ns`, widths p = r D n for r in `ratios`, seeds `seeds`, in `workdir` (a stopped call resumes
  there). Returns {'family', 'dimension' (D and how it was chosen), 'records' (one per run:
  n, ratio, p, seed, success, certified, frac_recovered, steps, seconds)}; the fits over the
  records are recon.audit.threshold's."""
  from recon.audit import leak_width as lw  # pylint: disable=import-outside-toplevel
  from recon.pipelines import victims  # pylint: disable=import-outside-toplevel
  from recon.config import sections  # pylint: disable=import-outside-toplevel
  spec = sections.RunSpec.from_config(victims.resolve(config))
  dim = lw.dimension(spec.data, spec.victim, spec.leak_width)
  return {'family': lw.family(spec.victim), 'dimension': dim,
          'records': lw.shadow_records(spec.to_dict(), spec.data, spec.victim, spec.attack, dim,
                                       ns, ratios, seeds, workdir)}


def recertify(from_dir: str, to_dir: str) -> Dict[str, Any]:
  """A finished random-features sweep's records re-derived from its saved candidates in
  `to_dir` (the certificate, the precision rung and the scores, with this code on this machine;
  not the descent): recon/sweep/recertify.py. Returns the new sweep dict; RunError (exit status 2, one
  line) when `from_dir` holds no such sweep or `to_dir` already holds one."""
  from recon.sweep import recertify as sweep_recertify  # pylint: disable=import-outside-toplevel
  try:
    return sweep_recertify.recertify(from_dir, to_dir)
  except errors.ReconError as e:
    raise RunError(str(e), e.exit_code) from None


def _rf_truth(workdir: str, needs: str):
  """(model, V (p, d), x (n, d)) of a finished random-features run's workdir that saved its
  training set; RunError (exit status 2, one line) otherwise."""
  import jax  # pylint: disable=import-outside-toplevel
  import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
  from recon.models import features  # pylint: disable=import-outside-toplevel
  from recon.models import saved as checkpoint
  try:
    model = checkpoint.load(workdir)
  except errors.ReconError as e:
    raise RunError(str(e), e.exit_code) from None
  extras, truth = model.extras or {}, model.truth if isinstance(model.truth, dict) else {}
  if model.kind != 'random_features' or 'x' not in truth:
    raise RunError(f'workdir: {workdir!r} holds a {model.kind} model' + (
        '' if 'x' in truth else ' without its training set') + f'; accepted for {needs}: a '
        'random-features run that saved its training set', errors.EXIT_REFUSED)
  hp, x = model.hparams, np.asarray(truth['x'])
  dtype = np.asarray(model.trained['theta']).dtype  # V was drawn in the victim's dtype
  if 'v' in extras:
    v = np.asarray(extras['v'])
  else:
    with jax.enable_x64(dtype == np.float64):
      v = np.asarray(features.random_weights(
          jnp.asarray(extras['v_key']), int(hp['p']), int(hp['d']), dtype=dtype,
          rng=hp.get('weight_rng', 'threefry')))
  return model, v, x.reshape(len(x), -1)


def sample_shares(workdir: str) -> np.ndarray:
  """s_i = |alpha_i| ||phi(x_i)|| / ||theta|| (theta = Phi^T alpha): how much of the trained
  parameters each training sample of a finished random-features run carries
  (`recon.metrics.sample_shares` on the run's saved victim and training set; the ground truth,
  for analysing which samples an attack missed, never an input to one). RunError (exit status 2,
  one line) when `workdir` holds no random-features model with its training set."""
  from recon.models import features  # pylint: disable=import-outside-toplevel
  model, v, x = _rf_truth(workdir, 'sample_shares')
  phi = features.rf_features(v, x.astype(np.float32), model.hparams['activation'])
  return metrics.sample_shares(np.asarray(phi), np.asarray(model.trained['theta']))


def truth_certificate(workdir: str, jacobian_method: str = 'auto') -> Dict[str, Any]:
  """What the certificate says of the TRUE training rows of a finished random-features run:
  the most any attack on that victim can certify (`recon.certify.ceiling.at_truth`; the
  ground truth, for analysis, never an input to an attack). Judged at the run's attack.tol and
  as the precision rung judges (loss at most max(attack.polish.tol, 4 x the rounding floor
  estimate F), radii at the loss level max(L / (1 - q), F)), with the run's
  run.recovered_threshold. RunError (exit status 2, one line) when `workdir` holds no
  random-features model with its training set."""
  import jax  # pylint: disable=import-outside-toplevel
  import jax.numpy as jnp  # pylint: disable=import-outside-toplevel
  from recon.models import features  # pylint: disable=import-outside-toplevel
  from recon.certify import ceiling as certificate_ceiling  # pylint: disable=import-outside-toplevel
  model, v, x = _rf_truth(workdir, 'truth_certificate')
  cfg = load(workdir).summary['config']  # every run's summary.json holds its whole config
  hp = model.hparams
  with jax.enable_x64(v.dtype == np.float64):  # a float64 victim's V stays float64
    fmap = features.rf_feature_map(jnp.asarray(v), hp['activation'])
  return certificate_ceiling.at_truth(
      fmap, x, np.asarray(model.trained['theta']), p=int(hp['p']), activation=hp['activation'],
      tol=float(cfg['attack']['tol']), polish_tol=float(cfg['attack']['polish']['tol']),
      duplicate_threshold=float(cfg['run']['recovered_threshold']),
      jacobian_method=jacobian_method)


_NONFINITE = {'nan': float('nan'), 'inf': float('inf'), '-inf': float('-inf')}


def _numbers(obj: Any) -> Any:
  """`obj` read from JSON with the non-finite numbers recon.runtime.io wrote as 'nan' / 'inf' / '-inf'
  (JSON has none) back as floats."""
  if isinstance(obj, dict):
    return {k: _numbers(v) for k, v in obj.items()}
  if isinstance(obj, list):
    return [_numbers(v) for v in obj]
  return _NONFINITE.get(obj, obj) if isinstance(obj, str) else obj


def load(workdir: str) -> Result:
  """The Result of a finished run's workdir (or a sweep's); non-finite numbers, which the JSON
  files hold as 'nan' / 'inf' strings, come back as floats."""
  name = 'summary.json' if os.path.exists(os.path.join(workdir, 'summary.json')) else 'sweep.json'
  with open(os.path.join(workdir, name)) as f:
    summary = _numbers(json.load(f))
  records = []
  if os.path.exists(os.path.join(workdir, 'records.json')):
    with open(os.path.join(workdir, 'records.json')) as f:
      records = _numbers(json.load(f))
  candidates = None
  npz = os.path.join(workdir, 'reconstruction.npz')
  if os.path.exists(npz):
    with np.load(npz, allow_pickle=False) as f:
      if 'x_candidates' in f.files:
        candidates = f['x_candidates']
  return Result(workdir, summary, records, candidates)
