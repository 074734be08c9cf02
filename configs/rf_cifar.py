"""The papers' CIFAR-10 setting: n = 100 images, d = 32*32*3 = 3072, relu, p = 10 d n = 3,072,000.

Default data: `photo_patches` (32x32x3 patches of six colour photographs bundled with
scikit-image / scikit-learn, labels +1/-1 by photograph; no download). Real CIFAR-10, same
code: --config.dataset=cifar10 --config.data_dir=DIR (the python-version batches) and
--config.classes='(0, 1)' for +-1 labels. d and p follow --config.image_size and --config.n
(p = 10 d n); a CPU-sized run: --config.image_size=8 --config.n=10 (d = 192, p = 19,200),
best with --config.n_restarts=4 --config.reseed_every=0 (measured: docs/data.md, "Showcase: faces
and photo patches").

At full size V (p x d) is 37.7 GB in float32: feature_mode 'auto' regenerates it chunk by
chunk from its key (weight_rng 'hash_box_muller', the cheapest generator to regenerate),
and the fit solves the n x n Gram problem (recon/precision.py), correct at this width in
float32 (docs/random_features.md, "The fit at any width"). A GPU run.
"""
import ml_collections

from configs import common


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.name = 'rf_cifar'
  c.model = 'random_features'
  # Data.
  c.dataset = 'photo_patches'  # or 'cifar10' with data_dir
  c.data_dir = ml_collections.config_dict.placeholder(str)
  c.classes = ml_collections.config_dict.placeholder(tuple)  # None: all photographs / classes
  c.image_size = 32  # a divisor of 32
  c.grayscale = False
  c.preprocess = 'sphere'
  c.n = 100
  c.d = c.get_ref('image_size') * c.get_ref('image_size') * 3
  c.label_noise = 0.0  # unused for real data
  # Model: p = 10 d n.
  c.p = 10 * c.get_ref('d') * c.get_ref('n')
  c.activation = 'relu'
  # Attack.
  c.n_candidates = ml_collections.config_dict.placeholder(int)  # None: = n
  c.optimizer = 'adam'
  # Chosen by the blind final projection loss (relu, 8x8, n=10, seed 0, 30k steps): 9.7e-6 at
  # lr 0.02 against 1.7e-5 at 0.05.
  c.lr = 0.02
  c.momentum = 0.9  # Adam's b1
  c.lr_schedule = 'cosine'  # lr -> lr * lr_final_ratio over lr_decay_steps
  c.lr_decay_steps = 30000
  c.lr_final_ratio = 0.05
  c.max_steps = 30000
  c.tol = 1e-7
  c.jitter = 1e-6
  c.dtype = 'float32'
  # Features: dense while p*d*4 bytes fits the budget, else memory-lean.
  c.feature_mode = 'auto'
  c.feature_memory_budget_mb = 1024.0
  c.feature_chunk = 4096
  c.feature_residual = 'auto'
  c.feature_shards = 1
  c.weight_rng = 'hash_box_muller'
  # Blind re-seeding of candidates that collapsed onto one another (0 = off), and restarts.
  c.reseed_every = 2000  # 0: off
  c.reseed_threshold = 0.95
  c.reseed_proposals = 64
  c.n_restarts = 1
  # Escalation on a loss plateau: replace the weakest candidate, then restart the whole set
  # (configs/common.py, recon/escalate.py; docs/random_features.md#escalation).
  common.add_escalation(c)
  # The precision rung: a float64 polish of the rows an uncertified run leaves free.
  common.add_polish(c)
  # Bookkeeping and reliability (configs/common.py).
  common.add_bookkeeping(c, log_every_seconds=10.0)
  c.ssim_threshold = 0.7
  c.ssim_filter_size = ml_collections.config_dict.placeholder(int)  # None: auto
  return c
