"""scripts/bench.py: a tiny end-to-end run from the command line, re-rendering, partial
re-runs, and one-line refusals of bad flags (timings themselves are never asserted)."""
import importlib.util
import json
import os
import subprocess
import sys

import pytest
from conftest import subprocess_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, 'scripts', 'bench.py')


def _load_bench():
  spec = importlib.util.spec_from_file_location('bench_script', SCRIPT)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module


def _run(*args):
  env = subprocess_env()
  return subprocess.run([sys.executable, SCRIPT, *args], capture_output=True, text=True,
                        env=env, cwd=ROOT, timeout=600)


def test_parse_sizes_default_chunk_and_errors():
  bench = _load_bench()
  assert bench.parse_sizes('20x50x10000', 4, '--sizes') == [(20, 50, 10000, 4096)]
  assert bench.parse_sizes('8x4x64x32,10x10x1000', 4, '--sizes') == [(8, 4, 64, 32),
                                                                     (10, 10, 1000, 4096)]
  assert bench.parse_sizes('10x10,20x20', 2, '--problems') == [(10, 10), (20, 20)]
  for bad in ('10x10', '10x10x-5', 'axbxc', '10x10x1000x0x1'):
    with pytest.raises(ValueError, match='--sizes'):
      bench.parse_sizes(bad, 4, '--sizes')
  with pytest.raises(ValueError, match='--problems'):
    bench.parse_sizes('10', 2, '--problems')


@pytest.mark.parametrize('argv, flag', [
    (['--parts=step,foo'], '--parts'),
    (['--methods=nope'], '--methods'),
    (['--sizes=10x10'], '--sizes'),
    (['--memscale_size=8x4x64,8x4x128'], '--memscale_size'),
    (['--problems=10'], '--problems'),
    (['--seeds=0'], '--seeds'),
    (['--max_steps=0'], '--max_steps'),
    (['--fit_size=10x5x400'], '--fit_size'),
    (['--fit_size=10x4'], '--fit_size'),
])
def test_bad_flags_exit_2_with_one_line(argv, flag, capsys):
  bench = _load_bench()
  with pytest.raises(SystemExit) as e:
    bench.parse_args(argv)
  assert e.value.code == 2
  err = capsys.readouterr().err.strip().splitlines()[-1]
  assert flag in err and 'accepted' in err


def test_render_only_without_results_exits_2(tmp_path, capsys):
  bench = _load_bench()
  with pytest.raises(SystemExit) as e:
    bench.main(['--render_only', f'--out={tmp_path}'])
  assert e.value.code == 2
  assert 'bench.json' in capsys.readouterr().err.strip().splitlines()[-1]
  assert not os.listdir(tmp_path)


@pytest.mark.slow  # three script subprocesses: the smoke test of scripts/bench.py
def test_tiny_run_writes_json_and_table_and_reruns_one_part(tmp_path):
  out = _run('--sizes=8x4x64x32', '--memscale_size=8x4x64', '--problems=4x4',
             '--methods=adam_lr0.05', '--seeds=1', '--max_steps=200', '--fit_size=12x4x400',
             f'--out={tmp_path}')
  assert out.returncode == 0, out.stderr[-2000:]
  with open(tmp_path / 'bench.json') as f:
    res = json.load(f)
  assert res['platform'] in ('cpu', 'gpu', 'tpu') and res['device']
  assert res['cpu_count'] == os.cpu_count()
  (step,) = res['step']
  assert (step['n'], step['d'], step['p'], step['chunk']) == (8, 4, 64, 32)
  for key in ('dense_step_s', 'roofline_s', 'dense_over_roofline', 'lean_over_dense',
              'lean_stored_bm_over_dense', 'regenerate_v_bm_s'):
    assert 0 < step[key] < float('inf'), key
  assert step['dense_memory']['total_mb'] >= 0
  assert (res['memory_at_scale']['n'], res['memory_at_scale']['p']) == (8, 64)
  (ttr,) = res['ttr']
  assert (ttr['method'], ttr['n'], ttr['d'], ttr['p'], ttr['seed']) == ('adam_lr0.05', 4, 4,
                                                                        160, 0)
  assert 1 <= ttr['steps'] <= 200 and res['ttr_max_steps'] == 200
  fit = res['victim_fit']
  assert (fit['n'], fit['d'], fit['p'], fit['dataset']) == (12, 48, 400, 'photo_patches')
  assert fit['float64_solve_train_mse_over_var_y'] <= 1e-6 and fit['float64_solve_s'] > 0
  table = (tmp_path / 'bench.md').read_text()
  assert f"({os.cpu_count()} cores)" in table
  assert '| 8 | 4 | 64 |' in table and '| adam_lr0.05 | 4, 4, 160 | ' in table
  assert '| float64 (default) |' in table
  assert "CIFAR-10" not in table  # the memory row is labelled with its own size

  # --render_only rewrites the same table from the JSON.
  (tmp_path / 'bench.md').write_text('stale')
  assert _run('--render_only', f'--out={tmp_path}').returncode == 0
  assert (tmp_path / 'bench.md').read_text() == table

  # Re-running one part keeps the others' entries as they were.
  out = _run('--parts=memscale', '--keep_other_parts', '--memscale_size=6x4x96',
             f'--out={tmp_path}')
  assert out.returncode == 0, out.stderr[-2000:]
  with open(tmp_path / 'bench.json') as f:
    again = json.load(f)
  assert again['step'] == res['step'] and again['ttr'] == res['ttr']
  assert again['victim_fit'] == res['victim_fit']
  assert again['ttr_max_steps'] == 200  # the kept part's budget, not this run's default
  assert (again['memory_at_scale']['n'], again['memory_at_scale']['p']) == (6, 96)
