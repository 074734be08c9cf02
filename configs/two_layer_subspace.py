"""A two-layer net trained by GD on data in a k-dim subspace: subspace from dW1.

f(x) = W2 relu_tanh(W1 x), width 192, trained by full-batch GD (MSE, lr 5e-3, no
weight decay) on n=6 samples in a planted k=4 dimensional subspace of R^64. The
attack reads U = top right singular vectors of dW1 = W1_T - W1_0 (k chosen by the
largest singular-value gap) and reconstructs from dW2 = W2_T - W2_0 inside span(U).
Override --config.attack.subspace.mode=none for the full-space baseline,
--config.victim.train.weight_decay to see the estimate degrade. About half a minute on 2 CPU cores.
"""
import ml_collections

from configs import base


def get_config() -> ml_collections.ConfigDict:
  c = base.get_config()
  c.name = 'two_layer_subspace'

  # Data.
  c.data.name = 'synthetic_subspace'
  c.data.n = 6
  c.data.d = 64
  c.data.planted_dim = 4

  # Model and its training (full-batch GD).
  c.victim.name = 'two_layer'
  c.victim.width = 192
  c.victim.train.lr = 0.005

  c.attack.n_candidates = 12  # 2n
  c.attack.lr = 20.0
  c.attack.max_steps = 5000
  c.attack.rescue = ()
  # Attack: the unified objective inside the subspace ('none': the full-space baseline).
  c.attack.objective = 'unified'
  c.attack.subspace.mode = 'estimated'  # 'none' | 'known' | 'estimated' (from dW1)
  c.attack.subspace.gradient_at = 'both'  # 'trained' | 'initial' | 'both' (W1 moves in training)

  c.run.chunk_steps = 250
  c.run.log_every_seconds = 5.0
  return c
