"""The sign quotient: the projection attack on the part of the features that cannot see signs.

Write sigma = e + o (its even and odd parts, `recon.certify.symmetry`). For a relu-like activation the
odd part is linear, o(z) = c_1 z (relu, gelu, softplus, silu: c_1 = 1/2), so

    phi(x) = e(V x) + c_1 V x,      phi(-x) = phi(x) - 2 c_1 V x,

and flipping a candidate moves its feature by a vector of range(V), a d-dimensional space.
The projection loss L(X) = ||P_perp(Phi(X)) theta||^2 / ||theta||^2 then has sign traps: with
n > d the linear parts V x_i of the samples span all of range(V), the other rows nearly make
up for a flipped one, and a pair of candidates at x and -x puts V x itself into the span
(phi(x) - phi(-x) = 2 c_1 V x), which soaks up the linear residual of the wrong signs while two
samples go missing. Measured (relu, n = 32, d = 16, p = 4 dn, tuning seed 0): the descent ends
with 17 rows at mirror images, one mirror pair, two samples missing, loss 3e-5; every seed of
the table 2-3 rows short.

The quotient removes the sign from the problem. With Q (p x k) an orthonormal basis of the
compensating space W (range(V) for a linear odd part, k = d; the constant vector for a
constant even part, sigmoid-like, k = 1) and P = I - Q Q^T,

    psi(x) = P phi(x),    theta~ = P theta,    L~(X) = ||P_perp(Psi(X)) theta~||^2 / ||theta~||^2.

psi(-x) = psi(x) exactly (the flip's vector lies in W), so L~ is blind to every row's sign
(exact symmetry, as for an odd or even activation), and theta in span Phi(X) implies
theta~ in span Psi(X): the truth and each of its sign flips are zeros of L~. A mirror pair is
an exact duplicate under psi and buys nothing. What is lost is k of the p equations (the
counting rule uses p - k) and the rows' signs, which the relu-like features barely see and
which the reconstruction is scored and certified without anyway (`certified_up_to`).

When. With m <= d candidates in general position their linear parts V x_i are independent:
a flip cannot be made up for, the plain loss sees the signs, and the quotient's projection
costs a second m p d product per step (2.9x the plain loss's step at (m, d, p) = (20, 100,
20 000), 1.1x at (32, 16, 2048), 1.5x at (100, 16, 6400) on a 2-core
CPU, measured once). `attack.sign_quotient` 'auto' (the default)
quotients when m > d, 'on' always (e.g. data in a k-dim subspace, k < m <= d, whose linear
parts span only k dimensions), 'off' never (the papers' loss).

`basis(v, activation, mask)`: Q, or None when sigma has no such symmetry (relu + tanh: both
parts nonlinear) or an exact one (odd or even sigma: nothing to remove). `project(rows, q)`:
rows P (rows (m, p)); `target(theta, q)`: P theta. Q is dense (p x k, the size of V): the
memory-lean path, which never stores V, keeps the plain loss.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Optional

import jax
import jax.numpy as jnp

from recon.config import choices
from recon.models import features
from recon.certify import symmetry

Array = jax.Array

LINEAR, CONSTANT = 'linear', 'constant'


def compensation(activation: Optional[str]) -> Optional[str]:
  """LINEAR (odd part linear: relu-like), CONSTANT (even part constant: sigmoid-like) or None
  (no near-symmetry to quotient out: both parts nonlinear, or an exact symmetry)."""
  if activation is None:
    return None
  sym = symmetry.of_activation(features.exact_forward(activation))
  if sym.kind != symmetry.SIGN_COMPENSATED:
    return None
  return LINEAR if sym.odd_nonlinear < symmetry.NONLINEAR_RTOL else CONSTANT


def active(mode: str, activation: Optional[str], m: int, d: int) -> bool:
  """Whether attack.sign_quotient `mode` quotients the features of m candidates in R^d:
  'on' for every activation with a compensated sign, 'auto' only when also m > d (the
  candidates' linear parts then span range(V): the sign traps), 'off' never."""
  if mode not in choices.SIGN_QUOTIENT:
    raise ValueError(f'attack.sign_quotient: unknown {mode!r}; accepted: {", ".join(choices.SIGN_QUOTIENT)}')
  if mode == 'off' or compensation(activation) is None:
    return False
  return mode == 'on' or m > d


def dimension(activation: Optional[str], d: int) -> int:
  """k, the dimension of the compensating space W (0 without a quotient)."""
  kind = compensation(activation)
  return d if kind == LINEAR else 1 if kind == CONSTANT else 0


def basis(v: Array, activation: str, mask: Optional[Array] = None) -> Array:
  """Q (p x k), orthonormal columns spanning W: range(V) (masked rows zero) or the (masked)
  constant vector. Pure (jit / vmap)."""
  kind = compensation(activation)
  if kind is None:
    raise ValueError(f'sign quotient: activation {activation!r} has no compensated sign')
  ones = jnp.ones((v.shape[0],), v.dtype) if mask is None else mask.astype(v.dtype)
  w = v * ones[:, None] if kind == LINEAR else ones[:, None]
  q, _ = jnp.linalg.qr(w)
  return q


def project(rows: Array, q: Array) -> Array:
  """rows (I - Q Q^T): each row's part off W."""
  return rows - (rows @ q) @ q.T


def target(theta: Array, q: Array) -> Array:
  """(I - Q Q^T) theta (a vector, or a (p, C) matrix column by column)."""
  return theta - q @ (q.T @ theta)


def feature_fn(v: Array, activation: str, q: Array) -> Callable[[Array], Array]:
  """X -> Psi(X) = sigma(X V^T)(I - Q Q^T) (m x p), the quotient's feature map (a plain
  function: the certificate takes its dense or one-block route)."""
  act = features.exact_forward(activation)
  return lambda x: project(features.rf_features(v, x, act), q.astype(x.dtype))


def certify_settings(settings: Dict[str, Any], k: int) -> Dict[str, Any]:
  """`recon.certify.rung.certify_or_polish`'s settings for a quotient of k dimensions: p - k
  equations for the counting rule, no sign flips in the rung (unchanged for k = 0)."""
  if not k:
    return settings
  return dict(settings, p=int(settings['p']) - int(k),
              rung=dataclasses.replace(settings['rung'], sign_sweeps=0))
