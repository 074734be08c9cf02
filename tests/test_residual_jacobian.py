"""The certificate's residual Jacobian without forming it: the blocked Gram, the matrix-free
operator and the Cholesky spectrum equal the dense Jacobian's, and the certificate's verdicts
do not depend on the method (never certifying what the dense one refuses)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon.certify import certificate, float64_loss, residual_jacobian
from recon.models import features, random_features

N, D = 6, 5


def _problem(p, activation='relu_tanh', seed=0, n=N, d=D, dead_column=False, theta_alpha=None):
  """(x_true, theta, feature map, v) in float64; call under `jax.enable_x64`."""
  kx, kv, ky = jax.random.split(jax.random.PRNGKey(seed), 3)
  x = jax.random.normal(kx, (n, d), jnp.float64)
  x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * jnp.sqrt(d)
  v = features.random_weights(kv, p, d, jnp.float64)
  if dead_column:  # a continuum of zero-loss solutions (see tests/test_certificate.py)
    v = v.at[:, -1].set(0.0)
  fmap = features.rf_feature_map(v, activation)
  if theta_alpha is None:
    theta = random_features.min_norm_solution(fmap(x), jax.random.normal(ky, (n,), jnp.float64))
  else:
    theta = fmap(x).T @ jnp.asarray(theta_alpha, jnp.float64)
  return np.asarray(x), np.asarray(theta), fmap, v


def test_a_feature_maps_blocks_are_its_columns_zero_past_p():
  key = jax.random.PRNGKey(3)
  x = jax.random.normal(key, (4, 7))
  v = features.random_weights(key, 100, 7)
  for fmap in (features.rf_feature_map(v, 'relu_tanh'),
               features.rf_feature_map_lean(key, 'relu_tanh', 100, 32, jnp.float32)):
    cols = jnp.concatenate([fmap.block(x, s, 30) for s in range(0, 120, 30)], axis=1)
    np.testing.assert_allclose(cols[:, :100], fmap(x), atol=1e-5)
    assert float(jnp.abs(cols[:, 100:]).max()) == 0.0
  # The lean map regenerates the same V as the dense one drawn from the key, also when X is
  # float64 (V drawn in the attack's dtype, then cast: not a float64 draw).
  lean = features.rf_feature_map_lean(key, 'relu', 100, 32, jnp.float32)
  np.testing.assert_allclose(lean(x), features.rf_feature_map(v, 'relu')(x), atol=1e-5)
  with jax.enable_x64(True):
    x64 = jnp.asarray(x, jnp.float64)
    np.testing.assert_allclose(lean(x64), features.rf_feature_map(v, 'relu')(x64), atol=1e-5)


@pytest.mark.parametrize('blocked', [True, False])
def test_the_blocked_gram_and_operator_equal_the_dense_jacobians(blocked):
  with jax.enable_x64(True):
    x, theta, fmap, _ = _problem(8 * N * D)
    x_hat = x + 1e-3 * np.random.default_rng(0).normal(size=x.shape)  # off the zero too
    ff = fmap if blocked else (lambda z: fmap(z))
    dense = certificate.tangent_jacobian(ff, x_hat, theta)
    st = residual_jacobian.stats(ff, x_hat, theta, block_entries=7 * N * D)  # 7 blocks
    assert st.n_blocks == (-(-8 * N * D // 7) if blocked else 1)
    h = residual_jacobian.tangent_gram(st)
    np.testing.assert_allclose(h, dense.T @ dense, rtol=1e-9, atol=1e-11 * np.abs(h).max())
    vecs = np.random.default_rng(1).normal(size=(N * (D - 1), 3))
    np.testing.assert_allclose(residual_jacobian.gram_operator(st)(vecs), h @ vecs,
                               rtol=1e-9, atol=1e-11 * np.abs(h).max())
    blocks = residual_jacobian.row_blocks(st)
    k = D - 1
    for i in range(N):
      np.testing.assert_allclose(blocks[i], h[i * k:(i + 1) * k, i * k:(i + 1) * k], rtol=1e-9,
                                 atol=1e-11 * np.abs(h).max())


def test_the_cholesky_spectrum_equals_the_eigendecomposition():
  with jax.enable_x64(True):
    x, theta, fmap, _ = _problem(8 * N * D)
    h = residual_jacobian.tangent_gram(residual_jacobian.stats(fmap, x, theta))
  lam, vec = np.linalg.eigh(h)
  sv = np.sqrt(lam[::-1])
  fast = residual_jacobian.gram_spectrum(h, N)
  assert fast['sigma_min'] == pytest.approx(sv[-1], rel=1e-9)
  assert fast['sigma_max'] == pytest.approx(sv[0], rel=1e-9)
  np.testing.assert_allclose(fast['row_scales'], certificate.row_pin_scales_from_eigh(lam, vec, N),
                             rtol=1e-8)
  for rtol in (1e-3, sv[N] / sv[0] * 1.01, 0.5):  # the inertia count, also mid-spectrum
    assert fast['rank'](rtol) == int(np.sum(sv > rtol * sv[0]))
  # Numerically singular: no shortcut (the certificate takes the eigendecomposition).
  u = np.linalg.qr(np.random.default_rng(0).normal(size=(8, 8)))[0]
  assert residual_jacobian.gram_spectrum(u @ np.diag([1, 1, 1, 1, 1, 1, 1, 0.0]) @ u.T, 2) is None


def _cases():
  """Problems the dense certificate certifies and refuses: (name, x_hat, theta, fmap, p,
  activation, n_known, tol)."""
  p = 10 * N * D
  out = []
  x, theta, fmap, _ = _problem(p)
  rng = np.random.default_rng(5)
  out.append(('truth', x, theta, fmap, p, 'relu_tanh', N, 1e-9))
  out.append(('unconverged', x + 3e-2 * rng.normal(size=x.shape), theta, fmap, p, 'relu_tanh',
              N, 1e-9))
  out.append(('m < n', x[:-1], theta, fmap, p, 'relu_tanh', N, 1e-9))
  alpha = [1.0, -0.7, 0.0, 0.9, 0.6, -1.2]  # sample 2 is not in theta
  x2, theta2, fmap2, _ = _problem(p, theta_alpha=alpha)
  wrong = x2.copy()
  wrong[2] = -x2[2] + 0.3 * x2[0]
  wrong[2] *= np.sqrt(D) / np.linalg.norm(wrong[2])
  out.append(('a row theta does not carry', wrong, theta2, fmap2, p, 'relu_tanh', N, 1e-9))
  x3, theta3, fmap3, _ = _problem(p, activation='relu', dead_column=True)
  out.append(('a continuum', x3, theta3, fmap3, p, 'relu', N, 1e-7))
  return out


def test_every_method_gives_the_dense_verdicts_and_never_certifies_more():
  verdicts = {}
  with jax.enable_x64(True):
    for name, x_hat, theta, fmap, p, act, n_known, tol in _cases():
      loss = float64_loss.loss64(fmap, x_hat, theta)
      certs = {method: certificate.certify(
          final_loss=loss, tol=tol, x_hat=x_hat, p=p, activation=act, n_known=n_known,
          feature_fn=fmap, theta=theta, jacobian_method=method)
               for method in ('dense', 'gram', 'matrix_free')}
      dense = certs['dense']['evidence']
      assert dense['jacobian_method'] == 'dense', name
      for method in ('gram', 'matrix_free'):
        cert, ev = certs[method], certs[method]['evidence']
        assert ev['jacobian'] == ('computed' if method == 'gram' else 'computed (matrix-free)')
        assert ev['jacobian_method'] == method, name
        assert cert['certified'] == certs['dense']['certified'], (name, method)
        assert cert['candidates_certified'] == certs['dense']['candidates_certified'], name
        assert ev['unseen_share'] == pytest.approx(dense['unseen_share'], rel=1e-6), name
        radii, dense_radii = np.asarray(ev['row_pin_radius']), np.asarray(dense['row_pin_radius'])
        if dense['jacobian_sigma_ratio'] > 1e-6:  # a spectrum, not a null space: equal
          assert ev['pin_radius'] == pytest.approx(dense['pin_radius'], rel=1e-6), (name, method)
          assert ev['jacobian_rank'] == dense['jacobian_rank'], (name, method)
        else:  # both see the continuum
          assert min(ev['pin_radius'], dense['pin_radius']) > 1.0, name
        if method == 'gram':
          assert ev['row_radius_kind'] == 'exact'
          if dense['jacobian_sigma_ratio'] > 1e-6:
            np.testing.assert_allclose(radii, dense_radii, rtol=1e-6, err_msg=name)
          assert ev['row_pinned'] == dense['row_pinned'], name
        else:  # an upper bound per row: a row it pins, the dense certificate pins
          assert ev['row_radius_kind'] == 'upper bound (whole set)'
          assert np.all(radii >= dense_radii * (1 - 1e-6)), name
          assert not np.any(np.asarray(ev['row_pinned']) & ~np.asarray(dense['row_pinned'])), name
      verdicts[name] = certs['dense']['certified']
  # The cases span both verdicts: the truth is certified, every other case refused.
  assert verdicts == {'truth': True, 'unconverged': False, 'm < n': False,
                      'a row theta does not carry': False, 'a continuum': False}



def test_the_host_blas_gram_equals_xlas_and_certifies_the_same(monkeypatch):
  """The host CPU's H (XLA forms J_c, BLAS's syrk adds J_c^T J_c) equals XLA's own product to
  rounding, and the certificate built on either gives the same verdicts, on the truth and on
  every refused case (issue #75: the fast path never certifies what the former one did not)."""
  verdicts = {}
  with jax.enable_x64(True):
    for name, x_hat, theta, fmap, p, act, n_known, tol in _cases():
      st = residual_jacobian.stats(fmap, x_hat, theta, block_entries=7 * N * D)  # several blocks
      assert st.n_blocks > 1
      fast, xla = (residual_jacobian.tangent_gram(st, host=h) for h in (True, False))
      np.testing.assert_allclose(fast, xla, rtol=1e-10, atol=1e-13 * np.abs(xla).max(),
                                 err_msg=name)
      np.testing.assert_array_equal(fast, fast.T)
      loss = float64_loss.loss64(fmap, x_hat, theta)
      kw = dict(final_loss=loss, tol=tol, x_hat=x_hat, p=p, activation=act, n_known=n_known,
                feature_fn=fmap, theta=theta, jacobian_method='gram')
      with monkeypatch.context() as mp:
        gram = residual_jacobian.tangent_gram
        mp.setattr(residual_jacobian, 'tangent_gram', lambda st: gram(st, host=False))
        before = certificate.certify(**kw)
      after = certificate.certify(**kw)
      for key in ('certified', 'candidates_certified', 'reasons'):
        assert after[key] == before[key], (name, key)
      for key in ('row_pinned', 'row_within', 'jacobian_rank'):
        assert after['evidence'][key] == before['evidence'][key], (name, key)
      assert after['evidence']['pin_radius'] == pytest.approx(
          before['evidence']['pin_radius'], rel=1e-6), name
      verdicts[name] = after['certified']
  assert verdicts == {'truth': True, 'unconverged': False, 'm < n': False,
                      'a row theta does not carry': False, 'a continuum': False}


def test_auto_takes_the_blocked_path_for_a_feature_map_and_dense_for_a_plain_function():
  x, theta, fmap, _ = _problem_f32()
  kw = dict(final_loss=1e-12, tol=1e-9, x_hat=x, p=10 * N * D, activation='relu_tanh',
            n_known=N, theta=theta)
  assert certificate.certify(feature_fn=fmap, **kw)['evidence']['jacobian_method'] == 'gram'
  assert certificate.certify(feature_fn=lambda z: fmap(z), **kw)['evidence'][
      'jacobian_method'] == 'dense'
  # Above the dense cap a plain function takes the blocked path (one block), not a fallback;
  # above the Gram cap, the matrix-free one.
  ev = certificate.certify(feature_fn=lambda z: fmap(z), max_jacobian_entries=0, **kw)['evidence']
  assert ev['jacobian_method'] == 'gram'
  ev = certificate.certify(feature_fn=fmap, max_gram_entries=0, **kw)['evidence']
  assert ev['jacobian_method'] == 'matrix_free' and ev['eigensolver']['converged']


def _problem_f32():
  kx, kv, ky = jax.random.split(jax.random.PRNGKey(0), 3)
  x = jax.random.normal(kx, (N, D))
  x = np.asarray(x / jnp.linalg.norm(x, axis=1, keepdims=True) * jnp.sqrt(D))
  fmap = features.rf_feature_map(features.random_weights(kv, 10 * N * D, D), 'relu_tanh')
  theta = random_features.min_norm_solution(fmap(x), jax.random.normal(ky, (N,)))
  return x, theta, fmap, None


def test_a_zero_or_singular_jacobian_pins_nothing_and_never_crashes():
  """H = J^T J = 0 (every feature derivative vanishes): the Lanczos shortcut steps aside
  (ARPACK refuses a start vector that H maps to zero) and the eigendecomposition's row
  scales are infinite, not NaN."""
  assert residual_jacobian.gram_spectrum(np.zeros((6, 6)), 2) is None
  assert residual_jacobian.gram_spectrum(np.full((6, 6), np.nan), 2) is None
  lam, vec = np.linalg.eigh(np.zeros((6, 6)))
  assert np.all(np.isinf(certificate.row_pin_scales_from_eigh(lam, vec, 2)))
  h = np.diag([1.0, 2.0, 3.0, 0.0, 0.0, 0.0])  # row 1's block is flat: only row 1 is free
  scales = certificate.row_pin_scales_from_eigh(*np.linalg.eigh(h), 2)
  assert np.isfinite(scales[0]) and scales[1] > 1e6


def _blocked_problem():
  x, theta, fmap, _ = _problem(8 * N * D)
  x_hat = x + 1e-3 * np.random.default_rng(0).normal(size=x.shape)
  dense = certificate.tangent_jacobian(fmap, x_hat, theta)
  st = residual_jacobian.stats(fmap, x_hat, theta, block_entries=60 * N * D)  # 60 columns
  assert st.n_blocks == 4
  return dense, st


def test_the_transpose_apply_and_the_damped_solve_equal_the_dense_jacobians():
  """J^T u over every block (u of unequal entries in each), and (H + mu I)^-1 rhs to CG's
  tolerance; a zero right-hand side is solved in 0 iterations with residual 0; given blocks
  are reused (row_blocks is not called again)."""
  with jax.enable_x64(True):
    dense, st = _blocked_problem()
    rng = np.random.default_rng(2)
    u = rng.normal(size=dense.shape[0]) * np.linspace(0.1, 3.0, dense.shape[0])
    jt_u = residual_jacobian.transpose_apply(st, u)
    np.testing.assert_allclose(jt_u, dense.T @ u, rtol=1e-9, atol=1e-12 * np.abs(dense.T @ u).max())
    h = dense.T @ dense
    mu = 0.1 * np.trace(h) / len(h)  # well conditioned: a few CG iterations
    s, info = residual_jacobian.damped_solve(st, jt_u, mu)
    want = np.linalg.solve(h + mu * np.eye(len(h)), jt_u)
    np.testing.assert_allclose(s, want, rtol=1e-7, atol=1e-9 * np.abs(want).max())
    assert 1 <= info['iterations'] < residual_jacobian.CG_MAXITER
    assert info['residual'] <= residual_jacobian.CG_RTOL
    zero, zinfo = residual_jacobian.damped_solve(st, np.zeros_like(jt_u), mu)
    assert not zero.any() and zinfo == {'iterations': 0, 'residual': 0.0}
    blocks = residual_jacobian.row_blocks(st)
    real = residual_jacobian.row_blocks
    try:
      residual_jacobian.row_blocks = None  # reused, not recomputed
      again, _ = residual_jacobian.damped_solve(st, jt_u, mu, blocks)
    finally:
      residual_jacobian.row_blocks = real
    np.testing.assert_allclose(again, s, rtol=1e-12, atol=1e-14 * np.abs(s).max())
    capped, cinfo = residual_jacobian.damped_solve(st, jt_u, mu, maxiter=2)
    assert cinfo['iterations'] == 2 and cinfo['residual'] > residual_jacobian.CG_RTOL


def test_the_matrix_free_extreme_singular_values_equal_the_dense_ones():
  with jax.enable_x64(True):
    dense, st = _blocked_problem()
    sv = np.linalg.svd(dense, compute_uv=False)
    lo, hi, info = residual_jacobian.smallest_singular_value(st)
    assert info['converged']
    np.testing.assert_allclose(hi, sv[0], rtol=1e-10)
    assert lo <= sv[-1] * (1 + 1e-9) and lo >= 0.99 * sv[-1]
