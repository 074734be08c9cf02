"""What the features cannot see: each activation's row-sign symmetry, from its Hermite parity.

An attack that reads only the trained parameters sees the training set through the span
of its features, phi(x) = sigma(V x) (random features) or a network's parameter
gradients. Split sigma into its even and odd parts, e(z) = (sigma(z) + sigma(-z)) / 2 and
o(z) = (sigma(z) - sigma(-z)) / 2; in the Hermite basis (z ~ N(0, 1), the law of a
pre-activation v.x with v ~ N(0, I/d) and ||x||^2 = d) e holds the even coefficients c_k
and o the odd ones. Then phi(-x) = e(Vx) - o(Vx), and

  * odd sigma (e = 0: tanh, sin, cubic): phi(-x) = -phi(x), the same line; the span, hence
    every projection loss and its certificate, is blind to each row's sign EXACTLY;
  * even sigma (o = 0: quadratic, quartic): phi(-x) = phi(x), blind EXACTLY;
  * an odd part that is linear (c_k = 0 for odd k >= 3: relu, relu_smooth, gelu, softplus,
    silu, whose o(z) = z/2): phi(-x) = phi(x) - V x. Flipping a row changes its feature by
    a vector of the d-dimensional range of V, which the other rows' linear parts can nearly
    supply: a sign "with linear compensation", a near-symmetry (the sign traps of relu);
  * an even part that is constant (c_k = 0 for even k >= 2: sigmoid = 1/2 + odd):
    phi(-x) = 2 c_0 1 - phi(x): a sign with constant compensation, likewise;
  * both parts nonlinear (relu + tanh, softplus + tanh): phi(-x) is a new direction; the
    features see the sign, and the only symmetry left is the order of the rows.

A reconstruction is then defined, scored and certified only up to the symmetry: the
matching metric (`recon.metrics`) uses the sign-invariant distance exactly when
`sign_invariant`, and the certificate says what it certifies (`certified_up_to`).
Unknown activations (None: a model that does not name its activation) are treated as
sign-blind, the cautious side for both scoring and certifying.

The parity is measured, not listed: Gauss-Hermite quadrature of ||o - c_1 z||^2 and
||e - c_0||^2 relative to ||sigma||^2 (the squared Hermite mass of the odd coefficients of
order >= 3 and of the even ones of order >= 2); a part below `NONLINEAR_RTOL` counts as
affine. A new activation registered in `recon.features.ACTIVATIONS` is classified with
no edit here.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Dict, Optional

import jax
import jax.numpy as jnp
import numpy as np

from recon import features

# Relative L2(N(0,1)) size below which an odd/even part counts as affine: a flip then costs
# at most ~1e-8 of the loss per unit share, below every tol the attacks use.
NONLINEAR_RTOL = 1e-4
QUADRATURE_NODES = 120

NONE = 'none'
SIGN = 'sign'  # exact: odd or even sigma
SIGN_COMPENSATED = 'sign_compensated'  # near: an affine part absorbs the flip


@dataclasses.dataclass(frozen=True)
class Symmetry:
  """The symmetry of one activation's features under x_i -> -x_i (rows permute always).

  `kind`: NONE, SIGN (exact) or SIGN_COMPENSATED (up to an affine part's compensation);
  `odd_nonlinear` / `even_nonlinear`: relative Hermite mass of the odd part beyond order 1
  and of the even part beyond order 0 (each in [0, 1]).
  """
  kind: str
  odd_nonlinear: float
  even_nonlinear: float

  @property
  def sign_invariant(self) -> bool:
    """True when the features cannot (or barely) tell x_i from -x_i: score up to sign."""
    return self.kind != NONE

  @property
  def certified_up_to(self) -> str:
    """What a certificate built on these features can claim the rows are known up to."""
    return ('the order of the rows' if self.kind == NONE else
            'the order of the rows and the sign of each row')


UNKNOWN = Symmetry(SIGN, float('nan'), float('nan'))


def parity_masses(sigma, nodes: int = QUADRATURE_NODES) -> Dict[str, float]:
  """Relative Hermite masses of sigma's parts under z ~ N(0, 1), by Gauss-Hermite
  (probabilists') quadrature in float64, each over ||sigma||^2: `odd` and `even` (whole
  parts), `odd_nonlinear` (odd beyond order 1) and `even_nonlinear` (even beyond order 0)."""
  z, w = np.polynomial.hermite_e.hermegauss(nodes)
  w = w / w.sum()
  # Concrete even when first asked inside a trace (jit / vmap of a loss that reads it).
  with jax.enable_x64(True), jax.ensure_compile_time_eval():
    plus = np.asarray(sigma(jnp.asarray(z, jnp.float64)), np.float64)
    minus = np.asarray(sigma(jnp.asarray(-z, jnp.float64)), np.float64)
  odd, even = (plus - minus) / 2, (plus + minus) / 2
  total = max(float(np.sum(w * plus ** 2)), 1e-300)
  mass = lambda f: float(np.sum(w * f ** 2) / total)
  return {'odd': mass(odd), 'even': mass(even),
          'odd_nonlinear': mass(odd - np.sum(w * odd * z) * z),  # less c_1 He_1
          'even_nonlinear': mass(even - np.sum(w * even))}  # less c_0


@functools.lru_cache(maxsize=None)
def of_activation(name: Optional[str]) -> Symmetry:
  """The `Symmetry` of `recon.features` activation `name` (None: unknown, treated as SIGN)."""
  if name is None:
    return UNKNOWN
  mass = parity_masses(features.get_activation(name))
  if min(mass['odd_nonlinear'], mass['even_nonlinear']) >= NONLINEAR_RTOL:
    kind = NONE
  elif min(mass['odd'], mass['even']) < NONLINEAR_RTOL ** 2:
    kind = SIGN
  else:
    kind = SIGN_COMPENSATED
  return Symmetry(kind, mass['odd_nonlinear'], mass['even_nonlinear'])


def sign_invariant(activation: Optional[str]) -> bool:
  """True when `activation`'s features cannot tell a row from its negative (or it is unknown)."""
  return of_activation(activation).sign_invariant
