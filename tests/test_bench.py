"""scripts/bench.py: a tiny end-to-end run from the command line, re-rendering, partial
re-runs, the pipeline part's resume, and one-line refusals of bad flags (timings themselves are
never asserted)."""
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
  for bad in ('10x10', '10x10x-5', 'axbxc', '10x10x1000x0x1'):
    with pytest.raises(ValueError, match='--sizes'):
      bench.parse_sizes(bad, 4, '--sizes')


@pytest.mark.parametrize('argv, flag', [
    (['--parts=step,foo'], '--parts'),
    (['--methods=nope'], '--methods'),
    (['--sizes=10x10'], '--sizes'),
    (['--memscale_size=8x4x64,8x4x128'], '--memscale_size'),
    (['--pipeline_sizes=10x10'], '--pipeline_sizes'),
    (['--pipeline_seeds=a,b'], '--pipeline_seeds'),
    (['--pipeline_seeds=-1'], '--pipeline_seeds'),
    (['--pipeline_max_steps=0'], '--pipeline_max_steps'),
    (['--pipeline_timeout_s=0'], '--pipeline_timeout_s'),
    (['--pipeline_cpu_limit_s=-1'], '--pipeline_cpu_limit_s'),
    (['--profile_sizes=10x10x1000x5'], '--profile_sizes'),
    (['--profile_seeds=-3'], '--profile_seeds'),
    (['--step_variants=dense,nope'], '--step_variants'),
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


@pytest.mark.slow  # scripts/bench.py's smoke test: two tiny runs in-process, one script process
def test_tiny_run_writes_json_and_table_and_reruns_one_part(tmp_path):
  bench = _load_bench()
  bench.main(['--parts=step,memscale', '--sizes=8x4x64x32', '--memscale_size=8x4x64',
              f'--out={tmp_path}'])
  with open(tmp_path / 'bench.json') as f:
    res = json.load(f)
  assert res['machine']
  (step,) = res['step']
  assert (step['n'], step['d'], step['p'], step['chunk']) == (8, 4, 64, 32)
  for key in ('dense_step_s', 'roofline_s', 'dense_over_roofline', 'lean_over_dense',
              'lean_stored_bm_over_dense', 'regenerate_v_bm_s'):
    assert 0 < step[key] < float('inf'), key
  assert step['dense_memory']['total_mb'] >= 0
  assert (res['memory_at_scale']['n'], res['memory_at_scale']['p']) == (8, 64)
  table = (tmp_path / 'bench.md').read_text()
  assert '| 8, 4, 64 |' in table and '(n, d, p) = (8, 4, 64)' in table

  # --render_only, the script run as a command, rewrites the same table from the JSON.
  (tmp_path / 'bench.md').write_text('stale')
  out = _run('--render_only', f'--out={tmp_path}')
  assert out.returncode == 0, out.stderr[-2000:]
  assert (tmp_path / 'bench.md').read_text() == table

  # Re-running one part keeps the others' entries as they were.
  bench.main(['--parts=memscale', '--memscale_size=6x4x96', f'--out={tmp_path}'])
  with open(tmp_path / 'bench.json') as f:
    again = json.load(f)
  assert again['step'] == res['step']
  assert (again['memory_at_scale']['n'], again['memory_at_scale']['p']) == (6, 96)


def test_step_paths_timed_in_separate_calls_are_merged_per_size():
  """The device window times dense and blocked in two processes (one stored V each): the second
  call keeps the first's path at the same size and device, the ratios recomputed."""
  bench = _load_bench()
  first = bench.bench_step(6, 4, 64, 16, steps=5, rounds=1, variants=('dense',))
  second = bench.bench_step(6, 4, 64, 16, steps=5, rounds=1, variants=('blocked',))
  assert 'blocked_step_s' not in first and 'dense_step_s' not in second
  merged = bench._merge_step(first, second)  # pylint: disable=protected-access
  assert merged['dense_step_s'] == first['dense_step_s']
  assert merged['blocked_step_s'] == second['blocked_step_s']
  assert merged['blocked_over_dense'] == second['blocked_step_s'] / first['dense_step_s']
  assert merged['roofline_s'] == second['roofline_s']  # the newer call's machine state
  assert bench._merge_step({}, second) == second  # pylint: disable=protected-access


def test_pipeline_overrides_default_is_the_config_and_paper_is_the_port():
  bench = _load_bench()
  # The default: only the size, the seed and the activation (the launch problem's relu).
  assert bench.pipeline_overrides('default', 10, 10, 1000, 300) == {
      'data.n': 10, 'data.d': 10, 'victim.p': 1000, 'seed': 300, 'victim.activation': 'relu_tanh'}
  assert bench.pipeline_overrides('default', 20, 100, 20000, 301)['victim.activation'] == 'relu'
  assert bench.pipeline_overrides('default', 4, 4, 160, 0, max_steps=50)['attack.max_steps'] == 50
  # The paper's port: scripts/paper_baseline.py's fields, its recorded blind lr, 10x the budget.
  paper = bench.pipeline_overrides('paper', 20, 20, 4000, 300)
  lr = bench.paper_baseline.calibrated_lr(bench.PAPER_CALIBRATION, 'relu_tanh', 20, 20)
  assert lr is not None and paper['attack.lr'] == lr
  assert paper['attack.max_steps'] == bench.PAPER_BUDGET_FACTOR * bench.DEFAULT_MAX_STEPS
  for field, value in bench.paper_baseline.paper_overrides('relu_tanh').items():
    assert paper[field] == value
  assert bench.pipeline_overrides('paper', 20, 100, 20000, 300)['attack.lr'] == 20.0
  with pytest.raises(ValueError, match='no blind lr'):
    bench.pipeline_overrides('paper', 4, 4, 160, 300)


def _row(method, n, seed, recovered, certified, wall, stopped=False):
  return {'method': method, 'n': n, 'd': 4, 'p': 160, 'activation': 'relu_tanh', 'seed': seed,
          'lr': None if method == 'default' else 5.0, 'max_steps': 20000, 'wall_s': wall,
          'cpu_s': wall / 2, 'loadavg': [1.0, 1.0, 1.0], 'stopped': stopped,
          'n_recovered': None if stopped else (n if recovered else n - 1),
          'all_recovered': recovered, 'recon_error': None if stopped else 0.01,
          'certified': certified, 'steps': None if stopped else 1000,
          'status': 'stopped' if stopped else 'converged', 'escalations_tried': 1,
          'escalations_accepted': 0, 'polish_applied': False,
          'false_certified': certified and not recovered}


def test_pipeline_part_resumes_and_the_table_counts_seeds(monkeypatch):
  bench = _load_bench()
  calls = []

  def fake_run(method, n, d, p, seed, max_steps, timeout_s, cpu_limit_s):
    calls.append((method, seed))
    return _row(method, n, seed, recovered=seed != 2, certified=seed == 0, wall=10.0 + seed,
                stopped=seed == 2)
  monkeypatch.setattr(bench, 'pipeline_run', fake_run)
  results = {'ttr_pipeline': {'rows': [_row('default', 4, 0, True, True, 10.0)]}}
  saves = []
  bench.pipeline_part(results, [(4, 4, 160)], [0, 1, 2], ['default', 'paper'], None, 60.0,
                      lambda: saves.append(len(results['ttr_pipeline']['rows'])))
  # Seed 0 was already measured; the paper's port has no blind lr at (4, 4): not run, with why.
  assert calls == [('default', 1), ('default', 2)] and saves == [2, 3]
  part = results['ttr_pipeline']
  assert part['seeds'] == [0, 1, 2] and part['tuning_seeds'] and part['timeout_s'] == 60.0
  (why,) = part['paper_not_run']
  assert (why['n'], why['p']) == (4, 160) and 'no blind lr' in why['reason']
  (summary,) = bench.pipeline_summary(part['rows'])
  assert (summary['seeds'], summary['recovered'], summary['certified'], summary['stopped'],
          summary['median_wall_s']) == (3, 2, 1, 1, 11.0)
  text = bench.render(results)
  assert '| default | 4, 4, 160 | relu_tanh | - | 2/3 | 1/3 | 0 | 1 | 11 |' in text
  assert '| not run: no blind lr' in text


@pytest.mark.slow  # one CLI run of the default at (4, 4, 160): ~15 s
def test_pipeline_run_reads_the_clis_summary():
  bench = _load_bench()
  row = bench.pipeline_run('default', 4, 4, 160, 300, max_steps=2000, timeout_s=300)
  assert row['exit_code'] == 0 and not row['stopped']
  assert row['n_recovered'] is not None and 0 <= row['n_recovered'] <= 4
  assert row['all_recovered'] == (row['n_recovered'] == 4)
  assert isinstance(row['certified'], bool) and 1 <= row['steps'] <= 2000
  assert row['wall_s'] > 0 and row['cpu_s'] > 0 and row['max_steps'] == 2000
  assert row['false_certified'] == (row['certified'] and not row['all_recovered'])
  assert '--config=configs/rf_synthetic.py' in row['command']


def test_the_phase_clock_counts_each_phase_exclusively():
  bench = _load_bench()
  clock = bench.PhaseClock()
  burn = lambda s: bench.time.sleep(s)  # noqa: E731

  def outer():
    burn(0.05)
    clock.run('inner', burn, 0.1)
    assert clock.inside('outer') and not clock.inside('inner')
  clock.run('outer', outer)
  clock.run('inner', burn, 0.02)
  t = clock.totals
  assert t['inner']['calls'] == 2 and t['outer']['calls'] == 1
  assert 0.05 <= t['outer']['wall_s'] < 0.1  # the nested 0.1 s is the inner phase's
  assert 0.12 <= t['inner']['wall_s'] < 0.2
  assert not clock.stack


@pytest.mark.slow  # one profiled run at (4, 4, 160) and an import-timing process: ~40 s
def test_a_profiled_run_accounts_for_its_wall_and_steps():
  bench = _load_bench()
  row = bench.profile_run(4, 4, 160, 100, 'test', timeout_s=600, max_steps=3000)
  assert row['exit_code'] == 0 and 1 <= row['steps'] <= 3000
  phases = row['phases']
  # The exclusive phases add up to the run's wall (execute is the outermost phase).
  total = sum(v['wall_s'] for v in phases.values())
  assert total == pytest.approx(row['wall_s'], rel=0.05)
  for name in ('compile', bench.STEP, 'victim fit', 'outputs (scores, summary, plots)',
               'certificate: pass 1 (stats)', 'certificate: tangent_gram'):
    assert phases[name]['wall_s'] > 0, name
  # Steps of the run's own chunks: at most the run's steps (accepted trials add theirs).
  assert 0 < row['steps_by_phase'][bench.STEP] <= row['steps']
  assert row['bare_step_s'] > 0 and row['step_over_bare'] > 0
  assert 0 < row['certificate_share'] < 1 and row['import_wall_s'] > 0
  assert row['loadavg_start'] and row['loadavg_end']
  text = '\n'.join(bench.render_profile({'rows': [row]}))
  assert '| test | 4, 4, 160 | 100 |' in text and bench.STEP in text


def _profile_row(bench, label, seed):
  phases = {bench.STEP: {'wall_s': 8.0, 'cpu_s': 7.0, 'calls': 40},
            bench.TRIAL: {'wall_s': 2.0, 'cpu_s': 2.0, 'calls': 3},
            'certificate: tangent_gram': {'wall_s': 1.0, 'cpu_s': 1.0, 'calls': 1},
            'compile': {'wall_s': 3.0, 'cpu_s': 2.5, 'calls': 30}}
  return bench.profile_shares({
      'label': label, 'n': 4, 'd': 4, 'p': 160, 'seed': seed, 'wall_s': 14.0,
      'import_wall_s': 2.0, 'import_cpu_s': 1.5, 'phases': phases, 'bare_step_s': 0.004,
      'steps_by_phase': {bench.STEP: 2000, bench.TRIAL: 500}, 'n_recovered': 4,
      'certified': True, 'steps': 2200, 'loadavg_start': [1.0, 1, 1],
      'loadavg_end': [1.5, 1, 1]})


def test_the_profile_part_writes_its_own_file_and_keeps_bench_json(tmp_path, monkeypatch):
  bench = _load_bench()
  monkeypatch.setattr(bench, 'profile_run',
                      lambda n, d, p, seed, label: _profile_row(bench, label, seed))
  bench.main(['--parts=profile', '--profile_sizes=4x4x160', '--profile_seeds=100,101',
              '--profile_label=x', f'--out={tmp_path}'])
  bench.main(['--parts=profile', '--profile_sizes=4x4x160', '--profile_seeds=100',
              '--profile_label=x', f'--out={tmp_path}'])  # replaces its row, keeps 101's
  assert not (tmp_path / 'bench.json').exists()
  with open(tmp_path / 'profile.json') as f:
    res = json.load(f)
  assert res['machine'] and [r['seed'] for r in res['rows']] == [100, 101]
  (row, _) = res['rows']
  # 10 s of descent over 2500 steps (trials included): 4 ms a step, the bare step's.
  assert row['run_step_s'] == pytest.approx(0.004) and row['step_over_bare'] == pytest.approx(1.0)
  assert row['certificate_share'] == pytest.approx(1.0 / 16.0)
  md = (tmp_path / 'profile.md').read_text()
  assert '| x | 4, 4, 160 | 100 | 4/4 | yes | 2200 | 500 |' in md
  assert '| certificate: tangent_gram | 1.0 / 1.0 | 1.0 / 1.0 |' in md
