import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon.config import choices
from recon.models import features


# Jitted once per shape: op-by-op dispatch of the hash generators compiles every primitive
# separately (about 3x the CPU time of one compiled program).
_random_weights = jax.jit(features.random_weights, static_argnames=('p', 'd', 'dtype', 'rng'))


@pytest.mark.parametrize('rng', choices.WEIGHT_RNGS)
def test_weights_have_variance_one_over_d(rng):
  v = _random_weights(jax.random.PRNGKey(0), 4000, 25, rng=rng)
  assert v.shape == (4000, 25)
  assert abs(float(jnp.mean(v))) < 0.01
  np.testing.assert_allclose(float(jnp.var(v)), 1 / 25, rtol=0.05)


@pytest.mark.parametrize('rng', ['hash', 'hash_box_muller'])
@pytest.mark.parametrize('dtype', [jnp.float32, jnp.float64])
def test_hash_weights_are_gaussian_and_uncorrelated(dtype, rng):
  from scipy import stats
  if dtype == jnp.float64:
    jax.config.update('jax_enable_x64', True)  # restored by tests/conftest.py
  v = np.asarray(_random_weights(jax.random.PRNGKey(4), 2000, 16, dtype, rng=rng))
  assert v.dtype == np.dtype(dtype)
  z = v.ravel() * 4.0  # N(0, 1)
  assert stats.kstest(z, 'norm').pvalue > 1e-3
  assert abs(stats.kurtosis(z)) < 0.1 and abs(stats.skew(z)) < 0.05
  # Neighbouring rows / columns and rows of two keys are uncorrelated (|r| ~ 1/sqrt(N)).
  w = np.asarray(_random_weights(jax.random.PRNGKey(5), 2000, 16, rng=rng))
  for a, b in [(v[:-1].ravel(), v[1:].ravel()), (v[:, :-1].ravel(), v[:, 1:].ravel()),
               (v.ravel(), w.ravel()),
               # Box-Muller pairs (j, j + d/2) share a radius: independent only if the
               # angle is uniform, which the squares' correlation tests.
               (v[:, :8].ravel() ** 2, v[:, 8:].ravel() ** 2)]:
    assert abs(np.corrcoef(a, b)[0, 1]) < 0.03


@pytest.mark.parametrize('d', [1, 2, 5])
def test_box_muller_small_and_odd_widths(d):
  v = _random_weights(jax.random.PRNGKey(0), 50, d, rng='hash_box_muller')
  assert v.shape == (50, d) and bool(jnp.all(jnp.isfinite(v)))


def test_unknown_weight_rng_is_refused():
  with pytest.raises(ValueError, match='weight_rng.*accepted: threefry, hash'):
    features.random_weights(jax.random.PRNGKey(0), 3, 2, rng='philox')


@pytest.mark.parametrize('rng', choices.WEIGHT_RNGS)
def test_first_rows_do_not_depend_on_width(rng):
  # Bit for bit on JAX 0.10; JAX 0.12's XLA CPU contracts some multiply-adds into FMAs for one
  # array shape and not another (erf_inv of a 7x5 vs a 30x5 array): a few float32 roundings of
  # the entries' O(1/sqrt(d)) scale, where a wrong row would differ by O(1/sqrt(d)).
  key = jax.random.PRNGKey(3)
  np.testing.assert_allclose(_random_weights(key, 7, 5, rng=rng),
                             _random_weights(key, 30, 5, rng=rng)[:7], rtol=0, atol=1e-6)


def test_mask_zeroes_padding_only():
  key = jax.random.PRNGKey(1)
  x = jax.random.normal(key, (3, 5))
  v = _random_weights(key, 12, 5)
  phi = features.rf_features(v, x, 'relu_tanh', features.feature_mask(8, 12))
  np.testing.assert_array_equal(phi[:, 8:], 0.0)
  np.testing.assert_allclose(phi[:, :8], features.rf_features(v[:8], x, 'relu_tanh'), atol=1e-6)


@pytest.mark.parametrize('name', sorted(features.ACTIVATIONS))
def test_every_activation_is_finite(name):
  z = jnp.linspace(-3, 3, 11)
  assert bool(jnp.all(jnp.isfinite(features.get_activation(name)(z))))


def test_relu_tanh_is_not_even_or_odd_and_relu_matches():
  z = jnp.linspace(-2, 2, 9)
  np.testing.assert_allclose(features.get_activation('relu')(z), np.maximum(z, 0))
  np.testing.assert_allclose(features.get_activation('relu_tanh')(z),
                             np.maximum(z, 0) + np.tanh(z), rtol=1e-6)


def test_unknown_activation_lists_accepted_names():
  with pytest.raises(ValueError, match=r"activation: unknown name 'swishy'; accepted: .*relu_tanh"):
    features.get_activation('swishy')


def test_the_reference_codes_leaky_backward_keeps_the_forward_and_changes_only_the_slope():
  z = jnp.array([-1.5, -0.2, 0.3, 2.0])
  for name, exact in (('relu_leaky_backward', 'relu'), ('relu_tanh_leaky_backward', 'relu_tanh')):
    act, ref = features.get_activation(name), features.get_activation(exact)
    np.testing.assert_array_equal(act(z), ref(z))  # the victim is unchanged
    grad = jax.vmap(jax.grad(act))(z)
    ref_grad = jax.vmap(jax.grad(ref))(z)
    # Off the support the derivative is 0.02 (the reference's leaky slope), on it exact.
    np.testing.assert_allclose(grad - ref_grad, jnp.where(z > 0, 0.0, 0.02), atol=1e-6)
    assert features.exact_forward(name) == exact
  assert features.exact_forward('relu_tanh') == 'relu_tanh'
