"""Tests of recon/attack/data_subspace.py and the subspace-aware pipelines (recon/subspace_pipeline.py)."""
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from configs import base
from recon.config import validate as config_lib
from recon import data, errors, pipelines
from recon.attack import data_subspace as subspace
from recon.config import sections
from recon.pipelines import subspace as subspace_pipeline

FLOOR = sections.Subspace().noise_floor  # attack.subspace.noise_floor, its default


def test_planted_subspace_rows_lie_in_the_basis_span_on_the_sphere():
  x, y, u = data.synthetic_subspace(jax.random.PRNGKey(0), 7, 12, 3)
  assert x.shape == (7, 12) and y.shape == (7,) and u.shape == (12, 3)
  np.testing.assert_allclose(u.T @ u, np.eye(3), atol=1e-5)
  np.testing.assert_allclose(np.linalg.norm(x, axis=1), np.sqrt(12), rtol=1e-5)
  assert subspace.subspace_residual(x, u).max() < 1e-5


def test_principal_angles():
  e = np.eye(5)
  np.testing.assert_allclose(subspace.principal_angles(e[:, :2], e[:, :2] @ [[0, 1], [1, 0]]),
                             0, atol=1e-7)
  np.testing.assert_allclose(subspace.principal_angles(e[:, :2], e[:, 2:4]), np.pi / 2, atol=1e-7)
  theta = 0.3
  b = np.stack([e[0], np.cos(theta) * e[1] + np.sin(theta) * e[2]], 1)
  np.testing.assert_allclose(subspace.principal_angles(e[:, :2], b), [0, theta], atol=1e-7)
  # Small angles stay accurate (no arccos cancellation).
  b = np.stack([e[0], np.cos(1e-6) * e[1] + np.sin(1e-6) * e[2]], 1)
  np.testing.assert_allclose(subspace.principal_angles(e[:, :2], b)[1], 1e-6, rtol=1e-4)


def test_choose_k_cuts_at_the_largest_gap_above_the_floor():
  assert subspace.choose_k(np.array([5.0, 4.0, 3.0, 1e-6, 1e-7]), FLOOR) == 3
  assert subspace.choose_k(np.array([5.0, 0.01, 0.009, 0.008, 1e-6]), FLOOR) == 1
  # The drop to the noise floor counts as a gap: weak but real directions are kept.
  assert subspace.choose_k(np.array([5.0, 0.5, 0.4, 0.3, 1e-6]), FLOOR) == 4
  # Below the relative floor nothing counts: a flat spectrum keeps everything above it.
  assert subspace.choose_k(np.array([1.0, 1.0, 1.0, 1.0]), FLOOR) == 4


@pytest.mark.slow  # ~7 CPU-s: trains a two-layer net
def test_planted_subspace_recovered_from_a_low_rank_weight_change():
  x, _, u = data.synthetic_subspace(jax.random.PRNGKey(1), 10, 30, 4)
  a = jax.random.normal(jax.random.PRNGKey(2), (50, 10))
  dw = a @ x + 1e-6 * jax.random.normal(jax.random.PRNGKey(3), (50, 30))  # rows in span(X)
  est = subspace.estimate_subspace(dw, None, FLOOR)
  assert est['k'] == 4
  assert subspace.principal_angles(est['basis'], u).max() < 1e-3
  assert np.asarray(est['basis']).shape == (30, 4)


def _two_layer_cfg(overrides=None):
  """A tiny two-layer net on a planted 3-dim subspace of R^12 (no escalation, no polish)."""
  c = base.get_config()
  c.update_from_flattened_dict({
      'data.name': 'synthetic_subspace', 'data.n': 4, 'data.d': 12, 'data.planted_dim': 3,
      'victim.name': 'two_layer', 'victim.width': 32, 'victim.train.lr': 0.01,
      'victim.train.max_steps': 3000, 'attack.rescue': (),
      **(overrides or {})})
  return c


@pytest.mark.parametrize('weight_decay', [0.0, 0.05])
def test_delta_w1_row_space_lies_in_the_span_of_the_data_without_weight_decay(weight_decay):
  cfg = _two_layer_cfg({'victim.train.weight_decay': weight_decay})
  from recon import data  # pylint: disable=import-outside-toplevel
  x, y, _ = data.load(cfg.data, jax.random.PRNGKey(0))
  net = subspace_pipeline.train_two_layer(cfg.victim, jax.random.PRNGKey(1), x, y)
  assert net['info']['finite'] and net['info']['steps'] > 10
  dw = np.asarray(net['w1'] - net['w1_init'], np.float64)
  q, _ = np.linalg.qr(np.asarray(x, np.float64).T)  # basis of span{x_i}
  outside = np.linalg.norm(dw - (dw @ q) @ q.T) / np.linalg.norm(dw)
  if weight_decay == 0:
    assert outside < 1e-4
  else:  # weight decay adds a full-rank multiple of W1_0
    assert outside > 1e-2


def test_subspace_errors_are_one_line():
  dw = jnp.outer(jnp.arange(1.0, 6.0), jnp.arange(1.0, 4.0))  # rank 1, d = 3
  for k, match in [(4, 'exceeds the input dimension'), (2, r'exceeds rank\(dW1\)=1')]:
    with pytest.raises(subspace.SubspaceError, match=match) as e:
      subspace.estimate_subspace(dw, k, FLOOR)
    assert '\n' not in str(e.value)
  with pytest.raises(subspace.SubspaceError, match='not finite'):
    subspace.estimate_subspace(dw.at[0, 0].set(jnp.nan), None, FLOOR)
  with pytest.raises(subspace.SubspaceError, match='did not train'):
    subspace.estimate_subspace(jnp.zeros((4, 3)), None, FLOOR)


def _rf_cfg(overrides=None):
  """Random features p = 24 on a known 2-dim subspace of R^16 (no escalation, no polish)."""
  c = base.get_config()
  c.update_from_flattened_dict({
      'name': 't', 'data.name': 'synthetic_subspace', 'data.n': 3, 'data.d': 16,
      'data.planted_dim': 2, 'victim.p': 24,
      'attack.subspace.mode': 'known', 'attack.n_candidates': 6, 'attack.lr': 20.0,
      'attack.max_steps': 1500, 'attack.rescue': (),
      'run.chunk_steps': 500, 'run.log_every_seconds': 100.0, 'run.overwrite': True,
      **(overrides or {})})
  return c


@pytest.mark.parametrize('fields, match', [
    ({'attack.subspace.mode': 'estimated'}, 'trainable first layer'),
    ({'data.name': 'synthetic_sphere'}, "'known' needs a dataset"),
    ({'attack.subspace.dim': 20}, 'exceeds the input dimension'),
    ({'attack.subspace.dim': 3}, "differs from the known subspace"),
    ({'data.planted_dim': 17}, 'config.data.planted_dim'),
    ({'attack.subspace.mode': 'none', 'attack.subspace.dim': 2}, 'config.attack.subspace.dim'),
])
def test_bad_subspace_configs_fail_before_compute(fields, match, tmp_path):
  with pytest.raises(config_lib.ConfigError, match=match) as e:
    pipelines.run(_rf_cfg(fields), str(tmp_path / 'run'))
  assert '\n' not in str(e.value)
  assert not (tmp_path / 'run').exists()  # nothing written, nothing computed


def test_estimated_subspace_of_rank_deficient_change_is_a_one_line_experiment_error(tmp_path):
  cfg = _two_layer_cfg({
      'name': 't', 'attack.objective': 'unified', 'attack.subspace.mode': 'estimated',
      'attack.subspace.dim': 5, 'attack.subspace.gradient_at': 'both', 'attack.n_candidates': 8,
      'attack.lr': 20.0, 'attack.max_steps': 10, 'run.chunk_steps': 10,
      'run.log_every_seconds': 100.0, 'run.overwrite': True})
  with pytest.raises(errors.ExperimentError, match=r'exceeds rank\(dW1\)=[0-9]+'):
    pipelines.run(cfg, str(tmp_path / 'run'))  # n = 4 samples: rank(dW1) <= 4 < 5


@pytest.mark.slow  # two runs to convergence
def test_subspace_run_reconstructs_where_the_full_space_run_does_not(tmp_path):
  # p = 24 = 4 k n (k = 2, n = 3) but only p / dn = 0.5: below the full-space threshold.
  sub = pipelines.run(_rf_cfg(), str(tmp_path / 'sub'))['metrics']
  full = pipelines.run(_rf_cfg({'attack.subspace.mode': 'none'}), str(tmp_path / 'full'))['metrics']
  assert sub['recon_error'] < 0.05 and sub['frac_recovered'] == 1.0
  assert full['recon_error'] > 0.3 and full['frac_recovered'] < 1.0
  assert sub['search_dim'] == 2 and sub['p_over_kn'] == 4.0


def test_cli_rejects_estimating_a_random_features_subspace_with_one_line_and_status_2(tmp_path,
                                                                                      capsys):
  # In-process: recon.main.execute is what the CLI runs after parsing the flags.
  from configs import rf_subspace  # pylint: disable=import-outside-toplevel
  from recon import main  # pylint: disable=import-outside-toplevel
  c = rf_subspace.get_config()
  c.attack.subspace.mode = 'estimated'
  assert main.execute(c, str(tmp_path / 'run')) == 2
  lines = [l for l in capsys.readouterr().err.splitlines() if l.startswith('error:')]
  assert len(lines) == 1 and 'config.attack.subspace.mode' in lines[0] and "'known'" in lines[0]
  assert not (tmp_path / 'run').exists()
