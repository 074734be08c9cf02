"""recon/certify/ceiling.py: the certificate at the true rows, the most an attack can certify."""
import jax
import jax.numpy as jnp
import numpy as np

from recon.certify import ceiling as certificate_ceiling
from recon.models import features, random_features


def _victim(n, d, p, seed=0, alpha=None, dtype=np.float32):
  kx, kv, ky = jax.random.split(jax.random.PRNGKey(seed), 3)
  x = np.asarray(jax.random.normal(kx, (n, d)), np.float64)
  x = x / np.linalg.norm(x, axis=1, keepdims=True) * np.sqrt(d)
  fmap = features.rf_feature_map(features.random_weights(kv, p, d), 'relu_tanh')
  if alpha is None:
    theta = random_features.min_norm_solution(fmap(jnp.asarray(x, jnp.float32)),
                                              jax.random.normal(ky, (n,)))
  else:  # theta = Phi^T alpha, summed in float64 and stored in `dtype`
    with jax.enable_x64(True):
      phi = np.asarray(features.rf_features(jnp.asarray(fmap.params, jnp.float64),
                                            jnp.asarray(x), 'relu_tanh'))
    theta = phi.T @ np.asarray(alpha, np.float64)
  return fmap, x, np.asarray(theta, dtype)


def _at_truth(fmap, x, theta, p):
  return certificate_ceiling.at_truth(fmap, x, theta, p=p, activation='relu_tanh', tol=1e-9,
                                    polish_tol=1e-12)


def test_a_wide_victims_training_set_is_certifiable():
  """p = 10 dn on the sphere: the truth pins every row at the attack's tol and the rung's."""
  n, d = 6, 5
  out = _at_truth(*_victim(n, d, 10 * n * d), 10 * n * d)
  assert out['certifiable'] and out['attack']['certified'] and out['polished']['certified'], out
  assert out['loss64'] < 1e-9 and out['polished']['tol'] >= 1e-12
  assert out['attack']['rows_pinned'] == n
  assert max(r['radius'] for r in out['attack']['least_pinned']) < 0.1
  assert out['attack']['least_pinned'][0]['radius'] >= out['attack']['row_radius_median']


def test_a_sample_theta_barely_carries_is_named_and_blocks_the_certificate():
  """alpha_2 = 1e-9 of the others, theta in float32 (resolution ~6e-8): the truth is still at
  the loss's floor, but row 2's radius is ~1e9 times the others', the least pinned row, of the
  smallest share: not certifiable, at the attack's tol nor at the rung's level (no clamp)."""
  n, d, p = 6, 5, 300
  alpha = np.ones(n)
  alpha[2] = 1e-9
  out = _at_truth(*_victim(n, d, p, alpha=alpha, dtype=np.float32), p)
  assert not out['certifiable'], out
  for judged in (out['attack'], out['polished']):
    worst = judged['least_pinned'][0]
    assert worst['row'] == 2 and worst['share_rank'] == 0 and worst['radius'] >= 0.1, judged
    assert judged['least_pinned'][1]['radius'] < 0.1 and judged['rows_pinned'] == n - 1


def test_too_few_features_fail_counting_at_the_truth():
  """p < n (d + 1): zero-loss solutions are not isolated, even the truth's."""
  n, d = 6, 5
  out = _at_truth(*_victim(n, d, n * d), n * d)
  assert not out['certifiable']
  assert any('p = 30 < m (d + 1) = 36' in r for r in out['attack']['reasons']), out['attack']


def test_theta_in_float64_lowers_the_floor_and_the_rungs_tol():
  """The rounding floor is (eps S)^2 in theta's dtype: ~(2^29)^2 lower in float64; the rung's
  tolerance is max(attack.polish.tol, 4 x the floor), as the rung judges a polished set."""
  n, d, p = 6, 5, 300
  alpha = np.linspace(0.5, 1.5, n)
  out32 = _at_truth(*_victim(n, d, p, alpha=alpha, dtype=np.float32), p)
  out64 = _at_truth(*_victim(n, d, p, alpha=alpha, dtype=np.float64), p)
  assert (out32['theta_dtype'], out64['theta_dtype']) == ('float32', 'float64')
  assert out32['rounding_floor'] / out64['rounding_floor'] > 1e15
  for out in (out32, out64):
    assert out['polished']['tol'] == max(1e-12, 4 * out['rounding_floor'])
  assert out64['loss64'] < 1e-20 < out32['loss64']
