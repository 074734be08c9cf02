"""Each activation's row-sign symmetry, measured from its Hermite parity, and what it means
for the projection loss (the property the metric and the certificate rely on)."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon.models import features, random_features
from recon.certify import symmetry
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


@pytest.mark.parametrize('name,degree', [
    ('relu', 1.0), ('relu_smooth', 1.0), ('relu_leaky_backward', 1.0), ('quadratic', 2.0),
    ('cubic', 3.0), ('quartic', 4.0),
    ('relu_tanh', None), ('softplus_tanh', None), ('tanh', None), ('gelu', None), ('sin', None)])
def test_positive_homogeneity_is_measured_with_its_degree(name, degree):
  sym = symmetry.of_activation(name)
  if degree is None:
    assert sym.degree is None and not sym.scale_invariant
    assert 'norm' not in sym.certified_up_to
  else:
    assert sym.degree == pytest.approx(degree, abs=1e-9)
    assert sym.scale_invariant and sym.certified_up_to.endswith('the norm of each row')


def test_a_new_homogeneous_activation_is_found_without_an_edit(monkeypatch):
  monkeypatch.setitem(features.ACTIVATIONS, 'leaky_probe', lambda z: jnp.where(z > 0, z, 0.1 * z))
  monkeypatch.setitem(features.ACTIVATIONS, 'abs15_probe', lambda z: jnp.abs(z) ** 1.5)
  monkeypatch.setitem(features.ACTIVATIONS, 'shifted_relu_probe', lambda z: jnp.maximum(z - 0.1, 0))
  assert symmetry.of_activation('leaky_probe').degree == pytest.approx(1.0)
  assert symmetry.of_activation('abs15_probe').degree == pytest.approx(1.5)
  assert symmetry.of_activation('shifted_relu_probe').degree is None  # a bias breaks it


def test_unknown_activation_is_blind_to_the_norm_too():
  assert symmetry.scale_invariant(None)
  assert 'norm' in symmetry.UNKNOWN.certified_up_to


def _rf(activation, d=6, p=300, bias=0.0):
  v = features.random_weights(jax.random.PRNGKey(1), p, d)
  return lambda z: features.rf_features(v, z, activation) + bias


@pytest.mark.parametrize('activation,blind', [('relu', True), ('quadratic', True),
                                              ('relu_tanh', False), ('gelu', False),
                                              ('tanh', False), ('softplus_tanh', False)])
def test_a_feature_map_is_measured_on_rows(activation, blind):
  x = jax.random.normal(jax.random.PRNGKey(2), (5, 6))
  assert symmetry.feature_map_scale_blind(_rf(activation), x) == blind
  sym = symmetry.of_features(activation, _rf(activation), x)
  assert sym.scale_invariant == blind and sym.kind == symmetry.of_activation(activation).kind


def test_a_bias_in_the_feature_map_makes_relu_see_the_norm():
  x = jax.random.normal(jax.random.PRNGKey(2), (5, 6))
  assert not symmetry.of_features('relu', _rf('relu', bias=0.3), x).scale_invariant
  assert symmetry.of_features('relu', None, x).scale_invariant  # no map: the activation's


@pytest.mark.parametrize('activation', ['relu', 'quadratic'])
def test_a_homogeneous_map_leaves_the_loss_at_the_truth_when_rows_are_rescaled(activation):
  n, d, p = 4, 5, 400
  x = jax.random.normal(jax.random.PRNGKey(0), (n, d))
  ff = _rf(activation, d, p)
  theta = random_features.min_norm_solution(ff(x), jax.random.normal(jax.random.PRNGKey(3), (n,)))
  scaled = x * jnp.array([0.6, 1.0, 1.4, 2.0])[:, None]
  assert float(projection.projection_loss(ff(scaled), theta)) < 1e-5  # float32 + ridge
  # relu + tanh sees the norm: the rescaled rows are off the loss's zero.
  ff2 = _rf('relu_tanh', d, p)
  theta2 = random_features.min_norm_solution(ff2(x), jax.random.normal(jax.random.PRNGKey(3), (n,)))
  assert float(projection.projection_loss(ff2(scaled), theta2)) > 1e-4


# --- Inputs that tell the formulas apart (mutation testing by mutmut, scripts/mutations.py). ---

def test_a_symmetry_measured_blind_to_the_norm_says_so():
  sym = symmetry.of_activation('relu_tanh')
  assert not sym.scale_invariant
  blind = sym.with_scale(True)
  assert blind.scale_invariant and np.isnan(blind.degree) and blind.kind == sym.kind
  assert not blind.with_scale(False).scale_invariant
  assert sym.with_scale(False) is sym


def test_an_activation_infinite_at_one_grid_point_has_no_degree():
  """Non-finite on the base grid only (its scaled grids miss that point): no degree, not a
  degree fitted through an infinite norm."""
  z0 = float(symmetry.HOMOGENEITY_GRID[7])
  assert not any(np.any(np.isclose(c * symmetry.HOMOGENEITY_GRID, z0, rtol=0, atol=1e-12))
                 for c in symmetry.HOMOGENEITY_SCALES)
  hostile = lambda t: jnp.where(t == z0, jnp.inf, jnp.maximum(t, 0.0))  # noqa: E731
  assert symmetry.homogeneity_degree(hostile) is None
  # Fitted in float64: relu's degree is 1 to rounding (float32 would leave ~1e-7).
  assert abs(symmetry.homogeneity_degree(lambda t: jnp.maximum(t, 0.0)) - 1.0) < 1e-12
