"""scripts/paper_scale.py at a tiny size: records, append / supersede, render, missing list."""
import json
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, 'scripts'))

import paper_scale  # noqa: E402  pylint: disable=wrong-import-position


def test_points_and_reference():
  assert [paper_scale.p_of(q, 100, 3072) for q in paper_scale.POINTS] == [
      100, 153600, 307200, 614400, 1536000, 3072000]
  assert paper_scale.PAPER_CIFAR10 == {'n': 1.0, 'dn': 0.5, '10dn': 0.0}


@pytest.mark.slow
def test_tiny_run_appends_and_renders(tmp_path, capsys):
  out = str(tmp_path / 'ps')
  common = ['--image_size=2', '--n=4', '--activations=relu', '--max_steps=20', f'--out={out}',
            f'--runs_dir={tmp_path / "runs"}']
  paper_scale.main(common + ['--points=n,10dn'])
  doc = json.load(open(out + '.json'))
  assert [r['point'] for r in doc['records']] == ['n', '10dn']
  for r in doc['records']:
    assert set(paper_scale.FIELDS) <= set(r)
    assert r['scale'] == 'reduced' and r['d'] == 12 and r['matmul_precision'] == 'highest'
    assert r['device_kind'] and r['max_steps'] == 20
  assert doc['records'][1]['p'] == 480 and doc['records'][1]['p_over_dn'] == 10
  assert os.path.exists(out + '.md') and os.path.exists(out + '.png')
  assert os.path.exists(out + '_grid_relu.png')
  # A point run again replaces its record; the old one is kept, others untouched.
  paper_scale.main(common + ['--points=n'])
  doc = json.load(open(out + '.json'))
  assert sorted(r['point'] for r in doc['records']) == ['10dn', 'n']
  assert [r['point'] for r in doc['superseded']] == ['n']
  capsys.readouterr()
  paper_scale.main(['--render_only', '--image_size=2', '--n=4', f'--out={out}'])
  text = capsys.readouterr().out
  assert 'missing: relu p=dn/2' in text and 'relu_tanh p=10dn' in text
  assert 'relu p=10dn' not in text.split('missing:')[1].split('\n')[0]
  assert '--n=4 --image_size=2' in text
  md = open(out + '.md').read()
  assert 'Reduced size' in md and '| photo_patches | relu | 4 | 12 | 480 |' in md


def test_bad_point_refused(tmp_path):
  with pytest.raises(SystemExit, match='unknown'):
    paper_scale.main(['--points=3dn', '--image_size=2', '--n=4', f'--out={tmp_path / "x"}'])
