"""scripts/rung_threads.py: both thread settings flip the same rows, the outputs are written."""
import json

from scripts import rung_threads


def test_case_agrees_across_thread_counts():
  r = rung_threads.case(6, 4, 48, lm_iters=3)
  assert r['same_flips'] and r['loss_rel_diff'] < 1e-6
  assert r['one_thread']['seconds'] > 0 and r['default_threads']['seconds'] > 0


def test_main_writes_json_and_markdown(tmp_path, monkeypatch):
  monkeypatch.setattr(rung_threads, "CASES", ((6, 4, 48),))
  rung_threads.main(['--lm_iters=2', f'--out={tmp_path}/r'])
  out = json.load(open(tmp_path / 'r.json'))
  assert out['machine'] and out['device'] and len(out['records']) == 1
  assert '| 6 | 4 | 48 |' in open(tmp_path / 'r.md').read()
