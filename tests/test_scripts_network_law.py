"""scripts/network_law.py at tiny size: records, skipping, rendering, shadow disjointness."""
import os

import pytest

from recon import data, io, runs
from scripts import network_law as nl

FIELDS = ('victim', 'loss', 'dataset', 'n', 'd', 'width', 'p_L', 'p_L_over_dn', 'seed',
          'train_loss', 'recon_error', 'frac_recovered', 'ssim_mean', 'jacobian_at', 'steps',
          'wall_seconds', 'device', 'escalate', 'escalations_tried', 'escalations_accepted',
          'escalation_restarts', 'escalation_restarts_kept')


def test_widths_and_p_l_per_kind():
  # p_L = width * (p_L per unit width); ratio 1 on digits 4x4 with n = 4 is dn = 64.
  assert nl.p_per_width('two_layer_mse', 'digits') == 1
  assert nl.p_per_width('two_layer_ce', 'digits') == 3
  assert nl.p_per_width('resnet', 'digits') == 16
  assert nl.p_per_width('vit', 'digits') == 4  # 2x2 patches of a 4x4 image
  assert nl.p_per_width('vit', 'lfw_faces') == 25  # 5x5: 1x1 patches
  cfg, width = nl.make_config('two_layer_ce', 'digits', 3.0, 0, 4, 10, {'lr': 0.02})
  assert width == 64 and cfg.num_classes == 3 and cfg.loss == 'cross_entropy'
  assert cfg.lr == 0.02 and cfg.classes == (0, 1, 2) and cfg.d == 16


def test_shadow_images_are_disjoint_from_the_victims():
  shadow = nl.shadow_seed('two_layer_mse', 'digits', 4, (0, 1, 2))
  cfg, _ = nl.make_config('two_layer_mse', 'digits', 1.0, 0, 4, 1, {})

  def idx(seed):
    return set(int(i) for i in data.load(cfg, runs.split_keys(seed)['data'])[2]['indices'])

  assert not idx(shadow['seed']) & (idx(0) | idx(1) | idx(2))


@pytest.mark.slow
def test_tiny_run_appends_skips_and_renders(tmp_path):
  out = str(tmp_path / 'law')
  res = nl.run_points(out, ['two_layer_mse', 'rf'], ['digits'], [4.0], [0], n=2, max_steps=30,
                      do_calibrate=False)
  assert len(res['records']) == 2
  for r in res['records']:
    assert all(k in r for k in FIELDS), r.keys()
    assert r['n'] == 2 and r['d'] == 16 and abs(r['p_L_over_dn'] - 4.0) < 0.1
  assert not res['calibration']['rf/digits/n2']['calibrated']
  assert all(r['escalate'] == 'auto' and r['attack']['escalate'] == 'auto'
             for r in res['records'])
  again = nl.run_points(out, ['two_layer_mse'], ['digits'], [4.0], [0], n=2, max_steps=30,
                        do_calibrate=False)
  assert len(again['records']) == 2  # already present: skipped
  nl.render(out, 2)
  md = io.read_text(out + '.md') if hasattr(io, 'read_text') else open(out + '.md').read()
  assert '## two_layer_mse on digits' in md and 'NOT calibrated' in md
  assert 'Missing points' in md and os.path.getsize(out + '.png') > 0
