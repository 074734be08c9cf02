"""The one validator: every config in configs/ validates; bad values fail in one line, early."""
import glob
import importlib.util
import os
import subprocess
import sys

import ml_collections
import pytest

from recon import config as config_lib
from conftest import subprocess_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# Every experiment config (configs/common.py holds shared helpers, not a config).
CONFIGS = sorted(f for f in glob.glob(os.path.join(ROOT, 'configs', '*.py'))
                 if os.path.basename(f) != 'common.py')
RF = os.path.join(ROOT, 'configs', 'rf_synthetic.py')


def load_config(path):
  spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module.get_config()


def test_configs_found():
  assert RF in CONFIGS


@pytest.mark.parametrize('path', CONFIGS, ids=os.path.basename)
def test_every_config_loads_and_validates(path):
  cfg = load_config(path)
  assert isinstance(cfg, ml_collections.ConfigDict)
  config_lib.validate(cfg)
  unknown = [f for f in cfg if f not in config_lib.SCHEMA and f != 'sweep']
  assert not unknown


@pytest.mark.parametrize('path', CONFIGS, ids=os.path.basename)
def test_every_field_of_every_config_is_checked(path):
  """A value no spec accepts, put in any field, is caught and the field is named."""
  cfg = load_config(path)
  for field in cfg:
    if field == 'sweep':
      continue
    bad = ml_collections.ConfigDict(cfg.to_dict())
    with bad.ignore_type():
      bad[field] = {1, 2}  # a set: no spec accepts it
    with pytest.raises(config_lib.ConfigError, match=rf'^config\.{field}: invalid value'):
      config_lib.validate(bad)


# (override, expected one-line error). Sizes, names, learning rate, types, unknown fields.
BAD = [
    ('n=0', "config.n: invalid value 0; accepted: int >= 1"),
    ('d=-3', "config.d: invalid value -3; accepted: int >= 1"),
    ('p=0', "config.p: invalid value 0; accepted: int >= 1"),
    ('n_candidates=0', "config.n_candidates: invalid value 0; accepted: int >= 1 (or None)"),
    ('max_steps=0', "config.max_steps: invalid value 0; accepted: int >= 1"),
    ('chunk_steps=-1', "config.chunk_steps: invalid value -1; accepted: int >= 1"),
    ('checkpoint_keep=0', "config.checkpoint_keep: invalid value 0; accepted: int >= 1"),
    ('checkpoint_every_steps=-5',
     "config.checkpoint_every_steps: invalid value -5; accepted: int >= 0"),
    ('checkpoint_every_seconds=-1',
     "config.checkpoint_every_seconds: invalid value -1.0; accepted: float >= 0"),
    ('lr=-0.1', "config.lr: invalid value -0.1; accepted: float > 0"),
    ('lr=0', "config.lr: invalid value 0.0; accepted: float > 0"),
    ('momentum=1.5', "config.momentum: invalid value 1.5; accepted: float >= 0 and <= 0.999999"),
    ('tol=-1', "config.tol: invalid value -1.0; accepted: float >= 0"),
    ('seed=-1', "config.seed: invalid value -1; accepted: int >= 0"),
    ('label_noise=-0.5', "config.label_noise: invalid value -0.5; accepted: float >= 0"),
    ('activation=bogus', "config.activation: invalid value 'bogus'; accepted: one of 'cubic', "),
    ('optimizer=bfgs', "config.optimizer: invalid value 'bfgs'; accepted: one of 'sgd', 'adam', 'lbfgs'"),
    ('dataset=cifar100', "config.dataset: invalid value 'cifar100'; accepted: one of "),
    ('model=vgg', "config.model: invalid value 'vgg'; accepted: one of "),
    ('dtype=float16', "config.dtype: invalid value 'float16'; accepted: one of 'float32', "),
    ('n=abc', "config.n: invalid value 'abc'; accepted: int >= 1"),
    ('n=1.5', "config.n: invalid value '1.5'; accepted: int >= 1"),
    ('lr=fast', "config.lr: invalid value 'fast'; accepted: float > 0"),
    ('overwrite=maybe', "config.overwrite: invalid value 'maybe'; accepted: bool"),
    ('nn=10', "config.nn: unknown field (did you mean n?); accepted: a field this config defines"),
]


def _python_value(override):
  """The override as a config-file value (type errors as the wrong Python type)."""
  field, text = override.split('=', 1)
  for cast in (int, float):
    try:
      return field, cast(text)
    except ValueError:
      pass
  return field, text


@pytest.mark.parametrize('override,expected', BAD, ids=[b[0] for b in BAD])
def test_validator_table(override, expected):
  """The same table through `validate` directly (values as a config file would hold them)."""
  field, value = _python_value(override)
  cfg = load_config(RF)
  with cfg.ignore_type():
    cfg[field] = value
  with pytest.raises(config_lib.ConfigError) as err:
    config_lib.validate(cfg)
  message = str(err.value)
  assert '\n' not in message
  assert message.startswith(f'config.{field}: ')
  # The value's repr may differ from the CLI's (0 vs 0.0); what is accepted may not.
  assert expected.split('; accepted')[1] in message


# Through the CLI, concurrently (each case is a fresh process, ~3 CPU-seconds of imports):
# the kinds of error tests/test_main.py does not already run through the CLI (wrong types,
# unknown fields, the new fields); the table above covers the rest in-process.
CLI_CASES = [b for b in BAD if b[0] in (
    'n=abc', 'lr=fast', 'overwrite=maybe', 'nn=10', 'checkpoint_keep=0')] + [
    ('resume=True --config.overwrite=True',
     'resume, overwrite: both True; accepted: at most one of them'),
    ('model_checkpoint=/nonexistent/model', "model_checkpoint: no model.json in '/nonexistent"),
]


@pytest.mark.slow  # 8 CLI subprocesses (test_validator_table covers the values in-process)
def test_cli_rejects_bad_values_in_one_line_and_writes_nothing(tmp_path):
  workdir = tmp_path / 'existing'
  workdir.mkdir()
  (workdir / 'keep.txt').write_text('untouched')
  procs = []
  for override, _ in CLI_CASES:
    cmd = [sys.executable, '-m', 'recon.main', f'--config={RF}', f'--workdir={workdir}'] + [
        '--config.' + o for o in override.split(' --config.')]
    procs.append(subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=subprocess_env(JAX_PLATFORMS='cpu')))
  # A schema field the config file does not define cannot be overridden.
  bare = tmp_path / 'bare.py'
  bare.write_text('import ml_collections\n\ndef get_config():\n'
                  '  return ml_collections.ConfigDict({"name": "bare", "n": 3})\n')
  procs.append(subprocess.Popen(
      [sys.executable, '-m', 'recon.main', f'--config={bare}', f'--workdir={workdir}',
       '--config.resume=True'], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
      text=True, env=subprocess_env(JAX_PLATFORMS='cpu')))
  cases = CLI_CASES + [('resume=True', 'config.resume: not a field of this config file')]
  for (override, expected), proc in zip(cases, procs):
    out, err = proc.communicate(timeout=300)
    lines = err.strip().splitlines()
    assert proc.returncode == 2, (override, err)
    assert len(lines) == 1, (override, err)
    assert lines[0].startswith('error: ' + expected), (override, lines[0])
    assert out == ''
  assert sorted(os.listdir(workdir)) == ['keep.txt']
  assert (workdir / 'keep.txt').read_text() == 'untouched'
