"""Random features on real faces: scikit-image's bundled LFW crops, face vs non-face.

n=20 greyscale crops (10 faces +1, 10 non-faces -1) of scikit-image's `lfw_subset()`,
block-averaged 25x25 -> 5x5 by default (d = 25; --config.data.image_size=25 for the native
d = 625), standardised and projected to the sqrt(d)-sphere; p = 10 * d * n relu+tanh
features (p follows --config.data.n and --config.data.image_size). No download; CPU-friendly.
"""
import ml_collections

from configs import base


def get_config() -> ml_collections.ConfigDict:
  c = base.get_config()
  c.name = 'rf_faces'

  # Data.
  c.data.name = 'lfw_faces'
  c.data.image_size = 5  # a divisor of 25: 1, 5 or 25 (native)
  c.data.n = 20
  c.data.d = c.data.get_ref('image_size') * c.data.get_ref('image_size')  # = size * size * 1
  c.data.label_noise = 0.0  # unused for real data

  # Model: p = 10 d n (the law-of-reconstruction's comfortable width).
  c.victim.p = 10 * c.data.get_ref('d') * c.data.get_ref('n')

  c.attack.optimizer = 'adam'
  c.attack.lr = 0.05  # candidates have norm sqrt(d)
  c.attack.schedule = 'cosine'  # lr -> lr * final_ratio over decay_steps
  c.attack.decay_steps = 20000
  # Blind re-seeding of candidates that collapsed onto one another every 2000 steps
  # (attack.reseed): without it 3-4 of 20 faces stay collapsed (measured).
  c.attack.rescue = ('reseed', 'escalate', 'polish')
  return c
