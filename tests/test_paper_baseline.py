"""scripts/paper_baseline.py at tiny size: the port's overrides, the blind lr rule, the record."""
import numpy as np

from scripts import paper_baseline as pb


def test_the_port_is_the_reference_optimiser_without_rescue():
  o = pb.paper_overrides('relu')
  assert o['victim.activation'] == 'relu_leaky_backward' and o['attack.tol'] == 1e-7
  assert (o['attack.optimizer'], o['attack.momentum'], o['attack.schedule']) == (
      'sgd', 0.9, 'constant')
  assert o['attack.rescue'] == () and o['attack.restarts'] == 1
  assert pb.paper_overrides('relu_tanh')['victim.activation'] == 'relu_tanh_leaky_backward'
  c = pb.paper_config('relu', 3, 4, 120, 50, {'seed': (0, 1), 'attack.lr': (2.0, 5.0)})
  assert tuple(c.sweep.seed) == (0, 1) and tuple(c.sweep.attack.lr) == (2.0, 5.0)
  assert c.data.n == 3 and c.victim.p == 120 and c.attack.max_steps == 50


def test_calibration_picks_the_lowest_median_loss_on_shadow_seeds_and_launch_records(tmp_path):
  cal = pb.calibrate('relu', 3, 4, 120, steps=150, lrs=(2.0, 2000.0), seeds=(1000, 1001))
  losses = {float(k): v for k, v in cal['median_final_loss'].items()}
  assert cal['lr'] == min(losses, key=losses.get) and set(losses) == {2.0, 2000.0}
  assert cal['shadow_seeds'] == [1000, 1001]
  rec = pb.launch(3, 4, 120, 20.0, (0,), 100)
  slow = pb.launch(3, 4, 120, 1e-6, (0,), 100)  # the lr is the one asked for
  assert slow['per_seed'][0]['final_loss'] != rec['per_seed'][0]['final_loss']
  assert rec['method'] == 'paper' and (rec['n'], rec['d'], rec['p']) == (3, 4, 120)
  assert 0 <= rec['frac_recovered'] <= 1 and rec['per_seed'][0]['steps'] <= 100
  doc = {'launch': rec, 'calibration': [cal], 'machine': 'test'}
  out = str(tmp_path / 'pb')
  pb.render(doc, out)
  text = open(out + '.md').read()
  assert 'Launch problem (n = 3, d = 4, p = 120' in text and '| relu | 3 | 4 |' in text
  path = str(tmp_path / 'pb.json')
  from recon.runtime import io
  io.write_json(path, doc)
  assert pb.calibrated_lr(path, 'relu', 3, 4) == cal['lr']
  assert pb.calibrated_lr(path, 'relu', 3, 8) is None and np.isfinite(cal['lr'])
