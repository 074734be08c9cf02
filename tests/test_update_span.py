"""scripts/update_span.py: the head's update against the span of its Jacobian rows."""
import json

import numpy as np
import pytest

from scripts import update_span


def test_the_share_outside_a_span():
  rows = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
  assert update_span.share_outside(rows, np.array([3.0, 4.0, 0.0])) == pytest.approx(0.0, abs=1e-12)
  assert update_span.share_outside(rows, np.array([0.0, 3.0, 4.0])) == pytest.approx(0.8)
  # a repeated row adds nothing to the span
  assert update_span.share_outside(np.vstack([rows, rows]), np.array([0.0, 0.0, 2.0])) == 1.0


@pytest.mark.slow
def test_gd_stays_in_the_trajectory_span_and_adam_in_its_rescaled_one(tmp_path):
  update_span.main(['--tiny', '--seeds=1', f'--out={tmp_path / "us"}'])
  doc = json.loads((tmp_path / 'us.json').read_text())
  rec = {r['regime']: r for r in doc['records']}
  assert set(rec) == set(update_span.REGIMES)
  # full-batch and minibatch GD: every step adds the rows at the current parameters
  for name in ('GD', 'minibatch SGD, B = 2'):
    assert rec[name]['stacked'] < 1e-3 < rec[name]['at_trained'], rec[name]
  # Adam: far outside every unscaled span; inside the span of its per-time rescaled rows
  adam = rec['Adam']
  assert adam['at_trained'] > 0.3 and adam['stacked'] > 0.1, adam
  assert adam['adam_scaled_stacked'] < 0.1 * adam['stacked'], adam
  assert 'adam_scaled' not in rec['GD']
  md = (tmp_path / 'us.md').read_text()
  assert sum(line.startswith('| ') for line in md.splitlines()) == 1 + len(update_span.REGIMES)
  assert "| Adam | " in md and "Adam's D stacked (oracle)" in md
