"""Random-features maps: activations by name and phi(x) = sigma(V x).

`V in R^{p x d}` has i.i.d. N(0, 1/d) entries. Row `i` of `V` is drawn from
`fold_in(key, i)`, so the first `p` rows do not depend on the total width: a width
sweep that pads every model to the largest `p` sees exactly the same features as
the unpadded run of each width (see `recon/sweep.py`).

Two generators of V (`weight_rng`): 'threefry' (default) draws row i with
`jax.random.normal(fold_in(key, i))`; 'hash' draws V_ij = sqrt(2) erfinv(u_ij) with u_ij a
uniform on (-1, 1) from a counter-based integer hash of (key, i, j) -- the same
prefix property, about 4-8x cheaper to regenerate on a CPU (what the memory-lean path does
twice per step), statistically N(0, 1) to 24 bits (float32) / 32 bits (float64).
"""
from __future__ import annotations

from typing import Callable, Dict

import chex
import jax
import jax.numpy as jnp

Array = jax.Array

# 'dense': V (p x d) is materialised; 'lean': chunks of V are regenerated from the key
# inside the compiled loss; 'auto': lean once p*d*itemsize exceeds a memory budget.
FEATURE_MODES = ('auto', 'dense', 'lean')
WEIGHT_RNGS = ('threefry', 'hash')


def _relu(z):
  return jnp.maximum(z, 0.0)


def _relu_tanh(z):
  return jnp.maximum(z, 0.0) + jnp.tanh(z)


def _softplus_tanh(z):
  return jax.nn.softplus(z) + jnp.tanh(z)


DEFAULT_SMOOTH_ALPHA = 50.0


def smooth_backward_relu(alpha: float = DEFAULT_SMOOTH_ALPHA) -> Callable[[Array], Array]:
  """relu forward, derivative sigmoid(alpha z) backward (Haim et al.'s surrogate).

  The forward value is exactly max(z, 0); every derivative is taken of the
  surrogate sigmoid(alpha z), so the second derivative alpha s (1 - s) is
  non-zero near 0 (double backprop and sample splitting need it).
  """
  @jax.custom_jvp
  def relu(z):
    return jnp.maximum(z, 0.0)

  @relu.defjvp
  def _relu_jvp(primals, tangents):
    (z,), (dz,) = primals, tangents
    return relu(z), jax.nn.sigmoid(alpha * z) * dz

  return relu


# Hermite content decides identifiability: relu's odd coefficients of order >= 3
# vanish (sign ambiguity x <-> -x on the odd part); tanh, sin and the "+tanh"
# variants have non-zero odd coefficients of every odd order.
ACTIVATIONS: Dict[str, Callable[[Array], Array]] = {
    'relu': _relu,
    'relu_tanh': _relu_tanh,  # relu + tanh: removes relu's sign ambiguity.
    'tanh': jnp.tanh,
    'softplus_tanh': _softplus_tanh,  # smooth, odd Hermite terms of all orders.
    'sin': jnp.sin,  # smooth, odd Hermite coefficients of every odd order.
    'gelu': jax.nn.gelu,
    'cubic': lambda z: z ** 3,
    'quadratic': lambda z: z ** 2,
    'quartic': lambda z: z ** 4,
    # relu with the smooth backward sigmoid(alpha z); alpha set by `make_activation`.
    'relu_smooth': smooth_backward_relu(DEFAULT_SMOOTH_ALPHA),
}

# Activations built by a factory from one parameter (alpha); the registry entry is the default.
PARAMETRIZED: Dict[str, Callable[[float], Callable[[Array], Array]]] = {
    'relu_smooth': smooth_backward_relu,
}

# Activations whose second derivative vanishes almost everywhere: methods that need
# curvature in x (sample splitting) cannot use them.
PIECEWISE_LINEAR = frozenset({'relu'})

# Positively homogeneous activations: sigma(c z) = c^q sigma(z) for c > 0 (degree q).
HOMOGENEITY_DEGREE: Dict[str, int] = {'relu': 1, 'relu_smooth': 1, 'quadratic': 2,
                                      'cubic': 3, 'quartic': 4}


class UnknownNameError(ValueError):
  """A name that is not in a registry; the message lists the accepted names."""


def get_activation(name: str) -> Callable[[Array], Array]:
  """Returns the elementwise activation called `name`."""
  if name not in ACTIVATIONS:
    raise UnknownNameError(
        f'activation: unknown name {name!r}; accepted: {", ".join(sorted(ACTIVATIONS))}')
  return ACTIVATIONS[name]


def make_activation(name: str, alpha: float | None = None) -> Callable[[Array], Array]:
  """`get_activation(name)`, or the parametrised variant with parameter `alpha` if given."""
  if name in PARAMETRIZED and alpha is not None:
    return PARAMETRIZED[name](float(alpha))
  return get_activation(name)


def has_second_derivative(name: str) -> bool:
  """False for activations whose second derivative vanishes almost everywhere (relu)."""
  get_activation(name)
  return name not in PIECEWISE_LINEAR


def _mix32(h: Array) -> Array:
  """A 32-bit integer finaliser (xor-shift-multiply, 'lowbias32'): a bijection of uint32."""
  h = h ^ (h >> 16)
  h = h * jnp.uint32(0x7FEB352D)
  h = h ^ (h >> 15)
  h = h * jnp.uint32(0x846CA68B)
  return h ^ (h >> 16)


def _key_words(key: Array) -> Array:
  """The key's raw uint32 words (typed keys or legacy uint32[2] keys)."""
  if jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
    key = jax.random.key_data(key)
  return jnp.ravel(key).astype(jnp.uint32)


def _hash_normal_rows(key: Array, rows: Array, d: int, dtype) -> Array:
  """N(0, 1) entries (len(rows) x d) from a counter-based hash of (key, row, column).

  u = (mix(mix(mix(row ^ k0) + j * golden) ^ k1) + 1/2) / 2^b * 2 - 1 in (-1, 1), b = 24
  (float32) or 32 (float64); z = sqrt(2) erfinv(u).
  """
  words = _key_words(key)
  k0, k1 = words[0], words[-1]
  row_hash = _mix32(rows.astype(jnp.uint32) ^ _mix32(k0))[:, None]
  cols = jnp.arange(d, dtype=jnp.uint32)[None, :] * jnp.uint32(0x9E3779B9)
  h = _mix32(_mix32(row_hash + cols) ^ k1)
  if jnp.dtype(dtype).itemsize >= 8:
    u = (h.astype(dtype) + 0.5) * (2.0 / 2 ** 32) - 1.0
  else:
    u = ((h >> 8).astype(dtype) + 0.5) * (2.0 / 2 ** 24) - 1.0
  return jnp.sqrt(jnp.asarray(2.0, dtype)) * jax.lax.erf_inv(u)


def check_weight_rng(rng: str) -> str:
  if rng not in WEIGHT_RNGS:
    raise ValueError(f'weight_rng: unknown generator {rng!r}; accepted: {", ".join(WEIGHT_RNGS)}')
  return rng


def random_weight_rows(key: Array, start, count: int, d: int, dtype=jnp.float32,
                       rng: str = 'threefry') -> Array:
  """Rows start .. start+count-1 of V (count x d), V_ij ~ N(0, 1/d).

  'threefry': row i drawn from fold_in(key, i); 'hash': from a hash of (key, i, j).
  `start` may be traced: this is how the memory-lean path regenerates a chunk of V
  inside a compiled loss without ever holding all p rows.
  """
  check_weight_rng(rng)
  rows = jnp.asarray(start, jnp.uint32) + jnp.arange(count, dtype=jnp.uint32)
  if rng == 'hash':
    v = _hash_normal_rows(key, rows, d, dtype)
  else:
    v = jax.vmap(lambda i: jax.random.normal(jax.random.fold_in(key, i), (d,), dtype))(rows)
  return v / jnp.sqrt(jnp.asarray(d, dtype))


def random_weights(key: Array, p: int, d: int, dtype=jnp.float32,
                   rng: str = 'threefry') -> Array:
  """V in R^{p x d}, V_ij ~ N(0, 1/d); row i depends only on (key, i) (see `weight_rng`)."""
  return random_weight_rows(key, 0, p, d, dtype, rng)


def feature_mask(p: int, p_total: int, dtype=jnp.float32) -> Array:
  """1 on the first `p` of `p_total` features, 0 on the padding."""
  return (jnp.arange(p_total) < p).astype(dtype)


def rf_features(v: Array, x: Array, activation: str, mask: Array | None = None) -> Array:
  """phi(X) = sigma(X V^T) (rows = samples), times an optional 0/1 feature mask."""
  chex.assert_rank([v, x], 2)
  chex.assert_equal_shape_suffix([v, x], 1)
  phi = get_activation(activation)(x @ v.T)
  if mask is not None:
    phi = phi * mask
  return phi


def rf_preactivation_chunk(key: Array, x: Array, chunk_index, chunk: int,
                           rng: str = 'threefry') -> Array:
  """Z_c = X V_c^T for rows [c*chunk, (c+1)*chunk) of V, regenerated from `key`."""
  chex.assert_rank(x, 2)
  start = jnp.asarray(chunk_index, jnp.uint32) * jnp.uint32(chunk)
  v = random_weight_rows(key, start, chunk, x.shape[1], x.dtype, rng)
  return x @ v.T


def rf_activate_chunk(z: Array, chunk_index, chunk: int, activation: str, p) -> Array:
  """sigma(Z_c), zero on features with a global index >= p (padding to whole chunks)."""
  start = jnp.asarray(chunk_index, jnp.uint32) * jnp.uint32(chunk)
  mask = (start + jnp.arange(chunk, dtype=jnp.uint32)) < jnp.asarray(p, jnp.uint32)
  return get_activation(activation)(z) * mask.astype(z.dtype)


def rf_feature_chunk(key: Array, x: Array, chunk_index, chunk: int, activation: str,
                     p, rng: str = 'threefry') -> Array:
  """Columns [c*chunk, (c+1)*chunk) of sigma(X V^T), V regenerated from `key`.

  Features with a global index >= p (padding up to a whole number of chunks) are 0.
  Equals `rf_features(random_weights(key, P, d), x, activation)[:, c*chunk:(c+1)*chunk]`.
  """
  z = rf_preactivation_chunk(key, x, chunk_index, chunk, rng)
  return rf_activate_chunk(z, chunk_index, chunk, activation, p)


def n_feature_chunks(p: int, chunk: int, multiple_of: int = 1) -> int:
  """Chunks of `chunk` features that cover p, rounded up to a multiple of `multiple_of`."""
  n = -(-p // chunk)
  return -(-n // multiple_of) * multiple_of


def rf_features_chunked(key: Array, x: Array, activation: str, p: int, chunk: int,
                        n_chunks: int | None = None, rng: str = 'threefry') -> Array:
  """sigma(X V^T) (n x n_chunks*chunk, zero padded past p), one chunk of V at a time.

  Peak memory O(n p + chunk d): V is never materialised.
  """
  n_chunks = n_feature_chunks(p, chunk) if n_chunks is None else n_chunks
  cols = jax.lax.map(lambda c: rf_feature_chunk(key, x, c, chunk, activation, p, rng),
                     jnp.arange(n_chunks, dtype=jnp.uint32))  # (n_chunks, n, chunk)
  return jnp.moveaxis(cols, 0, 1).reshape(x.shape[0], n_chunks * chunk)
