"""Random features trained by GD on the logistic loss: the paper's classification ablation.

f(x) = theta^T sigma(V x) with V (width x d) ~ N(0, 1/d) fixed and theta ~ N(0, 1/width)
trained by full-batch heavy-ball GD on the logistic loss with labels +-1 (the
sign of the synthetic sphere labels relative to their median) until the loss is
below train_tol. Every GD step adds a combination of the training features, so
theta_T - theta_0 lies exactly in their span and the same projection loss
reconstructs X (n=5, d=10, p = width = 500 = 10 dn).
"""
import ml_collections

from configs import common


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.name = 'rf_logistic'
  c.model = 'random_features_gd'
  # Data.
  c.dataset = 'synthetic_sphere'
  c.data_dir = ml_collections.config_dict.placeholder(str)
  c.n = 5
  c.d = 10
  c.label_noise = 0.5
  c.image_shape = ml_collections.config_dict.placeholder(tuple)  # flat inputs
  # Model and its training.
  c.width = 500
  c.num_classes = 1
  c.activation = 'relu_tanh'
  c.loss = 'logistic'
  c.train_lr = ml_collections.config_dict.placeholder(float)  # None: 1 / lambda_max at init
  c.train_momentum = 0.9
  c.train_max_steps = 20000
  c.train_tol = 1e-2
  c.last_layer = 'head'
  c.jacobian_at = 'trained'  # or 'init_and_trained' (needs attacker_knows_init)
  # Threat model.
  c.attacker_knows_init = True
  c.attacker_knows_n = True
  # Attack.
  c.n_candidates = ml_collections.config_dict.placeholder(int)  # None: = n
  c.optimizer = 'sgd'
  c.lr = 5.0
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
  # The precision rung: a float64 polish of the rows an uncertified run leaves free.
  common.add_polish(c)
  return c
