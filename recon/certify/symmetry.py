"""What the features cannot see: each activation's row-sign symmetry, from its Hermite parity,
and each row's norm, from its positive homogeneity.

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

Scale. A positively homogeneous sigma of degree k (sigma(c z) = c^k sigma(z) for every c > 0:
relu and relu_smooth with k = 1, quadratic 2, cubic 3, quartic 4) gives phi(c x) = c^k phi(x):
a row's feature keeps its direction when the row is rescaled, so the span, the projection
loss and its certificate cannot see any row's norm, EXACTLY. The attack searches on the
sqrt(d) sphere and finds each row's direction; its norm is not identifiable from the model.
The metric then scores each row up to its norm (`scale_invariant`: candidate and true row
compared as directions) and `certified_up_to` says so. Homogeneity is measured, not listed
(`homogeneity_degree`): k fitted from ||sigma(c z)|| / ||sigma(z)|| on a grid for a few c > 0,
then sigma(c z) = c^k sigma(z) checked to `HOMOGENEITY_RTOL`. A feature map that is not a bare
sigma(V x) (a network's parameter gradients, biases included) is tested the same way on
rows (`feature_map_scale_blind`): phi(c x) parallel to phi(x) for each c. relu + tanh,
softplus + tanh, tanh, gelu, softplus, sin are not homogeneous: their features see the norm.

The parity is measured, not listed: Gauss-Hermite quadrature of ||o - c_1 z||^2 and
||e - c_0||^2 relative to ||sigma||^2 (the squared Hermite mass of the odd coefficients of
order >= 3 and of the even ones of order >= 2); a part below `NONLINEAR_RTOL` counts as
affine. A new activation registered in `recon.models.features.ACTIVATIONS` is classified with
no edit here.
"""
from __future__ import annotations

import dataclasses
import functools
from typing import Dict, Optional

import jax
import jax.numpy as jnp
import numpy as np

from recon.models import features

# Relative L2(N(0,1)) size below which an odd/even part counts as affine: a flip then costs
# at most ~1e-8 of the loss per unit share, below every tol the attacks use.
NONLINEAR_RTOL = 1e-4
QUADRATURE_NODES = 120
# Homogeneity: sigma(c z) = c^k sigma(z) to this relative L2 error on HOMOGENEITY_GRID for each
# c in HOMOGENEITY_SCALES (one not a power of 2, so float rounding cannot fake it).
HOMOGENEITY_RTOL = 1e-6
HOMOGENEITY_SCALES = (0.5, 1.7, 3.0)
HOMOGENEITY_GRID = np.linspace(-6.0, 6.0, 1201)
# Feature maps measured on rows (float32 features): 1 - cos(phi(c x), phi(x)) below this.
FEATURE_SCALE_ATOL = 1e-6
SCALE_PROBE_ROWS = 4  # rows a feature map is measured at (a property of the map, not the rows)

NONE = 'none'
SIGN = 'sign'  # exact: odd or even sigma
SIGN_COMPENSATED = 'sign_compensated'  # near: an affine part absorbs the flip


@dataclasses.dataclass(frozen=True)
class Symmetry:
  """The symmetry of one activation's features under x_i -> -x_i (rows permute always).

  `kind`: NONE, SIGN (exact) or SIGN_COMPENSATED (up to an affine part's compensation);
  `odd_nonlinear` / `even_nonlinear`: relative Hermite mass of the odd part beyond order 1
  and of the even part beyond order 0 (each in [0, 1]); `degree`: k of a positively
  homogeneous sigma (None: not homogeneous, the features see each row's norm).
  """
  kind: str
  odd_nonlinear: float
  even_nonlinear: float
  degree: Optional[float] = None

  @property
  def scale_invariant(self) -> bool:
    """True when the features cannot see a row's norm: score each row up to its norm."""
    return self.degree is not None

  @property
  def sign_invariant(self) -> bool:
    """True when the features cannot (or barely) tell x_i from -x_i: score up to sign."""
    return self.kind != NONE

  @property
  def certified_up_to(self) -> str:
    """What a certificate built on these features can claim the rows are known up to."""
    what = ['the order of the rows']
    if self.kind != NONE:
      what.append('the sign of each row')
    if self.scale_invariant:
      what.append('the norm of each row')
    return ', '.join(what[:-1]) + ' and ' + what[-1] if len(what) > 1 else what[0]

  def with_scale(self, scale_invariant: bool) -> 'Symmetry':
    """This symmetry with the norm's part as measured on a feature map (degree nan: blind
    to the norm with no single degree measured)."""
    if scale_invariant == self.scale_invariant:
      return self
    return dataclasses.replace(self, degree=float('nan') if scale_invariant else None)


NORM_NOT_IDENTIFIABLE = 'norm not identifiable from this model'
UNKNOWN = Symmetry(SIGN, float('nan'), float('nan'), float('nan'))


def homogeneity_degree(sigma) -> Optional[float]:
  """k when sigma(c z) = c^k sigma(z) for every c in HOMOGENEITY_SCALES (relative L2 error on
  HOMOGENEITY_GRID below HOMOGENEITY_RTOL, float64), else None. k is fitted per c from the
  norms, log(||sigma(c z)|| / ||sigma(z)||) / log c, and must agree across c."""
  z = HOMOGENEITY_GRID
  with jax.enable_x64(True), jax.ensure_compile_time_eval():
    f = lambda t: np.asarray(sigma(jnp.asarray(t, jnp.float64)), np.float64)  # noqa: E731
    base = f(z)
    scaled = [f(c * z) for c in HOMOGENEITY_SCALES]
  norm = float(np.linalg.norm(base))
  if not norm > 0 or not np.all(np.isfinite(base)):
    return None
  degrees = []
  for c, sc in zip(HOMOGENEITY_SCALES, scaled):
    if not np.all(np.isfinite(sc)) or not np.linalg.norm(sc) > 0:
      return None
    degrees.append(np.log(np.linalg.norm(sc) / norm) / np.log(c))
  k = float(np.mean(degrees))
  for c, sc in zip(HOMOGENEITY_SCALES, scaled):
    if np.linalg.norm(sc - c ** k * base) > HOMOGENEITY_RTOL * np.linalg.norm(sc):
      return None
  return k


def feature_map_scale_blind(feature_fn, x) -> bool:
  """True when phi(c x_i) is parallel to phi(x_i) (1 - cos < FEATURE_SCALE_ATOL) for every
  row x_i of `x` and every c in HOMOGENEITY_SCALES: the feature map cannot see a row's norm."""
  x = jnp.asarray(x)
  base = np.asarray(feature_fn(x), np.float64).reshape(len(x), -1)
  for c in HOMOGENEITY_SCALES:
    other = np.asarray(feature_fn(x * c), np.float64).reshape(len(x), -1)
    denom = np.linalg.norm(base, axis=1) * np.linalg.norm(other, axis=1)
    if not np.all(denom > 0):
      return False
    cos = np.sum(base * other, axis=1) / denom
    if not np.all(1.0 - cos < FEATURE_SCALE_ATOL):
      return False
  return True


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
  """The `Symmetry` of `recon.models.features` activation `name` (None: unknown, treated as SIGN)."""
  if name is None:
    return UNKNOWN
  mass = parity_masses(features.get_activation(name))
  if min(mass['odd_nonlinear'], mass['even_nonlinear']) >= NONLINEAR_RTOL:
    kind = NONE
  elif min(mass['odd'], mass['even']) < NONLINEAR_RTOL ** 2:
    kind = SIGN
  else:
    kind = SIGN_COMPENSATED
  return Symmetry(kind, mass['odd_nonlinear'], mass['even_nonlinear'],
                  homogeneity_degree(features.get_activation(name)))


def of_features(activation: Optional[str], feature_fn=None, x=None) -> Symmetry:
  """The run's symmetry: the sign's from `activation`; the norm's measured on `feature_fn` at
  the first SCALE_PROBE_ROWS rows of `x` when both are given (`feature_map_scale_blind`),
  else `activation`'s."""
  sym = of_activation(activation)
  if feature_fn is None or x is None or not len(x):
    return sym
  return sym.with_scale(feature_map_scale_blind(feature_fn, np.asarray(x)[:SCALE_PROBE_ROWS]))


def sign_invariant(activation: Optional[str]) -> bool:
  """True when `activation`'s features cannot tell a row from its negative (or it is unknown)."""
  return of_activation(activation).sign_invariant


def scale_invariant(activation: Optional[str]) -> bool:
  """True when `activation` is positively homogeneous (or unknown): features blind to norms."""
  return of_activation(activation).scale_invariant
