"""The command line: a run writes its outputs; bad input gets one line and exit status 2."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest
from conftest import subprocess_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, 'configs', 'rf_synthetic.py')
TINY = ['--config.n=3', '--config.d=4', '--config.p=120', '--config.max_steps=50']


def _run(*args, cwd=ROOT, **extra_env):
  env = subprocess_env(JAX_PLATFORMS='cpu', **extra_env)
  return subprocess.run([sys.executable, '-m', 'recon.main', *args], cwd=cwd, env=env,
                        capture_output=True, text=True, timeout=300)


def test_run_writes_summary(tmp_path):
  out = tmp_path / 'run'
  r = _run(f'--config={CONFIG}', f'--workdir={out}', *TINY)
  assert r.returncode == 0, r.stderr
  summary = json.loads((out / 'summary.json').read_text())
  for key in ('recon_error', 'frac_recovered', 'dist_abs', 'feature_residual',
              'projection_loss', 'train_mse', 'steps', 'wall_seconds', 'n', 'd', 'p',
              'p_over_dn'):
    assert key in summary['metrics'], key
  assert summary['config']['p'] == 120
  assert (out / 'reconstruction.npz').exists()


@pytest.mark.parametrize('override, field, accepted', [
    ('--config.n=0', 'n', 'int >= 1'),
    ('--config.p=-5', 'p', 'int >= 1'),
    ('--config.n_candidates=0', 'n_candidates', 'int >= 1'),
    ('--config.activation=swish', 'activation', "'relu_tanh'"),
    ('--config.optimizer=rmsprop', 'optimizer', "'sgd', 'adam'"),
    ('--config.lr=-1.0', 'lr', 'float > 0'),
    ('--config.dtype=float16', 'dtype', "'float32', 'float64'"),
    ('--config.dataset=imagenet', 'dataset', "'synthetic_sphere'"),
])
def test_bad_field_gets_one_line_and_touches_nothing(tmp_path, override, field, accepted):
  out = tmp_path / 'run'
  out.mkdir()
  (out / 'summary.json').write_text('{"keep": true}')
  r = _run(f'--config={CONFIG}', f'--workdir={out}', *TINY, override)
  assert r.returncode == 2
  lines = [l for l in r.stderr.strip().splitlines() if l.strip()]
  assert len(lines) == 1, r.stderr
  assert f'config.{field}' in lines[0] and accepted in lines[0]
  assert json.loads((out / 'summary.json').read_text()) == {'keep': True}
  assert sorted(os.listdir(out)) == ['summary.json']


@pytest.mark.parametrize('config, override, hint', [
    ('kkt_synthetic.py', '--config.num_classes=3', 'n_classes'),  # networks' name, KKT's field
    ('two_layer.py', '--config.n_classes=3', 'num_classes'),
])
def test_field_of_another_config_gets_one_line_with_the_near_name(tmp_path, config, override,
                                                                   hint):
  field = override.split('=')[0][len('--config.'):]
  r = _run(f'--config={os.path.join(ROOT, "configs", config)}', f'--workdir={tmp_path / "x"}',
           override)
  assert r.returncode == 2
  lines = [l for l in r.stderr.strip().splitlines() if l.strip()]
  assert len(lines) == 1, r.stderr
  assert f'config.{field}: not a field of this config file' in lines[0]
  assert f'did you mean {hint}?' in lines[0] and '\\n' not in lines[0]
  assert not (tmp_path / 'x').exists()


def test_bad_host_malloc_mode_gets_one_line(tmp_path):
  r = _run(f'--config={CONFIG}', f'--workdir={tmp_path / "x"}', *TINY, RECON_HOST_MALLOC='bogus')
  assert r.returncode == 2
  assert r.stderr.strip().count('\n') == 0, r.stderr
  assert 'RECON_HOST_MALLOC' in r.stderr and 'tuned, system' in r.stderr
  assert not (tmp_path / 'x').exists()


def test_missing_config_file(tmp_path):
  r = _run('--config=configs/does_not_exist.py', f'--workdir={tmp_path / "x"}')
  assert r.returncode == 2
  assert r.stderr.strip().count('\n') == 0 and 'does_not_exist.py' in r.stderr
  assert not (tmp_path / 'x').exists()


def test_existing_run_is_not_overwritten(tmp_path):
  out = tmp_path / 'run'
  out.mkdir()
  (out / 'summary.json').write_text('{"keep": true}')
  r = _run(f'--config={CONFIG}', f'--workdir={out}', *TINY)
  assert r.returncode == 2 and 'already holds a finished run' in r.stderr
  assert json.loads((out / 'summary.json').read_text()) == {'keep': True}


def test_random_features_run_with_sample_splitting(tmp_path):
  """`--config.split` works on the default random-features config (no config edit needed)."""
  out = tmp_path / 'run'
  r = _run(f'--config={CONFIG}', f'--workdir={out}', '--config.n=3', '--config.d=4',
           '--config.p=120', '--config.max_steps=120', '--config.chunk_steps=30',
           '--config.tol=0.0', '--config.split=every', '--config.split_every=30',
           '--config.split_budget=2', '--config.split_eig_tol=0.0',
           '--config.split_require_decrease=False')
  assert r.returncode == 0, r.stderr
  m = json.loads((out / 'summary.json').read_text())['metrics']
  assert m['splitting']['n_rounds'] >= 1
  assert m['splitting']['n_splits'] >= 1
  n_candidates = np.load(out / 'reconstruction.npz')['x_candidates'].shape[0]
  assert n_candidates == 3 + m['splitting']['n_splits'] - m['splitting']['n_merges']


def test_splitting_with_lean_features_is_refused(tmp_path):
  r = _run(f'--config={CONFIG}', f'--workdir={tmp_path / "x"}', *TINY, '--config.split=every',
           '--config.feature_mode=lean')
  assert r.returncode == 2
  assert r.stderr.strip().count('\n') == 0, r.stderr
  assert 'split' in r.stderr and "feature_mode 'dense'" in r.stderr
