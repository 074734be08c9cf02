"""The counter-based generators of V (recon/models/weight_hash.py): the float32 Box-Muller path's
polynomial log and cos against the float64 formula on the same hashed bits."""
import jax
import jax.numpy as jnp
import numpy as np

from recon.models import features, weight_hash

# Jitted once per shape (op-by-op dispatch compiles every primitive separately).
_random_weights = jax.jit(features.random_weights, static_argnames=('p', 'd', 'dtype', 'rng'))
_box_muller_bits = jax.jit(weight_hash.box_muller_bits, static_argnames=('h',))
_box_muller_blocks = jax.jit(weight_hash.box_muller_blocks, static_argnames=('d', 'dtype'))


def test_box_muller_float32_polynomials_match_float64_formula():
  # The float32 path computes log and cos by polynomials; against r (cos t, sin t) in
  # float64 from the same hash bits it is accurate to float32 round-off.
  key, rows = jax.random.PRNGKey(2), jnp.arange(3000, dtype=jnp.uint32)
  bits_r, bits_t = (np.asarray(b, np.float64) for b in _box_muller_bits(key, rows, 7))
  r = np.sqrt(-2 * np.log((np.floor(bits_r / 2 ** 9) + 0.5) / 2 ** 23))
  t = 2 * np.pi * bits_t / 2 ** 32
  a, b = _box_muller_blocks(key, rows, 13, jnp.float32)  # odd d: B has 6 columns
  assert a.shape == (3000, 7) and b.shape == (3000, 6)
  np.testing.assert_allclose(np.asarray(a), r * np.cos(t), atol=2e-6)
  np.testing.assert_allclose(np.asarray(b), (r * np.sin(t))[:, :6], atol=2e-6)
  assert r.max() > 4.5  # the tails are reached (u down to 2^-24)
  v = _random_weights(key, 3000, 13, rng='hash_box_muller')
  np.testing.assert_allclose(np.asarray(v) * np.sqrt(13), np.concatenate([a, b], 1), rtol=1e-6)


def test_hash_rows_depend_only_on_key_row_and_column():
  key = jax.random.PRNGKey(3)
  rows = jnp.arange(10, 20, dtype=jnp.uint32)
  full = np.asarray(weight_hash.hash_normal_rows(key, rows, 6, jnp.float32))
  part = np.asarray(weight_hash.hash_normal_rows(key, rows[4:7], 6, jnp.float32))
  np.testing.assert_array_equal(full[4:7], part)
  other = np.asarray(weight_hash.hash_normal_rows(jax.random.PRNGKey(4), rows, 6, jnp.float32))
  assert not np.any(full == other)
