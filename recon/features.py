"""Random-features maps: activations by name and phi(x) = sigma(V x).

`V in R^{p x d}` has i.i.d. N(0, 1/d) entries. Row `i` of `V` is drawn from
`fold_in(key, i)`, so the first `p` rows do not depend on the total width: a width
sweep that pads every model to the largest `p` sees exactly the same features as
the unpadded run of each width (see `recon/sweep.py`).
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


def random_weight_rows(key: Array, start, count: int, d: int, dtype=jnp.float32) -> Array:
  """Rows start .. start+count-1 of V (count x d); row i drawn from fold_in(key, i).

  `start` may be traced: this is how the memory-lean path regenerates a chunk of V
  inside a compiled loss without ever holding all p rows.
  """
  rows = jnp.asarray(start, jnp.uint32) + jnp.arange(count, dtype=jnp.uint32)
  v = jax.vmap(lambda i: jax.random.normal(jax.random.fold_in(key, i), (d,), dtype))(rows)
  return v / jnp.sqrt(jnp.asarray(d, dtype))


def random_weights(key: Array, p: int, d: int, dtype=jnp.float32) -> Array:
  """V in R^{p x d}, V_ij ~ N(0, 1/d); row i drawn from fold_in(key, i)."""
  return random_weight_rows(key, 0, p, d, dtype)


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


def rf_feature_chunk(key: Array, x: Array, chunk_index, chunk: int, activation: str,
                     p) -> Array:
  """Columns [c*chunk, (c+1)*chunk) of sigma(X V^T), V regenerated from `key`.

  Features with a global index >= p (padding up to a whole number of chunks) are 0.
  Equals `rf_features(random_weights(key, P, d), x, activation)[:, c*chunk:(c+1)*chunk]`.
  """
  chex.assert_rank(x, 2)
  start = jnp.asarray(chunk_index, jnp.uint32) * jnp.uint32(chunk)
  v = random_weight_rows(key, start, chunk, x.shape[1], x.dtype)
  mask = (start + jnp.arange(chunk, dtype=jnp.uint32)) < jnp.asarray(p, jnp.uint32)
  return get_activation(activation)(x @ v.T) * mask.astype(x.dtype)


def n_feature_chunks(p: int, chunk: int, multiple_of: int = 1) -> int:
  """Chunks of `chunk` features that cover p, rounded up to a multiple of `multiple_of`."""
  n = -(-p // chunk)
  return -(-n // multiple_of) * multiple_of


def rf_features_chunked(key: Array, x: Array, activation: str, p: int, chunk: int,
                        n_chunks: int | None = None) -> Array:
  """sigma(X V^T) (n x n_chunks*chunk, zero padded past p), one chunk of V at a time.

  Peak memory O(n p + chunk d): V is never materialised.
  """
  n_chunks = n_feature_chunks(p, chunk) if n_chunks is None else n_chunks
  cols = jax.lax.map(lambda c: rf_feature_chunk(key, x, c, chunk, activation, p),
                     jnp.arange(n_chunks, dtype=jnp.uint32))  # (n_chunks, n, chunk)
  return jnp.moveaxis(cols, 0, 1).reshape(x.shape[0], n_chunks * chunk)
