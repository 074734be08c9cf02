"""scripts/soak.py --ownership at a tiny size: it runs, counts its faults, and loses nothing."""
import json

import pytest

from scripts import soak


@pytest.mark.slow  # a dozen small runs in process
def test_a_tiny_soak_loses_no_user_file(tmp_path):
  out = tmp_path / 'soak.json'
  assert soak.main(['--ownership', '--faults=8', '--seed=3', f'--out={out}']) == 0
  result = json.loads(out.read_text())
  assert result['faults'] >= 8 and result['user_files_lost'] == [] and result['wrong'] == []
  assert sum(v for k, v in result['by_kind'].items() if k.startswith('plant_')) == \
      result['workdirs']


def test_bad_fault_count_is_one_line(capsys):
  assert soak.main(['--ownership', '--faults=0']) == 2
  assert capsys.readouterr().err.startswith('error: --faults: 0; accepted:')
