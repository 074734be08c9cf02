"""Two-layer network W2 sigma(W1 x) trained by full-batch GD, reconstructed from W2.

n=5 samples on the sqrt(d)-sphere in d=10 dimensions, 2 classes (MSE to one-hot
targets), width 250: p_L = width * C = 500 = 10 * d * n, well above the
threshold p_L ~ dn. victim.train.lr=None picks 1 / lambda_max(J^T J / n) at init (about
2.5 / width here; the stable GD step shrinks like 1/width in the standard
parametrisation -- the reference used 1e-5 at width 122880). About a minute on CPU.
"""
import ml_collections

from configs import base


def get_config() -> ml_collections.ConfigDict:
  c = base.get_config()
  c.name = 'two_layer'

  c.data.n = 5
  c.data.num_classes = 2

  c.victim.name = 'two_layer'

  c.attack.max_steps = 2000
  c.attack.rescue = ('escalate',)
  return c
