"""A loaded model's ground truth (issue 74 item 9): only the auditor's own training data."""
import json

import numpy as np
from safetensors.numpy import save_file

from configs import two_layer
from recon import main
from recon.pipelines import victims


def _torch_mlp(tmp_path, d=8, width=32):
  rng = np.random.default_rng(0)
  state = {'0.weight': rng.normal(size=(width, d)).astype(np.float32),
           '2.weight': rng.normal(size=(1, width)).astype(np.float32)}
  path = str(tmp_path / 'm.safetensors')
  save_file(state, path)
  c = two_layer.get_config()
  c.data.n, c.data.d, c.data.num_classes = 4, d, 1
  c.victim.name, c.victim.format, c.victim.activation = 'torch_mlp', 'safetensors', 'relu'
  c.victim.checkpoint = path
  c.attack.max_steps, c.attack.rescue = 50, ()
  return c


def test_a_loaded_model_is_never_scored_against_data_recon_generated(tmp_path):
  c = _torch_mlp(tmp_path)
  c.data.name = 'synthetic_sphere'
  work = tmp_path / 'w'
  assert main.execute(c, str(work)) == 0
  summary = json.loads((work / 'summary.json').read_text())
  m = summary['metrics']
  assert m['ground_truth'] is False
  assert not any(k in m for k in ('frac_recovered', 'n_recovered', 'recon_error'))
  assert "data.name 'synthetic_sphere'" in summary['counting']
  assert "data.name 'file'" in m['no_ground_truth_reason']
  assert json.loads((work / 'records.json').read_text()) == []
  page = (work / 'report.html').read_text()
  assert 'training records came back' not in page and 'No ground truth' in page
  assert 'synthetic_sphere' in page


def test_the_auditors_file_is_the_ground_truth_of_a_loaded_model(tmp_path):
  c = _torch_mlp(tmp_path)
  x = np.random.default_rng(1).normal(size=(4, 8))
  np.savez(tmp_path / 'train.npz', x=x, y=np.zeros(4))
  c.data.name, c.data.path, c.data.preprocess = 'file', str(tmp_path / 'train.npz'), 'none'
  work = tmp_path / 'w'
  assert main.execute(c, str(work)) == 0
  m = json.loads((work / 'summary.json').read_text())['metrics']
  assert m['ground_truth'] is True and 'n_recovered' in m and 'no_ground_truth_reason' not in m


def test_the_reason_names_the_field_and_the_accepted_value():
  text = victims.no_truth_reason('digits')
  assert "data.name 'digits'" in text and "data.name 'file' with data.path" in text
