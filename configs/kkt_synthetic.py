"""KKT reconstruction from a two-layer cubic net trained toward max margin (docs/kkt.md).

n=8 samples on the sqrt(d)-sphere in d=8, balanced +-1 labels; f(x) = W2 (W1 x)^3,
width 40, no biases; GD on the logistic loss, then the exact nearby KKT point
(train_polish). The attack fits 2n candidates and their duals to
theta = sum_i lambda_i y_i grad_theta f(theta; x_i). About a minute on 2 CPU cores.
"""
import ml_collections

from configs import common


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.name = 'kkt_synthetic'
  c.model = 'homogeneous_mlp'
  c.objective = 'kkt_binary'  # projection | kkt_binary | kkt_multiclass | kkt_general
  # Data (labels: balanced classes in random order).
  c.dataset = 'synthetic_sphere'
  c.n = 8
  c.d = 8
  c.n_classes = 2
  # Victim: bias-free MLP, GD on the logistic / cross-entropy loss.
  c.width = 40
  c.depth = 1
  c.activation = 'cubic'
  c.act_alpha = 50.0  # backward sigmoid(alpha z) of 'relu_smooth'
  c.init_scale = 0.2
  c.first_init_scale = 1.0
  c.train_lr = 0.2
  c.train_steps = 20000
  c.train_polish = True  # SLSQP to the exact KKT point of the max-margin problem
  # Attack.
  c.kkt_target = 'theta'  # theta | delta (= theta_T - theta_0)
  c.n_candidates = ml_collections.config_dict.placeholder(int)  # None: 2n
  c.lambda_min = 0.0
  c.lambda_constraint = 'projection'  # projection (clip) | penalty (lambda_weight relu(.)^2)
  c.lambda_weight = 5.0
  c.lambda_init = 'lstsq'
  c.prior = 'sphere'  # sphere (radius = median data norm) | box (penalty) | none
  c.prior_bound = 1.0
  c.prior_weight = 1.0
  c.candidate_init_scale = 1.0
  c.jitter = 1e-6  # projection objective only
  c.optimizer = 'adam'
  c.lr = 0.01
  c.momentum = 0.9
  c.max_steps = 20000
  c.tol = 1e-12
  c.dtype = 'float64'
  # Sample splitting (recon/splitting.py), off by default.
  common.add_splitting(c)
  # Bookkeeping and reliability (configs/common.py).
  common.add_bookkeeping(c, chunk_steps=500, log_every_seconds=10.0)
  return c
