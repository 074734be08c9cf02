"""scripts/soak_inputs.py: hostile model / data files and failing user modules, each refused in
one line naming its field, exit 2, no workdir, without inflating anything."""
import json

import pytest

from scripts import soak_inputs


@pytest.mark.slow
def test_a_short_input_soak_holds_every_case(tmp_path):
  out = tmp_path / 'soak.json'
  result = soak_inputs.main(['--cases=12', '--seed=1', f'--out={out}'])
  assert result['problems'] == [], result['problems']
  assert sum(k['cases'] for k in result['by_kind'].values()) == 12
  assert json.loads(out.read_text())['cases'] == 12
