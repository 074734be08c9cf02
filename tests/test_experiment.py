import json
import os

import numpy as np
import pytest

from configs import rf_synthetic
from recon import errors, pipelines


def _config(overrides=None):
  c = rf_synthetic.get_config()
  c.update_from_flattened_dict({'data.n': 4, 'data.d': 8, 'victim.p': 320, 'victim.activation': 'relu_tanh', 'attack.optimizer': 'sgd', 'attack.lr': 2.0, 'attack.schedule': 'constant', 'attack.tol': 1e-7, 'seed': 2, 'attack.max_steps': 4000, 'run.log_every_seconds': 1e9})
  c.update_from_flattened_dict(overrides or {})
  return c


@pytest.mark.slow  # a run to convergence, ~10 CPU-s (tests/test_main.py runs the pipeline in the fast tier)
def test_reconstructs_above_dn(tmp_path):
  summary = pipelines.run(_config(), str(tmp_path))
  m = summary['metrics']
  assert m['recon_error'] < 0.05 and m['frac_recovered'] == 1.0
  assert m['train_mse'] < 1e-8 and m['p_over_dn'] == pytest.approx(10.0)
  assert m['status'] == 'converged' and m['projection_loss'] <= 1e-7
  assert m['feature_residual'] < 0.01
  rec = np.load(tmp_path / 'reconstruction.npz')
  assert rec['x_true'].shape == rec['x_matched'].shape == (4, 8)
  np.testing.assert_allclose(rec['x_matched'], rec['x_true'], atol=0.05 * np.sqrt(8))


@pytest.mark.slow  # ~4 CPU-s
def test_does_not_reconstruct_at_p_equal_n(tmp_path):
  summary = pipelines.run(_config({'victim.p': 4}), str(tmp_path))
  m = summary['metrics']
  assert m['train_mse'] < 1e-6  # labels are fitted...
  assert m['recon_error'] > 0.3  # ...but the data are not recoverable


@pytest.mark.slow  # ~7 CPU-s
def test_more_candidates_than_samples(tmp_path):
  summary = pipelines.run(_config({'attack.n_candidates': 6, 'attack.max_steps': 300}), str(tmp_path))
  m = summary['metrics']
  assert m['n_candidates'] == 6 and m['n_unmatched_candidates'] == 2
  on_disk = json.loads((tmp_path / 'summary.json').read_text())
  assert on_disk['metrics']['n_candidates'] == 6
  assert on_disk['config']['attack']['n_candidates'] == 6


@pytest.mark.slow  # ~10 CPU-s (compiles a run; test_main checks the refusal in-process before compute)
def test_refuses_to_overwrite_a_finished_run(tmp_path):
  pipelines.run(_config({'attack.max_steps': 10}), str(tmp_path))
  before = (tmp_path / 'summary.json').read_bytes()
  with pytest.raises(errors.ExperimentError, match='already holds a finished run'):
    pipelines.run(_config({'attack.max_steps': 20}), str(tmp_path))
  assert (tmp_path / 'summary.json').read_bytes() == before


def test_the_outcome_line_says_what_rows_are_scored_up_to():
  from recon import execution  # pylint: disable=import-outside-toplevel
  m = {'status': 'converged', 'steps': 5, 'final_loss': 1e-9, 'ground_truth': True,
       'frac_recovered': 1.0, 'n': 5}
  assert 'threshold (frac' in execution.outcome_line({'metrics': m})
  line = execution.outcome_line({'metrics': dict(m, sign_invariant=True, scale_invariant=True)})
  assert 'recovered_threshold up to sign and norm' in line
  assert 'up to norm (' in execution.outcome_line({'metrics': dict(m, scale_invariant=True)})
