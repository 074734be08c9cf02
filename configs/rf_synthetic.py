"""Random features on synthetic sphere data: the law-of-reconstruction default.

n=10 samples in d=10 dimensions, p = 10 * d * n = 1000 features, relu+tanh:
well above the data-reconstruction threshold p ~ dn, reconstructs on 2 CPU cores
in well under a minute. The paper's optimiser: --config.optimizer=sgd --config.lr=20
--config.lr_schedule=constant.
"""
import ml_collections

from configs import common


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.name = 'rf_synthetic'
  c.model = 'random_features'
  # Data.
  c.dataset = 'synthetic_sphere'
  c.data_dir = ml_collections.config_dict.placeholder(str)
  c.n = 10
  c.d = 10
  c.label_noise = 0.5
  # Model.
  c.p = 1000
  c.activation = 'relu_tanh'
  # Attack.
  c.n_candidates = ml_collections.config_dict.placeholder(int)  # None: = n
  # Adam + a cosine decay over the whole budget reconstructs 3/3 seeds at p = 10 dn where the
  # paper's momentum SGD (optimizer='sgd', lr=20, lr_schedule='constant') reconstructs none, and
  # 2/3 on the harder (20, 20, 4000), where a 5000-step decay reconstructs none
  # (results/bench.md).
  c.optimizer = 'adam'
  c.lr = 0.05  # candidates have norm sqrt(d)
  c.momentum = 0.9
  c.lr_schedule = 'cosine'  # lr -> lr * lr_final_ratio over lr_decay_steps; or 'constant'
  # Fixed, not None (= max_steps), so that a run resumed with a larger max_steps keeps its
  # schedule.
  c.lr_decay_steps = 20000
  c.lr_final_ratio = 0.05
  c.max_steps = 20000
  c.tol = 1e-9  # float32 reaches ~1e-10 at the truth; 1e-7 can stop with one sample at 0.1
  c.jitter = 1e-6
  c.dtype = 'float32'  # 'float64': slower, for ill-conditioned Gram solves.
  # Features: V is regenerated chunk by chunk from its key (never stored) when p*d exceeds
  # the budget, or always with feature_mode='lean' / feature_shards > 1.
  c.feature_mode = 'auto'
  c.feature_memory_budget_mb = 1024.0
  c.feature_chunk = 4096
  c.feature_residual = 'auto'  # auto | two_pass | gram | stored (see docs/performance.md, "Memory-lean random features")
  c.feature_shards = 1
  # Generator of V: 'threefry' (jax.random, per-row fold_in), 'hash' (counter-based hash +
  # erfinv) or 'hash_box_muller' (counter hash + Box-Muller: same distribution, the cheapest
  # to regenerate; use it for lean runs).
  c.weight_rng = 'threefry'
  # Restarts: K candidate sets optimised at once (vmapped), the answer is the one with the
  # lowest blind projection loss; the run stops when the best reaches tol (recon/restarts.py).
  c.n_restarts = 1
  # Blind re-seeding of candidates that collapsed onto one another (0 = off).
  c.reseed_every = 0
  c.reseed_threshold = 0.95
  c.reseed_proposals = 64
  # Escalation on a loss plateau: replace the weakest candidate, then restart the whole set
  # (configs/common.py, recon/escalate.py; docs/random_features.md#escalation).
  common.add_escalation(c)
  # The precision rung: a float64 polish of the rows an uncertified run leaves free.
  common.add_polish(c)
  # Sample splitting (recon/splitting.py), off by default; needs dense features, no re-seeding.
  common.add_splitting(c)
  # Bookkeeping and reliability (configs/common.py).
  common.add_bookkeeping(c)
  return c
