"""victim.feature_mode 'blocked': V stored and streamed in blocks of its rows (no transpose of V
formed) gives the dense loss and gradient to float rounding, at small sizes and at p = 10^6."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from configs import base
from recon import pipelines
from recon.attack import memory
from recon.models import features
from recon.objectives import projection
from recon.pipelines import random_features as rf_pipeline
from recon.runtime import runs

ACT = 'relu_tanh'


def test_row_blocks_of_a_stored_v_equal_the_regenerated_ones():
  key = jax.random.PRNGKey(3)
  chunk, n_chunks, d = 16, 5, 7
  v = features.random_weights(key, chunk * n_chunks, d)
  x = jax.random.normal(jax.random.PRNGKey(4), (3, d))
  for c in range(n_chunks):
    np.testing.assert_allclose(features.rf_rows_preactivation_chunk(v, x, c, chunk),
                               features.rf_preactivation_chunk(key, x, c, chunk),
                               rtol=1e-5, atol=1e-5)


def _problems(p, d, n, m, chunk, seed=0):
  keys = runs.split_keys(seed)
  x = jax.random.normal(jax.random.PRNGKey(seed + 10), (n, d))
  x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * jnp.sqrt(d)
  y = jax.random.normal(jax.random.PRNGKey(seed + 11), (n,))
  chunk, n_chunks = rf_pipeline.lean_layout(p, chunk)
  blocked = jax.jit(lambda k, x, y: rf_pipeline.make_rf_problem_lean(
      k, x, y, p=p, activation=ACT, chunk=chunk, n_chunks=n_chunks, resident=True))(keys, x, y)
  xh = jax.random.normal(jax.random.PRNGKey(seed + 12), (m, d))
  xh = xh / jnp.linalg.norm(xh, axis=1, keepdims=True) * jnp.sqrt(d)
  return blocked, chunk, xh


@pytest.mark.parametrize('residual', ['two_pass', 'stored'])
@pytest.mark.parametrize('p, d, n, m, chunk', [
    (150, 6, 4, 4, 32),
    pytest.param(1_000_000, 3, 4, 5, 65536, marks=pytest.mark.slow)])  # ~30 CPU-s a case
def test_blocked_loss_and_gradient_equal_dense(residual, p, d, n, m, chunk):
  with jax.enable_x64():
    blocked, chunk, xh = _problems(p, d, n, m, chunk)
    blocked = jax.tree.map(lambda a: a.astype(jnp.float64) if a.dtype == jnp.float32 else a,
                           blocked)
    xh = xh.astype(jnp.float64)
    loss = rf_pipeline.rf_lean_loss(activation=ACT, chunk=chunk, jitter=1e-8,
                                    residual=residual, resident=True)
    value, grad = jax.jit(jax.value_and_grad(loss))(xh, blocked)
    v = blocked['v'][:p]
    theta = blocked['theta'].reshape(-1)[:p]
    dense = lambda z: projection.projection_loss(features.rf_features(v, z, ACT), theta,  # noqa: E731
                                                 jitter=1e-8)
    want, want_grad = jax.jit(jax.value_and_grad(dense))(xh)
  np.testing.assert_allclose(float(value), float(want), rtol=1e-9)
  np.testing.assert_allclose(np.asarray(grad), np.asarray(want_grad), rtol=1e-7, atol=1e-12)


def test_the_memory_estimate_counts_the_stored_v():
  cfg = base.get_config()
  cfg.victim.p, cfg.data.d, cfg.data.n = 100_000, 30, 10
  est = {}
  for mode in ('lean', 'blocked'):
    cfg.victim.feature_mode = mode
    assert rf_pipeline.use_lean_features(cfg.data, cfg.victim, jnp.float32)
    est[mode] = memory.estimate_bytes(cfg.data, cfg.victim, cfg.attack, 'float32')
  assert est['blocked'] - est['lean'] == 100_000 * 30 * 4


@pytest.mark.slow  # ~20 CPU-s
def test_a_blocked_run_reconstructs_like_a_lean_run(tmp_path):
  from configs import rf_synthetic  # pylint: disable=import-outside-toplevel
  out = {}
  for mode in ('lean', 'blocked'):
    cfg = rf_synthetic.get_config()
    with cfg.unlocked():
      cfg.update_from_flattened_dict({
          'data.n': 4, 'data.d': 5, 'victim.p': 200, 'attack.max_steps': 300,
          'run.chunk_steps': 300, 'victim.feature_mode': mode, 'victim.feature_chunk': 64,
          'attack.decay_steps': 300})
      cfg.attack.rescue = ('escalate',)
    out[mode] = pipelines.run(cfg, str(tmp_path / mode))['metrics']
  assert out['blocked']['feature_blocks'] and not out['blocked']['memory_lean']
  np.testing.assert_allclose(out['blocked']['final_loss'], out['lean']['final_loss'], rtol=0.05,
                             atol=1e-7)
  np.testing.assert_allclose(out['blocked']['recon_error'], out['lean']['recon_error'], atol=1e-3)
  assert out['blocked']['certified'] == out['lean']['certified']
