"""A two-layer net trained by GD on data in a k-dim subspace: subspace from dW1.

f(x) = W2 relu_tanh(W1 x), width 192, trained by full-batch GD (MSE, lr 5e-3, no
weight decay) on n=6 samples in a planted k=4 dimensional subspace of R^64. The
attack reads U = top right singular vectors of dW1 = W1_T - W1_0 (k chosen by the
largest singular-value gap) and reconstructs from dW2 = W2_T - W2_0 inside span(U).
Override --config.subspace=none for the full-space baseline, --config.weight_decay
to see the estimate degrade. About half a minute on 2 CPU cores.
"""
import ml_collections

from configs import common


def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.name = 'two_layer_subspace'
  c.model = 'two_layer'
  # Data.
  c.dataset = 'synthetic_subspace'
  c.data_dir = ml_collections.config_dict.placeholder(str)
  c.n = 6
  c.d = 64
  c.planted_dim = 4
  c.label_noise = 0.5
  # Model and its training (full-batch GD).
  c.width = 192
  c.activation = 'relu_tanh'
  c.loss = 'mse'
  c.train_lr = 5e-3
  c.train_max_steps = 20000
  c.train_tol = 1e-6
  c.weight_decay = 0.0
  # Attack.
  c.subspace = 'estimated'  # 'none' | 'known' | 'estimated' (from dW1)
  c.subspace_dim = ml_collections.config_dict.placeholder(int)  # None: largest gap
  c.subspace_noise_floor = 1e-3
  c.gradient_at = 'both'  # 'trained' | 'initial' | 'both' (W1 moves during training)
  c.alpha_mode = 'closed_form'  # or 'joint'
  c.n_candidates = 12  # 2n
  c.optimizer = 'sgd'
  c.lr = 20.0
  c.momentum = 0.9
  c.max_steps = 5000
  c.tol = 1e-7
  c.jitter = 1e-6
  c.dtype = 'float32'
  # Bookkeeping and reliability (configs/common.py).
  common.add_bookkeeping(c, chunk_steps=250)
  return c
