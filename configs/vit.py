"""Small ViT trained by full-batch GD, reconstructed from its head.

n=4 synthetic sphere samples shaped as 4x4x1 images (d=16); 2x2 patches -> 4
tokens embedded in `width` dims (+ learned positions), `depth` pre-LN transformer
blocks (2 heads, 2x MLP, gelu), a final LayerNorm, the tokens flattened into a
bias-free linear head with C=2 outputs trained on MSE to one-hot targets:
p_L = 4 * width * C = 640 = 10 dn. The features are the mean of the head Jacobian
rows at the initial and the trained weights (jacobian_at='midpoint', the trapezoid
rule of the GD path): with the trained weights alone the drift of the token
features during training leaves ~1e-2 of theta unexplained (projection loss at the
true data) and only 2 of 4 samples are recovered. A few minutes on CPU.
"""
import ml_collections

from configs import base


def get_config() -> ml_collections.ConfigDict:
  c = base.get_config()
  c.name = 'vit'

  c.data.n = 4
  c.data.d = 16
  c.data.num_classes = 2
  c.data.image_shape = (4, 4, 1)  # NHWC rows; a dataset's own meta['image_shape'] wins

  # Model and its training.
  c.victim.name = 'vit'
  c.victim.activation = 'gelu'
  c.victim.width = 80
  c.victim.depth = 2
  c.victim.train.max_steps = 5000
  c.victim.pool = 'flatten'  # 'mean': p_L = width * C

  c.attack.max_steps = 3000
  c.attack.jacobian_at = 'midpoint'  # 'trained': the paper's, drift-limited here
  c.attack.rescue = ('escalate',)

  c.run.log_every_seconds = 20.0
  return c
