import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon import features


def test_weights_have_variance_one_over_d():
  v = features.random_weights(jax.random.PRNGKey(0), 4000, 25)
  assert v.shape == (4000, 25)
  assert abs(float(jnp.mean(v))) < 0.01
  np.testing.assert_allclose(float(jnp.var(v)), 1 / 25, rtol=0.05)


def test_first_rows_do_not_depend_on_width():
  key = jax.random.PRNGKey(3)
  np.testing.assert_array_equal(features.random_weights(key, 7, 5),
                                features.random_weights(key, 30, 5)[:7])


def test_mask_zeroes_padding_only():
  key = jax.random.PRNGKey(1)
  x = jax.random.normal(key, (3, 5))
  v = features.random_weights(key, 12, 5)
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
