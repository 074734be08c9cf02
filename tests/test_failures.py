"""Failures of the machine (recon/runtime/failures.py) as the documented one line: a file-size limit
(`ulimit -f`, EFBIG) like a full disk; a finished run leaves no stale traceback.txt."""
import errno
import os
import subprocess
import sys

import pytest

from configs import rf_synthetic
from recon import main, pipelines
from recon.runtime import failures, io

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _tiny():
  c = rf_synthetic.get_config()
  c.data.n, c.data.d, c.victim.p, c.attack.max_steps, c.run.chunk_steps = 3, 4, 120, 50, 25
  return c


def _error_lines(capsys):
  return [l for l in capsys.readouterr().err.splitlines()
          if l.startswith('error:') or 'Traceback' in l]


def test_a_file_size_limit_is_named_like_a_full_disk():
  line = failures.disk_error(OSError(errno.EFBIG, 'File too large', '/w/summary.json'), '/w')
  assert line == ('workdir: file too large (the file-size limit, ulimit -f) while writing '
                  '/w/summary.json; accepted: raise the file-size limit (ulimit -f), then rerun '
                  'with --config.run.resume=True: the checkpoints written so far are intact')
  text = ('RESOURCE_EXHAUSTED: Error writing local file "/w/model/arrays/d/x": File too large '
          "[os_error_code='27']")
  assert 'file too large' in failures.disk_error(ValueError(text), '/w')
  assert failures.disk_error(OSError(errno.EIO, 'I/O error'), '/w') is None


def test_efbig_while_writing_an_output_is_one_line_exit_2(tmp_path, monkeypatch, capsys):
  def too_large(path, **arrays):
    raise OSError(errno.EFBIG, 'File too large')

  monkeypatch.setattr(io, 'write_npz', too_large)
  monkeypatch.setattr(io, 'write_npz_compressed', too_large)
  capsys.readouterr()
  assert main.execute(_tiny(), str(tmp_path / 'w')) == 2
  lines = _error_lines(capsys)
  assert len(lines) == 1 and lines[0].startswith('error: workdir: file too large'), lines
  assert 'internal error' not in lines[0]
  assert not list(tmp_path.rglob('traceback.txt'))


def test_a_finished_run_leaves_no_traceback_of_an_earlier_failure(tmp_path, monkeypatch,
                                                                  capsys):
  def crash(c, w, **_):
    io.write_text(os.path.join(w, 'partial'), 'x')
    raise RuntimeError('boom')

  monkeypatch.setattr(pipelines, 'run', crash)
  w = tmp_path / 'w'
  assert main.execute(_tiny(), str(w)) == 1
  assert (w / 'traceback.txt').exists()
  monkeypatch.setattr(pipelines, 'run', lambda c, w, **_: {'metrics': {'status': 'converged'}})
  c = _tiny()
  c.run.resume = True
  assert main.execute(c, str(w)) == 0, _error_lines(capsys)
  assert not (w / 'traceback.txt').exists()


@pytest.mark.slow
def test_the_cli_under_ulimit_f_is_the_disk_line_and_resumes(tmp_path):
  """A real file-size limit (RLIMIT_FSIZE 8 KiB: summary.json and the page are larger): exit 2
  with the line, then a resume without the limit finishes with no traceback.txt. The limited
  run compiles into a cache of its own (its cut-off writes never reach the session's); the
  resume reads the session's (tests/conftest.py), where _tiny's runs above left its programs."""
  args = [sys.executable, '-m', 'recon.main', '--config=configs/rf_synthetic.py',
          '--config.data.n=3', '--config.data.d=4', '--config.victim.p=120',
          '--config.attack.max_steps=50', '--config.run.chunk_steps=25',
          f'--workdir={tmp_path / "w"}']
  env = dict(os.environ, JAX_PLATFORMS='cpu', PYTHONPATH=ROOT)
  limited = ['bash', '-c', 'ulimit -f 8 && exec "$@"', 'bash'] + args  # 8 KiB, this run only
  got = subprocess.run(limited, cwd=ROOT, env=dict(env, RECON_COMPILATION_CACHE=str(
      tmp_path / 'cache')), capture_output=True, text=True, timeout=300, check=False)
  errors_ = [l for l in got.stderr.splitlines() if l.startswith('error:')]
  assert got.returncode == 2, got.stderr[-2000:]
  assert len(errors_) == 1 and 'file too large (the file-size limit, ulimit -f)' in errors_[0]
  got = subprocess.run(args + ['--config.run.resume=True'], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300, check=False)
  assert got.returncode == 0, got.stderr[-2000:]
  assert not (tmp_path / 'w' / 'traceback.txt').exists()
