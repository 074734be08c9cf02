"""scripts/defences.py's grid bookkeeping: the nets' widths, bad flags."""
import os
import subprocess
import sys

import pytest
from conftest import subprocess_env

from scripts import defences as df

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SIZES = dict(df.NET_SIZES, ratios=(10.0, 4.0))


def test_net_points_cover_each_width_with_the_adaptive_attack_at_ten_dn_only():
  pts = df.net_points({'mse_digits': df.NET_GRID}, df.ADAPTIVE, SIZES, lambda v: [0, 1])
  by_ratio = {r: [p for p in pts if p['ratio'] == r] for r in (10.0, 4.0)}
  assert len(pts) == len(by_ratio[10.0]) + len(by_ratio[4.0])
  assert pts.index(by_ratio[4.0][0]) == len(by_ratio[10.0])  # the widest first
  adaptive = [p for p in pts if p.get('attack') == 'adaptive']
  assert adaptive and {p['ratio'] for p in adaptive} == set(df.ADAPTIVE_NET_RATIOS)
  narrow = by_ratio[4.0]
  assert {(p['defence'], p['strength']) for p in narrow} == (
      {('none', 0.0)} | {(d, float(s)) for d, ss in df.NET_GRID.items() for s in ss})
  dp = [p['strength'] for p in narrow if p['defence'] == 'dp']
  assert dp == sorted(dp, key=lambda s: s < 64)  # epsilon below 64 after the rest
  assert all(p['d'] == 16 and p['n'] == 4 for p in pts)


def _script(*args):
  return subprocess.run([sys.executable, '-m', 'scripts.defences', *args], cwd=ROOT,
                        env=subprocess_env(), capture_output=True, text=True, timeout=120)


@pytest.mark.slow  # three processes that import jax (about 20 s on 2 shared cores)
def test_bad_only_and_net_ratios_are_one_line_errors(tmp_path):
  out = f'--out={tmp_path / "d"}'
  for args, field in ((['--only=mse_lfw/nope'], '--only'), (['--net_ratios=4,x'], '--net_ratios'),
                      (['--net_ratios=0'], '--net_ratios')):
    proc = _script(*args, out)
    assert proc.returncode == 2, proc.stderr
    lines = [x for x in proc.stderr.splitlines() if x.startswith('error:')]
    assert len(lines) == 1 and field in lines[0]
  assert not os.listdir(tmp_path)
