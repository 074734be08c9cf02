"""The law of reconstruction's phase transition at CPU scale (a sweep; see docs/random_features.md, "Sweeps" and "The phase transition").

Random features on synthetic sphere data, n=8 samples in d=10 dimensions (dn=80):
9 widths from p = n/2 to p = 16 dn, 3 seeds, relu and relu+tanh = 54 runs in two
compiled groups (one per activation). SGD momentum 0.9, lr 5 (picked on a small lr grid,
results/phase_transition_lr.json).
"""
import ml_collections

from configs import rf_synthetic


def get_config() -> ml_collections.ConfigDict:
  c = rf_synthetic.get_config()
  c.name = 'rf_phase_transition'
  c.n = 8
  c.d = 10
  c.p = 800  # overridden by the sweep's p_over_dn axis
  c.optimizer = 'sgd'  # the paper's optimiser; sweeps batch lr, so no lr schedule
  c.lr_schedule = 'constant'
  c.lr = 5.0
  c.tol = 1e-7
  c.momentum = 0.9
  c.max_steps = 20000
  c.chunk_steps = 500
  c.sweep_memory_budget_gb = 4.0
  c.sweep = ml_collections.ConfigDict({
      'activation': ('relu', 'relu_tanh'),
      'p_over_dn': (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0),
      'seed': (0, 1, 2),
  })
  return c
