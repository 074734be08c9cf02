"""The precision rung (recon/certify/rung.py): a row that carries a tiny share of theta, wrong in
float32, is found in float64; the rung never raises the loss and stays off where it has no
business (certified runs, p < m d, mode 'off')."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon.config import validate as config_lib
from recon import metrics
from recon.certify import certificate, float64_loss
from recon.certify import rung as polish
from recon.config import sections
from recon.models import features
from recon.objectives import projection
from configs import rf_synthetic

N, D = 6, 6
TINY = 2e-4  # the share of theta the planted weak sample carries (misses had 2e-4 .. 1e-3)


def _planted(p, activation='relu_tanh', seed=0, weak=3):
  """float32 victim theta = Phi^T alpha with sample `weak`'s coefficient scaled to TINY of
  the others' (the random-label accident that leaves a row free)."""
  kx, kv, ka = jax.random.split(jax.random.PRNGKey(seed), 3)
  x = jax.random.normal(kx, (N, D))
  x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * jnp.sqrt(D)
  v = features.random_weights(kv, p, D)
  ff = lambda z: features.rf_features(v, z, activation)  # noqa: E731
  alpha = jax.random.normal(ka, (N,))
  phi = ff(x)
  if weak is None:  # no planted weak sample
    return np.asarray(x), np.asarray(alpha @ phi), ff
  alpha = alpha.at[weak].set(TINY * jnp.linalg.norm(alpha @ phi) / jnp.linalg.norm(phi[weak]))
  theta = alpha @ phi
  return np.asarray(x), np.asarray(theta), ff


def _stuck(x, weak, seed=1, jiggle=1e-4):
  """The float32 run's end state: the weak row anywhere, the others nearly right."""
  rng = np.random.default_rng(seed)
  x_hat = x + jiggle * rng.standard_normal(x.shape)
  x_hat[weak] = rng.standard_normal(D)
  return (x_hat / np.linalg.norm(x_hat, axis=1, keepdims=True) * np.sqrt(D)).astype(np.float32)


def _loss32(ff, x_hat, theta):
  return float(projection.projection_loss(ff(jnp.asarray(x_hat)), jnp.asarray(theta)))


def _run(x_hat, theta, ff, p, mode='auto', activation='relu_tanh', tol=1e-9, max_entries=None):
  return polish.certify_or_polish(
      final_loss=_loss32(ff, x_hat, theta), tol=tol, x_hat=x_hat, p=p, activation=activation,
      n_known=len(x_hat), feature_fn=ff, theta=theta, duplicate_threshold=metrics.RECOVERED_THRESHOLD, mode=mode,
      rung=sections.Polish(tol=1e-12, starts=16, row_steps=600), key=jax.random.PRNGKey(0),
      max_entries=max_entries)


@pytest.mark.slow  # ~10 CPU-s
def test_a_row_that_carries_a_tiny_share_is_found_in_float64_and_certified():
  p, weak = 8 * N * D, 3
  x, theta, ff = _planted(p, weak=weak)
  x_hat = _stuck(x, weak)
  # float32 cannot tell: the loss is near its floor and the weak row is free.
  assert _loss32(ff, x_hat, theta) < 1e-6
  # The dense cap: one entry short of p m d the rung's Gauss-Newton is matrix-free and the row
  # re-search (its held basis is as large as J) is skipped; at p m d it all runs densely.
  _, _, free = _run(x_hat, theta, ff, p, max_entries=p * N * D - 1)
  assert free['applied'] and free['gauss_newton_method'] == 'matrix_free'
  assert free['rows_searched'] == [] and free['loss_after'] <= free['loss_before']
  x_pol, cert, info = _run(x_hat, theta, ff, p, max_entries=p * N * D)
  assert info['applied'] and info['kept'] and info['gauss_newton_method'] == 'dense'
  assert weak in info['rows_searched'] and weak in info['rows_replaced']
  assert info['loss_after'] < 1e-12 < info['loss_before']
  errors = metrics.per_sample_errors(x, np.asarray(x_pol, np.float64))
  assert errors.max() < 1e-3, errors
  assert cert['certified'], cert['reasons']
  assert cert['evidence']['precision'] == 'float64 (polished)'
  assert cert['evidence']['rows_pinned'] == N
  # The loss test at max(attack.polish.tol, 4 F); the radii at the level max(L / (1 - q), F),
  # F the statistical floor (below the worst case), no clamp at either tolerance.
  assert info['tol'] == max(1e-12, polish.FLOOR_MARGIN * info['rounding_floor'])
  assert info['rounding_floor'] < info['rounding_floor_worst']
  assert cert['evidence']['tol'] == info['tol'] and cert['evidence']['floor'] == info['rounding_floor']
  assert cert['evidence']['radius_loss'] < 1e-12
  assert x_pol.dtype == x_hat.dtype and x_pol.shape == x_hat.shape


@pytest.mark.slow  # ~10 CPU-s
def test_with_more_rows_free_than_the_search_takes_gauss_newton_runs_first():
  """Every row jiggled by 1e-2 and the weak row wrong: at the float32 loss more rows than
  max(1, m/4) = 1 are free (the old rule stopped there); after a first Gauss-Newton pass only
  the weak row is, and the rung re-searches it and certifies the set (as on photo patches,
  n = 32, d = 48: 18 rows free at the float32 loss, 8 after Gauss-Newton)."""
  p, weak = 8 * N * D, 3
  x, theta, ff = _planted(p, weak=weak)
  x_hat = _stuck(x, weak, jiggle=1e-2)
  x_pol, cert, info = _run(x_hat, theta, ff, p)
  assert info['certificate_before']['rows_within'] < N - 1  # 2+ rows free in float32
  assert info['applied'] and info['kept'] and info['gauss_newton_first'] > 0
  assert info['rows_replaced'] == [weak]
  assert cert['certified'], cert['reasons']
  errors = metrics.per_sample_errors(x, np.asarray(x_pol, np.float64))
  assert errors.max() < metrics.RECOVERED_THRESHOLD / 10, errors


def test_a_set_still_mostly_free_after_gauss_newton_comes_back_unchanged():
  p = 8 * N * D
  x, theta, ff = _planted(p, weak=None)
  rng = np.random.default_rng(7)
  x_hat = rng.standard_normal(x.shape)  # failed wholesale
  x_hat = (x_hat / np.linalg.norm(x_hat, axis=1, keepdims=True) * np.sqrt(D)).astype(np.float32)
  out, cert, info = _run(x_hat, theta, ff, p)
  assert not info['applied'] and not cert['certified']
  assert info['free_rows'] > 1 and info['free_rows_after_gauss_newton'] > 1
  assert info['gauss_newton_first'] >= 0 and 'seconds' not in info  # metrics stay reproducible
  np.testing.assert_array_equal(out, x_hat)


def test_the_rung_never_raises_the_loss():
  p = 8 * N * D
  x, theta, ff = _planted(p, weak=0)
  rng = np.random.default_rng(5)
  x_hat = rng.standard_normal(x.shape)  # far from everything
  x_hat = (x_hat / np.linalg.norm(x_hat, axis=1, keepdims=True) * np.sqrt(D))
  with jax.enable_x64(True):
    before = float64_loss.loss64(ff, x_hat, theta)
  out, info = polish.polish(ff, theta, x_hat, free_rows=[0], key=jax.random.PRNGKey(0),
                            radius=float(np.sqrt(D)), tol=1e-12, starts=4, row_steps=50,
                            lm_iters=3)
  assert info['loss_after'] <= before
  if not info['kept']:
    np.testing.assert_array_equal(out, x_hat)
  with jax.enable_x64(True):
    assert float64_loss.loss64(ff, out, theta) == pytest.approx(info['loss_after'], rel=1e-9)


def test_the_rung_stays_off_when_certified_below_counting_or_switched_off():
  p, weak = 8 * N * D, 2
  x, theta, ff = _planted(p, weak=weak)
  x_hat = _stuck(x, weak)
  _, cert, info = _run(x_hat, theta, ff, p, mode='off')
  assert info == {'applied': False} and not cert['certified']
  # Below m d the zero set is a continuum: nothing to polish towards.
  p_low = N * D // 2
  xl, thl, ffl = _planted(p_low, weak=weak)
  out, cert, info = _run(_stuck(xl, weak), thl, ffl, p_low)
  assert info == {'applied': False} and not cert['evidence']['counting']
  with pytest.raises(ValueError, match='polish'):
    _run(x_hat, theta, ff, p, mode='always')


def test_config_fields_are_validated():
  c = rf_synthetic.get_config()
  assert 'polish' in c.attack.rescue and c.attack.polish.tol == 1e-12
  c.attack.rescue = ('escalate', 'polishing')
  with pytest.raises(config_lib.ConfigError, match='attack.rescue.*polish'):
    config_lib.validate(c)


def test_relu_candidates_at_mirror_images_are_flipped_back():
  p = 8 * N * D
  x, theta, ff = _planted(p, activation='relu', weak=0)
  x_hat = _stuck(x, weak=0, jiggle=1e-3)
  x_hat[0] = x[0]  # no weak row here: only the signs are wrong
  x_hat[[1, 4]] *= -1  # relu sees these only through their linear parts
  x64_before = jax.config.jax_enable_x64
  x_pol, cert, info = _run(x_hat.astype(np.float32), theta, ff, p, activation='relu')
  assert info['applied'] and info['kept'] and info['rows_flipped']
  # The rung works in float64 and switches x64 back off after itself.
  assert jax.config.jax_enable_x64 == x64_before
  assert jnp.zeros(2).dtype == (jnp.float64 if x64_before else jnp.float32)
  signed = metrics.per_sample_errors(x, np.asarray(x_pol, np.float64), sign_invariant=False)
  assert signed.max() < 1e-3, signed  # every sign right (row 0 carries 3e-4 of theta)
  assert cert['certified'], cert['reasons']
  # Gauss-Newton alone cannot carry a row across: it stalls with rows at the wrong sign.
  with jax.enable_x64(True):
    stuck, loss, _ = polish.gauss_newton(ff, theta, x_hat.astype(np.float64), iters=40,
                                         radius=float(np.sqrt(D)), tol=1e-12)
  assert loss > 1e-6
  assert metrics.per_sample_errors(x, stuck, sign_invariant=False).max() > 0.5
  # relu+tanh has no sign symmetry to exploit: no flips are tried.
  _, _, info = _run(x_hat.astype(np.float32), theta, ff, p, activation='relu_tanh')
  assert info.get('rows_flipped', []) == []


@pytest.mark.slow  # a full single run (~10 CPU-s)
def test_a_single_run_that_stops_short_is_polished_and_reports_it(tmp_path):
  from recon import pipelines
  c = rf_synthetic.get_config()
  # 300 steps stop well above tol with most rows free; for relu the rung still runs (sign
  # flips first), whatever the number of free rows.
  c.update_from_flattened_dict({'data.n': 5, 'data.d': 5, 'victim.p': 250, 'victim.activation': 'relu', 'attack.max_steps': 300, 'run.log_every_seconds': 1e9, 'run.checkpoint_every_seconds': 0.0})
  m = pipelines.run(c, str(tmp_path / 'run'))['metrics']
  assert m['status'] == 'max_steps' and m['final_loss'] > c.attack.tol
  assert m['polish']['applied']
  if m['polish']['kept']:
    assert m['polish']['loss_after'] < m['polish']['loss_before']
  if m['certified']:
    assert m['certificate']['precision'] == 'float64 (polished)'
    assert m['frac_recovered'] == 1.0
  c.attack.rescue = ('escalate',)
  off = pipelines.run(c, str(tmp_path / 'off'))['metrics']
  assert off['polish'] == {'applied': False} and not off['certified']


def test_at_the_papers_width_the_pipelines_cap_makes_the_rung_matrix_free():
  """The cap's arithmetic at the widths users run: (10, 10, 3e6), n = 500 at 4 dn and the
  papers' CIFAR size (100, 3072, 3 072 000) are above the pipelines' cap at the default 8 GB
  budget, so the rung's Gauss-Newton runs matrix-free there (the path itself:
  test_a_row_that_carries_a_tiny_share_is_found_in_float64_and_certified, one entry over)."""
  cap = polish.rung_max_entries(8.0)
  assert cap == int(8.0 * 2 ** 30 / polish.RUNG_BYTES_PER_ENTRY) > certificate.MAX_JACOBIAN_ENTRIES
  assert 10 * 10 * 3_000_000 > cap and 100 * 3072 * 3_072_000 > cap
  assert 100 * 16 * 6400 <= cap  # (100, 16, 4 dn): dense
  assert polish.gn_method(32_000, 500, 16, max_entries=cap) == 'matrix_free'
  assert polish.gn_method(6400, 100, 16, max_entries=cap) == 'dense'


def test_a_polish_that_cannot_lower_the_loss_is_not_kept():
  """A set already at tol: nothing moves, and the rung reports it (kept False, the loss
  unchanged), so the certificate is not re-evaluated in float64 on an unpolished set."""
  p = 8 * N * D
  x, theta, ff = _planted(p, weak=0)
  out, info = polish.polish(ff, theta, x, free_rows=[], key=jax.random.PRNGKey(0),
                            radius=float(np.sqrt(D)), tol=1.0, lm_iters=2)
  assert not info['kept'] and info['loss_after'] == info['loss_before']
  np.testing.assert_array_equal(out, x)



def test_jacobian_test_off_needs_the_counting_margin_and_says_so():
  """attack.certify_jacobian 'off' (the papers' CIFAR size, where the matrix-free test costs
  minutes): no Jacobian, no rung; the true rows certify only with p >= 2 m d, and the
  evidence says why the test is missing."""
  for p, certified in ((3 * N * D, True), (N * (D + 1) + 1, False)):
    x, theta, ff = _planted(p, weak=None)
    x_hat = np.asarray(x, np.float32)
    loss = _loss32(ff, x_hat, theta)
    out, cert, info = polish.certify_or_polish(
        final_loss=loss, tol=max(loss, 1e-9), x_hat=x_hat, p=p, activation='relu_tanh',
        n_known=N, feature_fn=ff, theta=theta, duplicate_threshold=metrics.RECOVERED_THRESHOLD,
        mode='auto', jacobian_method='off')
    assert cert['evidence']['jacobian'] == 'not computed (attack.certify_jacobian off)'
    assert 'pin_radius' not in cert['evidence'] and info == {'applied': False}
    assert cert['certified'] is certified, (p, cert['reasons'])
    if not certified:
      assert any('2 m d' in r for r in cert['reasons'])
  c = rf_synthetic.get_config()
  assert c.attack.certify_jacobian == 'auto'
  c.attack.certify_jacobian = 'never'
  with pytest.raises(config_lib.ConfigError, match='certify_jacobian'):
    config_lib.validate(c)


@pytest.mark.slow  # ~12 s on 2 shared cores
def test_the_rung_runs_blas_at_one_thread_and_logs_sign_flip_progress(monkeypatch):
  """NumPy's BLAS at one thread inside the rung (its threads would fight XLA's), restored after;
  the greedy sign sweep says where it is at most every GN_LOG_SECONDS."""
  import threadpoolctl  # pylint: disable=import-outside-toplevel
  p = 8 * N * D
  x, theta, ff = _planted(p, activation='relu', weak=None)
  seen = []

  def counting(z):
    seen.append([i['num_threads'] for i in threadpoolctl.threadpool_info()
                 if i['user_api'] == 'blas'])
    return ff(z)

  lines = []
  monkeypatch.setattr(polish, 'GN_LOG_SECONDS', 0.0)
  monkeypatch.setattr(polish.logging, 'info', lambda msg, *a: lines.append(msg % a))
  before = [i['num_threads'] for i in threadpoolctl.threadpool_info() if i['user_api'] == 'blas']
  x_hat = x.copy()
  x_hat[[1, 4]] *= -1
  polish.polish(counting, theta, x_hat, free_rows=[], key=jax.random.PRNGKey(0),
                radius=float(np.sqrt(D)), tol=1e-12, lm_iters=2, sign_sweeps=1)
  assert seen and all(set(t) == {1} for t in seen)  # traced (and run) under the limit
  assert [i['num_threads'] for i in threadpoolctl.threadpool_info()
          if i['user_api'] == 'blas'] == before
  progress = [s for s in lines if s.startswith('precision rung: sign flips: pass 1/1, row ')]
  assert len(progress) >= N - 1, lines


def test_the_rungs_size_cap_follows_the_memory_budget_and_the_pipelines_pass_it():
  """rung_max_entries: bytes / RUNG_BYTES_PER_ENTRY, never below the certificate's dense cap;
  the pipelines' settings carry it from run.sweep_memory_budget_gb; BLAS at one thread only
  where XLA computes on the host CPU."""
  from recon.certify import certificate  # pylint: disable=import-outside-toplevel
  from recon.pipelines import reconstruct
  assert polish.rung_max_entries(8.0) == int(8 * 2 ** 30 / polish.RUNG_BYTES_PER_ENTRY)
  assert polish.rung_max_entries(8.0) > 100 * 16 * 16_000  # n = 100, d = 16 at 10 dn
  assert polish.rung_max_entries(8.0) < 500 * 16 * 32_000  # n = 500 at 4 dn: matrix-free
  assert polish.rung_max_entries(1e-3) == certificate.MAX_JACOBIAN_ENTRIES
  assert abs(polish.rung_max_entries(16.0) - 2 * polish.rung_max_entries(8.0)) <= 1
  c = rf_synthetic.get_config()
  settings = lambda: reconstruct.certify_settings(c.data, c.victim, c.attack, c.run, c.seed)  # noqa: E731
  assert settings()['max_entries'] == polish.rung_max_entries(8.0)
  c.run.sweep_memory_budget_gb = 2.0
  assert settings()['max_entries'] == polish.rung_max_entries(2.0)
  assert polish.blas_thread_limit('cpu') == 1
  assert polish.blas_thread_limit('gpu') is None and polish.blas_thread_limit('tpu') is None
  assert polish.blas_thread_limit() == (1 if jax.default_backend() == 'cpu' else None)


@pytest.mark.slow  # two certificates at p m d = 2.1e7 (~20 CPU-s)
def test_above_the_dense_cap_the_rung_runs_within_the_budget(monkeypatch):
  """p m d = 2.1e7, above the certificate's dense cap (2e7; its Jacobian test then runs block
  by block): the rung runs under either cap, told which one sets its dense limit (under the
  certificate's its Gauss-Newton is matrix-free; under the pipelines' -- the memory budget's --
  dense, as at n = 100, d = 16, p = 10 dn, where an older cap left 9 of 10 relu+tanh seeds one
  row short)."""
  from recon.certify import certificate  # pylint: disable=import-outside-toplevel
  n, d, p = 10, 10, 210_000
  assert n * d * p > certificate.MAX_JACOBIAN_ENTRIES
  kx, kv, ky = jax.random.split(jax.random.PRNGKey(3), 3)
  x = jax.random.normal(kx, (n, d))
  x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * jnp.sqrt(d)
  v = features.random_weights(kv, p, d)
  ff = lambda z: features.rf_features(v, z, 'relu_tanh')  # noqa: E731
  phi = ff(x)
  alpha = jax.random.normal(ky, (n,))
  alpha = alpha.at[4].set(TINY * jnp.linalg.norm(alpha @ phi) / jnp.linalg.norm(phi[4]))
  theta = np.asarray(alpha @ phi)
  x_hat = np.array(x, np.float32)
  x_hat[4] = -x_hat[4]  # the weak sample's row wrong, the others right
  calls = []

  def recorder(feature_fn, theta, x_hat, **kw):
    calls.append((kw['free_rows'], kw['dense_max_entries']))
    return np.asarray(x_hat, np.float64), {
        'applied': True, 'kept': False, 'loss_before': 1.0, 'loss_after': 1.0, 'rows_flipped': [],
        'rows_searched': [], 'rows_replaced': [], 'gauss_newton_steps': 0, 'seconds': 0.0}

  monkeypatch.setattr(polish, 'polish', recorder)
  loss = _loss32(ff, x_hat, theta)
  for cap in (None, polish.rung_max_entries(8.0)):
    _, cert, info = polish.certify_or_polish(
        final_loss=loss, tol=1e-9, x_hat=x_hat, p=p, activation='relu_tanh', n_known=n,
        feature_fn=ff, theta=theta, duplicate_threshold=metrics.RECOVERED_THRESHOLD,
        mode='auto', max_entries=cap)
    assert cert['evidence']['jacobian'] == 'computed' and not cert['certified']
    assert cert['evidence']['jacobian_method'] == 'gram'
    free_rows, dense_cap = calls.pop()
    assert 4 in free_rows, (info, cert['evidence'].get('rows_within'))
    assert dense_cap == (certificate.MAX_JACOBIAN_ENTRIES if cap is None else cap)
    assert polish.gn_method(p, n, d, max_entries=dense_cap) == (
        'matrix_free' if cap is None else 'dense')


def test_a_failed_certificate_carries_the_precision_split_and_says_it():
  p = 8 * N * D
  x, theta, ff = _planted(p, weak=None)
  wrong = _stuck(x, 2)
  _, cert, _ = _run(wrong, theta, ff, p, mode='off')
  ev = cert['evidence']
  assert not cert['certified'] and ev['precision_share'] < 0.05
  line = certificate.verdict(cert, N)
  assert f'float64 without the ridge: {ev["loss_float64"]:.1e}' in line
  assert 'of the loss is precision' in line
  # At tol (the float64 truth, certified or not) there is nothing to split.
  _, cert, _ = _run(x, theta, ff, p, mode='off', tol=1e-3)
  assert 'loss_float64' not in cert['evidence']


def test_gauss_newton_stops_where_lapack_refuses_and_keeps_its_set(monkeypatch):
  """A LinAlgError in the tangent Jacobian (LAPACK on a degenerate set, as clustered rows
  under tanh gave in the probes) ends the rung's Gauss-Newton with the set it had, instead of
  an internal error that takes a whole sweep down."""
  def refuse(*a, **k):
    raise np.linalg.LinAlgError('SVD did not converge in Linear Least Squares')

  monkeypatch.setattr(certificate, 'tangent_jacobian', refuse)
  rng = np.random.default_rng(0)
  v = rng.normal(size=(40, 3))
  feature_fn = lambda x: jnp.tanh(jnp.asarray(x) @ v.T)  # noqa: E731
  x = rng.normal(size=(2, 3))
  x *= np.sqrt(3) / np.linalg.norm(x, axis=1, keepdims=True)
  theta = np.asarray(feature_fn(rng.normal(size=(2, 3)))).sum(0)
  with jax.enable_x64(True):
    out, loss, kept = polish.gauss_newton(feature_fn, theta, x, iters=5, radius=np.sqrt(3),
                                          tol=0.0)
  assert kept == 0 and np.array_equal(out, x) and np.isfinite(loss)


@pytest.mark.parametrize('blocked', [True, pytest.param(False, marks=pytest.mark.slow)])
def test_the_matrix_free_gauss_newton_step_equals_the_dense_one(blocked):
  """The rung's step (J^T J + mu I) u = J^T r without J (J^T r by vjp, CG on jvp / vjp,
  `residual_jacobian.damped_solve`) equals the dense solve, for a feature map with column
  blocks and for a plain function, at a small and a large damping; Levenberg-Marquardt by
  either reaches the float64 floor at the same rows; `gn_method` picks by size."""
  p = 8 * N * D
  x, theta, _ = _planted(p, weak=None)
  v = features.random_weights(jax.random.split(jax.random.PRNGKey(0), 3)[1], p, D)
  fmap = features.rf_feature_map(v, 'relu_tanh')
  ff = fmap if blocked else (lambda z: fmap(z))  # noqa: E731
  x_hat = x + 1e-2 * np.random.default_rng(1).standard_normal(x.shape)
  x_hat *= np.sqrt(D) / np.linalg.norm(x_hat, axis=1, keepdims=True)
  with jax.enable_x64(True):
    ff64 = float64_loss.Features64(ff)
    assert hasattr(ff64, 'block_fn') is blocked
    for mu in (1e-8, 1e-3):
      dense = polish.gauss_newton_step(ff64, theta, x_hat, mu, 'dense')
      free = polish.gauss_newton_step(ff64, theta, x_hat, mu, 'matrix_free')
      assert dense.shape == (N, D - 1)
      np.testing.assert_allclose(free, dense, rtol=0, atol=1e-6 * np.abs(dense).max())
    runs = [polish.gauss_newton(ff64, theta, x_hat, iters=8, radius=float(np.sqrt(D)),
                                tol=1e-20, method=m) for m in ('dense', 'matrix_free')]
  (xd, ld, kd), (xf, lf, kf) = runs
  # Both reach the float64 floor (theta is float32: ~1e-14 here) at the same rows; the steps
  # accepted there move the loss by rounding alone, so their counts differ between JAX and
  # BLAS versions (6 and 8 on JAX 0.12.1) and are not compared.
  assert kd > 0 and kf > 0 and max(ld, lf) < 1e-12, (kd, kf, ld, lf)
  np.testing.assert_allclose(xf, xd, atol=1e-6)
  assert polish.gn_method(p, N, D) == 'dense'
  assert polish.gn_method(p, N, D, max_entries=p * N * D - 1) == 'matrix_free'
  with pytest.raises(ValueError, match='accepted: auto, dense, matrix_free'):
    polish.gn_method(p, N, D, 'cg')
