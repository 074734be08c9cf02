"""scripts/bench_head_rows.py: a case runs, both losses agree, the outputs are written."""
import json

from scripts import bench_head_rows


def test_a_tiny_case_agrees_and_writes(tmp_path):
  r = bench_head_rows.case(6, 20, 3, repeats=1)
  assert r['dense_rows'] == 36 and r['head_rows'] == 12
  assert r['loss_rel_diff'] < 1e-5 and r['dense_ms'] > 0 and r['head_rows_ms'] > 0
  bench_head_rows.CASES = ((6, 20, 3),)
  bench_head_rows.main(['--repeats=1', f'--out={tmp_path}/b'])
  out = json.loads((tmp_path / 'b.json').read_text())
  assert len(out['records']) == 1 and out['machine'] and (tmp_path / 'b.md').exists()
