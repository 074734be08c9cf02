"""The peers' baseline on a federated update: simulate the client's local training, match it.

breaching's and Dimitrov et al.'s attack on FedAvg updates, in JAX: candidates X_hat (n, d)
with the client's labels (the baseline is given them; label inference is a separate step in
the peers' code) are trained locally exactly as the client trains -- the same E, B, eta, loss
and optimiser, full batches in order (the client's shuffling is unknown) -- from W(0), and the
simulated update is matched to the observed one by cosine distance over every parameter,
plus `tv` times the total variation of the candidates as images:

  L(X_hat) = 1 - <U(X_hat), U*> / (||U(X_hat)|| ||U*||) + tv * TV(X_hat)

minimised by Adam at step `lr` for `steps` steps from rows drawn on the sqrt(d)-sphere. Unlike
the projection loss it needs the training hyper-parameters and the labels, and its loss at the
truth is 0 only when the simulation replays the client exactly.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional, Tuple

import jax
import jax.numpy as jnp
import optax
from jax.flatten_util import ravel_pytree

from recon.models import federated, train

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class Setting:
  """The baseline's own settings (chosen blind on shadow clients by its final loss)."""
  lr: float = 0.05
  steps: int = 2000
  tv: float = 0.0


@dataclasses.dataclass(frozen=True)
class Client:
  """What the baseline assumes it knows of the client's training."""
  loss: str
  epochs: int
  batch: int
  lr: float
  optimizer: str


def total_variation(x: Array, image_shape: Optional[Tuple[int, ...]]) -> Array:
  """Mean absolute difference of neighbouring pixels of the rows as (H, W, C) images (0 flat)."""
  if image_shape is None:
    return jnp.zeros((), x.dtype)
  im = x.reshape((x.shape[0],) + tuple(image_shape))
  return (jnp.mean(jnp.abs(im[:, 1:] - im[:, :-1]))
          + jnp.mean(jnp.abs(im[:, :, 1:] - im[:, :, :-1])))


def simulated_update(apply_fn: Callable[[Any, Array], Array], params0: Any, x: Array,
                     targets: Array, client: Client) -> Array:
  """vec(W(1) - W(0)) of the client's local training replayed on (x, targets), differentiable
  in x (batches in order)."""
  opt = federated.optimizer(client.optimizer, client.lr)
  n = x.shape[0]
  params, state = params0, opt.init(params0)
  for _ in range(client.epochs):
    for i in range(0, n, client.batch):
      xb, tb = x[i:i + client.batch], targets[i:i + client.batch]
      grads = jax.grad(lambda p: train.loss_value(client.loss, apply_fn(p, xb), tb))(params)
      updates, state = opt.update(grads, state, params)
      params = optax.apply_updates(params, updates)
  return ravel_pytree(params)[0] - ravel_pytree(params0)[0]


def matching_loss(apply_fn, params0, targets, observed: Array, client: Client, tv: float,
                  image_shape) -> Callable[[Array], Array]:
  """x_hat -> cosine distance between the simulated and the observed update (+ tv TV)."""
  def loss(x):
    u = simulated_update(apply_fn, params0, x, targets, client)
    cos = jnp.vdot(u, observed) / (jnp.linalg.norm(u) * jnp.linalg.norm(observed) + 1e-30)
    return 1.0 - cos + tv * total_variation(x, image_shape)
  return loss


def attack(apply_fn, params0, params1, targets, client: Client, setting: Setting, key: Array,
           n: int, d: int, image_shape=None) -> Tuple[Array, float]:
  """(X_hat (n, d), final loss) of the baseline on the observed update W(1) - W(0)."""
  observed = ravel_pytree(params1)[0] - ravel_pytree(params0)[0]
  loss = matching_loss(apply_fn, params0, targets, observed, client, setting.tv, image_shape)
  x = jax.random.normal(key, (n, d), observed.dtype)
  x = x * jnp.sqrt(d) / jnp.linalg.norm(x, axis=1, keepdims=True)
  opt = optax.adam(setting.lr)

  @jax.jit
  def run(x):
    def body(carry, _):
      x, state = carry
      v, g = jax.value_and_grad(loss)(x)
      updates, state = opt.update(g, state, x)
      return (optax.apply_updates(x, updates), state), v
    (x, _), _ = jax.lax.scan(body, (x, opt.init(x)), None, length=setting.steps)
    return x, loss(x)

  x, final = run(x)
  return x, float(final)
