"""Random features on real faces: scikit-image's bundled LFW crops, face vs non-face.

n=20 greyscale crops (10 faces +1, 10 non-faces -1) of scikit-image's `lfw_subset()`,
block-averaged 25x25 -> 5x5 by default (d = 25; --config.image_size=25 for the native
d = 625), standardised and projected to the sqrt(d)-sphere; p = 10 * d * n relu+tanh
features (p follows --config.n and --config.image_size). No download; CPU-friendly.
"""
import ml_collections

from configs import common


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.name = 'rf_faces'
  c.model = 'random_features'
  # Data.
  c.dataset = 'lfw_faces'
  c.data_dir = ml_collections.config_dict.placeholder(str)
  c.classes = ml_collections.config_dict.placeholder(tuple)  # None: (0 non-face, 1 face)
  c.image_size = 5  # a divisor of 25: 1, 5 or 25 (native)
  c.grayscale = False  # the crops are greyscale already
  c.preprocess = 'sphere'
  c.n = 20
  c.d = c.get_ref('image_size') * c.get_ref('image_size')  # = size * size * 1
  c.label_noise = 0.0  # unused for real data
  # Model: p = 10 d n (the law-of-reconstruction's comfortable width).
  c.p = 10 * c.get_ref('d') * c.get_ref('n')
  c.activation = 'relu_tanh'  # relu alone leaves the x <-> -x ambiguity of its odd part
  # Attack.
  c.n_candidates = ml_collections.config_dict.placeholder(int)  # None: = n
  c.optimizer = 'adam'
  c.lr = 0.05  # candidates have norm sqrt(d)
  c.momentum = 0.9  # Adam's b1
  c.lr_schedule = 'cosine'  # lr -> lr * lr_final_ratio over lr_decay_steps
  c.lr_decay_steps = 20000
  c.lr_final_ratio = 0.05
  c.max_steps = 20000
  c.tol = 1e-7
  c.jitter = 1e-6
  c.dtype = 'float32'
  c.feature_mode = 'auto'  # dense under the budget; lean at the native size with large n
  c.feature_memory_budget_mb = 1024.0
  c.feature_chunk = 4096
  c.feature_residual = 'auto'
  c.weight_rng = 'threefry'
  # Blind re-seeding of candidates that collapsed onto one another (0 = off), and restarts.
  c.reseed_every = 2000  # 0: off; without it 3-4 of 20 faces stay collapsed (measured)
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
