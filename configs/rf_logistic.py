"""Random features trained by GD on the logistic loss: the paper's classification ablation.

f(x) = theta^T sigma(V x) with V (width x d) ~ N(0, 1/d) fixed and theta ~ N(0, 1/width)
trained by full-batch heavy-ball GD on the logistic loss with labels +-1 (the
sign of the synthetic sphere labels relative to their median) until the loss is
below train_tol. Every GD step adds a combination of the training features, so
theta_T - theta_0 lies exactly in their span and the same projection loss
reconstructs X (n=5, d=10, p = width = 500 = 10 dn).
"""
import ml_collections

from configs import base


def get_config() -> ml_collections.ConfigDict:
  c = base.get_config()
  c.name = 'rf_logistic'

  c.data.n = 5

  # Model and its training.
  c.victim.name = 'random_features_gd'
  c.victim.width = 500
  c.victim.train.loss = 'logistic'
  c.victim.train.momentum = 0.9
  c.victim.train.tol = 0.01

  c.attack.max_steps = 2000
  return c
