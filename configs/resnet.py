"""Small ResNet (no batch norm) trained by full-batch GD, reconstructed from its head.

n=4 synthetic sphere samples shaped as 4x4x1 images (d=16); a 3x3 stem conv to
`width` channels, `depth` pre-activation residual blocks, the 4x4 map flattened
(as the reference ResNet flattens its 7x7 map) into a bias-free linear head with
C=2 outputs trained on MSE to one-hot targets: p_L = 16 * width * C = 640 = 10 dn.
A few minutes on CPU.
"""
import ml_collections

from configs import base


def get_config() -> ml_collections.ConfigDict:
  c = base.get_config()
  c.name = 'resnet'

  c.data.n = 4
  c.data.d = 16
  c.data.num_classes = 2
  c.data.image_shape = (4, 4, 1)  # NHWC rows; a dataset's own meta['image_shape'] wins

  # Model and its training.
  c.victim.name = 'resnet'
  c.victim.width = 20
  c.victim.depth = 2
  c.victim.train.max_steps = 5000
  c.victim.pool = 'flatten'

  c.attack.max_steps = 3000
  c.attack.rescue = ('escalate',)

  c.run.log_every_seconds = 20.0
  return c
