"""KKT reconstruction from a two-layer cubic net trained toward max margin (docs/kkt.md).

n=8 samples on the sqrt(d)-sphere in d=8, balanced +-1 labels; f(x) = W2 (W1 x)^3,
width 40, no biases; GD on the logistic loss, then the exact nearby KKT point
(train_polish). The attack fits 2n candidates and their duals to
theta = sum_i lambda_i y_i grad_theta f(theta; x_i). About a minute on 2 CPU cores.
"""
import ml_collections

from configs import base


def get_config() -> ml_collections.ConfigDict:
  c = base.get_config()
  c.name = 'kkt_synthetic'

  c.data.n = 8
  c.data.d = 8
  c.data.num_classes = 2

  # Victim: bias-free MLP, GD on the logistic / cross-entropy loss.
  c.victim.name = 'homogeneous_mlp'
  c.victim.activation = 'cubic'
  c.victim.width = 40
  c.victim.train.lr = 0.2
  c.victim.train.polish = True  # SLSQP to the exact KKT point of the max-margin problem

  c.attack.objective = 'kkt_binary'  # projection | kkt_binary | kkt_multiclass | kkt_general
  c.attack.optimizer = 'adam'
  c.attack.lr = 0.01
  c.attack.tol = 1e-12
  c.attack.rescue = ()

  c.run.dtype = 'float64'
  c.run.chunk_steps = 500
  return c
