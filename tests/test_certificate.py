"""The blind certificate: true at an isolated zero of the loss, false on every failure mode."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon.certify import certificate
from recon.models import features, random_features
from recon.objectives import projection

N, D = 6, 5


def _problem(p, activation='relu_tanh', seed=0, dead_column=False):
  kx, kv, ky = jax.random.split(jax.random.PRNGKey(seed), 3)
  x = jax.random.normal(kx, (N, D))
  x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * jnp.sqrt(D)
  v = features.random_weights(kv, p, D)
  if dead_column:  # the features ignore the last input coordinate: a continuum of solutions
    v = v.at[:, -1].set(0.0)
  y = jax.random.normal(ky, (N,))
  feature_fn = lambda z: features.rf_features(v, z, activation)  # noqa: E731
  theta = random_features.min_norm_solution(feature_fn(x), y)
  loss = lambda z: float(projection.projection_loss(feature_fn(z), theta))  # noqa: E731
  return x, theta, feature_fn, loss


def _certify(x_hat, theta, feature_fn, loss, p, activation='relu_tanh', tol=1e-9, n_known=N,
             **kw):
  return certificate.certify(final_loss=loss(x_hat), tol=tol, x_hat=x_hat, p=p,
                             activation=activation, n_known=n_known, feature_fn=feature_fn,
                             theta=theta, **kw)


@pytest.mark.slow  # ~8 CPU-s
def test_the_truth_above_the_threshold_is_certified():
  p = 10 * N * D
  x, theta, ff, loss = _problem(p)
  cert = _certify(x, theta, ff, loss, p)
  assert cert['certified'], cert['reasons']
  ev = cert['evidence']
  assert ev['loss_at_tol'] and ev['counting'] and ev['duplicate_pairs'] == 0
  assert ev['jacobian'] == 'computed' and ev['pin_radius'] < 0.1
  assert ev['jacobian_rank'] == N * (D - 1)
  assert certificate.verdict(cert, N).startswith('certified')
  # Certified means every row is pinned one by one, each no looser than the whole set.
  assert ev['rows_pinned'] == N and all(ev['row_pinned'])
  assert max(ev['row_pin_radius']) <= ev['pin_radius'] * (1 + 1e-6)


@pytest.mark.slow  # ~6 CPU-s
def test_a_sample_theta_does_not_carry_is_the_one_row_left_unpinned():
  p = 10 * N * D
  x, _, ff, _ = _problem(p)
  phi = ff(x)
  alpha = jnp.asarray([1.0, -0.7, 0.0, 0.9, 0.6, -1.2])  # sample 2 is not in theta at all
  theta = phi.T @ alpha
  loss = lambda z: float(projection.projection_loss(ff(z), theta))  # noqa: E731
  x_hat = x.at[2].set(-x[2] + 0.3 * x[0])  # a wrong row where theta does not look
  x_hat = x_hat.at[2].set(x_hat[2] / jnp.linalg.norm(x_hat[2]) * jnp.sqrt(D))
  assert loss(x_hat) < 1e-9  # the loss cannot tell: it is at tol with a wrong row
  cert = _certify(x_hat, theta, ff, loss, p, tol=1e-9)
  ev = cert['evidence']
  assert not cert['certified']
  assert ev['row_pinned'] == [True, True, False, True, True, True]
  assert ev['row_pin_radius'][2] > 1.0 > 0.1 > max(np.delete(ev['row_pin_radius'], 2))
  assert 'not: 2)' in certificate.verdict(cert, N)


def test_a_continuum_of_zero_loss_solutions_is_not_certified():
  p = 10 * N * D
  # relu is homogeneous, so on the sphere a move along the dead coordinate only rescales the
  # features of that row: the span, and so the loss, stay put.
  x, theta, ff, loss = _problem(p, activation='relu', dead_column=True)
  assert loss(x) < 1e-7
  cert = _certify(x, theta, ff, loss, p, activation='relu', tol=1e-7)
  assert cert['evidence']['loss_at_tol'] and cert['evidence']['counting']
  assert not cert['certified']
  assert cert['evidence']['pin_radius'] > 1.0
  assert 'pins the candidates' in certificate.verdict(cert, N)


def test_below_the_threshold_counting_refuses():
  p = N * D // 2
  x, theta, ff, loss = _problem(p)
  cert = _certify(x, theta, ff, loss, p)  # the truth itself: loss 0, yet not isolated
  assert not cert['certified'] and not cert['evidence']['counting']


def test_loss_above_tol_and_duplicates_are_not_certified():
  p = 10 * N * D
  x, theta, ff, loss = _problem(p)
  moved = x.at[0].set(x[0] * 0.7 + 0.3 * x[1])
  cert = _certify(moved, theta, ff, loss, p)
  assert not cert['certified']
  # Above tol no row is pinned (a wrong basin says nothing about the truth); the radius test
  # itself is still reported as evidence.
  assert cert['evidence']['rows_pinned'] == 0 and len(cert['evidence']['row_within']) == N
  assert 'evidence, not pinned' in certificate.verdict(cert, N)
  dup = x.at[1].set(x[0] * 1.01)
  cert = _certify(dup, theta, ff, loss, p)
  assert not cert['certified'] and cert['evidence']['duplicate_pairs'] >= 1
  assert not cert['evidence']['row_within'][0] and not cert['evidence']['row_within'][1]


def loss_at_most(ff, x, theta, tol):
  from recon.certify import float64_loss
  with jax.enable_x64(True):
    return float64_loss.loss64(ff, x, theta) <= tol


def _near(x0, rel, seed=1):
  u = np.random.default_rng(seed).normal(size=x0.shape)
  u = u - (u @ x0) / (x0 @ x0) * x0
  z = x0 + rel * np.linalg.norm(x0) * u / np.linalg.norm(u)
  return z / np.linalg.norm(z) * np.linalg.norm(x0)


@pytest.mark.slow  # ~10 CPU-s
@pytest.mark.parametrize('activation', ['relu_tanh', 'tanh'])
def test_two_close_training_rows_are_certified_and_one_row_found_twice_is_not(activation):
  """Real data has training rows within the recovered threshold of each other: the truth
  with such a pair is certified at the float64 loss the rung reports (its pin balls are far
  apart); one sample found twice with the sample it hides invisible is not."""
  from recon.certify import float64_loss
  p = 10 * N * D
  x, _, ff, _ = _problem(p, activation)
  x = jnp.asarray(np.asarray(x).copy()).at[1].set(_near(np.asarray(x[0]), 0.05))
  y = jax.random.normal(jax.random.PRNGKey(3), (N,))
  theta = random_features.min_norm_solution(ff(x), y)
  with jax.enable_x64(True):
    loss = float64_loss.loss64(ff, x, theta)
  cert = certificate.certify(final_loss=loss, tol=1e-9, x_hat=np.asarray(x), p=p,
                             activation=activation, n_known=N, feature_fn=ff, theta=theta)
  assert cert['certified'], cert['reasons']
  assert cert['evidence']['duplicate_pairs'] == 1
  assert cert['evidence']['duplicate_pairs_resolved'] == 1
  # One sample twice: x_2 and a point 0.05 from it, the last sample invisible to theta
  # (its label is what the others predict), so the loss is at tol.
  phi = ff(x)
  rest = random_features.min_norm_solution(phi[:-1], y[:-1])
  theta = random_features.min_norm_solution(phi, y.at[-1].set(phi[-1] @ rest))
  twice = x.at[-1].set(_near(np.asarray(x[2]), 0.05, seed=2))
  assert loss_at_most(ff, twice, theta, 1e-9)
  with jax.enable_x64(True):
    loss = float64_loss.loss64(ff, twice, theta)
  cert = certificate.certify(final_loss=loss, tol=1e-9, x_hat=np.asarray(twice), p=p,
                             activation=activation, n_known=N, feature_fn=ff, theta=theta)
  assert not cert['certified']
  assert any('do not keep them apart' in r for r in cert['reasons']), cert['reasons']


def test_restarts_that_disagree_are_not_certified():
  p = 10 * N * D
  x, theta, ff, loss = _problem(p)
  other = np.asarray(x)[::-1] * 1.0001  # same set, permuted: agrees
  assert _certify(x, theta, ff, loss, p, restart_sets=[np.asarray(x), other])['certified']
  wrong = np.asarray(x).copy()
  wrong[0] = -wrong[0] + 0.5
  cert = _certify(x, theta, ff, loss, p, restart_sets=[np.asarray(x), wrong])
  assert not cert['certified'] and cert['evidence']['restarts_agree'] is False


def test_without_a_feature_map_a_wider_margin_is_required():
  x = np.random.default_rng(0).normal(size=(N, D))
  kw = dict(final_loss=1e-12, tol=1e-9, x_hat=x, activation='relu_tanh', n_known=N)
  assert not certificate.certify(p=N * D + 1, **kw)['certified']
  cert = certificate.certify(p=int(2 * N * D), **kw)
  assert cert['certified'] and cert['evidence']['jacobian'].startswith('not computed')


def _rf_run(tmp_path, name, overrides):
  from configs import rf_synthetic
  from recon import pipelines
  c = rf_synthetic.get_config()
  c.update_from_flattened_dict({'data.n': 5, 'data.d': 5, 'attack.max_steps': 6000,
                                'run.log_every_seconds': 1e9,
                                'run.checkpoint_every_seconds': 0.0, **overrides})
  return pipelines.run(c, str(tmp_path / name))['metrics']


@pytest.mark.slow  # two full runs to convergence (~15 CPU-s); certify() is unit-tested above
def test_a_run_records_its_certificate_and_never_certifies_below_the_threshold(tmp_path):
  above = _rf_run(tmp_path, 'above', {'victim.p': 250})
  assert above['certified'] and above['frac_recovered'] == 1.0
  assert above['certificate']['pin_radius'] < 0.1 and above['certificate']['reasons'] == []
  assert above['sign_invariant'] is False  # relu_tanh: errors are signed
  below = _rf_run(tmp_path, 'below', {'victim.p': 12})  # p < d n: zero-loss points are not isolated
  assert below['certified'] is False and not below['certificate']['counting']


def test_a_square_system_is_not_enough():
  """p = m d: as many equations as unknowns, isolated zeros besides the truth exist (the
  float64 rung found one); counting asks for m to spare."""
  x, theta, ff, loss = _problem(N * D)
  cert = _certify(x, theta, ff, loss, N * D)
  assert not cert['certified'] and not cert['evidence']['counting']
  assert cert['reasons'] == [f'p = {N * D} < m (d + 1) = {N * (D + 1)}: too few equations '
                             'beyond the unknowns to rule out other isolated zeros']
  assert _certify(x, theta, ff, loss, N * (D + 1))['evidence']['counting']


# --- Each check alone decides the verdict (a loosened check fails one of these). ---

def test_the_loss_check_alone_refuses_a_run_above_tol():
  p = 10 * N * D
  x, theta, ff, _ = _problem(p)
  # The truth itself, reported at a loss just above tol (a run that stopped short).
  cert = certificate.certify(final_loss=2e-9, tol=1e-9, x_hat=x, p=p, activation='relu_tanh',
                             n_known=N, feature_fn=ff, theta=theta)
  assert not cert['certified'] and len(cert['reasons']) == 1
  assert cert['reasons'][0].startswith('loss')
  assert certificate.certify(final_loss=1e-12, tol=1e-9, x_hat=x, p=p, activation='relu_tanh',
                             n_known=N, feature_fn=ff, theta=theta)['certified']


def test_the_pin_radius_alone_refuses_when_the_loss_resolves_rows_only_loosely():
  # The same truth, judged at a tol whose linearised radius is 5x the threshold: only the
  # pin test can refuse it (a check loosened 100x would certify).
  p = 10 * N * D
  x, theta, ff, loss = _problem(p)
  base = _certify(x, theta, ff, loss, p, tol=1e-9)
  assert base['certified']
  pin0 = base['evidence']['pin_radius']
  tol = 1e-9 * (0.5 / pin0) ** 2
  cert = certificate.certify(final_loss=tol / 2, tol=tol, x_hat=x, p=p, activation='relu_tanh',
                             n_known=N, feature_fn=ff, theta=theta)
  assert cert['evidence']['pin_radius'] == pytest.approx(0.5, rel=1e-3)
  assert not cert['certified'] and len(cert['reasons']) == 1
  assert 'pins the candidates' in cert['reasons'][0]


def test_duplicates_alone_refuse_without_the_jacobian_test():
  x = np.random.default_rng(1).normal(size=(N, D))
  x[1] = x[0] * 1.01
  kw = dict(final_loss=1e-12, tol=1e-9, p=int(2 * N * D), activation='relu_tanh', n_known=N)
  cert = certificate.certify(x_hat=x, **kw)
  assert not cert['certified'] and len(cert['reasons']) == 1
  assert 'near-duplicate' in cert['reasons'][0]
  # Up to sign: a mirror pair is a duplicate exactly when the activation cannot see the sign.
  x[1] = -x[0] * 1.01
  assert not certificate.certify(x_hat=x, **dict(kw, activation='tanh'))['certified']
  assert certificate.certify(x_hat=x, **kw)['certified']


def test_an_odd_activation_is_certified_only_up_to_each_rows_sign():
  """tanh: phi(-x) = -phi(x), so the truth with rows flipped has the same loss and the same
  pin radii; the certificate says what it certifies, and the metric that matches it finds
  every row."""
  from recon import metrics
  p = 10 * N * D
  x, theta, ff, loss = _problem(p, activation='tanh')
  flipped = np.asarray(x) * np.array([1, -1, 1, -1, -1, 1.0])[:, None]
  cert = _certify(flipped, theta, ff, loss, p, activation='tanh')
  assert cert['certified'], cert['reasons']
  assert cert['certified_up_to'] == 'the order of the rows and the sign of each row'
  assert metrics.reconstruction_metrics(x, flipped, sign_invariant=True)['frac_recovered'] == 1
  assert metrics.reconstruction_metrics(x, flipped, sign_invariant=False)['frac_recovered'] < 1
  assert 'sign of each row' in certificate.verdict(cert, N)
  # relu + tanh sees the sign: the flipped set is off the loss's zero, and refused.
  x2, theta2, ff2, loss2 = _problem(p, activation='relu_tanh')
  flipped2 = np.asarray(x2) * np.array([1, -1, 1, 1, 1, 1.0])[:, None]
  cert2 = _certify(flipped2, theta2, ff2, loss2, p, activation='relu_tanh')
  assert not cert2['certified'] and cert2['certified_up_to'] == 'the order of the rows'


def _drop_a_sample(share_of_dropped):
  """The truth less sample 2, whose coefficient gives it `share_of_dropped` of theta."""
  p = 10 * N * D
  x, _, ff, _ = _problem(p)
  phi = ff(x)
  alpha = np.array([1.0, -0.7, 0.0, 0.9, 0.6, -1.2])
  base = phi.T @ jnp.asarray(alpha)
  alpha[2] = share_of_dropped * float(jnp.linalg.norm(base)) / float(jnp.linalg.norm(phi[2]))
  theta = phi.T @ jnp.asarray(alpha)
  loss = lambda z: float(projection.projection_loss(ff(z), theta))  # noqa: E731
  keep = np.array([0, 1, 3, 4, 5])
  return x[keep], theta, ff, loss, p


def test_fewer_candidates_than_samples_never_claim_the_whole_set():
  x_hat, theta, ff, loss, p = _drop_a_sample(3e-9)  # the sample is invisible in theta
  cert = _certify(x_hat, theta, ff, loss, p, tol=1e-9, n_known=N)
  assert cert['candidates_certified'] and not cert['certified']
  assert any('at least 1 sample(s) not found' in r for r in cert['reasons'])
  line = certificate.verdict(cert, N - 1)
  assert line.startswith('not certified as the whole training set')
  # n unknown: the candidates are certified, the set is not, and the unseen share is stated.
  cert = _certify(x_hat, theta, ff, loss, p, tol=1e-9, n_known=None)
  assert cert['candidates_certified'] and not cert['certified']
  assert any(r.startswith('n is unknown: 5 samples found') for r in cert['reasons'])
  # With n known and matched, the same candidates would be a whole-set claim.
  assert _certify(x_hat, theta, ff, loss, p, tol=1e-9, n_known=N - 1)['certified']


@pytest.mark.parametrize('share', [1e-6, 3e-5, 1e-4])
def test_the_unseen_share_bounds_what_a_missing_sample_carries(share):
  """A dropped sample carrying `share` of theta leaves a loss at tol only while its share is
  below the stated bound (blind: from the candidates and the loss alone)."""
  x_hat, theta, ff, loss, p = _drop_a_sample(share)
  tol = 1e-9
  cert = _certify(x_hat, theta, ff, loss, p, tol=tol, n_known=None)
  if cert['evidence']['loss_at_tol']:
    assert share <= cert['evidence']['unseen_share']
  else:
    assert not cert['candidates_certified']


def test_above_tol_rows_within_the_radius_are_still_not_pinned():
  """The truth reported just above tol: every row is within the threshold at this loss, yet
  none is pinned (pinned needs the loss at tol; `row_within` alone is evidence)."""
  p = 10 * N * D
  x, theta, ff, _ = _problem(p)
  cert = certificate.certify(final_loss=2e-9, tol=1e-9, x_hat=x, p=p, activation='relu_tanh',
                             n_known=N, feature_fn=ff, theta=theta)
  ev = cert['evidence']
  assert ev['rows_within'] == N and ev['rows_pinned'] == 0 and not any(ev['row_pinned'])


def test_a_row_whose_own_radius_is_above_the_threshold_is_not_pinned():
  """The per-row test alone: at a tol whose whole-set radius is 0.5, the rows with a radius
  >= the threshold (0.1) are not pinned and the rows below it are (loosened 100x, all would
  be)."""
  p = 10 * N * D
  x, theta, ff, loss = _problem(p)
  pin0 = _certify(x, theta, ff, loss, p, tol=1e-9)['evidence']['pin_radius']
  tol = 1e-9 * (0.5 / pin0) ** 2
  ev = certificate.certify(final_loss=tol / 2, tol=tol, x_hat=x, p=p, activation='relu_tanh',
                           n_known=N, feature_fn=ff, theta=theta)['evidence']
  radii = np.asarray(ev['row_pin_radius'])
  assert radii.max() >= 0.1 and ev['loss_at_tol']
  assert ev['row_pinned'] == [bool(r < 0.1) for r in radii]
  assert ev['rows_pinned'] < N


def test_without_the_jacobian_test_counting_alone_is_not_enough():
  """p = m (d + 1) passes counting; without the pin test (no feature map) the certificate
  asks for p >= 2 m d, and that check alone refuses. Above the dense Jacobian's size the pin
  test is still computed (block by block, `recon.certify.residual_jacobian`), never the fallback."""
  p = N * (D + 1)
  x, theta, ff, loss = _problem(p)
  cert = certificate.certify(final_loss=1e-12, tol=1e-9, x_hat=x, p=p, activation='relu_tanh',
                             n_known=N)
  assert cert['evidence']['counting'] and cert['evidence']['jacobian'].startswith('not')
  assert not cert['certified'] and len(cert['reasons']) == 1
  assert 'without the Jacobian test' in cert['reasons'][0]
  cert = certificate.certify(final_loss=1e-12, tol=1e-9, x_hat=x, p=p, activation='relu_tanh',
                             n_known=N, feature_fn=ff, theta=theta, max_jacobian_entries=0)
  ev = cert['evidence']
  assert ev['jacobian'] == 'computed' and ev['jacobian_method'] == 'gram'
  assert not any('without the Jacobian test' in r for r in cert['reasons'])
  assert 'unseen_share' in ev


def test_the_unseen_share_is_the_loss_resolution_over_the_most_entangled_candidate():
  """unseen_share = sqrt(max(L, tol)) / min_i kappa_i, kappa_i = the part of phi_i outside the
  others' span (relative), computed here by least squares."""
  rng = np.random.default_rng(2)
  phi = rng.normal(size=(4, 40))
  phi[3] = phi[2] + 0.1 * phi[3]  # candidates 2 and 3 are entangled
  kappa = []
  for i in range(4):
    others = np.delete(phi, i, axis=0)
    coef, *_ = np.linalg.lstsq(others.T, phi[i], rcond=None)
    kappa.append(np.linalg.norm(phi[i] - others.T @ coef) / np.linalg.norm(phi[i]))
  assert min(kappa) < 0.2 < max(kappa)
  for loss, tol in ((1e-12, 1e-9), (1e-6, 1e-9)):
    assert certificate.unseen_share(phi, loss, tol) == pytest.approx(
        np.sqrt(max(loss, tol)) / min(kappa), rel=1e-6)


def test_relu_rows_off_the_sphere_are_certified_only_up_to_their_norm():
  """relu: phi(c x) = c phi(x). The truth's rows at norms 0.6..1.4 sqrt(d) and the same rows
  put on the sphere (what the attack finds) have the same loss; the certificate says it
  certifies them up to each row's norm, and the metric that matches the claim scores the
  directions (the raw rows would count as wrong)."""
  from recon import metrics
  p = 10 * N * D
  kx, kv, ky = jax.random.split(jax.random.PRNGKey(4), 3)
  u = jax.random.normal(kx, (N, D))
  u = u / jnp.linalg.norm(u, axis=1, keepdims=True) * jnp.sqrt(D)
  x = u * jnp.linspace(0.6, 1.4, N)[:, None]
  v = features.random_weights(kv, p, D)
  ff = lambda z: features.rf_features(v, z, 'relu')  # noqa: E731
  theta = random_features.min_norm_solution(ff(x), jax.random.normal(ky, (N,)))
  loss = lambda z: float(projection.projection_loss(ff(z), theta))  # noqa: E731
  cert = _certify(u, theta, ff, loss, p, activation='relu', tol=1e-5)
  assert cert['certified'] and cert['evidence']['scale_invariant'], cert['reasons']
  assert cert['certified_up_to'].endswith('the norm of each row')
  claim = metrics.reconstruction_metrics(np.asarray(x), np.asarray(u), scale_invariant=True)
  assert claim['frac_recovered'] == 1.0
  assert metrics.reconstruction_metrics(np.asarray(x), np.asarray(u))['frac_recovered'] < 1
  # relu + tanh sees the norm: the same rows on the sphere are off the zero, and refused.
  ff2 = lambda z: features.rf_features(v, z, 'relu_tanh')  # noqa: E731
  theta2 = random_features.min_norm_solution(ff2(x), jax.random.normal(ky, (N,)))
  loss2 = lambda z: float(projection.projection_loss(ff2(z), theta2))  # noqa: E731
  cert2 = _certify(u, theta2, ff2, loss2, p, activation='relu_tanh', tol=1e-5)
  assert not cert2['certified'] and not cert2['evidence']['scale_invariant']
  assert 'norm' not in cert2['certified_up_to']


def test_a_loss_just_above_tol_is_written_above_it():
  """The refusal's reason never reads 'loss 1.00e-09 > tol 1e-09'."""
  assert certificate.above(2.13e-7, 1e-9) == '2.13e-07'
  text = certificate.above(1.0000003e-9, 1e-9)
  assert float(text) > 1e-9 and text != '1.00e-09', text


# --- Inputs that tell the spectrum's routes and the evidence's formulas apart (mutation
# testing by mutmut, scripts/mutations.py: each test kills a mutant the others let live). ---

def _near_truth(p):
  x, theta, ff, loss = _problem(p)
  x_hat = np.asarray(x) + 1e-3 * np.random.default_rng(0).normal(size=x.shape)  # off the zero
  return x_hat, theta, ff, loss


def test_each_jacobian_method_reports_its_own_spectrum_and_row_radius_kind():
  """gram: exact per-row radii (the dense ones); matrix_free: sigma_min only, every row at
  the whole set's bound 1 / sigma_min, with the eigensolver's record."""
  x_hat, theta, ff, _ = _near_truth(10 * N * D)
  spec = {m: certificate.jacobian_spectrum(ff, x_hat, theta, m)
          for m in ('dense', 'gram', 'matrix_free')}
  dense, gram, free = spec['dense'], spec['gram'], spec['matrix_free']
  assert dense['row_radius_kind'] == gram['row_radius_kind'] == 'exact'
  assert free['row_radius_kind'] == 'upper bound (whole set)' and 'eigensolver' in free
  assert 'eigensolver' not in gram
  for s in (gram, free):
    assert s['sigma_min'] == pytest.approx(dense['sigma_min'], rel=1e-3)
    assert s['sigma_max'] == pytest.approx(dense['sigma_max'], rel=1e-3)
  np.testing.assert_allclose(gram['row_scales'], dense['row_scales'], rtol=1e-3)
  np.testing.assert_allclose(free['row_scales'], np.full(N, 1.0 / free['sigma_min']))


def test_the_certificate_records_the_spectrum_it_used():
  p = 10 * N * D
  x_hat, theta, ff, _ = _near_truth(p)
  dense = certificate.jacobian_spectrum(ff, x_hat, theta, 'dense')
  ev = certificate.certify(final_loss=1e-12, tol=1e-9, x_hat=x_hat, p=p, activation='relu_tanh',
                           n_known=N, feature_fn=ff, theta=theta)['evidence']
  assert ev['jacobian_method'] == 'dense' and 'eigensolver' not in ev
  assert ev['jacobian_sigma_ratio'] == pytest.approx(dense['sigma_min'] / dense['sigma_max'])
  free = certificate.certify(final_loss=1e-12, tol=1e-9, x_hat=x_hat, p=p,
                             activation='relu_tanh', n_known=N, feature_fn=ff, theta=theta,
                             jacobian_method='matrix_free')['evidence']
  assert free['jacobian'] == 'computed (matrix-free)' and 'ritz' in free['eigensolver']
  assert free['row_radius_kind'] == 'upper bound (whole set)'
  # Every row at the whole set's bound (a radius relative to the row's own norm).
  reach = np.asarray(free['row_pin_radius']) * np.linalg.norm(x_hat, axis=1)
  np.testing.assert_allclose(reach, reach[0], rtol=1e-9)


def test_row_radii_are_the_certificates_per_row_radii():
  """`row_radii` (what the rescue steps and the rung read) is the certificate's own test,
  at rows of unequal norms (a radius relative to the row's own norm)."""
  p = 10 * N * D
  x_hat, theta, ff, loss = _near_truth(p)
  x_hat = x_hat * np.linspace(0.5, 2.0, N)[:, None]
  cert = certificate.certify(final_loss=loss(x_hat), tol=1e-9, x_hat=x_hat, p=p,
                             activation='relu_tanh', n_known=N, feature_fn=ff, theta=theta)
  radii = certificate.row_radii(ff, x_hat, theta, loss(x_hat), 1e-9)
  assert radii.shape == (N,)
  np.testing.assert_allclose(radii, cert['evidence']['row_pin_radius'], rtol=1e-6)


def test_counting_failed_means_no_jacobian_even_with_a_feature_map():
  p = N * D // 2
  x, theta, ff, loss = _problem(p)
  ev = _certify(x, theta, ff, loss, p)['evidence']
  assert ev['jacobian'] == 'not computed (counting failed)' and 'pin_radius' not in ev


def test_an_unresolved_pair_at_tol_says_its_radii_do_not_keep_it_apart():
  p = 10 * N * D
  x, theta, ff, _ = _problem(p)
  dup = np.asarray(x.at[1].set(x[0] * 1.001))
  # At tol (1e-4 here), with radii wide enough to reach across the pair's gap.
  cert = certificate.certify(final_loss=1e-5, tol=1e-4, x_hat=dup, p=p, activation='relu_tanh',
                             n_known=N, feature_fn=ff, theta=theta)
  ev = cert['evidence']
  assert ev['duplicate_pairs'] == 1 and ev['duplicate_pairs_resolved'] == 0
  assert '1 near-duplicate candidate pair(s) whose pin radii do not keep them apart' in (
      cert['reasons'])


def test_the_certified_verdict_names_no_duplicates_or_the_pairs_pinned_apart():
  ev = {'jacobian': 'computed', 'pin_radius': 2e-3, 'duplicate_pairs': 0, 'loss': 1e-12,
        'p_over_md': 10.0}
  cert = {'certified': True, 'certified_up_to': 'each row', 'evidence': ev}
  assert certificate.verdict(cert, 6) == (
      'certified: the whole training set, all 6 samples, up to each row: an isolated zero of '
      'the loss (loss 1.0e-12 <= tol, p/md 10.0, no duplicates, pinned to a relative radius '
      '2.0e-03)')
  ev.update(duplicate_pairs=2, jacobian='not computed (no feature map)')
  assert certificate.verdict(cert, 6).endswith(
      '(loss 1.0e-12 <= tol, p/md 10.0, 2 close pairs pinned apart, Jacobian not computed)')
