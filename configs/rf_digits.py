"""Random features on real images: scikit-learn's bundled 8x8 digits, 0 vs 1.

n=10 images (5 per class, labels -1/+1) in d=64 dimensions, standardised and
projected to the sqrt(d)-sphere; p = 10 * d * n = 6400 relu+tanh features.
No download; reconstructs on 2 CPU cores in a few minutes. Showcase output:
results/rf_digits/ (regenerate with `python -m scripts.rf_digits`).
"""
import ml_collections

from configs import base


def get_config() -> ml_collections.ConfigDict:
  c = base.get_config()
  c.name = 'rf_digits'

  # Data.
  c.data.name = 'digits'
  c.data.classes = (0, 1)
  c.data.d = 64  # = 8 * 8 * 1; must match the images
  c.data.label_noise = 0.0  # unused for real data

  # Model.
  c.victim.p = 6400
  c.victim.feature_residual = 'two_pass'

  # Adam: heavy-ball SGD at lr 2..20 stalls with 3 of 10 digits unrecovered at 20k steps.
  c.attack.optimizer = 'adam'
  c.attack.lr = 0.02
  c.attack.max_steps = 40000
  return c
