"""Random features on real images: scikit-learn's bundled 8x8 digits, 0 vs 1.

n=10 images (5 per class, labels -1/+1) in d=64 dimensions, standardised and
projected to the sqrt(d)-sphere; p = 10 * d * n = 6400 relu+tanh features.
No download; reconstructs on 2 CPU cores in a few minutes. Showcase output:
results/rf_digits/ (regenerate with `python -m scripts.rf_digits`).
"""
import ml_collections

from configs import common


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.name = 'rf_digits'
  c.model = 'random_features'
  # Data.
  c.dataset = 'digits'
  c.data_dir = ml_collections.config_dict.placeholder(str)
  c.classes = (0, 1)
  c.image_size = ml_collections.config_dict.placeholder(int)  # None: native 8x8
  c.grayscale = False
  c.preprocess = 'sphere'
  c.n = 10
  c.d = 64  # = 8 * 8 * 1; must match the images
  c.label_noise = 0.0  # unused for real data
  # Model.
  c.p = 6400
  c.activation = 'relu_tanh'
  # Attack.
  c.n_candidates = ml_collections.config_dict.placeholder(int)  # None: = n
  # Adam: heavy-ball SGD at lr 2..20 stalls with 3 of 10 digits unrecovered at 20k steps.
  c.optimizer = 'adam'
  c.lr = 0.02
  c.momentum = 0.9  # Adam's b1
  c.max_steps = 40000
  c.tol = 1e-7
  c.jitter = 1e-6
  c.dtype = 'float32'
  # Bookkeeping and reliability (configs/common.py).
  common.add_bookkeeping(c, log_every_seconds=10.0)
  # Escalation on a loss plateau (recon/escalate.py): the weakest candidate's mirror image or
  # a random proposal (kept if it halves the loss), then a whole new set (kept if lower).
  common.add_escalation(c)
  # The precision rung: a float64 polish of the rows an uncertified run leaves free.
  common.add_polish(c)
  c.ssim_threshold = 0.7
  c.ssim_filter_size = ml_collections.config_dict.placeholder(int)  # None: 3 for 8x8
  return c
