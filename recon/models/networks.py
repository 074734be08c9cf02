"""Flax (linen) networks whose training sets are reconstructed.

Every network names its last layer 'head' (a bias-free Dense), so the attack can
read W_L = params['head']['kernel'] the same way for every architecture.
"""
from __future__ import annotations

from typing import Callable

import flax.linen as nn
import jax
import jax.numpy as jnp

from recon import features

# W ~ N(0, 1 / fan_in) (the paper's initialisation; jax's 'normal' is untruncated).
fan_in_normal = nn.initializers.variance_scaling(1.0, 'fan_in', 'normal')


class TwoLayer(nn.Module):
  """f(x) = W2 sigma(W1 x); W1 ~ N(0, 1/d), W2 ~ N(0, 1/width), no biases."""
  width: int
  out_dim: int = 1
  activation: str = 'relu'
  hidden_init: Callable = fan_in_normal

  @nn.compact
  def __call__(self, x):
    h = nn.Dense(self.width, use_bias=False, kernel_init=self.hidden_init, name='hidden')(x)
    h = features.get_activation(self.activation)(h)
    return nn.Dense(self.out_dim, use_bias=False, kernel_init=fan_in_normal, name='head')(h)
