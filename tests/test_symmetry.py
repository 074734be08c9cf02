"""Each activation's row-sign symmetry, measured from its Hermite parity, and what it means
for the projection loss (the property the metric and the certificate rely on)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon import features, symmetry
from recon.models import random_features
from recon.objectives import projection


@pytest.mark.parametrize('name,kind', [
    ('tanh', symmetry.SIGN), ('sin', symmetry.SIGN), ('cubic', symmetry.SIGN),
    ('quadratic', symmetry.SIGN), ('quartic', symmetry.SIGN),
    ('relu', symmetry.SIGN_COMPENSATED), ('relu_smooth', symmetry.SIGN_COMPENSATED),
    ('gelu', symmetry.SIGN_COMPENSATED),
    ('relu_tanh', symmetry.NONE), ('softplus_tanh', symmetry.NONE)])
def test_every_registered_activation_is_classified_by_its_parity(name, kind):
  sym = symmetry.of_activation(name)
  assert sym.kind == kind
  assert sym.sign_invariant == (kind != symmetry.NONE)
  assert ('sign' in sym.certified_up_to) == sym.sign_invariant


def test_every_activation_has_a_symmetry_and_unknown_is_the_cautious_side():
  kinds = (symmetry.NONE, symmetry.SIGN, symmetry.SIGN_COMPENSATED)
  for name in features.ACTIVATIONS:
    assert symmetry.of_activation(name).kind in kinds
  assert symmetry.sign_invariant(None)


def test_hermite_masses_match_closed_forms():
  # cubic: z^3 = He_3 + 3 He_1, ||z^3||^2 = 15; the odd mass beyond order 1 is 3! / 15.
  mass = symmetry.parity_masses(lambda z: z ** 3)
  assert mass['even'] == pytest.approx(0.0, abs=1e-12)
  assert mass['odd_nonlinear'] == pytest.approx(6 / 15, rel=1e-9)
  # relu: the odd part is z / 2 exactly; the even part |z| / 2 is nonlinear.
  mass = symmetry.parity_masses(lambda z: jnp.maximum(z, 0.0))
  assert mass['odd_nonlinear'] < 1e-12 < mass['even_nonlinear']


def test_a_new_activation_is_classified_without_an_edit(monkeypatch):
  monkeypatch.setitem(features.ACTIVATIONS, 'sigmoid_probe', jax.nn.sigmoid)  # 1/2 + odd
  monkeypatch.setitem(features.ACTIVATIONS, 'swish_probe', jax.nn.silu)  # z/2 + even
  monkeypatch.setitem(features.ACTIVATIONS, 'exp_probe', jnp.exp)  # both parts nonlinear
  assert symmetry.of_activation('sigmoid_probe').kind == symmetry.SIGN_COMPENSATED
  assert symmetry.of_activation('swish_probe').kind == symmetry.SIGN_COMPENSATED
  assert symmetry.of_activation('exp_probe').kind == symmetry.NONE


def _loss_with_rows_flipped(activation, flip, n=5, d=6, p=600, seed=0):
  kx, kv, ky = jax.random.split(jax.random.PRNGKey(seed), 3)
  x = jax.random.normal(kx, (n, d))
  x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * jnp.sqrt(d)
  v = features.random_weights(kv, p, d)
  ff = lambda z: features.rf_features(v, z, activation)  # noqa: E731
  theta = random_features.min_norm_solution(ff(x), jax.random.normal(ky, (n,)))
  signs = jnp.where(jnp.arange(n)[:, None] == jnp.asarray(flip)[None, :], -1.0, 1.0).prod(1)
  return float(projection.projection_loss(ff(x * signs[:, None]), theta))


@pytest.mark.parametrize('activation', ['tanh', 'sin', 'cubic', 'quadratic'])
def test_an_exact_symmetry_leaves_the_loss_at_the_truth_when_rows_flip(activation):
  assert _loss_with_rows_flipped(activation, [0, 3]) < 1e-9


@pytest.mark.parametrize('activation', ['relu_tanh', 'softplus_tanh', 'relu'])
def test_without_an_exact_symmetry_a_flip_costs_loss(activation):
  # relu's symmetry is approximate: with p >> d n the others cannot supply V x_i exactly.
  assert _loss_with_rows_flipped(activation, [0, 3]) > 1e-4


def test_a_part_small_but_not_zero_makes_the_symmetry_approximate_not_exact(monkeypatch):
  """tanh + 1e-3 z^2: the even part's mass (~1e-5) is below NONLINEAR_RTOL, so the sign is
  (nearly) invisible, but it is not zero: the symmetry is SIGN_COMPENSATED (flips cost a
  little loss, the precision rung tries them), never the exact SIGN."""
  monkeypatch.setitem(features.ACTIVATIONS, 'tanh_plus_probe', lambda z: jnp.tanh(z) + 1e-3 * z * z)
  mass = symmetry.parity_masses(features.get_activation('tanh_plus_probe'))
  assert symmetry.NONLINEAR_RTOL ** 2 < mass['even'] < symmetry.NONLINEAR_RTOL
  assert symmetry.of_activation('tanh_plus_probe').kind == symmetry.SIGN_COMPENSATED
