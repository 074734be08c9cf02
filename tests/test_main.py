"""The command line: a run writes its outputs; bad input gets one line and exit status 2.

Two subprocess smoke tests cover the real CLI (a tiny run, and a refusal: exit status and one
line); every other case calls the library in-process (recon.main.execute, _parse_flags).
"""
import json
import logging
import os
import re
import subprocess
import sys

import numpy as np
import pytest
from absl import flags
from conftest import subprocess_env

from configs import rf_synthetic
from recon.config import sections
from recon.config import validate as config_lib
from recon import main
from recon.runtime import host, ownership

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG = os.path.join(ROOT, 'configs', 'rf_synthetic.py')
TINY = ['--config.data.n=3', '--config.data.d=4', '--config.victim.p=120', '--config.attack.max_steps=50']


def _run(*args, cwd=ROOT, **extra_env):
  env = subprocess_env(JAX_PLATFORMS='cpu', **extra_env)
  return subprocess.run([sys.executable, '-m', 'recon.main', *args], cwd=cwd, env=env,
                        capture_output=True, text=True, timeout=300)


def _tiny(overrides=None):
  """configs/rf_synthetic.py with the TINY overrides (what the CLI would build)."""
  c = rf_synthetic.get_config()
  c.data.n, c.data.d, c.victim.p, c.attack.max_steps = 3, 4, 120, 50
  c.update_from_flattened_dict(overrides or {})
  return c


def _error_lines(capsys):
  return [l for l in capsys.readouterr().err.strip().splitlines() if l.strip()]


# --- CLI smoke tests (subprocesses) --------------------------------------------------------

def test_run_writes_summary(tmp_path):
  out = tmp_path / 'run'
  # a fresh matplotlib config folder: its font cache is built during this run, quietly
  r = _run(f'--config={CONFIG}', f'--workdir={out}', *TINY, MPLCONFIGDIR=str(tmp_path / 'mpl'))
  assert r.returncode == 0, r.stderr
  lines = [l for l in r.stderr.splitlines() if l.strip()]
  # the console is plain: no absl 'I1204 22:13:24.8 ... file.py:12]' prefix, no font-cache line
  assert lines and not [l for l in lines if re.match(r'^[IWEF]\d{4} ', l)], lines
  assert not [l for l in lines if 'fontManager' in l or 'font cache' in l], lines
  assert any(l.startswith('optimizer: ') for l in lines), lines
  summary = json.loads((out / 'summary.json').read_text())
  for key in ('recon_error', 'frac_recovered', 'dist_abs', 'feature_residual',
              'projection_loss', 'train_mse', 'steps', 'wall_seconds', 'n', 'd', 'p',
              'p_over_dn'):
    assert key in summary['metrics'], key
  assert summary['config']['victim']['p'] == 120
  assert (out / 'reconstruction.npz').exists()


def test_missing_config_file(tmp_path):
  r = _run('--config=configs/does_not_exist.py', f'--workdir={tmp_path / "x"}')
  assert r.returncode == 2
  assert r.stderr.strip().count('\n') == 0 and 'does_not_exist.py' in r.stderr
  assert not (tmp_path / 'x').exists()


# --- in-process: recon.main.execute and the flag parser --------------------------------------

@pytest.mark.parametrize('field, value, accepted', [
    ('data.n', 0, 'int >= 1'),
    ('victim.p', -5, 'int >= 1'),
    ('attack.n_candidates', 0, 'int >= 1'),
    ('victim.activation', 'swish', "'relu_tanh'"),
    ('attack.optimizer', 'rmsprop', "'sgd', 'adam'"),
    ('attack.lr', -1.0, 'float > 0'),
    ('run.dtype', 'float16', "'float32', 'float64'"),
    ('data.name', 'imagenet', "'synthetic_sphere'"),
])
def test_bad_field_gets_one_line_and_touches_nothing(tmp_path, capsys, field, value, accepted):
  out = tmp_path / 'run'
  out.mkdir()
  (out / 'summary.json').write_text('{"keep": true}')
  config = _tiny()
  with config.ignore_type():
    config_lib.set_path(config, field, value)
  assert main.execute(config, str(out)) == 2
  lines = _error_lines(capsys)
  assert len(lines) == 1, lines
  assert lines[0].startswith('error: ')
  assert f'config.{field}' in lines[0] and accepted in lines[0]
  assert json.loads((out / 'summary.json').read_text()) == {'keep': True}
  assert sorted(os.listdir(out)) == ['summary.json']


@pytest.fixture
def _fresh_flags():
  """Leaves absl's flags unparsed and the 'absl' logger's level (which parsing sets from
  --verbosity) as they were, for later tests that capture INFO logs."""
  level = logging.getLogger('absl').level
  yield
  flags.FLAGS.unparse_flags()
  for name in [n for n in flags.FLAGS if n.startswith('config.')]:  # overrides register flags
    delattr(flags.FLAGS, name)
  logging.getLogger('absl').setLevel(level)


@pytest.mark.parametrize('config, override, hint', [
    ('kkt_synthetic.py', '--config.n_classes=3', 'data.num_classes'),  # a name before sections
    ('two_layer.py', '--config.data.nn=3', 'data.n'),  # a typo inside a section
])
def test_unknown_field_gets_one_line_with_the_near_path(tmp_path, capsys, _fresh_flags, config,
                                                        override, hint):
  field = override.split('=')[0][len('--config.'):]
  argv = ['recon.main', f'--config={os.path.join(ROOT, "configs", config)}',
          f'--workdir={tmp_path / "x"}', override]
  with pytest.raises(SystemExit) as e:
    main._parse_flags(argv)
  assert e.value.code == 2
  lines = _error_lines(capsys)
  assert len(lines) == 1, lines
  assert f'config.{field}: unknown field' in lines[0]
  assert re.search(f'did you mean {hint}[,?]', lines[0]) and '\\n' not in lines[0]
  assert not (tmp_path / 'x').exists()


@pytest.mark.slow  # a process each
@pytest.mark.parametrize('overrides, line', [
    (['--config.data.n=4', '--config.data.n=2.5'], "config.data.n: invalid value '2.5'"),
    (['--config.data.n=None'], "config.data.n: None is accepted only with data.name 'file'"),
    (['--config.data.n=None', '--config.data.n=3', '--config.attack.lr=-1'],
     'config.attack.lr: invalid value -1.0'),  # the last override of data.n wins
    (['--config.data.n=3', '--config.data.n=None'], "config.data.n: None is accepted only"),
])
def test_overrides_the_last_wins_and_none_sets_an_optional_field(tmp_path, overrides, line):
  out = _run(f'--config={os.path.join(ROOT, "configs", "rf_synthetic.py")}',
             f'--workdir={tmp_path / "x"}', *overrides)
  lines = [l for l in out.stderr.splitlines() if l.startswith('error:')]
  assert out.returncode == 2 and len(lines) == 1 and line in lines[0], out.stderr[-2000:]
  assert not (tmp_path / 'x').exists()


@pytest.mark.parametrize('overrides, n, kwargs', [
    (['--config.victim.module_kwargs={"width": 800, "act": "relu"}'], 10,
     {'width': 800, 'act': 'relu'}),
    (['--config.victim.module_kwargs.width=800', '--config.victim.module_kwargs.name=big'], 10,
     {'width': 800, 'name': 'big'}),
    (['--config.data.n=3', '--config.data.n=None'], None, None),
    (['--config.data.n=None', '--config.data.n=3'], 3, None),
])
def test_dict_fields_and_none_from_the_command_line(_fresh_flags, overrides, n, kwargs):
  """#69 item 2: a user module's arguments as JSON (whole or one key); None where accepted."""
  argv = ['recon.main', f'--config={os.path.join(ROOT, "configs", "rf_synthetic.py")}',
          *overrides]
  main._parse_flags(argv)
  config = main._CONFIG.value
  assert config.data.n == n
  got = config.victim.module_kwargs
  assert (dict(got) if got is not None else None) == kwargs


def test_a_dict_field_that_is_not_json_is_one_line(_fresh_flags, capsys):
  argv = ['recon.main', f'--config={os.path.join(ROOT, "configs", "rf_synthetic.py")}',
          '--config.victim.module_kwargs={width: 800}']
  with pytest.raises(SystemExit) as e:
    main._parse_flags(argv)
  lines = _error_lines(capsys)
  assert e.value.code == 2 and len(lines) == 1
  assert 'config.victim.module_kwargs: invalid JSON' in lines[0] and 'accepted: a JSON object' in lines[0]


def test_a_workdir_name_with_a_newline_stays_one_error_line(tmp_path, capsys):
  w = tmp_path / 'a\nerror: forged'
  w.mkdir()
  (w / 'mine.txt').write_text('x')
  assert main.execute(_tiny(), str(w)) == 2
  err = capsys.readouterr().err
  assert err.count('\n') == 1 and err.count('error:') == 2 and 'a\\nerror: forged' in err, err


def test_bad_host_malloc_mode_gets_one_line(monkeypatch):
  # main.main turns this ValueError into one 'error:' line and exit status 2 before any work.
  monkeypatch.setenv('RECON_HOST_MALLOC', 'bogus')
  with pytest.raises(ValueError) as e:
    host.requested_mode()
  assert '\n' not in str(e.value)
  assert 'RECON_HOST_MALLOC' in str(e.value) and 'tuned, system' in str(e.value)


def test_existing_run_is_not_overwritten(tmp_path, capsys):
  out = tmp_path / 'run'
  ownership.take(str(out))  # a workdir of recon's, holding a finished run
  ownership.claim(str(out / 'summary.json'))
  (out / 'summary.json').write_text('{"keep": true}')
  assert main.execute(_tiny(), str(out)) == 2
  assert 'already holds a finished run' in capsys.readouterr().err
  assert json.loads((out / 'summary.json').read_text()) == {'keep': True}


def test_a_summary_recon_did_not_write_is_refused_even_with_overwrite(tmp_path, capsys):
  out = tmp_path / 'run'
  out.mkdir()
  (out / 'summary.json').write_text('{"keep": true}')
  assert main.execute(_tiny({'run.overwrite': True}), str(out)) == 2
  err = capsys.readouterr().err
  assert 'holds entries recon did not write (summary.json)' in err, err
  assert sorted(os.listdir(out)) == ['summary.json']
  assert json.loads((out / 'summary.json').read_text()) == {'keep': True}


@pytest.mark.slow  # a full split run: compiles the split round (~10 s of CPU)
def test_random_features_run_with_sample_splitting(tmp_path):
  """`split` works on the default random-features config (no config edit needed)."""
  out = tmp_path / 'run'
  c = _tiny({'attack.max_steps': 120, 'run.chunk_steps': 30, 'attack.tol': 0.0,
             'attack.split.mode': 'every', 'attack.split.every': 30, 'attack.split.budget': 2,
             'attack.split.eig_tol': 0.0, 'attack.split.require_decrease': False})
  assert main.execute(c, str(out)) == 0
  m = json.loads((out / 'summary.json').read_text())['metrics']
  assert m['splitting']['n_rounds'] >= 1
  assert m['splitting']['n_splits'] >= 1
  n_candidates = np.load(out / 'reconstruction.npz')['x_candidates'].shape[0]
  assert n_candidates == 3 + m['splitting']['n_splits'] - m['splitting']['n_merges']


def test_splitting_with_lean_features_is_refused(tmp_path, capsys):
  config = _tiny({'attack.split.mode': 'every', 'victim.feature_mode': 'lean'})
  assert main.execute(config, str(tmp_path / 'x')) == 2
  lines = _error_lines(capsys)
  assert len(lines) == 1, lines
  assert 'split' in lines[0] and "feature_mode 'dense'" in lines[0]
  assert not (tmp_path / 'x').exists()


def test_refinement_with_lean_features_is_refused(tmp_path, capsys):
  config = _tiny({'attack.refine': 3, 'victim.feature_mode': 'lean'})
  assert main.execute(config, str(tmp_path / 'x')) == 2
  lines = _error_lines(capsys)
  assert len(lines) == 1, lines
  assert lines[0].startswith('error: attack.refine: 3') and "feature_mode 'dense'" in lines[0]
  assert not (tmp_path / 'x').exists()


def test_a_platform_that_cannot_start_is_one_line_before_anything_is_written(tmp_path,
                                                                            monkeypatch, capsys):
  """JAX_PLATFORMS naming a backend the machine lacks (a TPU on a CPU box) is refused with
  exit 2 and one line naming the variable, not an internal error from the memory check."""
  import jax  # pylint: disable=import-outside-toplevel

  def no_tpu(*args, **kwargs):
    raise RuntimeError("Unable to initialize backend 'tpu': INTERNAL: Failed to open "
                       'libtpu.so\nsecond line')

  monkeypatch.setenv('JAX_PLATFORMS', 'tpu,cpu')
  monkeypatch.setattr(jax, 'devices', no_tpu)
  c = rf_synthetic.get_config()
  assert main.execute(c, str(tmp_path / 'w')) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert err == ["error: JAX_PLATFORMS='tpu,cpu': Unable to initialize backend 'tpu': INTERNAL: "
                 "Failed to open libtpu.so; accepted: a platform this machine has (e.g. "
                 'JAX_PLATFORMS=cpu), or JAX_PLATFORMS unset']
  assert not (tmp_path / 'w').exists()


def test_the_config_is_resolved_once_and_handed_down_locked(tmp_path, monkeypatch):
  """execute resolves a single run's config once (victims.resolve), and the pipeline gets that
  resolved config, locked: a field added below the composition root is an error."""
  from recon import execution, pipelines  # pylint: disable=import-outside-toplevel
  from recon.pipelines import victims  # pylint: disable=import-outside-toplevel
  resolved, seen = [], []
  real_resolve, real_run = victims.resolve, pipelines.run

  def resolve(config, validated=False):
    resolved.append(config)
    return real_resolve(config, validated=validated)

  def run(config, workdir, validated=False):
    seen.append((config, isinstance(config, sections.RunSpec)))
    with pytest.raises(AttributeError):
      config.attack.a_new_field = 1  # frozen: nothing below adds or changes a field
    with pytest.raises(AttributeError):
      config.attack.lr = 1.0
    return real_run(config, workdir, validated=validated)

  monkeypatch.setattr(victims, 'resolve', resolve)
  monkeypatch.setattr(pipelines, 'run', run)
  cfg = _tiny()
  cfg.attack.n_candidates = None  # resolved: n
  assert execution.execute(cfg, str(tmp_path / 'run')) == 0
  assert len(resolved) == 1 and len(seen) == 1 and seen[0][1] is True
  assert seen[0][0].attack.n_candidates == 3 and cfg.attack.n_candidates is None
