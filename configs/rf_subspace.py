"""Random features on data in a known k-dim subspace: subspace-aware reconstruction.

n=6 samples in a planted k=4 dimensional subspace of R^64, p = 96 = 4 k n features
(p/dn = 0.25: far below the full-space threshold p ~ dn), relu+tanh. The attack
searches x_hat = U z with the subspace U given; set --config.subspace=none for the
full-space baseline (which fails at this width). About 10 s on 2 CPU cores.
"""
import ml_collections

from configs import common


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.name = 'rf_subspace'
  c.model = 'random_features'
  # Data.
  c.dataset = 'synthetic_subspace'
  c.data_dir = ml_collections.config_dict.placeholder(str)
  c.n = 6
  c.d = 64
  c.planted_dim = 4
  c.label_noise = 0.5
  # Model.
  c.p = 96
  c.activation = 'relu_tanh'
  # Attack.
  c.subspace = 'known'  # 'none' | 'known' (random features cannot estimate it)
  c.subspace_dim = ml_collections.config_dict.placeholder(int)  # None: the known basis' k
  c.subspace_noise_floor = 1e-3
  c.gradient_at = 'trained'  # V does not train: trained == initial
  c.alpha_mode = 'closed_form'  # or 'joint' (free alpha, warm-started at its optimum)
  c.n_candidates = 12  # 2n: spare candidates avoid two-onto-one collapse (see docs/subspace.md, "Results")
  c.optimizer = 'sgd'
  c.lr = 20.0
  c.momentum = 0.9
  c.max_steps = 5000
  c.tol = 1e-7
  c.jitter = 1e-6
  c.dtype = 'float32'
  # Bookkeeping and reliability (configs/common.py).
  common.add_bookkeeping(c, chunk_steps=250)
  return c
