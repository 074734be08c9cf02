"""Issue #19: the KKT equations of a layer subset (`attack.kkt.layers`) and the first-layer
candidate subspace (`attack.kkt.candidate_subspace`) of the Haim attack (recon.objectives.kkt,
recon.pipelines.kkt)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon.config import sections
from recon.models import homogeneous
from recon.objectives import kkt


def _net_and_data(seed=0, n=5, d=6, width=7):
  jax.config.update('jax_enable_x64', True)  # float64 as asked (restored by tests/conftest.py)
  net = homogeneous.HomogeneousMLP(widths=(width, width), out_dim=1, activation='relu',
                                   param_dtype=jnp.float64)
  key = jax.random.PRNGKey(seed)
  x = jax.random.normal(key, (n, d), jnp.float64)
  params = net.init(jax.random.fold_in(key, 1), x)
  y = jnp.where(jnp.arange(n) % 2 == 0, 1.0, -1.0)
  return net, params, x, y


@pytest.mark.slow
def test_layer_mask_selects_exactly_the_named_layers():
  _, params, _, _ = _net_and_data()
  mask = kkt.layer_mask(params, ['hidden_0', 'head'])
  tree = jax.tree.map(jnp.ones_like, params)
  tree['params']['hidden_1']['kernel'] = jnp.zeros_like(tree['params']['hidden_1']['kernel'])
  expected = jax.flatten_util.ravel_pytree(tree)[0]
  np.testing.assert_array_equal(np.asarray(mask), np.asarray(expected))
  assert float(mask.sum()) == 6 * 7 + 7 * 1
  with pytest.raises(kkt.KKTError, match='kkt.layers: unknown layer'):
    kkt.layer_mask(params, ['hidden_5'])


@pytest.mark.slow
def test_masked_kkt_loss_ignores_the_other_layers_equations():
  net, params, x, y = _net_and_data()
  theta, apply_vec = kkt.flatten_model(net.apply, params)
  mask = kkt.layer_mask(params, ['hidden_0', 'head'])
  lam = jnp.linspace(0.5, 1.5, x.shape[0])
  # A target that satisfies the KKT equations of hidden_0 and head exactly, and is garbage
  # in hidden_1's: the masked fit is zero there, the full fit is not.
  exact = kkt.explained(x, lam, y, theta, apply_vec=apply_vec, kind='binary')
  garbage = jax.random.normal(jax.random.PRNGKey(3), theta.shape, theta.dtype) * (1 - mask)
  target = exact + garbage
  state = {'x': x, 'lam': lam}
  opts = dict(apply_vec=apply_vec, kind='binary',
              **kkt.penalty_settings(sections.Kkt(prior='none', lambda_min=0.0)))
  masked = {'target': target * mask, 'theta': theta, 'labels': y, 'mask': mask}
  full = {'target': target, 'theta': theta, 'labels': y}
  assert float(kkt.kkt_loss(state, masked, **opts)) < 1e-20
  assert float(kkt.kkt_loss(state, full, **opts)) > 1e-2
  # The least-squares duals of the masked problem are the planted ones.
  lam_ls = kkt.lstsq_lambda(x, y, theta, target * mask, apply_vec=apply_vec, kind='binary',
                            out_dim=1, ridge=1e-14, mask=mask)
  np.testing.assert_allclose(np.asarray(lam_ls), np.asarray(lam), rtol=1e-5)


def test_first_layer_subspace_recovers_the_data_span_and_projects():
  rng = np.random.default_rng(0)
  d, width, n = 12, 30, 3
  data = rng.normal(size=(n, d))
  # A first layer trained from a tiny init: K = K_0 + X^T C (columns in span X) + tiny noise.
  kernel = data.T @ rng.normal(size=(n, width)) + 1e-6 * rng.normal(size=(d, width))
  basis, svals = kkt.first_layer_subspace(jnp.asarray(kernel), n)
  assert basis.shape == (d, n) and svals[n - 1] / svals[n] > 1e4
  proj = np.asarray(basis @ basis.T)
  np.testing.assert_allclose(proj @ data.T, data.T, atol=1e-4)  # the data lie in the span (float32)
  base = lambda s: s  # noqa: E731
  project = kkt.subspace_constraint(base, basis)
  z = {'x': jnp.asarray(rng.normal(size=(4, d))), 'lam': jnp.ones(4)}
  once = project(z)
  np.testing.assert_allclose(np.asarray(project(once)["x"]), np.asarray(once["x"]), atol=1e-5)
  # What is removed is orthogonal to the data: the first layer's response is unchanged.
  np.testing.assert_allclose(np.asarray(once['x'] @ kernel), np.asarray(z['x'] @ kernel),
                             atol=1e-4 * np.abs(np.asarray(z['x'] @ kernel)).max())
  np.testing.assert_array_equal(np.asarray(once['lam']), np.ones(4))


@pytest.mark.slow
def test_pipeline_refuses_layer_subsets_and_subspace_without_explicit_duals():
  from configs import kkt_haim
  from recon import errors
  from recon.pipelines import kkt as pk
  c = kkt_haim.get_config()
  pk.check_attack_config(c.data, c.victim, c.attack)  # the defaults (layer subset + subspace, explicit duals) pass
  c.attack.kkt.lambda_solve, c.attack.kkt.lambda_min, c.attack.kkt.prior = ('eliminate', 0.0,
                                                                     'sphere')
  c.attack.split.mode = 'none'
  with pytest.raises(errors.ExperimentError, match='kkt.layers'):
    pk.check_attack_config(c.data, c.victim, c.attack)
  c.attack.kkt.layers = 'all'
  with pytest.raises(errors.ExperimentError, match='candidate_subspace'):
    pk.check_attack_config(c.data, c.victim, c.attack)
  c.attack.kkt.candidate_subspace = 'none'
  pk.check_attack_config(c.data, c.victim, c.attack)


@pytest.mark.slow
def test_unknown_layer_name_is_one_line_experiment_error():
  from configs import kkt_haim
  from recon import errors
  from recon.pipelines import kkt as pk
  _, params, _, _ = _net_and_data()
  c = kkt_haim.get_config()
  c.attack.kkt.layers = 'hidden_0,bogus'
  with pytest.raises(errors.ExperimentError, match="unknown layer 'bogus'") as e:
    pk.kkt_layer_mask(c.attack, params)
  assert '\n' not in str(e.value)
  c.attack.kkt.layers = 'all'
  assert pk.kkt_layer_mask(c.attack, params) is None
