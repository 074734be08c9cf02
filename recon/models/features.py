"""Random-features maps: activations by name and phi(x) = sigma(V x).

`V in R^{p x d}` has i.i.d. N(0, 1/d) entries. Row `i` of `V` is drawn from
`fold_in(key, i)`, so the first `p` rows do not depend on the total width: a width
sweep that pads every model to the largest `p` sees the same features as the unpadded
run of each width (see `recon/sweep/grid.py`): bit for bit on JAX 0.10, to a few float32 ulps on
JAX 0.12's CPU backend, whose code generator fuses multiply-adds into FMAs for some array
shapes and not others.

Three generators of V (`weight_rng`): 'threefry' (default) draws row i with
`jax.random.normal(fold_in(key, i))`; 'hash' draws V_ij = sqrt(2) erfinv(u_ij) with u_ij a
uniform on (-1, 1) from a counter-based integer hash of (key, i, j) -- the same
prefix property, about 4-8x cheaper to regenerate on a CPU (what the memory-lean path does
twice per step), statistically N(0, 1) to 24 bits (float32) / 32 bits (float64);
'hash_box_muller' draws the pair (V_ij, V_i,j+h), h = ceil(d/2), as r (cos t, sin t) with
r = sqrt(-2 log u), t = 2 pi w (Box-Muller) from two hashes of (key, i, j): exact in law,
computed in float32 by polynomials only (`recon.models.weight_hash`), and regenerated as two column blocks, never
concatenated, by the memory-lean path (the cheapest of the three to regenerate).
"""
from __future__ import annotations

import dataclasses
from typing import Callable, Dict

import chex
import jax
import jax.numpy as jnp

from recon.config import choices
from recon.models import weight_hash

Array = jax.Array

# 'dense': V (p x d) is materialised; 'lean': chunks of V are regenerated from the key
# inside the compiled loss; 'auto': lean once p*d*itemsize exceeds a memory budget.


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


REFERENCE_LEAKY_SLOPE = 0.02  # the law paper's reference code: relu's backward off the support


def leaky_backward(forward: Callable[[Array], Array],
                   slope: float = REFERENCE_LEAKY_SLOPE) -> Callable[[Array], Array]:
  """`forward` unchanged; its relu part differentiated with slope `slope` off the support.

  The law paper's reference code back-propagates relu as a leaky relu (derivative 1 for
  z > 0, `slope` else) while the forward pass, hence the victim, is relu. For sigma = relu + g
  the derivative taken is 1{z > 0} + slope 1{z <= 0} + g'(z).
  """
  @jax.custom_jvp
  def act(z):
    return forward(z)

  @act.defjvp
  def _act_jvp(primals, tangents):
    (z,), (dz,) = primals, tangents
    smooth = jax.jvp(lambda u: forward(u) - jnp.maximum(u, 0.0), (z,), (dz,))[1]
    return act(z), jnp.where(z > 0, 1.0, slope) * dz + smooth

  return act


# Hermite parity decides what the features see of a row's sign (`recon.certify.symmetry`): odd
# (tanh, sin, cubic) and even (quadratic, quartic) activations are blind to it exactly, relu,
# relu_smooth and gelu (odd part z/2) up to a linear compensation; relu_tanh and
# softplus_tanh (both parts nonlinear) see it.
ACTIVATIONS: Dict[str, Callable[[Array], Array]] = {
    'relu': _relu,
    'relu_tanh': _relu_tanh,  # relu + tanh: odd part nonlinear, sees the sign.
    'tanh': jnp.tanh,
    'softplus_tanh': _softplus_tanh,  # smooth, odd Hermite terms of all orders.
    'sin': jnp.sin,  # odd: blind to each row's sign.
    'gelu': jax.nn.gelu,
    'cubic': lambda z: z ** 3,
    'quadratic': lambda z: z ** 2,
    'quartic': lambda z: z ** 4,
    # relu with the smooth backward sigmoid(alpha z); alpha set by `make_activation`.
    'relu_smooth': smooth_backward_relu(DEFAULT_SMOOTH_ALPHA),
    # The reference code's gradients: relu's backward leaky (slope 0.02), forward unchanged.
    'relu_leaky_backward': leaky_backward(_relu),
    'relu_tanh_leaky_backward': leaky_backward(_relu_tanh),
}

# Activations whose forward pass is another's with a surrogate backward: the victim, the
# metrics and the certificate's exact Jacobian use the forward one (`exact_forward`).
SURROGATE_OF: Dict[str, str] = {'relu_smooth': 'relu', 'relu_leaky_backward': 'relu',
                                'relu_tanh_leaky_backward': 'relu_tanh'}

# Activations built by a factory from one parameter (alpha); the registry entry is the default.
PARAMETRIZED: Dict[str, Callable[[float], Callable[[Array], Array]]] = {
    'relu_smooth': smooth_backward_relu,
}

# Activations whose second derivative vanishes almost everywhere: methods that need
# curvature in x (sample splitting) cannot use them.
PIECEWISE_LINEAR = frozenset({'relu', 'relu_leaky_backward'})

# Positively homogeneous activations: sigma(c z) = c^q sigma(z) for c > 0 (degree q).
HOMOGENEITY_DEGREE: Dict[str, int] = {'relu': 1, 'relu_smooth': 1, 'quadratic': 2,
                                      'cubic': 3, 'quartic': 4}


class UnknownNameError(ValueError):
  """A name that is not in a registry; the message lists the accepted names."""


def get_activation(name: str) -> Callable[[Array], Array]:
  """Returns the elementwise activation called `name`."""
  if name not in ACTIVATIONS:
    raise UnknownNameError(
        f'victim.activation: unknown name {name!r}; accepted: {", ".join(sorted(ACTIVATIONS))}')
  return ACTIVATIONS[name]


def make_activation(name: str, alpha: float | None = None) -> Callable[[Array], Array]:
  """`get_activation(name)`, or the parametrised variant with parameter `alpha` if given."""
  if name in PARAMETRIZED and alpha is not None:
    return PARAMETRIZED[name](float(alpha))
  return get_activation(name)


def exact_forward(name: str) -> str:
  """The activation with `name`'s forward pass and its exact derivative (itself, unless `name`
  is a surrogate-backward variant)."""
  return SURROGATE_OF.get(name, name)


def has_second_derivative(name: str) -> bool:
  """False for activations whose second derivative vanishes almost everywhere (relu)."""
  get_activation(name)
  return name not in PIECEWISE_LINEAR


def check_weight_rng(rng: str) -> str:
  if rng not in choices.WEIGHT_RNGS:
    raise ValueError(f'victim.weight_rng: unknown generator {rng!r}; accepted: '
                     f'{", ".join(choices.WEIGHT_RNGS)}')
  return rng


def random_weight_blocks(key: Array, start, count: int, d: int, dtype=jnp.float32,
                         rng: str = 'threefry') -> tuple[Array, ...]:
  """Rows start .. start+count-1 of V (V_ij ~ N(0, 1/d)) as column blocks: V rows = [B_1 | B_2 ...].

  One block for 'threefry' and 'hash'; two for 'hash_box_muller' (cos and sin halves), which
  a consumer multiplies block by block so that no concatenation splits their shared work.
  `start` may be traced: this is how the memory-lean path regenerates a chunk of V
  inside a compiled loss without ever holding all p rows.
  """
  check_weight_rng(rng)
  rows = jnp.asarray(start, jnp.uint32) + jnp.arange(count, dtype=jnp.uint32)
  if rng == 'hash':
    blocks = (weight_hash.hash_normal_rows(key, rows, d, dtype),)
  elif rng == 'hash_box_muller':
    blocks = tuple(b for b in weight_hash.box_muller_blocks(key, rows, d, dtype) if b.shape[1])
  else:
    blocks = (jax.vmap(lambda i: jax.random.normal(jax.random.fold_in(key, i), (d,), dtype))(rows),)
  return tuple(b / jnp.sqrt(jnp.asarray(d, dtype)) for b in blocks)


def random_weight_rows(key: Array, start, count: int, d: int, dtype=jnp.float32,
                       rng: str = 'threefry') -> Array:
  """Rows start .. start+count-1 of V (count x d), V_ij ~ N(0, 1/d).

  'threefry': row i drawn from fold_in(key, i); 'hash' / 'hash_box_muller': from hashes of
  (key, i, j). `start` may be traced.
  """
  blocks = random_weight_blocks(key, start, count, d, dtype, rng)
  if len(blocks) == 1:
    return blocks[0]
  # Materialise the blocks first: a fused concatenation would recompute their shared
  # radius and angle once per output column.
  return jnp.concatenate(jax.lax.optimization_barrier(blocks), axis=1)


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
  z, col = None, 0
  for block in random_weight_blocks(key, start, chunk, x.shape[1], x.dtype, rng):
    part = x[:, col:col + block.shape[1]] @ block.T
    z, col = (part if z is None else z + part), col + block.shape[1]
  return z


def rf_rows_preactivation_chunk(v: Array, x: Array, chunk_index, chunk: int) -> Array:
  """Z_c = X V_c^T for rows [c*chunk, (c+1)*chunk) of a resident V (padded to whole chunks):
  the row block is sliced and contracted on d as it is stored, (m, d) by (chunk, d), so no
  transpose of V is ever formed (victim.feature_mode 'blocked')."""
  chex.assert_rank([v, x], 2)
  start = jnp.asarray(chunk_index, jnp.int32) * chunk
  block = jax.lax.dynamic_slice_in_dim(v, start, chunk, axis=0).astype(x.dtype)
  return jax.lax.dot_general(x, block, (((1,), (1,)), ((), ())))


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



class FeatureMap:
  """phi(X) (m x p) that also gives any column block without forming the rest:
  `block_fn(params, x, start, count)` = phi(X)[:, start:start + count], zero past p (`start`
  may be traced, `count` is static; `block_fn` hashable, `params` a pytree of arrays, so a
  compiled consumer takes them as arguments and is reused across maps of one kind). The
  certificate's Jacobian tests walk the features block by block
  (`recon.certify.residual_jacobian`); everything else calls the map as a function."""

  def __init__(self, full_fn: Callable[[Array], Array], block_fn: Callable, params, p: int):
    self._full, self.block_fn, self.params, self.p = full_fn, block_fn, params, int(p)

  def __call__(self, x: Array) -> Array:
    return self._full(x)

  def block(self, x: Array, start, count: int) -> Array:
    return self.block_fn(self.params, x, start, count)


@dataclasses.dataclass(frozen=True)
class RFBlock:
  """The block function of `rf_feature_map` (params = V) or, with `lean`, of
  `rf_feature_map_lean` (params = the key; V's rows regenerated in `dtype`, the attack's V
  bit for bit). Multiplies in the dtype of X; zero past p."""
  activation: str
  p: int
  lean: bool = False
  dtype: str = 'float32'
  rng: str = 'threefry'

  def __call__(self, params, x: Array, start, count: int) -> Array:
    rows = jnp.asarray(start, jnp.int32) + jnp.arange(count, dtype=jnp.int32)
    if self.lean:
      v_rows = random_weight_rows(params, jnp.asarray(start, jnp.uint32), count, x.shape[1],
                                  jnp.dtype(self.dtype), self.rng)
    else:
      v_rows = jnp.take(params, rows, axis=0, mode='fill', fill_value=0)
    z = x @ v_rows.astype(x.dtype).T
    return get_activation(self.activation)(z) * (rows < self.p).astype(x.dtype)


def rf_feature_map(v: Array, activation: str) -> FeatureMap:
  """sigma(X V^T) for a materialised V (p x d), as a `FeatureMap` (blocks slice V)."""
  return FeatureMap(lambda x: rf_features(v, x, activation), RFBlock(activation, v.shape[0]),
                    v, v.shape[0])


def rf_feature_map_lean(key: Array, activation: str, p: int, chunk: int, dtype,
                        rng: str = 'threefry') -> FeatureMap:
  """sigma(X V^T) with V regenerated from `key` (`rf_features_chunked`), as a `FeatureMap`.
  V is always the attack's, drawn in `dtype`: X in another dtype (float64 for the
  certificate or the precision rung) multiplies V's rows cast to it, never a V drawn anew."""
  block = RFBlock(activation, p, lean=True, dtype=jnp.dtype(dtype).name, rng=rng)

  def full(x):
    if x.dtype == jnp.dtype(dtype):
      return rf_features_chunked(key, x, activation, p, chunk, rng=rng)[:, :p]
    cols = jax.lax.map(lambda c: block(key, x, c * chunk, chunk),
                       jnp.arange(n_feature_chunks(p, chunk), dtype=jnp.int32))
    return jnp.moveaxis(cols, 0, 1).reshape(x.shape[0], -1)[:, :p]

  return FeatureMap(full, block, key, p)
