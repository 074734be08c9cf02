"""The counter-based generators of V (`victim.weight_rng` 'hash' and 'hash_box_muller').

Every entry of V is a function of (key, row i, column j) alone, so any block of rows can be
regenerated inside a compiled loss at no memory cost (`recon.models.features.random_weight_blocks`
calls these; 'threefry' is jax.random's own):

* 'hash' (`hash_normal_rows`): u = (mix(mix(mix(i ^ k0) + j * golden) ^ k1) + 1/2) / 2^b * 2 - 1
  in (-1, 1), b = 24 (float32) or 32 (float64), V_ij = sqrt(2) erfinv(u): N(0, 1) to b bits.
  `mix` is a 32-bit integer finaliser (xor-shift-multiply, 'lowbias32'), a bijection of uint32.
* 'hash_box_muller' (`box_muller_blocks`): the pair (V_ij, V_i,j+h), h = ceil(d/2), is
  r (cos t, sin t), r = sqrt(-2 log u), t = 2 pi w / 2^32, from two independent hashed words
  (u, w) of (key, i, j) (`box_muller_bits`): exact in law. In float32 log and cos are
  polynomials (Cephes' logf on [sqrt(1/2) - 1, sqrt(2) - 1]; a least-squares cos in phi^2, max
  error 2.2e-10), which vectorise on every backend, unlike XLA's CPU log / cos; the two
  halves come back as two column blocks, never concatenated.
"""
from __future__ import annotations

import math

import jax
import jax.numpy as jnp

Array = jax.Array


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


def hash_normal_rows(key: Array, rows: Array, d: int, dtype) -> Array:
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


# float32 log on [2^-23, 1) and cos on [-pi/2, pi/2] by polynomials (vectorise on every
# backend, unlike XLA's CPU log/cos): Cephes' logf coefficients for log(1 + x), x in
# [sqrt(1/2) - 1, sqrt(2) - 1]; a least-squares fit of cos in phi^2 (max error 2.2e-10).
_LOG1P_COEFFS = (7.0376836292e-2, -1.1514610310e-1, 1.1676998740e-1, -1.2420140846e-1,
                 1.4249322787e-1, -1.6668057665e-1, 2.0000714765e-1, -2.4999993993e-1,
                 3.3333331174e-1)
_COS_COEFFS = (-2.60510153e-07, 2.47601321e-05, -1.38883608e-03, 4.16666362e-02,
               -4.99999994e-01, 1.0)


def _polynomial(coeffs, x: Array) -> Array:
  """sum_k coeffs[k] x^(K-k) (highest degree first) by Estrin's scheme (short dependency chains)."""
  terms = [jnp.asarray(c, x.dtype) for c in coeffs[::-1]]
  power = x
  while len(terms) > 1:
    terms = [terms[i] + terms[i + 1] * power if i + 1 < len(terms) else terms[i]
             for i in range(0, len(terms), 2)]
    power = power * power
  return terms[0]


def _log_float32(y: Array) -> Array:
  """log y for positive normal float32 y: y = m 2^e, m in [sqrt(1/2), sqrt(2)), log(1 + (m - 1))."""
  bits = jax.lax.bitcast_convert_type(y, jnp.int32)
  e = (bits >> 23) - 127
  m = jax.lax.bitcast_convert_type((bits & 0x7FFFFF) | 0x3F800000, jnp.float32)  # [1, 2)
  big = m > jnp.float32(1.41421356)
  m = jnp.where(big, m * jnp.float32(0.5), m)
  e = jnp.where(big, e + 1, e).astype(jnp.float32)
  x = m - jnp.float32(1.0)
  z = x * x
  r = x * z * _polynomial(_LOG1P_COEFFS, x) - jnp.float32(0.5) * z
  return (x + e * jnp.float32(0.6931471805599453)) + r


def _cos_turns_float32(a: Array) -> Array:
  """cos(2 pi a / 2^32) for uint32 a: a half-turn shift maps a to [-1/4, 1/4) turn, sign flipped."""
  s = (a + jnp.uint32(1 << 30)) >> 31  # 1 on [1/4, 3/4) turn
  phi = jax.lax.bitcast_convert_type(a + (s << 31), jnp.int32).astype(jnp.float32) * jnp.float32(
      2 * math.pi / 2 ** 32)
  c = _polynomial(_COS_COEFFS, phi * phi)
  return jax.lax.bitcast_convert_type(
      jax.lax.bitcast_convert_type(c, jnp.uint32) ^ (s << 31), jnp.float32)


def box_muller_bits(key: Array, rows: Array, h: int) -> tuple[Array, Array]:
  """Two independent uint32 words (len(rows) x h): hash(row) ^ hash_1(j), hash(row) ^ hash_2(j), mixed."""
  words = _key_words(key)
  k0, k1 = words[0], words[-1]
  row_hash = _mix32(_mix32(rows.astype(jnp.uint32) ^ _mix32(k0)) ^ k1)[:, None]
  j = jnp.arange(h, dtype=jnp.uint32)
  col_1 = _mix32(_mix32(j ^ _mix32(k1)) + jnp.uint32(0x9E3779B9))[None, :]
  col_2 = _mix32(_mix32(j ^ _mix32(k1 ^ jnp.uint32(0x85EBCA6B))) + jnp.uint32(0x6A09E667))[None, :]
  return _mix32(row_hash ^ col_1), _mix32(row_hash ^ col_2)


def box_muller_blocks(key: Array, rows: Array, d: int, dtype) -> tuple[Array, Array]:
  """(A, B): V rows = [A | B], A = r cos t (len(rows) x ceil(d/2)), B = r sin t (first d - ceil(d/2)).

  r = sqrt(-2 log u), u = (bits + 1/2) / 2^b on 23 (float32) / 32 (float64) bits; t = 2 pi w / 2^32.
  """
  h = (d + 1) // 2
  bits_r, bits_t = box_muller_bits(key, rows, h)
  if jnp.dtype(dtype).itemsize >= 8:
    u = (bits_r.astype(dtype) + 0.5) * (1.0 / 2 ** 32)
    r = jnp.sqrt(-2.0 * jnp.log(u))
    t = bits_t.astype(dtype) * (2 * math.pi / 2 ** 32)
    return r * jnp.cos(t), (r * jnp.sin(t))[:, :d - h]
  u = ((bits_r >> 9).astype(jnp.int32).astype(jnp.float32) + 0.5) * jnp.float32(2.0 ** -23)
  r = jnp.sqrt(jnp.float32(-2.0) * _log_float32(u))
  a = r * _cos_turns_float32(bits_t)
  b = r * _cos_turns_float32(bits_t - jnp.uint32(1 << 30))  # sin t = cos(t - pi/2)
  return a.astype(dtype), b[:, :d - h].astype(dtype)
