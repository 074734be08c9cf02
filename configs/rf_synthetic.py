"""Random features on synthetic sphere data: the law-of-reconstruction default.

n=10 samples in d=10 dimensions, p = 10 * d * n = 1000 features, relu+tanh:
well above the data-reconstruction threshold p ~ dn, reconstructs on 2 CPU cores
in about a minute.
"""
import ml_collections


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
  c.optimizer = 'sgd'
  c.lr = 2.0  # the paper's 20 oscillates on this problem; see results/ for the lr study
  c.momentum = 0.9
  c.max_steps = 20000
  c.tol = 1e-7
  c.jitter = 1e-6
  c.dtype = 'float32'
  # Bookkeeping.
  c.seed = 0
  c.chunk_steps = 200
  c.log_every_seconds = 5.0
  c.recovered_threshold = 0.1
  c.overwrite = False
  # Reliability (docs/reliability.md).
  c.resume = False  # True: continue from WORKDIR/checkpoints (start fresh if there is none)
  c.checkpoint_every_seconds = 60.0  # 0: off
  c.checkpoint_every_steps = 0  # 0: off; a stopped run is always checkpointed
  c.checkpoint_keep = 2
  c.model_checkpoint = ml_collections.config_dict.placeholder(str)  # a saved model to attack
  return c
