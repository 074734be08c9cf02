"""Flax (linen) networks whose training sets are reconstructed.

Every network names its last layer 'head' (a bias-free Dense), so the attack can
read W_L = params['head']['kernel'] (shape (p_L / C, C)) the same way for every
architecture; f(x) = W_L^T h(x) with h the penultimate representation. Image
models take NHWC inputs. Initialisation: W ~ N(0, 1/fan_in) everywhere (standard
parametrisation, as in the law-of-reconstruction paper), except the head when
`head_init='zeros'` (W_L(0) = 0, the original ViT's and big_vision's convention):
then f = 0 at the start, the layers below receive no gradient until the head has
grown, and the penultimate features drift less during training (theta = W_L(T)).
"""
from __future__ import annotations

from typing import Callable, Sequence

import flax.linen as nn
import jax
import jax.numpy as jnp

from recon.config import choices
from recon import registry
from recon.models import features

# W ~ N(0, 1 / fan_in) (the paper's initialisation; jax's 'normal' is untruncated).
fan_in_normal = nn.initializers.variance_scaling(1.0, 'fan_in', 'normal')


# head_init -> the initialiser of the bias-free head W_L.
HEAD_INITS = {'fan_in': fan_in_normal, 'zeros': nn.initializers.zeros}


def _head(out_dim: int, h, init: str = 'fan_in'):
  if init not in HEAD_INITS:
    raise ValueError(f'victim.head_init: unknown {init!r}; accepted: {", ".join(HEAD_INITS)}')
  return nn.Dense(out_dim, use_bias=False, kernel_init=HEAD_INITS[init], name='head')(h)


def _pool(name: str, h):
  """(N, ..., width) -> (N, width) by the mean over positions, or (N, positions * width)."""
  if name == 'mean':
    return jnp.mean(h.reshape(h.shape[0], -1, h.shape[-1]), axis=1)
  if name == 'flatten':
    return h.reshape(h.shape[0], -1)
  raise ValueError(f'victim.pool: unknown name {name!r}; accepted: {", ".join(choices.POOLS)}')


class TwoLayer(nn.Module):
  """f(x) = W2 sigma(W1 x); W1 ~ N(0, 1/d), W2 ~ N(0, 1/width), no biases."""
  width: int
  out_dim: int = 1
  activation: str = 'relu'
  hidden_init: Callable = fan_in_normal
  head_init: str = 'fan_in'

  @nn.compact
  def __call__(self, x):
    x = x.reshape(x.shape[0], -1)
    h = nn.Dense(self.width, use_bias=False, kernel_init=self.hidden_init, name='hidden')(x)
    h = features.get_activation(self.activation)(h)
    return _head(self.out_dim, h, self.head_init)


class RandomFeatures(nn.Module):
  """f(x) = theta^T sigma(V x) with V (width x d) ~ N(0, 1/d) FIXED: the random-features model.

  V lives in the 'constants' collection (not 'params'), so a trainer that updates
  'params' trains only the head theta ~ N(0, 1/width) -- the RF model trained by GD.
  """
  width: int
  out_dim: int = 1
  activation: str = 'relu'
  head_init: str = 'fan_in'

  @nn.compact
  def __call__(self, x):
    x = x.reshape(x.shape[0], -1)
    d = x.shape[-1]
    v = self.variable('constants', 'v', lambda: features.random_weights(
        self.make_rng('params'), self.width, d, x.dtype)).value
    return _head(self.out_dim, features.rf_features(v, x, self.activation), self.head_init)


class ResidualBlock(nn.Module):
  """h + conv(sigma(conv(sigma(h)))) / sqrt(depth): pre-activation, no batch norm."""
  width: int
  activation: str
  scale: float

  @nn.compact
  def __call__(self, h):
    act = features.get_activation(self.activation)
    z = nn.Conv(self.width, (3, 3), use_bias=True, kernel_init=fan_in_normal)(act(h))
    z = nn.Conv(self.width, (3, 3), use_bias=True, kernel_init=fan_in_normal)(act(z))
    return h + self.scale * z


class ResNet(nn.Module):
  """Stem 3x3 conv -> `depth` residual blocks -> sigma -> pool -> bias-free 'head'.

  No batch norm; residual branches are scaled by 1/sqrt(depth) to keep the
  forward variance O(1). With pool='flatten' p_L = H*W*width*C (the reference
  ResNet flattens its 7x7 map), with pool='mean' p_L = width*C.
  """
  width: int
  out_dim: int = 1
  depth: int = 2
  activation: str = 'relu'
  pool: str = 'flatten'
  head_init: str = 'fan_in'

  @nn.compact
  def __call__(self, x):
    h = nn.Conv(self.width, (3, 3), use_bias=False, kernel_init=fan_in_normal, name='stem')(x)
    for i in range(self.depth):
      h = ResidualBlock(self.width, self.activation, self.depth ** -0.5, name=f'block{i}')(h)
    h = features.get_activation(self.activation)(h)
    return _head(self.out_dim, _pool(self.pool, h), self.head_init)


class TransformerBlock(nn.Module):
  """Pre-LN block: h + MHA(LN(h)); h + MLP(LN(h)) with a 2x-wide MLP."""
  width: int
  num_heads: int
  activation: str

  @nn.compact
  def __call__(self, h):
    z = nn.LayerNorm()(h)
    h = h + nn.MultiHeadDotProductAttention(
        num_heads=self.num_heads, kernel_init=fan_in_normal)(z, z)
    z = nn.LayerNorm()(h)
    z = nn.Dense(2 * self.width, kernel_init=fan_in_normal)(z)
    z = nn.Dense(self.width, kernel_init=fan_in_normal)(features.get_activation(self.activation)(z))
    return h + z


class ViT(nn.Module):
  """Patch embedding (+ learned positions) -> `depth` blocks -> LN -> pool -> bias-free 'head'.

  With pool='flatten' p_L = tokens*width*C, with pool='mean' p_L = width*C.
  """
  width: int
  out_dim: int = 1
  depth: int = 2
  patch_size: int = 2
  num_heads: int = 2
  activation: str = 'gelu'
  pool: str = 'mean'
  head_init: str = 'fan_in'

  @nn.compact
  def __call__(self, x):
    ps = self.patch_size
    h = nn.Conv(self.width, (ps, ps), strides=(ps, ps), padding='VALID',
                kernel_init=fan_in_normal, name='patch_embed')(x)
    h = h.reshape(h.shape[0], -1, self.width)
    pos = self.param('pos_embed', nn.initializers.normal(0.02), h.shape[1:], h.dtype)
    h = h + pos
    for i in range(self.depth):
      h = TransformerBlock(self.width, self.num_heads, self.activation, name=f'block{i}')(h)
    h = nn.LayerNorm(name='final_norm')(h)
    return _head(self.out_dim, _pool(self.pool, h), self.head_init)


def check_image_shape(image_shape: Sequence[int], patch_size: int | None = None) -> None:
  """Raises ValueError (one line) unless image_shape is (H, W, channels) [divisible by patch]."""
  if (not isinstance(image_shape, (tuple, list)) or len(image_shape) != 3
      or not all(isinstance(s, int) and s >= 1 for s in image_shape)):
    raise ValueError(f'data.image_shape: invalid value {image_shape!r}; accepted: (height, width, '
                     'channels), three positive ints')
  if patch_size is not None and (image_shape[0] % patch_size or image_shape[1] % patch_size):
    raise ValueError(f'victim.patch_size: {patch_size} does not divide image_shape '
                     f'{tuple(image_shape)}; accepted: a divisor of height and width')


# Victims built from the `victim` section (registered once, here; recon/registry.py).
# A saved model of each fixes these config fields ({hyper-parameter: config path}).
_SAVED = {'width': 'victim.width', 'out_dim': 'data.num_classes',
          'activation': 'victim.activation'}


def _vit_check(v) -> str | None:
  if v.num_heads and v.width % v.num_heads:
    return (f'victim.num_heads: {v.num_heads} does not divide victim.width={v.width}; '
            'accepted: a divisor of the width')
  return None


registry.register('victim', 'two_layer', registry.Victim(
    pipeline='networks', architecture=TwoLayer, checkpoint_fields=_SAVED,
    build=lambda v, c: TwoLayer(v.width, c, v.activation, head_init=v.head_init)))
registry.register('victim', 'random_features_gd', registry.Victim(
    pipeline='networks', architecture=RandomFeatures, checkpoint_fields=_SAVED,
    build=lambda v, c: RandomFeatures(v.width, c, v.activation, head_init=v.head_init)))
registry.register('victim', 'resnet', registry.Victim(
    pipeline='networks', architecture=ResNet, image_input=True,
    checkpoint_fields={**_SAVED, 'depth': 'victim.depth', 'pool': 'victim.pool'},
    build=lambda v, c: ResNet(v.width, c, v.depth, v.activation, v.pool,
                              head_init=v.head_init)))
registry.register('victim', 'vit', registry.Victim(
    pipeline='networks', architecture=ViT, image_input=True, patched=True, check=_vit_check,
    checkpoint_fields={**_SAVED, 'depth': 'victim.depth', 'patch_size': 'victim.patch_size',
                       'num_heads': 'victim.num_heads', 'pool': 'victim.pool'},
    build=lambda v, c: ViT(v.width, c, v.depth, v.patch_size, v.num_heads, v.activation,
                           v.pool, head_init=v.head_init)))
