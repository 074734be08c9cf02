"""recon/sweep/store.py: what a stopped sweep says, and the inputs its saved groups record."""
import os

from recon.sweep import store as sweep_store


def test_the_stop_line_says_whether_the_sweep_can_resume(tmp_path):
  w = str(tmp_path / 'w')
  assert 'nothing to resume from' in sweep_store.interrupted_line(w)
  os.makedirs(sweep_store.folder(w))
  assert 'nothing to resume from' in sweep_store.interrupted_line(w)
  with open(os.path.join(sweep_store.folder(w), '0.partial.json'), 'w') as f:
    f.write('{}')
  line = sweep_store.interrupted_line(w)
  assert 'continue with --config.run.resume=True' in line and 'nothing' not in line
