"""Full-batch training with Optax, compiled in chunks (lax.while_loop).

Losses (targets y as produced by `make_targets`):
  mse:           mean_i ||f(x_i) - y_i||^2 / 2
  logistic:      mean_i log(1 + exp(-y_i f(x_i))),  y_i in {-1, +1}, one output
  cross_entropy: mean_i -log softmax(f(x_i))[y_i],   y_i integer classes
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

Array = jax.Array

LOSSES = ('mse', 'logistic', 'cross_entropy')


def loss_value(name: str, outputs: Array, targets: Array) -> Array:
  """Mean training loss `name` of outputs (n, C) against targets."""
  if name == 'mse':
    return 0.5 * jnp.mean(jnp.sum((outputs - targets.reshape(outputs.shape)) ** 2, axis=-1))
  if name == 'logistic':
    return jnp.mean(jax.nn.softplus(-targets.reshape(-1) * outputs.reshape(-1)))
  if name == 'cross_entropy':
    return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(outputs, targets))
  raise ValueError(f'loss: unknown name {name!r}; accepted: {", ".join(LOSSES)}')


def train(apply_fn: Callable[[Any, Array], Array], params: Any, x: Array, targets: Array, *,
          loss: str, optimizer: optax.GradientTransformation, max_steps: int, tol: float,
          chunk_steps: int = 1000) -> Tuple[Any, Dict[str, Any]]:
  """Trains `params` on the full batch until loss <= tol or max_steps.

  Returns (params, info) with info = {steps, final_loss, reached_tol, finite}.
  """
  def objective(p):
    return loss_value(loss, apply_fn(p, x), targets)

  value_and_grad = jax.value_and_grad(objective)

  @jax.jit
  def chunk(carry, stop):
    def cond(c):
      p, o, step, l, ok = c
      return ok & (l > tol) & (step < stop)

    def body(c):
      p, o, step, _, _ = c
      l, g = value_and_grad(p)
      updates, o = optimizer.update(g, o, p)
      p = optax.apply_updates(p, updates)
      return p, o, step + 1, objective(p), jnp.isfinite(l)

    return jax.lax.while_loop(cond, body, carry)

  l0 = objective(params)
  carry = (params, optimizer.init(params), jnp.zeros((), jnp.int32), l0, jnp.isfinite(l0))
  while True:
    _, _, step, l, ok = carry
    step, l, ok = int(step), float(l), bool(ok)
    if not ok or not np.isfinite(l) or l <= tol or step >= max_steps:
      break
    carry = chunk(carry, jnp.asarray(min(step + chunk_steps, max_steps), jnp.int32))
  params, _, step, l, _ = carry
  final = float(l)
  return params, {'steps': int(step), 'final_loss': final,
                  'reached_tol': bool(np.isfinite(final) and final <= tol),
                  'finite': bool(np.isfinite(final))}
