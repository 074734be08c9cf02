"""Issue #17: the min-norm fit and the projection loss are right at the papers' widths
(p ~ 3e6) in float32; the victim interpolation check; the matmul_precision policy."""
import functools
import json
import os
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from configs import rf_cifar, rf_synthetic
from recon.config import validate as config_lib
from recon import data, pipelines
from recon.models import features, random_features
from recon.models import min_norm as precision
from recon.runtime import runs
from recon.pipelines import random_features as rf_pipeline

WIDE = 3_072_000  # 10 d n at the papers' CIFAR-10 setting (d = 3072, n = 100)


def _data(n=10, d=10):
  x, y = data.synthetic_sphere(jax.random.PRNGKey(0), n, d, 0.5)
  return runs.split_keys(0), x, y


@pytest.mark.slow
def test_dense_fit_and_loss_floor_at_3e6_float32():
  keys, x, y = _data()
  prob = jax.jit(lambda k, x, y: rf_pipeline.make_rf_problem(
      k, x, y, p_total=WIDE, activation='relu'))(keys, x, y)
  # The SVD with numpy's max(n, p) * eps cut-off gave train_mse / var(y) ~ 0.1-0.5 here.
  assert float(prob['train_mse']) <= 1e-8 * float(jnp.var(y))
  loss = jax.jit(lambda xx, pr: rf_pipeline.rf_loss(xx, pr, activation='relu', jitter=1e-6))(
      x, prob)
  assert float(loss) <= 1e-8


@pytest.mark.slow
def test_lean_fit_and_streamed_loss_floor_at_3e6_float32():
  keys, x, y = _data()
  chunk, n_chunks = rf_pipeline.lean_layout(WIDE, 65536)
  prob = jax.jit(lambda k, x, y: rf_pipeline.make_rf_problem_lean(
      k, x, y, p=WIDE, activation='relu', chunk=chunk, n_chunks=n_chunks,
      rng='hash_box_muller'))(keys, x, y)
  assert float(prob.pop('train_mse')) <= 1e-8 * float(jnp.var(y))
  loss_fn = rf_pipeline.rf_lean_loss(activation='relu', chunk=chunk, jitter=1e-6,
                                    residual='stored', rng='hash_box_muller')
  assert float(jax.jit(loss_fn)(x, prob)) <= 1e-8


def test_gram_route_matches_float64_pinv_and_cutoff_does_not_depend_on_p():
  rng = np.random.default_rng(0)
  phi = rng.standard_normal((6, 4000)).astype(np.float32) + 0.3
  y = rng.standard_normal(6).astype(np.float32)
  theta = np.asarray(precision.min_norm_gram(jnp.asarray(phi), jnp.asarray(y)), np.float64)
  expected = np.linalg.pinv(phi.astype(np.float64)) @ y.astype(np.float64)
  np.testing.assert_allclose(theta, expected, rtol=1e-4, atol=1e-7 * np.abs(expected).max())
  # The Gram is float64 (products of float32 Phi are exact in float64).
  g = np.asarray(precision.gram(jnp.asarray(phi), chunk=512), np.float64)
  g64 = phi.astype(np.float64) @ phi.astype(np.float64).T
  assert np.abs(g - g64).max() <= 1e-13 * np.abs(g64).max()
  # min_norm_solution takes the Gram route above SVD_MAX_RATIO * n and still interpolates.
  assert phi.shape[1] > precision.SVD_MAX_RATIO * phi.shape[0]
  t = random_features.min_norm_solution(jnp.asarray(phi), jnp.asarray(y))
  assert float(random_features.train_mse(jnp.asarray(phi), t, jnp.asarray(y))) < 1e-10


def test_gram_route_handles_rank_deficiency():
  rng = np.random.default_rng(1)
  base = rng.standard_normal((3, 2000)).astype(np.float32)
  phi = np.concatenate([base, base[:1] + base[1:2]], 0)  # rank 3 of 4 rows (to rounding)
  y = rng.standard_normal(4).astype(np.float32)
  theta = np.asarray(precision.min_norm_gram(jnp.asarray(phi), jnp.asarray(y)), np.float64)
  # The least-squares min-norm solution with the rounding-level direction dropped.
  expected = np.linalg.pinv(phi.astype(np.float64), rcond=1e-5) @ y.astype(np.float64)
  np.testing.assert_allclose(theta, expected, atol=1e-4 * np.abs(expected).max())


def test_interpolation_report_threshold():
  y = np.array([1.0, -1.0, 1.0, -1.0])
  assert precision.interpolation_report(1e-12, y, n=4, p=100)['victim_interpolates'] is True
  bad = precision.check_victim(0.54, y, n=4, p=3_072_000)
  assert bad['victim_interpolates'] is False and bad['train_mse_over_var_y'] == pytest.approx(0.54)
  assert precision.interpolation_report(0.5, y, n=10, p=4)['victim_interpolates'] is None
  assert precision.interpolation_report(0.0, np.ones(3), 3, 9)['victim_interpolates'] is True


def test_check_victim_records_the_fits_route_and_solve_dtype_and_says_so(caplog):
  y = np.array([1.0, -1.0, 1.0, -1.0])
  with caplog.at_level('INFO'):
    wide = precision.check_victim(1e-18, y, n=4, p=100, dtype='float32')
  assert (wide['fit_route'], wide['fit_solve_dtype']) == ('gram', 'float64')
  lines = [r.getMessage() for r in caplog.records if 'victim fit' in r.getMessage()]
  assert len(lines) == 1 and 'float64' in lines[0] and 'float32 (run.dtype)' in lines[0]
  caplog.clear()
  with caplog.at_level('INFO'):
    near = precision.check_victim(1e-18, y, n=4, p=20, dtype='float32')  # p <= 8n: the SVD
    same = precision.check_victim(1e-18, y, n=4, p=100, dtype='float64')
  assert (near['fit_route'], near['fit_solve_dtype']) == ('svd', 'float32')
  assert (same['fit_route'], same['fit_solve_dtype']) == ('gram', 'float64')
  assert not [r for r in caplog.records if 'victim fit' in r.getMessage()]


def _tiny(tmp_path, overrides):
  c = rf_synthetic.get_config()
  c.data.n, c.data.d, c.victim.p, c.attack.max_steps, c.run.chunk_steps = 3, 4, 120, 20, 10
  c.update_from_flattened_dict(overrides)
  return pipelines.run(c, str(tmp_path / 'run'))


@pytest.mark.slow  # 8-10 CPU-s a case
@pytest.mark.parametrize('value,expected', [('high', 'HIGH'), ('default', 'DEFAULT')])
def test_matmul_precision_reaches_the_compiled_programs(tmp_path, value, expected):
  summary = _tiny(tmp_path, {'run.matmul_precision': value})
  assert summary['config']['run']['matmul_precision'] == value
  assert summary['metrics']['matmul_precision'] == value
  assert summary['metrics']['victim_interpolates'] is True
  # The run left the policy in force: a program lowered now (the run's loss) carries it.
  keys, x, y = _data(3, 4)
  prob = rf_pipeline.make_rf_problem(keys, x, y, p_total=120, activation='relu_tanh')
  text = jax.jit(lambda xx: rf_pipeline.rf_loss(xx, prob, activation='relu_tanh',
                                               jitter=1e-6)).lower(x).as_text()
  found = set(re.findall(r'precision = \[(\w+), \w+\]', text))
  assert found == {expected}
  assert json.load(open(tmp_path / 'run' / 'summary.json'))['metrics']['matmul_precision'] == value


def test_matmul_precision_default_is_highest_and_bad_value_is_one_line():
  assert rf_synthetic.get_config().run.matmul_precision == 'highest'
  c = rf_synthetic.get_config()
  c.run.matmul_precision = 'tf32'
  with pytest.raises(config_lib.ConfigError) as e:
    config_lib.validate(c)
  assert str(e.value) == ("config.run.matmul_precision: invalid value 'tf32'; accepted: one of "
                          "'highest', 'high', 'default'")
  assert '\n' not in str(e.value)


def test_every_config_has_matmul_precision():
  import importlib  # pylint: disable=import-outside-toplevel
  root = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'configs')
  names = [f[:-3] for f in os.listdir(root) if f.endswith('.py')
           and not f.startswith('_')]
  for name in names:
    cfg = importlib.import_module(f'configs.{name}').get_config()
    assert cfg.run.matmul_precision == 'highest', name


@pytest.mark.slow  # ~7 CPU-s
def test_a_victim_that_does_not_interpolate_is_recorded(tmp_path, monkeypatch):
  # The issue-#17 failure mode: a fit that drops half the spectrum (here: theta halved).
  fit = random_features.min_norm_solution
  monkeypatch.setattr(random_features, 'min_norm_solution',
                      lambda phi, y, n_features=None: 0.5 * fit(phi, y, n_features))
  m = _tiny(tmp_path, {'victim.p': 123, 'attack.max_steps': 10})['metrics']
  assert m['victim_interpolates'] is False
  assert m['train_mse_over_var_y'] > 1e-2 and m['interpolation_tol'] == 1e-6
  assert (m['fit_route'], m['fit_solve_dtype']) == ('gram', 'float64')  # p = 123 > 8 n


def test_the_gram_fits_refinement_is_what_brings_the_residual_to_the_rounding_floor():
  """float64 Phi with cond(G) = 1e12 (singular values 1 .. 1e-6): the float64 eigen-solve alone
  leaves train_mse / var(y) ~ 1e-10 (eigh loses eps64 * cond(G)); the refinement against Phi
  ~ 1e-20 (measured)."""
  rng = np.random.default_rng(0)
  u = np.linalg.qr(rng.standard_normal((20, 20)))[0]
  w = np.linalg.qr(rng.standard_normal((2000, 20)))[0]
  phi = (u * np.logspace(0, -6, 20)) @ w.T
  y = rng.standard_normal(20)

  def residual(theta):
    return float(np.mean((phi @ np.asarray(theta) - y) ** 2) / np.var(y))

  with jax.enable_x64(True):
    unrefined = residual(precision.min_norm_gram(jnp.asarray(phi), jnp.asarray(y), refine_steps=0))
    refined = residual(precision.min_norm_gram(jnp.asarray(phi), jnp.asarray(y)))
    # The public fit takes the Gram route at this width and is refined too.
    public = residual(random_features.min_norm_solution(jnp.asarray(phi), jnp.asarray(y)))
  assert refined < 1e-17 and unrefined > 1e4 * refined and public == refined


def _photo_patch_features(n, size, p):
  """relu features of n bundled photo patches (size x size x 3)."""
  c = rf_cifar.get_config()
  c.data.n, c.data.image_size = n, size
  keys = runs.split_keys(0)
  x, y, _ = data.load(c.data, keys['data'], jnp.float32)
  phi = jax.jit(lambda k, x: features.rf_features(
      features.random_weights(k, p, x.shape[1]), x, 'relu'))(keys['model'], x)
  return phi, y


def test_the_fit_interpolates_correlated_photo_patches_where_a_float32_solve_does_not():
  """Issue #30: 100 photo patches (8 x 8 x 3) are correlated: G = Phi Phi^T (p = 5000, relu)
  has lambda_min / lambda_max 2.7e-7 while cond(Phi) is only 1.9e3. A float32 Gram solve with
  the cut-off n eps32 lambda_max drops the weakest eigen-directions: train_mse / var(y) 9.9e-5
  (measured). The float64 solve on the same float32 Phi: 2.4e-16, and theta* agrees with a
  float64 solve to 2.6e-8 (float32 rounding)."""
  phi, y = _photo_patch_features(100, 8, 5000)
  var = float(jnp.var(y))
  mse = jax.jit(random_features.train_mse)
  fit = jax.jit(random_features.min_norm_solution)(phi, y)
  assert fit.dtype == jnp.float32
  assert float(mse(phi, fit, y)) <= 1e-12 * var
  old = jax.jit(functools.partial(precision.min_norm_gram, solve_dtype='float32'))(phi, y)
  assert float(mse(phi, old, y)) > 1e-6 * var
  p64, y64 = np.asarray(phi, np.float64), np.asarray(y, np.float64)
  expected = p64.T @ np.linalg.solve(p64 @ p64.T, y64)
  err = np.linalg.norm(np.asarray(fit, np.float64) - expected) / np.linalg.norm(expected)
  assert err < 1e-6
  # Batched (as sweeps call it) the solve is float64 too.
  batched = jax.jit(jax.vmap(random_features.min_norm_solution))(phi[None], y[None])[0]
  np.testing.assert_array_equal(np.asarray(batched), np.asarray(fit))


@pytest.mark.slow  # ~N s on 2 CPU cores
def test_the_shipped_cifar_config_victim_interpolates_at_n100_d3072():
  """configs/rf_cifar.py as shipped (photo patches, n = 100, d = 3072, p = 10 d n = 3 072 000,
  relu, float32, memory-lean features): the fit only, as `run_lean` computes it. Before
  issue #30 (float32 Gram solve): train_mse / var(y) 7.5e-5, the victim did not interpolate."""
  c = rf_cifar.get_config()
  assert (c.data.n, c.data.d, c.victim.p, c.run.dtype) == (100, 3072, 3_072_000, 'float32')
  assert rf_pipeline.use_lean_features(c.data, c.victim, jnp.float32)
  keys = runs.split_keys(c.seed)
  x, y, _ = data.load(c.data, keys['data'], jnp.float32)
  chunk, n_chunks = rf_pipeline.lean_layout(c.victim.p, c.victim.feature_chunk)
  prob = jax.jit(lambda k, x, y: rf_pipeline.make_rf_problem_lean(
      k, x, y, p=c.victim.p, activation=c.victim.activation, chunk=chunk, n_chunks=n_chunks,
      rng=c.victim.weight_rng))(keys, x, y)
  assert prob['theta'].dtype == jnp.float32
  report = precision.check_victim(float(prob['train_mse']), y, c.data.n, c.victim.p, c.run.dtype)
  assert report['victim_interpolates'] is True
  assert report['train_mse_over_var_y'] < 1e-12
  assert (report['fit_route'], report['fit_solve_dtype']) == ('gram', 'float64')


def test_the_compensated_gram_error_does_not_grow_with_the_number_of_chunks():
  """4096 chunks of same-sign products summed in float32 (`solve_dtype` float32): plain
  summation drifts to ~2e-6 of G (measured), the Kahan-compensated sum stays at ~3e-8. The
  default sums float64 products (~1e-16)."""
  phi = jnp.abs(jax.random.normal(jax.random.PRNGKey(0), (4, 2 ** 18)))
  exact = np.asarray(phi, np.float64) @ np.asarray(phi, np.float64).T
  g = np.asarray(precision.gram(phi, chunk=64, solve_dtype='float32'), np.float64)
  assert np.abs(g - exact).max() / np.abs(exact).max() < 2e-7
  g = precision.gram(phi, chunk=64)
  assert g.dtype == jnp.float64
  assert np.abs(np.asarray(g) - exact).max() / np.abs(exact).max() < 1e-13
