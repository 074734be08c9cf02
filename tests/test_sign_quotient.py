"""recon/attack/sign_quotient.py: the relu-like features with the compensating space projected out."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import recon
from recon.models import features, random_features
from recon.certify import float64_loss
from recon.certify import rung as polish
from recon.config import sections
from recon.attack import sign_quotient
from recon.pipelines import random_features as rf_pipeline


@pytest.mark.parametrize('name,kind', [
    ('relu', sign_quotient.LINEAR), ('gelu', sign_quotient.LINEAR),
    ('relu_smooth', sign_quotient.LINEAR), ('relu_leaky_backward', sign_quotient.LINEAR),
    ('relu_tanh', None), ('softplus_tanh', None), ('tanh', None), ('quadratic', None),
    (None, None)])
def test_compensation_follows_the_hermite_parity(name, kind):
  assert sign_quotient.compensation(name) == kind
  assert sign_quotient.active('auto', name, 32, 16) == (kind is not None)
  assert sign_quotient.active('on', name, 8, 16) == (kind is not None)
  assert not sign_quotient.active('auto', name, 16, 16)  # m <= d: the plain loss sees signs
  assert not sign_quotient.active('off', name, 32, 16)


def test_a_constant_even_part_is_quotiented_by_the_constant_vector(monkeypatch):
  monkeypatch.setitem(features.ACTIVATIONS, 'test_sigmoid', jax.nn.sigmoid)
  assert sign_quotient.compensation('test_sigmoid') == sign_quotient.CONSTANT
  v = jax.random.normal(jax.random.PRNGKey(0), (200, 5))
  q = sign_quotient.basis(v, 'test_sigmoid')
  assert q.shape == (200, 1)
  x = jax.random.normal(jax.random.PRNGKey(1), (3, 5))
  psi = sign_quotient.feature_fn(v, 'test_sigmoid', q)
  np.testing.assert_allclose(psi(-x), -psi(x), atol=1e-5)  # sigmoid(-z) = 1 - sigmoid(z)


def test_unknown_mode_is_one_line():
  with pytest.raises(ValueError,
                     match=r"^attack.sign_quotient: unknown 'yes'; accepted: auto, on, off$"):
    sign_quotient.active('yes', 'relu', 32, 16)
  with pytest.raises(ValueError, match='no compensated sign'):
    sign_quotient.basis(jnp.ones((4, 2)), 'relu_tanh')


def test_basis_is_orthonormal_spans_v_and_respects_the_mask():
  v = jax.random.normal(jax.random.PRNGKey(0), (300, 7))
  mask = (jnp.arange(300) < 250).astype(v.dtype)
  q = sign_quotient.basis(v, 'relu', mask)
  np.testing.assert_allclose(q.T @ q, np.eye(7), atol=1e-5)
  np.testing.assert_allclose(sign_quotient.project((v * mask[:, None]).T, q), 0, atol=1e-4)
  np.testing.assert_array_equal(np.asarray(q)[250:], 0)


@pytest.mark.parametrize('p', [500, pytest.param(3_000_000, marks=pytest.mark.slow)])
def test_psi_is_exactly_sign_blind_and_keeps_the_truth_a_zero(p):
  """psi(-x) = psi(x) for relu (the flip's vector V x is projected out), at a toy width and at
  the papers' width p = 3e6 (n = d = 10), and the truth stays a zero of the quotient loss."""
  n, d = 10, 10
  with jax.enable_x64(p < 10_000):
    dtype = jnp.float64 if p < 10_000 else jnp.float32
    v = features.random_weights(jax.random.PRNGKey(0), p, d, dtype)
    x = jax.random.normal(jax.random.PRNGKey(1), (n, d), dtype)
    x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * np.sqrt(d)
    q = sign_quotient.basis(v, 'relu')
    psi = sign_quotient.feature_fn(v, 'relu', q)
    a, b = psi(x), psi(-x)
    # float32 at p = 3e6: the products over p columns round at ~ sqrt(p) eps32 ~ 1e-4.
    rel = float(jnp.linalg.norm(a - b) / jnp.linalg.norm(a))
    assert rel <= (1e-12 if p < 10_000 else 1e-4)
    phi = features.rf_features(v, x, 'relu')
    assert float(jnp.linalg.norm(phi - features.rf_features(v, -x, 'relu'))
                 / jnp.linalg.norm(phi)) > 0.5  # the plain features see the sign
    # theta* = Phi^+ y lies in the span of the true features, so P theta* in that of Psi.
    y = jax.random.normal(jax.random.PRNGKey(2), (n,), dtype)
    theta = random_features.min_norm_solution(phi, y)
    problem = {'v': v, 'mask': jnp.ones((p,), dtype), 'theta': theta, 'quotient': q,
               'theta_quotient': sign_quotient.target(theta, q)}
    loss = lambda xs: float(rf_pipeline.rf_loss(xs, problem, activation='relu', jitter=0.0))  # noqa: E731
    floor = 1e-20 if p < 10_000 else 1e-8
    flips = jnp.where((jnp.arange(n) % 3 == 0)[:, None], -x, x)
    assert loss(x) < floor and loss(flips) < floor
    # The plain loss sees the flips (the sign traps): a wrong point of it, not of the quotient.
    plain = dict(problem)
    del plain['quotient'], plain['theta_quotient']
    assert float(rf_pipeline.rf_loss(flips, plain, activation='relu', jitter=0.0)) > 1e3 * floor


def test_a_mirror_pair_buys_nothing_under_the_quotient():
  """Plain relu loss: a candidate pair (x, -x) spans V x, which lowers the loss of a set
  missing a sample; under the quotient the pair is one direction."""
  d, n, p = 6, 12, 600
  with jax.enable_x64(True):
    v = features.random_weights(jax.random.PRNGKey(3), p, d, jnp.float64)
    q = sign_quotient.basis(v, 'relu')
    x = jax.random.normal(jax.random.PRNGKey(4), (n, d), jnp.float64)
    x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * np.sqrt(d)
    psi = np.asarray(sign_quotient.feature_fn(v, 'relu', q)(jnp.concatenate([x[:1], -x[:1]])))
    assert np.linalg.matrix_rank(psi, tol=1e-8 * np.abs(psi).max()) == 1
    phi = np.asarray(features.rf_features(v, jnp.concatenate([x[:1], -x[:1]]), 'relu'))
    assert np.linalg.matrix_rank(phi, tol=1e-8 * np.abs(phi).max()) == 2


def test_certify_settings_count_p_minus_k_and_drop_the_flips():
  base = {'p': 2048, 'rung': sections.Polish(sign_sweeps=2), 'tol': 1e-9}
  assert sign_quotient.certify_settings(base, 0) is base
  assert sign_quotient.certify_settings(base, 16) == {
      'p': 2032, 'rung': sections.Polish(sign_sweeps=0), 'tol': 1e-9}


def test_certificate_and_rung_run_on_the_quotient_features():
  """The quotient's plain feature function goes through the certificate's dense route and the
  rung's float64 features: at the truth the loss is at rounding and every row is pinned."""
  n, d, p = 8, 4, 256
  with jax.enable_x64(True):
    v = features.random_weights(jax.random.PRNGKey(5), p, d, jnp.float64)
    x = jax.random.normal(jax.random.PRNGKey(6), (n, d), jnp.float64)
    x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * np.sqrt(d)
    y = jax.random.normal(jax.random.PRNGKey(7), (n,), jnp.float64)
    theta = random_features.min_norm_solution(features.rf_features(v, x, 'relu'), y)
    q = sign_quotient.basis(v, 'relu')
    ff, target = sign_quotient.feature_fn(v, 'relu', q), sign_quotient.target(theta, q)
    flipped = np.where((np.arange(n) % 2 == 0)[:, None], -np.asarray(x), np.asarray(x))
    loss = float64_loss.loss64(float64_loss.Features64(ff), flipped, target)
    assert loss < 1e-20
    settings = sign_quotient.certify_settings(dict(p=p, rung=sections.Polish()), q.shape[1])
    _, cert, info = polish.certify_or_polish(
        final_loss=loss, tol=1e-12, x_hat=flipped, p=settings['p'], activation='relu',
        n_known=n, feature_fn=ff, theta=target, duplicate_threshold=0.1, mode='auto',
        rung=settings['rung'])
  assert cert['certified'] and cert['evidence']['p'] == p - d
  assert info == {'applied': False}


@pytest.mark.slow  # a run to convergence
def test_relu_with_n_above_d_is_recovered_and_certified(tmp_path):
  """n = 12 > d = 6 at p = 4 dn: the quotient attack recovers and certifies the whole set
  (the plain loss ended 0.75-0.92 of the rows on 3 of 4 such seeds)."""
  cfg = recon.get_config('rf_synthetic', {'data.n': 12, 'data.d': 6, 'victim.p': 288,
                                          'victim.activation': 'relu', 'seed': 1,
                                          'run.log_every_seconds': 1e9})
  res = recon.run(cfg, str(tmp_path / 'w'))
  assert res.metrics['sign_quotient_dims'] == 6  # m = 12 > d = 6: 'auto' quotients
  assert res.certified and res.metrics['frac_recovered'] == 1.0
  assert res.metrics['certificate']['p'] == 288 - 6


@pytest.mark.slow  # a run to convergence
def test_auto_keeps_the_plain_loss_when_m_is_at_most_d(tmp_path):
  """m = n = 4 <= d = 6: 'auto' runs the papers' loss (cheaper; the linear parts see the signs),
  'on' the quotient; both recover and certify."""
  for mode, dims in (('auto', 0), ('on', 6)):
    cfg = recon.get_config('rf_synthetic', {'data.n': 4, 'data.d': 6, 'victim.p': 240,
                                            'victim.activation': 'relu', 'seed': 0,
                                            'attack.sign_quotient': mode,
                                            'run.log_every_seconds': 1e9})
    res = recon.run(cfg, str(tmp_path / mode))
    assert res.metrics['sign_quotient_dims'] == dims
    assert res.certified and res.metrics['frac_recovered'] == 1.0
    assert res.metrics['certificate']['p'] == 240 - dims


@pytest.mark.slow  # a run to convergence
def test_a_sweep_quotients_each_point_like_its_single_run(tmp_path):
  """The vectorised sweep applies the same rule per point and records it."""
  cfg = recon.get_config('rf_synthetic', {'data.n': 12, 'data.d': 6, 'victim.activation': 'relu',
                                          'sweep.victim.p': (288,), 'sweep.seed': (1,),
                                          'run.log_every_seconds': 1e9})
  res = recon.run(cfg, str(tmp_path / 'sweep'))
  (record,) = res.summary['records']
  single = recon.run(recon.get_config('rf_synthetic', {
      'data.n': 12, 'data.d': 6, 'victim.p': 288, 'victim.activation': 'relu', 'seed': 1,
      'run.log_every_seconds': 1e9}), str(tmp_path / 'single'))
  assert record['sign_quotient_dims'] == single.metrics['sign_quotient_dims'] == 6
  assert record['certified'] and record['frac_recovered'] == 1.0



def test_the_memory_estimate_counts_the_quotient_basis():
  from recon.attack import memory
  kw = dict(n=32, d=16, m=32, p_total=2048, batch=1, itemsize=4)
  extra = memory.point_bytes(**kw, quotient=True) - memory.point_bytes(**kw)
  assert extra == (2048 * 16 + 2 * 32 * 2048) * 4
  on = recon.get_config('rf_synthetic', {'data.n': 32, 'data.d': 16, 'victim.p': 2048,
                                         'victim.activation': 'relu', 'attack.n_candidates': 32})
  off = recon.get_config('rf_synthetic', {'data.n': 32, 'data.d': 16, 'victim.p': 2048,
                                          'victim.activation': 'relu', 'attack.n_candidates': 32,
                                          'attack.sign_quotient': 'off'})
  assert (memory.estimate_bytes(on.data, on.victim, on.attack, 'float32')
          - memory.estimate_bytes(off.data, off.victim, off.attack, 'float32')) == extra
