"""The law of reconstruction's phase transition at CPU scale (a sweep; see docs/random_features.md, "Sweeps" and "The phase transition").

Random features on synthetic sphere data, n=8 samples in d=10 dimensions (dn=80):
9 widths from p = n/2 to p = 16 dn, 3 seeds, relu and relu+tanh = 54 runs in two
compiled groups (one per activation). SGD momentum 0.9, lr 5 (base's; the lr stage of
scripts/phase_transition.py re-chooses it blind on tuning seeds 1000-1002 and confirms 5:
results/phase_transition_lr.json). The script reports seeds 100-104, never the tuning seeds.
"""
import ml_collections

from configs import base


def get_config() -> ml_collections.ConfigDict:
  c = base.get_config()
  c.name = 'rf_phase_transition'

  c.data.n = 8

  c.victim.p = 800  # overridden by the sweep's p_over_dn axis

  c.run.chunk_steps = 500
  c.run.log_every_seconds = 5.0
  c.run.sweep_memory_budget_gb = 4.0
  c.sweep.victim.activation = ('relu', 'relu_tanh')
  c.sweep.victim.p_over_dn = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0)
  c.sweep.seed = (0, 1, 2)
  return c
