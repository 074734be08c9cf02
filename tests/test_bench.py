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
    (['--headline_seeds=300,2'], '--headline_seeds'),  # 2: a seed the default was chosen on
    (['--headline_seeds=1001'], '--headline_seeds'),  # the port's lr shadow seed
    (['--headline_seeds=x'], '--headline_seeds'),
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
  out = _run('--parts=step,memscale,ttr,fit',  # the headline's CLI runs: stubbed below
             '--sizes=8x4x64x32', '--memscale_size=8x4x64', '--problems=4x4',
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


@pytest.mark.parametrize('argv, flag', [
    (['--pipeline_sizes=10x10'], '--pipeline_sizes'),
    (['--pipeline_seeds=a,b'], '--pipeline_seeds'),
    (['--pipeline_seeds=-1'], '--pipeline_seeds'),
    (['--pipeline_max_steps=0'], '--pipeline_max_steps'),
    (['--pipeline_timeout_s=0'], '--pipeline_timeout_s'),
    (['--pipeline_cpu_limit_s=-1'], '--pipeline_cpu_limit_s'),
])
def test_bad_pipeline_flags_exit_2_with_one_line(argv, flag, capsys):
  bench = _load_bench()
  with pytest.raises(SystemExit) as e:
    bench.parse_args(argv)
  assert e.value.code == 2
  err = capsys.readouterr().err.strip().splitlines()[-1]
  assert flag in err and 'accepted' in err


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
  text = '\n'.join(bench.pipeline_lines(part))
  assert '| default | 4, 4, 160 | relu_tanh | Adam 0.05 cosine | 20000 | 2/3 (1 stopped) | 1/3 |' \
      in text
  assert '| paper | 4, 4, 160 | relu_tanh | - | - | not run: no blind lr' in text
  assert 'False certificates (certified with a row not recovered): 0 of 1' in text


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


def test_pipeline_only_rerun_keeps_the_fixed_schemes_rows(tmp_path, monkeypatch):
  bench = _load_bench()
  old = {'device': 'cpu:0', 'platform': 'cpu', 'step': [], 'ttr_max_steps': 200,
         'ttr': [{'method': 'adam_lr0.05', 'n': 4, 'd': 4, 'p': 160, 'seed': 0, 'reached': True,
                  'seconds': 1.0, 'steps': 100, 'n_within': 4}],
         'ttr_merged': {'methods': ['adam_lr0.05'], 'kept_loadavg': [1.0, 1.0, 1.0]},
         'loadavg_ttr': [2.0, 2.0, 2.0], 'loadavg_step': [0.5, 0.5, 0.5]}
  (tmp_path / 'bench.json').write_text(json.dumps(old))
  monkeypatch.setattr(bench, 'pipeline_run', lambda method, n, d, p, seed, *a: _row(
      method, n, seed, recovered=True, certified=True, wall=5.0))
  bench.main(['--parts=ttr', '--methods=default', '--keep_other_parts',
              '--pipeline_sizes=4x4x160', '--pipeline_seeds=0,1', f'--out={tmp_path}'])
  with open(tmp_path / 'bench.json') as f:
    new = json.load(f)
  for key in ('ttr', 'ttr_max_steps', 'ttr_merged', 'loadavg_ttr', 'step', 'loadavg_step'):
    assert new[key] == old[key], key
  assert [(r['method'], r['seed']) for r in new['ttr_pipeline']['rows']] == [('default', 0),
                                                                             ('default', 1)]
  assert '| default | 4, 4, 160 | relu_tanh | Adam 0.05 cosine |' in (
      tmp_path / 'bench.md').read_text()


def test_headline_seeds_are_fresh_and_both_ratios_are_recorded():
  """results/bench.json's headline: fresh seeds (none a tuning seed), both clocks' ratios."""
  bench = _load_bench()
  assert not set(bench.parse_args([]).headline_seeds) & set(bench.headline_tuning_seeds())
  with open(os.path.join(ROOT, 'results', 'bench.json')) as f:
    part = json.load(f)['headline']
  tuning = {s for seeds in part['tuning_seeds'].values() for s in seeds}
  assert {0, 1, 2, 1000} <= tuning  # the default's table seeds and the port's lr shadows
  assert part['seeds'] and not set(part['seeds']) & tuning
  assert part['problem'] == [10, 10, 1000] and part['machine'] and part['loadavg_start']
  for clock, rows in (('optimizer_only', part['optimizer_only']['rows']),
                      ('whole_process', part['whole_process']['rows'])):
    assert sorted({r['seed'] for r in rows}) == sorted(part['seeds']), clock
    side = part[f'{clock}_ratio']
    assert side['seeds'] == len(part['seeds']) and side['ratio'] > 0
    assert side['lower_bound'] == (side['paper_reached'] < side['seeds'])
    assert side['ratio'] == pytest.approx(side['paper_median_s'] / side['default_median_s'])
  assert all(r['command'].startswith('python -m recon.main --config=configs/rf_synthetic.py')
             for r in part['whole_process']['rows'])


def test_headline_ratios_and_table_from_stubbed_rows():
  bench = _load_bench()
  opt = [{'method': m, 'n': 10, 'seed': s, 'reached': m != bench.PAPER, 'steps': 100,
          'seconds': t, 'n_within': 10, 'loadavg': [1.0]}
         for s in (300, 301) for m, t in ((bench.HEADLINE_DEFAULT, 0.5), (bench.PAPER, 20.0))]
  whole = [{**_row(m, 10, s, recovered=m == 'default', certified=m == 'default',
                   wall=w), 'cpu_s': w, 'loadavg': [1.0]}
           for s in (300, 301) for m, w in (('default', 8.0), ('paper', 20.0))]
  part = {'problem': [10, 10, 1000], 'activation': 'relu_tanh', 'seeds': [300, 301],
          'tuning_seeds': bench.HEADLINE_TUNING, 'default_scheme': bench.HEADLINE_DEFAULT,
          'paper_budget_factor': 10, 'max_steps': 20000, 'commit': 'abc', 'recorded': 'today',
          'machine': 'cpu', 'loadavg_start': [1.0], 'optimizer_only': {'rows': opt},
          'whole_process': {'rows': whole}}
  part.update(bench.headline_summary(part))
  assert part['optimizer_only_ratio']['ratio'] == pytest.approx(40.0)
  assert part['whole_process_ratio']['ratio'] == pytest.approx(2.5)
  assert part['optimizer_only_ratio']['lower_bound'] and part['whole_process_ratio']['lower_bound']
  text = '\n'.join(bench.headline_lines(part))
  assert '| optimiser only | 2/2, 0.50 | 0/2, 20.00 | at least 40.0x' in text
  assert '| whole process | 2/2 (2 certified), 8.0 | 0/2 (0 certified), 20.0 | at least 2.5x' in text


def test_headline_part_runs_both_clocks_per_seed_and_keeps_the_rest(tmp_path, monkeypatch):
  bench = _load_bench()
  old = {'device': 'cpu:0', 'platform': 'cpu', 'step': [], 'ttr': [], 'ttr_max_steps': 200,
         'loadavg_step': [0.5, 0.5, 0.5]}
  (tmp_path / 'bench.json').write_text(json.dumps(old))
  calls = []

  def fake_ttr(n, d, seed, method, max_steps):
    calls.append(('opt', method, seed, max_steps))
    return {'method': method, 'n': n, 'd': d, 'p': 10 * d * n, 'seed': seed,
            'reached': method != bench.PAPER, 'seconds': 20.0 if method == bench.PAPER else 0.5,
            'steps': max_steps, 'n_within': n}

  def fake_run(method, n, d, p, seed, max_steps, timeout_s, cpu_limit_s):
    calls.append(('cli', method, seed, max_steps))
    return _row(method, n, seed, recovered=method == 'default', certified=method == 'default',
                wall=8.0 if method == 'default' else 20.0)
  monkeypatch.setattr(bench, 'time_to_reconstruct', fake_ttr)
  monkeypatch.setattr(bench, 'pipeline_run', fake_run)
  bench.main(['--parts=headline', '--keep_other_parts', '--headline_seeds=301,300',
              f'--out={tmp_path}'])
  # Per seed, in the order given: both optimisers alone (the port 10x the budget), then both
  # CLI runs at the config's own budget.
  assert calls[:4] == [('opt', bench.HEADLINE_DEFAULT, 301, 20000), ('opt', bench.PAPER, 301, 200000),
                       ('cli', 'default', 301, None), ('cli', 'paper', 301, None)]
  assert len(calls) == 8
  res = json.loads((tmp_path / 'bench.json').read_text())
  assert res['loadavg_step'] == old['loadavg_step'] and res['ttr_max_steps'] == 200
  part = res['headline']
  assert part['seeds'] == [301, 300] and part['problem'] == [10, 10, 1000]
  assert part['optimizer_only_ratio']['ratio'] == pytest.approx(40.0)
  assert part['whole_process_ratio']['ratio'] == pytest.approx(2.5)
  assert 'at least 2.5x' in (tmp_path / 'bench.md').read_text()
