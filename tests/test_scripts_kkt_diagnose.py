"""scripts/kkt_diagnose.py: the per-layer KKT fit at the true data (a victim diagnostic)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from configs import kkt_haim
from recon.objectives import kkt
from recon.pipelines import kkt as pk
from scripts import kkt_diagnose


@pytest.mark.slow  # ~6 CPU-s
def test_layer_fits_is_zero_for_a_planted_kkt_sum_and_sees_a_layer_that_is_not():
  c = kkt_haim.get_config()
  c.victim.width, c.data.d = 12, 5
  net = pk.make_network(c, 1, jnp.float32)
  x = jax.random.normal(jax.random.PRNGKey(0), (4, 5))
  y = jnp.asarray([1.0, -1.0, 1.0, -1.0])
  params = net.init(jax.random.PRNGKey(1), x)
  theta, apply_vec = kkt.flatten_model(net.apply, params)
  jac = kkt.dual_jacobian(x, y, theta, apply_vec=apply_vec, kind='binary', out_dim=1)
  planted = jac @ jnp.asarray([0.5, 1.0, 2.0, 0.7])  # exactly a KKT sum at the truth
  fits = kkt_diagnose.layer_fits(apply_vec, params, theta, planted, x, y)
  assert set(fits) == {'all'} | set(params['params'])
  for name, v in fits.items():
    assert v['rho_truth'] < 1e-6, (name, v)
    assert v['n_negative_duals'] == 0
  assert abs(sum(v['share'] for k, v in fits.items() if k != 'all') - 1.0) < 1e-5
  # Noise on one layer only: that layer's fit fails, the others still hold.
  layer = sorted(params['params'])[0]
  noise = jax.random.normal(jax.random.PRNGKey(2), theta.shape) * kkt.layer_mask(params, [layer])
  target = planted + 10.0 * noise * jnp.linalg.norm(planted) / jnp.linalg.norm(noise)
  fits = kkt_diagnose.layer_fits(apply_vec, params, theta, target, x, y)
  assert fits[layer]['rho_truth'] > 0.5
  assert all(v['rho_truth'] < 1e-6 for k, v in fits.items() if k not in (layer, 'all'))
  assert np.isfinite(fits['all']['rho_truth'])
