"""Smoke tests of scripts/: each script runs end to end at a tiny size and writes its output
files into a temporary folder (its --out / --out_dir flag), never into results/.

scripts/bench.py's tiny end-to-end run is in tests/test_bench.py. Each test here compiles
several programs, so all are `slow` (the full suite runs them). The scripts whose flags are
argparse run in this process (`_main`: their main(argv) after the process set-up their
`__main__` block does), which spares a process each its imports and JAX's start (4-14 CPU-s a
test); those built on absl.app (flags defined at import, once per process) run as processes,
and so do phase_transition and kkt, whose long runs cost no less in this process.
"""
import importlib
import json
import os
import subprocess
import sys

import pytest
from absl import logging
from conftest import subprocess_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

pytestmark = pytest.mark.slow


def _script(module, *args):
  """python -m scripts.<module> ARGS from the repository root (the scripts load configs/)."""
  proc = subprocess.run([sys.executable, '-m', f'scripts.{module}', *map(str, args)], cwd=ROOT,
                        env=subprocess_env(JAX_PLATFORMS='cpu'), capture_output=True, text=True,
                        timeout=900)
  assert proc.returncode == 0, proc.stderr[-3000:]
  return proc


def _main(module, *args, restore=()):
  """scripts.<module>.main(ARGS) in this process, from the repository root, after the set-up
  its `__main__` block does (recon.setup_process: idempotent); the module globals named in
  `restore` (which main reassigns) and absl's verbosity are put back after."""
  import recon  # pylint: disable=import-outside-toplevel
  recon.setup_process()
  mod = importlib.import_module(f'scripts.{module}')
  verbosity = logging.get_verbosity()
  with pytest.MonkeyPatch.context() as mp:
    mp.chdir(ROOT)
    for name in restore:
      mp.setattr(mod, name, getattr(mod, name))
    try:
      assert mod.main([str(a) for a in args]) in (None, 0)
    finally:
      logging.set_verbosity(verbosity)


def _has(folder, *names):
  for name in names:
    path = os.path.join(folder, name)
    assert os.path.isfile(path) and os.path.getsize(path) > 0, f'{name} not written'


def test_two_layer_threshold(tmp_path):
  _script('two_layer_threshold', '--tiny', '--ratios=1', '--seeds=1', '--max_steps=30',
          f'--out={tmp_path / "two_layer_threshold"}')
  _has(tmp_path, 'two_layer_threshold.json', 'two_layer_threshold.png')
  result = json.loads((tmp_path / 'two_layer_threshold.json').read_text())
  assert len(result['runs']) == 1 and result['max_steps'] == 30


def test_network_showcase(tmp_path):
  # ResNet and ViT are left out: their Jacobian-in-the-loss compiles for minutes at any size.
  _script('network_showcase', '--tiny', '--only=two_layer,rf_logistic',
          f'--out={tmp_path / "network_showcase"}')
  _has(tmp_path, 'network_showcase.json', 'network_showcase.md')
  runs = json.loads((tmp_path / 'network_showcase.json').read_text())['runs']
  assert sorted(runs) == ['rf_logistic', 'two_layer']


def test_rf_digits(tmp_path):
  _main('rf_digits', '--tiny', '--seeds=0', f'--out={tmp_path / "out"}',
          f'--runs={tmp_path / "runs"}')
  _has(tmp_path / 'out', 'grid.png', 'loss_curve.png', 'metrics.json', 'seeds.md')


def test_subspace_rf_width(tmp_path):
  _main('subspace', '--part=rf_width', '--tiny', f'--out_dir={tmp_path}', restore=['OUT'])
  _has(tmp_path, 'subspace_rf_width.json', 'subspace_rf_width.csv', 'subspace_rf_width.png')


def test_subspace_two_layer(tmp_path):
  _main('subspace', '--part=two_layer', '--tiny', f'--out_dir={tmp_path}', restore=['OUT'])
  _has(tmp_path, 'subspace_two_layer.json', 'subspace_two_layer.csv', 'subspace_two_layer.png')


def test_subspace_digits(tmp_path):
  _main('subspace', '--part=digits', '--tiny', f'--out_dir={tmp_path}', restore=['OUT'])
  _has(tmp_path, 'subspace_digits.json', 'subspace_digits.png')


def test_bench_sweep(tmp_path):
  _main('bench_sweep', '--tiny', '--steps=5', '--repeats=1', f'--out={tmp_path / "b.json"}')
  rows = json.loads((tmp_path / 'b.json').read_text())['rows']
  assert [r['grid'] for r in rows] == ['widths'] and rows[0]['k'] == 2


def test_phase_transition(tmp_path):
  _script('phase_transition', '--tiny', f'--out_dir={tmp_path}')
  _has(tmp_path, 'phase_transition_lr.json', 'phase_transition.json', 'phase_transition.png',
       'law_table.json', 'law_table.md', 'n_candidates.json', 'n_candidates.md')


def test_kkt_identifiability(tmp_path):  # --part=splitting runs the same victim and attack code
  _script('kkt', '--part=identifiability', '--tiny', f'--out_dir={tmp_path}')
  _has(tmp_path, 'kkt_identifiability.json', 'kkt_identifiability.md', 'kkt_identifiability.png')


def test_audit_regimes(tmp_path):
  _script('audit_regimes', '--tiny', f'--out={tmp_path}')
  _has(tmp_path, 'audit_regimes.json', 'audit_regimes.md')
  record = json.loads((tmp_path / 'audit_regimes.json').read_text())
  assert record['tuning_seeds'] == [0] and record['reported_seeds'] == [100]
  assert len(record['runs']) == 6 and record['choice']['chosen'] in ('init_trained', 'init_stacked')
  assert all(not r['tuning'] for r in record['runs'] if r['seed'] == 100)


def test_defences(tmp_path):
  _script('defences', '--tiny', f'--out={tmp_path / "defences"}')
  _has(tmp_path, 'defences.json', 'defences.md', 'defences.png')
  result = json.loads((tmp_path / 'defences.json').read_text())
  defences = {(r['victim'], r['defence']) for r in result['records']}
  assert ('rf_gd', 'dp') in defences and ('rf', 'release_noise') in defences
  dp = [r for r in result['records'] if r['defence'] == 'dp']
  assert all(r['epsilon'] == pytest.approx(8.0, rel=1e-3) for r in dp)
  assert all(r['held_out_accuracy'] is not None for r in result['records'] if r['victim'] == 'rf_gd')
  assert 'crossovers' in result['meta']
  nets = [r for r in result['records'] if r['victim'] == 'mse_digits']
  assert {r['defence'] for r in nets} == {'none', 'dp', 'weight_decay'}
  assert all(r['held_out_accuracy'] is not None and r['train_loss'] is not None for r in nets)
  adaptive = [r for r in result['records'] if r.get('attack') == 'adaptive']
  assert adaptive and all(r['init_in_span'] for r in adaptive)
  assert all(not r['init_in_span'] for r in result['records'] if r.get('attack') is None
             and r['victim'] != 'rf')
  certs = result['meta']['certificates']
  assert set(certs) >= {'rf', 'rf_gd', 'mse_digits'}
  assert all(c['false_certified'] == 0 for c in certs.values())
  assert all(r['false_certified'] is False for r in result['records'])
  assert 'mse_digits/weight_decay+adaptive/10' in result['meta']['crossovers']


def test_certificate_scale(tmp_path):
  _main('certificate', 'scale', '--sizes=6x5x300:auto+dense:dense+lean',
          f'--out={tmp_path / "c"}')
  _has(tmp_path, 'c.json', 'c.md')
  rows = json.loads((tmp_path / 'c.json').read_text())['rows']
  assert [(r['method_used'], r['features']) for r in rows] == [
      ('gram', 'dense'), ('dense', 'dense'), ('gram', 'lean'), ('dense', 'lean')]
  assert all(r['certified'] for r in rows)


def test_leak_width(tmp_path):
  _script('leak_width', '--tiny', f'--out_dir={tmp_path}')
  _has(tmp_path, 'leak_width.json', 'leak_width.md', 'leak_width.png')
  fam = json.loads((tmp_path / 'leak_width.json').read_text())['families']['relu']
  assert fam['n_target'] == 6 and set(fam['shadow_seeds']).isdisjoint(fam['reported_seeds'])
  assert all(p['n'] == 6 and len(p['seeds']) == 2 for p in fam['direct_points'])


def test_truth_certificate(tmp_path):
  """n = 8 photo patches at p = 10 dn: the true rows are certified at both tolerances; another
  seed is added to the records, and a seed recorded again (here from its run's workdir)
  replaces its record."""
  out, runs = tmp_path / 'tc', tmp_path / 'runs'
  for seeds in ('1', '2'):
    _main('certificate', 'truth', '--tiny', f'--seeds={seeds}', f'--out={out}',
            f'--runs_dir={runs}')
  doc = json.loads((tmp_path / 'tc.json').read_text())
  assert [r['seed'] for r in doc['records']] == [1, 2], doc['records']
  for r in doc['records']:
    assert (r['n'], r['d'], r['p'], r['dtype']) == (8, 48, 3840, 'float32'), r
    assert r['certifiable'] and r['attack']['tol'] == 1e-9 and r['attack']['rows_pinned'] == 8, r
  md = (tmp_path / 'tc.md').read_text()
  assert '| photo_patches | (8, 48, 3840) | float32 | 1 |' in md and '| 1e-09 | yes |' in md, md
  assert 'Certifiable: 2 of 2' in md, md
  # a finished run's workdir (an audit's): recorded under its config's data, dtype and seed
  _main('certificate', 'truth', f'--workdirs={runs / "photo_patches_float32_s2"}',
          f'--out={out}')
  again = json.loads((tmp_path / 'tc.json').read_text())['records']
  assert [r['seed'] for r in again] == [1, 2] and again[1]['loss64'] == doc['records'][1]['loss64']



def test_job_times(tmp_path):
  out = tmp_path / 'job_times'
  _script('job_times', '--jobs=rf_subspace', f'--out={out}')
  _has(tmp_path, 'job_times.json', 'job_times.md')
  (rec,) = json.loads((tmp_path / 'job_times.json').read_text())['records']
  assert rec['job'] == 'rf_subspace' and rec['exit_status'] == 0 and rec['seconds'] > 1
  assert rec['last_line'].startswith('optimizer:') and 'reconstructed' in rec['last_line']
  assert rec['cache'].startswith('cold') and rec['machine']


