"""Issue #19: Haim-style KKT attack on trained MLPs (configs/kkt_haim.py, scripts/kkt.py
--part=trained) and the anchors' nearest-candidate SSIM evaluation (recon.metrics.nearest_candidate_ssim)."""
import json
import os

import numpy as np
import pytest

from recon import data, metrics


def _images(n, seed=0):
  rng = np.random.default_rng(seed)
  return rng.uniform(size=(n, 64))


def test_nearest_candidate_ssim_exact_copies_and_noise():
  x = _images(6)
  # Candidates: affine copies (scale and offset: NCC and min-max SSIM ignore both) of the
  # first four images, plus noise; images 4 and 5 get only noise.
  noise = _images(4, seed=1)
  x_hat = np.concatenate([3.0 * x[:4][::-1] - 0.5, noise])
  ev = metrics.nearest_candidate_ssim(x, x_hat, (8, 8, 1))
  np.testing.assert_array_equal(ev['nearest'][:4], [3, 2, 1, 0])
  np.testing.assert_allclose(ev['ssim'][:4], 1.0, atol=1e-4)
  assert np.all(ev['ssim'][4:] < 0.5)
  assert ev['frac_ssim_0_5'] == pytest.approx(4 / 6)
  assert ev['frac_ssim_0_4'] >= ev['frac_ssim_0_5']
  assert ev['ssim_median'] == pytest.approx(float(np.median(ev['ssim'])))
  assert ev['n_distinct_nearest'] <= 6


def test_nearest_candidate_ssim_no_sign_flip():
  x = _images(3)
  ev = metrics.nearest_candidate_ssim(x, -x, (8, 8, 1))
  assert ev['frac_ssim_0_5'] == 0.0  # a negated image is not a reconstruction


@pytest.mark.slow
def test_parity_labels_and_center_preprocess():
  from configs import kkt_haim
  import jax
  c = kkt_haim.get_config()
  c.data.n = 20
  x, y, meta = data.load(c.data, jax.random.PRNGKey(0))
  src = np.asarray(meta['source_labels'])
  np.testing.assert_array_equal(np.asarray(y), np.where(src % 2 == 1, 1.0, -1.0))
  assert abs(float(np.mean(np.asarray(x)))) < 1e-5
  np.testing.assert_allclose(data.to_pixels(np.asarray(x), meta).min(), 0.0, atol=1e-6)


def _tiny(c):
  c.data.n, c.victim.width, c.victim.train.max_steps = 6, 20, 100
  c.attack.max_steps, c.run.chunk_steps = 40, 20
  c.run.overwrite, c.run.log_every_seconds = True, 1e9
  return c


@pytest.mark.slow
def test_kkt_haim_config_end_to_end(tmp_path):
  from configs import kkt_haim
  from recon import pipelines
  s = pipelines.run(_tiny(kkt_haim.get_config()), str(tmp_path))
  m = s['metrics']
  assert m['n_candidates'] == 12 and m['steps'] == 40
  assert np.isfinite(m['final_loss']) and m['train_loss'] < 0.7
  assert 'ssim_median' in m  # image metrics: the digits' image shape reached the report


@pytest.mark.slow
def test_kkt_trained_script_tiny(tmp_path):
  from scripts import kkt
  out = str(tmp_path / 'res' / 'kt')
  args = ['--methods=haim,haim+split,loo', '--n=6', '--out', out, '--workroot', str(tmp_path / 'w'),
          '--tuning_seeds=100',
          '--set', 'victim.width=20', '--set', 'victim.train.max_steps=100',
          '--set', 'attack.max_steps=40',
          '--set', 'run.chunk_steps=20', '--set', 'attack.split.every=20']
  assert kkt.main(['--part=trained', *args]) == 0
  for ext in ('.json', '.md', '.png'):
    assert os.path.exists(out + ext)
  got = json.load(open(out + '.json'))
  rows = got['rows']
  assert got['seeds']['reported'] == [0] and 0 not in got['seeds']['tuning']
  # loo's data fields differ from the victim's (objective kkt_general): it is scored against
  # the victim's own training set, recorded by the haim run.
  assert [r['method'] for r in rows] == ['haim', 'haim+split', 'loo']
  assert rows[0]['train_loss'] == rows[1]['train_loss'] == rows[2]['train_loss']  # one victim
  for r in rows:
    for k in kkt.ROW_KEYS:
      assert k in r
    assert 0.0 <= r['frac_ssim_0_5'] <= r['frac_ssim_0_4'] <= 1.0


def test_rows_read_back_render_as_written(tmp_path):
  # The JSON holds 'nan' for the unseen reference's losses; a second run appends to the rows
  # read back and renders them all (this failed with "Unknown format code 'g' for str").
  from scripts import kkt
  from recon.runtime import io
  row = {'method': 'unseen', 'dataset': 'lfw_faces', 'n': 4, 'width': 0, 'seed': 7,
         'frac_ssim_0_5': 0.25, 'frac_ssim_0_4': 0.5, 'ssim_median': 0.3, 'n_distinct_nearest': 3,
         'train_loss': float('nan'), 'kkt_loss': float('nan'), 'steps': 0, 'n_candidates_final': 8,
         'wall_seconds': 0.1, 'device': 'cpu'}
  path = str(tmp_path / 'kt.json')
  io.write_json(path, {'rows': [row], 'seeds': kkt.seed_lists([row], [100])})
  rows = kkt.load_rows(path)
  assert rows[0]['kkt_loss'] != rows[0]['kkt_loss']  # nan, a float again
  kkt.render(str(tmp_path / 'kt'), rows, kkt.seed_lists(rows, [100]))
  assert '| unseen | lfw_faces | 4 |' in open(str(tmp_path / 'kt.md')).read()
