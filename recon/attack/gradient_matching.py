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
truth is 0 only when the simulation replays the client exactly. Its own blind signal is the
matching term (the cosine distance, TV left out): `attack` returns it at the end and along the
descent (`curve`, at CHECKPOINTS), which is how its settings are chosen on shadow clients
(scripts/federated.py --tune; docs/federated.md).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree

from recon.models import federated, train

Array = jax.Array


@dataclasses.dataclass(frozen=True)
class Setting:
  """The baseline's own settings (chosen blind on shadow clients by its final matching loss)."""
  lr: float = 0.05
  steps: int = 2000
  tv: float = 0.0


# Adam's update m / (sqrt(v) + eps) has an infinite derivative in v at v = 0 (a coordinate whose
# gradient is 0): the replay differentiates sqrt(v + EPS_ROOT) instead, which differs from the
# client's step only where |g| < ~1e-8.
EPS_ROOT = 1e-20

# Steps at which `attack` reports the matching loss along its descent (Adam at a constant step:
# the loss after s of `steps` steps is the loss of a run of s steps).
CHECKPOINTS = (250, 500, 1000, 2000, 4000, 8000)


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
  opt = federated.optimizer(client.optimizer, client.lr, eps_root=EPS_ROOT)
  n = x.shape[0]
  params, state = params0, opt.init(params0)
  for _ in range(client.epochs):
    for i in range(0, n, client.batch):
      xb, tb = x[i:i + client.batch], targets[i:i + client.batch]
      grads = jax.grad(lambda p: train.loss_value(client.loss, apply_fn(p, xb), tb))(params)
      updates, state = opt.update(grads, state, params)
      params = optax.apply_updates(params, updates)
  return ravel_pytree(params)[0] - ravel_pytree(params0)[0]


def cosine_distance(apply_fn, params0, targets, observed: Array,
                    client: Client) -> Callable[[Array], Array]:
  """x_hat -> 1 - cos(simulated update, observed update): the matching term alone."""
  def distance(x):
    u = simulated_update(apply_fn, params0, x, targets, client)
    return 1.0 - jnp.vdot(u, observed) / (jnp.linalg.norm(u) * jnp.linalg.norm(observed)
                                          + 1e-30)
  return distance


def matching_loss(apply_fn, params0, targets, observed: Array, client: Client, tv: float,
                  image_shape) -> Callable[[Array], Array]:
  """x_hat -> cosine distance between the simulated and the observed update (+ tv TV)."""
  distance = cosine_distance(apply_fn, params0, targets, observed, client)
  return lambda x: distance(x) + tv * total_variation(x, image_shape)


def attack(apply_fn, params0, params1, targets, client: Client, setting: Setting, key: Array,
           n: int, d: int, image_shape=None) -> Tuple[Array, Dict[str, Any]]:
  """(X_hat (n, d), info) of the baseline on the observed update W(1) - W(0).

  info: 'loss' (the objective at X_hat), 'matching' (its cosine distance, TV left out) and
  'curve' ({s: the cosine distance after s steps} for the CHECKPOINTS s within `steps`).
  """
  observed = ravel_pytree(params1)[0] - ravel_pytree(params0)[0]
  distance = cosine_distance(apply_fn, params0, targets, observed, client)
  x = jax.random.normal(key, (n, d), observed.dtype)
  x = x * jnp.sqrt(d) / jnp.linalg.norm(x, axis=1, keepdims=True)
  opt = optax.adam(setting.lr)

  def objective(x):
    m = distance(x)
    return m + setting.tv * total_variation(x, image_shape), m

  @jax.jit
  def run(x):
    def body(carry, _):
      x, state = carry
      (_, m), g = jax.value_and_grad(objective, has_aux=True)(x)
      updates, state = opt.update(g, state, x)
      return (optax.apply_updates(x, updates), state), m  # the matching term before this step
    (x, _), curve = jax.lax.scan(body, (x, opt.init(x)), None, length=setting.steps)
    final, m = objective(x)
    return x, final, jnp.concatenate([curve, m[None]])

  x, final, curve = run(x)
  curve = np.asarray(curve)  # curve[s]: the matching term after s steps
  return x, {'loss': float(final), 'matching': float(curve[-1]),
             'curve': {s: float(curve[s]) for s in CHECKPOINTS if s <= setting.steps}}
