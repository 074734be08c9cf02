"""Random features on data in a known k-dim subspace: subspace-aware reconstruction.

n=6 samples in a planted k=4 dimensional subspace of R^64, p = 96 = 4 k n features
(p/dn = 0.25: far below the full-space threshold p ~ dn), relu+tanh. The attack
searches x_hat = U z with the subspace U given; set --config.attack.subspace.mode=none for the
full-space baseline (which fails at this width). About 10 s on 2 CPU cores.
"""
import ml_collections

from configs import base


def get_config() -> ml_collections.ConfigDict:
  c = base.get_config()
  c.name = 'rf_subspace'

  # Data.
  c.data.name = 'synthetic_subspace'
  c.data.n = 6
  c.data.d = 64
  c.data.planted_dim = 4

  # Model.
  c.victim.p = 96

  # 2n: spare candidates avoid two-onto-one collapse (see docs/subspace.md, "Results").
  c.attack.n_candidates = 12
  c.attack.lr = 20.0
  c.attack.max_steps = 5000
  c.attack.rescue = ()
  # Attack: the unified objective inside the subspace ('none': the full-space baseline).
  c.attack.objective = 'unified'
  c.attack.subspace.mode = 'known'  # 'none' | 'known' (random features cannot estimate it)

  c.run.chunk_steps = 250
  c.run.log_every_seconds = 5.0
  return c
