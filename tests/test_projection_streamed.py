"""Memory-lean (streamed) features and projection loss == the dense path; sharded == single."""
import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
import pytest

from configs import base
from recon.config import choices
from recon import pipelines
from recon.models import features
from recon.runtime import runs
from recon.pipelines import random_features as rf_pipeline
from recon.objectives import projection, projection_streamed
from conftest import subprocess_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ACT = 'relu_tanh'


def _setup(n=4, d=6, p=150, chunk=32, m=4, seed=0):
  k = jax.random.split(jax.random.PRNGKey(seed), 4)
  v = jax.jit(features.random_weights, static_argnums=(1, 2))(k[0], p, d)
  x = jax.random.normal(k[1], (n, d))
  theta = jax.random.normal(k[2], (p,))
  xh = jax.random.normal(k[3], (m, d))
  n_chunks = features.n_feature_chunks(p, chunk)
  th = jnp.zeros(n_chunks * chunk).at[:p].set(theta).reshape(n_chunks, chunk)
  return dict(key=k[0], v=v, x=x, theta=theta, xh=xh, th=th, p=p, chunk=chunk, d=d)


def _chunk_fn(chunk):
  return lambda aux, x, c: features.rf_feature_chunk(aux['key'], x, c, chunk, ACT, aux['p'])


def _split_fn(chunk):
  pre = lambda aux, x, c: features.rf_preactivation_chunk(aux['key'], x, c, chunk)
  post = lambda aux, z, c: features.rf_activate_chunk(z, c, chunk, ACT, aux['p'])
  return pre, post


def _loss(chunk, residual='two_pass', **kw):
  return projection_streamed.make_streamed_projection_loss(
      _chunk_fn(chunk), residual=residual, split_fn=_split_fn(chunk), **kw)


@pytest.mark.parametrize('rng', choices.WEIGHT_RNGS)
def test_weight_rows_equal_dense_rows(rng):
  # Both compiled (eager and jit may differ by 1 ulp in the 1/sqrt(d)): bit-identical on JAX
  # 0.10; JAX 0.12's XLA CPU fuses multiply-adds into FMAs for some array shapes only, so a
  # 13-row block and a 50-row V differ by a few float32 roundings of the entries' scale.
  key = jax.random.PRNGKey(3)
  v = jax.jit(lambda k: features.random_weights(k, 50, 7, rng=rng))(key)
  # Traced start (inside jit), as in the compiled loss.
  rows = jax.jit(lambda k, s: features.random_weight_rows(k, s, 13, 7, rng=rng))
  np.testing.assert_allclose(rows(key, jnp.uint32(20)), v[20:33], rtol=0, atol=1e-6)
  np.testing.assert_allclose(rows(key, jnp.uint32(37)), v[37:50], rtol=0, atol=1e-6)


@pytest.mark.slow  # up to ~6 CPU-s a case
@pytest.mark.parametrize('d', [6, 7])
def test_box_muller_blocks_give_the_dense_preactivation(d):
  # The lean path multiplies the two Box-Muller column blocks separately (never
  # concatenated); the sum equals X V^T with the dense V.
  key = jax.random.PRNGKey(8)
  x = jax.random.normal(key, (3, d))
  v = jax.jit(lambda k: features.random_weights(k, 40, d, rng='hash_box_muller'))(key)
  blocks = features.random_weight_blocks(key, 16, 8, d, rng='hash_box_muller')
  assert [b.shape[1] for b in blocks] == [(d + 1) // 2, d // 2]
  z = jax.jit(lambda k, x, c: features.rf_preactivation_chunk(k, x, c, 8, 'hash_box_muller'))(
      key, x, jnp.uint32(2))
  np.testing.assert_allclose(np.asarray(z), np.asarray(x @ v[16:24].T), atol=1e-5)


@pytest.mark.slow  # ~5 CPU-s
def test_chunked_features_equal_dense_and_pad_with_zeros():
  s = _setup()
  dense = jax.jit(features.rf_features, static_argnums=2)(s['v'], s['x'], ACT)
  chunked = jax.jit(features.rf_features_chunked, static_argnums=(2, 3, 4))(
      s['key'], s['x'], ACT, s['p'], s['chunk'])
  assert chunked.shape == (4, 160)
  np.testing.assert_allclose(np.asarray(chunked[:, :s['p']]), np.asarray(dense), atol=2e-6)
  assert np.all(np.asarray(chunked[:, s['p']:]) == 0)


@pytest.mark.parametrize('residual', choices.RESIDUAL_MODES)
def test_streamed_loss_and_gradient_equal_dense(residual):
  s = _setup()
  dense = lambda xh: projection.projection_loss(features.rf_features(s['v'], xh, ACT), s['theta'])
  lean = _loss(s['chunk'], residual)
  aux = {'key': s['key'], 'p': jnp.int32(s['p'])}
  l1, g1 = jax.jit(jax.value_and_grad(dense))(s['xh'])
  l2, g2 = jax.jit(jax.value_and_grad(lean))(s['xh'], s['th'], aux)
  np.testing.assert_allclose(float(l2), float(l1), rtol=1e-5)
  np.testing.assert_allclose(np.asarray(g2), np.asarray(g1), rtol=1e-4,
                             atol=1e-4 * float(jnp.abs(g1).max()))


@pytest.mark.slow  # ~5 CPU-s
def test_gradient_includes_jitter_term():
  # With a large jitter the eps = jitter tr(G)/m term matters; the custom VJP must match
  # autodiff of the dense formula exactly (same math).
  s = _setup(m=3)
  jitter = 1e-1
  dense = lambda xh: projection.projection_loss(features.rf_features(s['v'], xh, ACT),
                                                s['theta'], jitter)
  aux = {'key': s['key'], 'p': jnp.int32(s['p'])}
  g1 = jax.jit(jax.grad(dense))(s['xh'])
  for residual in ('two_pass', 'stored'):
    lean = _loss(s['chunk'], residual, jitter=jitter)
    g2 = jax.jit(jax.grad(lean))(s['xh'], s['th'], aux)
    np.testing.assert_allclose(np.asarray(g2), np.asarray(g1), rtol=1e-4,
                               atol=1e-4 * float(jnp.abs(g1).max()))


def test_stored_mode_needs_split_fn():
  with pytest.raises(ValueError, match='stored'):
    projection_streamed.make_streamed_projection_loss(_chunk_fn(8), residual='stored')


def _reference_loss(v, xh, theta):
  """Float64 NumPy projection loss (lstsq), the accuracy reference."""
  v, xh, theta = (np.asarray(a, np.float64) for a in (v, xh, theta))
  z = xh @ v.T
  phi = np.maximum(z, 0) + np.tanh(z)
  coef = np.linalg.lstsq(phi.T, theta, rcond=None)[0]
  r = theta - phi.T @ coef
  return r @ r / (theta @ theta)


@pytest.mark.slow  # ~6 CPU-s
def test_accuracy_near_convergence_two_pass_vs_gram():
  # theta in the span of the true features + a small component outside: loss ~ 1e-6.
  s = _setup(n=4, d=6, p=150, m=4)
  phi = jax.jit(features.rf_features, static_argnums=2)(s['v'], s['x'], ACT)
  theta = phi.T @ jnp.array([1.0, -0.5, 0.3, 2.0])
  theta = theta + 1e-3 * jnp.linalg.norm(theta) / np.sqrt(150) * s['theta']
  th = jnp.zeros(s['th'].size).at[:150].set(theta).reshape(s['th'].shape)
  aux = {'key': s['key'], 'p': jnp.int32(150)}
  ref = _reference_loss(s['v'], s['x'], theta)
  assert 1e-8 < ref < 1e-5
  dense = float(jax.jit(projection.projection_loss)(phi, theta))
  two = float(jax.jit(projection_streamed.make_streamed_projection_loss(_chunk_fn(32)))(
      s['x'], th, aux))
  gram = float(jax.jit(projection_streamed.make_streamed_projection_loss(
      _chunk_fn(32), residual='gram'))(s['x'], th, aux))
  stored = float(jax.jit(_loss(32, 'stored'))(s['x'], th, aux))
  # two_pass is as accurate as the dense path (explicit residual); the one-pass Gram
  # formula only has absolute accuracy ~ eps_32 (it may even round to 0).
  assert abs(two - ref) < 0.05 * ref + 1e-9
  assert abs(two - ref) <= 2 * abs(dense - ref) + 1e-9
  assert abs(gram - ref) < 1e-5
  assert abs(stored - ref) < 0.05 * ref + 1e-9


_SHARDED = textwrap.dedent('''
    import json, jax, jax.numpy as jnp, numpy as np
    from recon.models import features
    from recon.objectives import projection_streamed as ps
    assert jax.device_count() == 2, jax.devices()
    key = jax.random.PRNGKey(0); chunk, p, d = 16, 100, 5
    n_chunks = features.n_feature_chunks(p, chunk, 2)
    theta = jax.random.normal(jax.random.PRNGKey(1), (n_chunks * chunk,))
    theta = jnp.where(jnp.arange(n_chunks * chunk) < p, theta, 0).reshape(n_chunks, chunk)
    xh = jax.random.normal(jax.random.PRNGKey(2), (3, d))
    aux = {'key': key, 'p': jnp.int32(p)}
    fn = lambda a, x, c: features.rf_feature_chunk(a['key'], x, c, chunk, 'relu_tanh', a['p'])
    pre = lambda a, x, c: features.rf_preactivation_chunk(a['key'], x, c, chunk)
    post = lambda a, z, c: features.rf_activate_chunk(z, c, chunk, 'relu_tanh', a['p'])
    out = {}
    for residual in ('two_pass', 'stored'):
      for name, mesh in [('single', None), ('sharded', ps.feature_mesh(2))]:
        loss = ps.make_streamed_projection_loss(fn, mesh=mesh, residual=residual,
                                                split_fn=(pre, post))
        l, g = jax.jit(jax.value_and_grad(loss))(xh, theta, aux)
        out[f'{name}_{residual}'] = [float(l), np.asarray(g).tolist()]
    print(json.dumps(out))
''')


@pytest.mark.slow  # a 2-device subprocess
def test_sharded_equals_single_device():
  env = subprocess_env(XLA_FLAGS='--xla_force_host_platform_device_count=2',
                       JAX_PLATFORMS='cpu')
  proc = subprocess.run([sys.executable, '-c', _SHARDED], env=env, capture_output=True,
                        text=True, timeout=300, cwd=ROOT, check=False)
  assert proc.returncode == 0, proc.stderr[-2000:]
  out = json.loads(proc.stdout.strip().splitlines()[-1])
  for residual in ('two_pass', 'stored'):
    single, sharded = out[f'single_{residual}'], out[f'sharded_{residual}']
    np.testing.assert_allclose(sharded[0], single[0], rtol=1e-5)
    np.testing.assert_allclose(np.array(sharded[1]), np.array(single[1]), rtol=1e-4, atol=1e-6)
  np.testing.assert_allclose(out['single_stored'][0], out['single_two_pass'][0], rtol=1e-5)


@pytest.mark.slow  # ~6 CPU-s
def test_lean_problem_matches_dense_problem():
  keys = runs.split_keys(0)
  x = jax.random.normal(jax.random.PRNGKey(5), (4, 6))
  y = jnp.arange(4.0)
  dense = jax.jit(lambda k, x, y: rf_pipeline.make_rf_problem(
      k, x, y, p_total=70, activation=ACT))(keys, x, y)
  chunk, n_chunks = rf_pipeline.lean_layout(70, 16)
  lean = jax.jit(lambda k, x, y: rf_pipeline.make_rf_problem_lean(
      k, x, y, p=70, activation=ACT, chunk=chunk, n_chunks=n_chunks))(keys, x, y)
  theta = np.asarray(lean['theta']).ravel()
  np.testing.assert_allclose(theta[:70], np.asarray(dense['theta']), rtol=1e-3, atol=1e-4)
  assert np.all(theta[70:] == 0)
  loss = rf_pipeline.rf_lean_loss(activation=ACT, chunk=chunk, jitter=1e-6)
  xh = jax.random.normal(jax.random.PRNGKey(6), (4, 6))
  np.testing.assert_allclose(
      float(jax.jit(loss)(xh, lean)),
      float(jax.jit(lambda a, b: rf_pipeline.rf_loss(a, b, activation=ACT, jitter=1e-6))(
          xh, dense)), rtol=1e-4)


def test_lean_mode_selection_and_layout():
  cfg = base.get_config()
  cfg.victim.p, cfg.data.d, cfg.victim.feature_memory_budget_mb = 1000, 1000, 1.0
  assert rf_pipeline.use_lean_features(cfg.data, cfg.victim, jnp.float32)  # 3.8 MB > 1 MB
  cfg.victim.feature_memory_budget_mb = 10.0
  assert not rf_pipeline.use_lean_features(cfg.data, cfg.victim, jnp.float32)
  cfg.victim.feature_shards = 2
  assert rf_pipeline.use_lean_features(cfg.data, cfg.victim, jnp.float32)
  assert rf_pipeline.lean_layout(100, 16, 2) == (13, 8)  # 2 shards x 4 chunks x 13 >= 100
  assert rf_pipeline.lean_layout(10, 64, 2) == (5, 2)
  assert rf_pipeline.lean_layout(10000, 4096) == (3334, 3)  # balanced: 2 features of padding
  assert rf_pipeline.lean_layout(4096, 4096) == (4096, 1)
  for p, chunk, shards in [(1, 5, 1), (7, 1, 1), (999, 100, 4), (12345, 4096, 2)]:
    c, n = rf_pipeline.lean_layout(p, chunk, shards)
    assert c <= chunk and n % shards == 0 and p <= c * n < p + n


def test_check_condition_warns_on_collapse(caplog):
  s = _setup(m=3)
  xh = s['xh'].at[1].set(s['xh'][0])  # two identical candidates
  phi = features.rf_features(s['v'], xh, ACT)
  cond = projection.check_condition(np.asarray(phi @ phi.T))
  assert cond > 1e5
  phi = features.rf_features(s['v'], s['xh'], ACT)
  assert projection.check_condition(np.asarray(phi @ phi.T)) < 1e4


def test_auto_residual_stores_preactivations_within_budget():
  cfg = base.get_config()
  cfg.victim.p, cfg.attack.n_candidates, cfg.victim.feature_memory_budget_mb = 100000, 20, 10.0
  assert rf_pipeline.lean_residual(cfg.victim, cfg.attack, jnp.float32) == 'stored'  # Z: 7.6 MB
  cfg.victim.feature_memory_budget_mb = 5.0
  assert rf_pipeline.lean_residual(cfg.victim, cfg.attack, jnp.float32) == 'two_pass'
  cfg.victim.feature_residual = 'gram'
  assert rf_pipeline.lean_residual(cfg.victim, cfg.attack, jnp.float32) == 'gram'


@pytest.mark.slow  # up to ~20 CPU-s a case
@pytest.mark.parametrize('rng', choices.WEIGHT_RNGS)
def test_cli_lean_run_equals_dense_run(tmp_path, rng):
  # Same key and generator => the lean run (V regenerated, stored residual) reconstructs
  # like the dense run: same candidates up to float32 round-off.
  from configs import rf_synthetic
  out = {}
  for mode in ('dense', 'lean'):
    cfg = rf_synthetic.get_config()
    with cfg.unlocked():
      cfg.update_from_flattened_dict({'data.n': 4, 'data.d': 5, 'victim.p': 200, 'attack.max_steps': 300, 'run.chunk_steps': 300, 'victim.feature_mode': mode, 'victim.feature_chunk': 64, 'victim.weight_rng': rng, 'attack.decay_steps': 300})
      # Without the precision rung: a polished set is certified again in float64 on dense
      # features, and this test is about the lean certificate.
      cfg.attack.rescue = ('escalate',)
    s = pipelines.run(cfg, str(tmp_path / f'{mode}_{rng}'))
    out[mode] = s['metrics']
  assert out['lean']['memory_lean'] and not out['dense']['memory_lean']
  np.testing.assert_allclose(out['lean']['final_loss'], out['dense']['final_loss'], rtol=0.05,
                             atol=1e-7)
  np.testing.assert_allclose(out['lean']['recon_error'], out['dense']['recon_error'], atol=1e-3)
  # The certificate walks the lean features block by block (V regenerated), as the attack
  # does, and says what the dense run's says.
  cert = {mode: out[mode]['certificate'] for mode in out}
  assert cert['lean']['jacobian_method'] == cert['dense']['jacobian_method'] == 'gram'
  assert out['lean']['certified'] == out['dense']['certified']
  np.testing.assert_allclose(cert['lean']['pin_radius'], cert['dense']['pin_radius'], rtol=0.05)
