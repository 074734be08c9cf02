"""A federated client's local training: W(0) -> W(1) in E epochs of minibatches (FedAvg's step).

The server sends the global weights W(0); the client holds n records, runs `epochs` passes
over them in minibatches of `batch` (shuffled each epoch by `key`; the last batch of an epoch
holds the remainder) with optax SGD or Adam at step `lr` on the mean `loss` of each batch, and
returns W(1). The server sees (W(0), W(1)).

One epoch with batch = n and SGD is one full-batch GD step: W_L(1) - W_L(0) = -lr/n sum_i
g_i phi(x_i)^T for a linear head W_L, with g_i the loss's gradient at the logits of record i
and phi(x_i) the penultimate features at W(0) -- the head's Jacobian rows at W(0), the span
the projection loss tests. More steps read the features along the local trajectory; Adam
rescales each coordinate, so its update leaves that span.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Dict, Tuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from recon.config import choices
from recon.models import train

Array = jax.Array


def optimizer(name: str, lr: float, eps_root: float = 0.0) -> optax.GradientTransformation:
  """The client's local optimiser `name` (recon.config.choices.FEDERATED_OPTIMIZERS); `eps_root`
  (Adam's, inside the square root) is for differentiating through it (the baseline's replay)."""
  if name == 'sgd':
    return optax.sgd(lr)
  if name == 'adam':
    return optax.adam(lr, eps_root=eps_root)
  raise ValueError(f'federated.optimizer: unknown {name!r}; accepted: '
                   f'{", ".join(choices.FEDERATED_OPTIMIZERS)}')


def batches(key: Array, n: int, batch: int, epochs: int) -> Tuple[np.ndarray, ...]:
  """The index arrays of every local step, in order: each epoch a fresh permutation of the n
  records cut into ceil(n / batch) minibatches (batch >= n: one full batch, unshuffled)."""
  if batch >= n:
    return tuple(np.arange(n) for _ in range(epochs))
  out = []
  for e in range(epochs):
    perm = np.asarray(jax.random.permutation(jax.random.fold_in(key, e), n))
    out += [perm[i:i + batch] for i in range(0, n, batch)]
  return tuple(out)


def local_update(apply_fn: Callable[[Any, Array], Array], params0: Any, x: Array, targets: Array,
                 *, loss: str, epochs: int, batch: int, lr: float, optimizer_name: str,
                 key: Array) -> Tuple[Any, Dict[str, Any]]:
  """(W(1), info): the client's local training from `params0` on (x, targets).

  info: steps, the mean loss before and after, and whether every loss stayed finite.
  """
  opt = optimizer(optimizer_name, lr)
  n = x.shape[0]
  value = lambda p, xb, tb: train.loss_value(loss, apply_fn(p, xb), tb)  # noqa: E731

  @jax.jit
  def step(params, state, xb, tb):
    v, grads = jax.value_and_grad(value)(params, xb, tb)
    updates, state = opt.update(grads, state, params)
    return optax.apply_updates(params, updates), state, v

  params, state = params0, opt.init(params0)
  steps = batches(key, n, batch, epochs)
  finite = True
  for idx in steps:
    params, state, v = step(params, state, x[idx], targets[idx])
    finite = finite and bool(jnp.isfinite(v))
  before = float(value(params0, x, targets))
  after = float(value(params, x, targets))
  return params, {'steps': len(steps), 'steps_per_epoch': math.ceil(n / min(batch, n)),
                  'loss_before': before, 'loss_after': after,
                  'finite': finite and math.isfinite(after)}


def head_view(params0: Any, params1: Any, layer: str) -> Any:
  """W(0) with the head `layer` replaced by W_L(1): the weights whose head-Jacobian rows are
  the features at W(0) while their head differs from W(0)'s by the update (features_at 'init')."""
  view = dict(params0)
  view[layer] = params1[layer]
  return view
