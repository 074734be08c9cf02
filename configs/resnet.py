"""Small ResNet (no batch norm) trained by full-batch GD, reconstructed from its head.

n=4 synthetic sphere samples shaped as 4x4x1 images (d=16); a 3x3 stem conv to
`width` channels, `depth` pre-activation residual blocks, the 4x4 map flattened
(as the reference ResNet flattens its 7x7 map) into a bias-free linear head with
C=2 outputs trained on MSE to one-hot targets: p_L = 16 * width * C = 640 = 10 dn.
A few minutes on CPU.
"""
import ml_collections

from configs import common


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.name = 'resnet'
  c.model = 'resnet'
  # Data.
  c.dataset = 'synthetic_sphere'
  c.data_dir = ml_collections.config_dict.placeholder(str)
  c.n = 4
  c.d = 16
  c.label_noise = 0.5
  c.image_shape = (4, 4, 1)  # NHWC rows; a dataset's own meta['image_shape'] wins
  # Model and its training.
  c.width = 20
  c.depth = 2
  c.pool = 'flatten'
  c.num_classes = 2
  c.activation = 'relu_tanh'
  c.head_init = 'fan_in'  # 'zeros': W_L(0) = 0 (the original ViT's convention)
  c.loss = 'mse'
  c.train_lr = ml_collections.config_dict.placeholder(float)  # None: 1 / lambda_max at init
  c.train_momentum = 0.0
  c.train_max_steps = 5000
  c.train_tol = 1e-6
  c.last_layer = 'head'
  c.jacobian_at = 'trained'  # or 'init_and_trained' (needs attacker_knows_init)
  # Threat model.
  c.attacker_knows_init = True
  c.attacker_knows_n = True
  # Attack.
  c.n_candidates = ml_collections.config_dict.placeholder(int)  # None: = n
  c.n_restarts = 1  # K > 1: K candidate sets at once, the lowest loss wins (escalation off)
  c.optimizer = 'sgd'
  c.lr = 5.0
  c.lr_schedule = 'constant'  # 'cosine': lr -> lr * lr_final_ratio over lr_decay_steps
  c.lr_decay_steps = ml_collections.config_dict.placeholder(int)  # None: max_steps
  c.lr_final_ratio = 0.05
  c.momentum = 0.9
  c.max_steps = 3000
  c.tol = 1e-7
  c.jitter = 1e-6
  c.dtype = 'float32'
  # Bookkeeping and reliability (configs/common.py).
  common.add_bookkeeping(c, log_every_seconds=20.0)
  # Escalation on a loss plateau (recon/escalate.py): the weakest candidate's mirror image or
  # a random proposal (kept if it halves the loss), then a whole new set (kept if lower).
  common.add_escalation(c)
  return c
