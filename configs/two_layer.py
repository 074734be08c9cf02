"""Two-layer network W2 sigma(W1 x) trained by full-batch GD, reconstructed from W2.

n=5 samples on the sqrt(d)-sphere in d=10 dimensions, 2 classes (MSE to one-hot
targets), width 250: p_L = width * C = 500 = 10 * d * n, well above the
threshold p_L ~ dn. train_lr=None picks 1 / lambda_max(J^T J / n) at init (about
2.5 / width here; the stable GD step shrinks like 1/width in the standard
parametrisation -- the reference used 1e-5 at width 122880). About a minute on CPU.
"""
import ml_collections

from configs import common


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.name = 'two_layer'
  c.model = 'two_layer'
  # Data.
  c.dataset = 'synthetic_sphere'
  c.data_dir = ml_collections.config_dict.placeholder(str)
  c.n = 5
  c.d = 10
  c.label_noise = 0.5
  c.image_shape = ml_collections.config_dict.placeholder(tuple)  # flat inputs
  # Model and its training.
  c.width = 250
  c.num_classes = 2
  c.activation = 'relu_tanh'
  c.head_init = 'fan_in'  # 'zeros': W_L(0) = 0 (the original ViT's convention)
  c.loss = 'mse'
  c.train_lr = ml_collections.config_dict.placeholder(float)  # None: 1 / lambda_max at init
  c.train_momentum = 0.0
  c.train_max_steps = 20000
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
  c.max_steps = 2000
  c.tol = 1e-7
  c.jitter = 1e-6
  c.dtype = 'float32'
  # Bookkeeping and reliability (configs/common.py).
  common.add_bookkeeping(c, log_every_seconds=10.0)
  # Escalation on a loss plateau (recon/escalate.py): the weakest candidate's mirror image or
  # a random proposal (kept if it halves the loss), then a whole new set (kept if lower).
  common.add_escalation(c)
  return c
