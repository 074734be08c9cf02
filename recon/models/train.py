"""The one trainer of GD-trained victims: Optax on the full batch (or DP-SGD on per-example
gradients), compiled in chunks (lax.while_loop).

Losses (targets y as produced by `make_targets`):
  mse:           mean_i ||f(x_i) - y_i||^2 / 2
  logistic:      mean_i log(1 + exp(-y_i f(x_i))),  y_i in {-1, +1}, one output
  cross_entropy: mean_i -log softmax(f(x_i))[y_i],   y_i integer classes

Step size: under the standard parametrisation the stable GD step shrinks with
width (the NTK grows like width). `auto_learning_rate` picks lr = 1 / lambda_max
of the Gauss-Newton matrix J^T J / n at initialisation (GD on the MSE is stable
below 2 / lambda_max; logistic and cross-entropy curvatures are smaller still).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, NamedTuple, Optional, Tuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax

from recon.config import choices

Array = jax.Array



class TrainingSetupError(ValueError):
  """A loss that does not fit the head's output size; the message is one line."""


def check_loss(name: str, out_dim: int) -> None:
  """logistic needs one output, cross_entropy at least two, mse any number."""
  if name not in choices.LOSSES:
    raise TrainingSetupError(f'victim.train.loss: unknown name {name!r}; accepted: '
                             f'{", ".join(choices.LOSSES)}')
  if name == 'logistic' and out_dim != 1:
    raise TrainingSetupError(f'data.num_classes: loss \'logistic\' is binary and needs '
                             f'data.num_classes=1, got {out_dim}; accepted: 1 (or '
                             'loss=cross_entropy)')
  if name == 'cross_entropy' and out_dim < 2:
    raise TrainingSetupError(f'data.num_classes: loss \'cross_entropy\' needs num_classes >= 2, '
                             f'got {out_dim}; accepted: >= 2 (or loss=logistic / mse)')


def class_labels(y: Array, num_classes: int) -> Array:
  """Integer classes in [0, C) from any labels y (n,).

  Integer y are taken as classes (mod C); real y (regression targets, e.g. the
  synthetic sphere's <x, g> + eps) are cut into C equal-count bins by rank, so
  C = 2 is the sign of y relative to its median.
  """
  y = jnp.asarray(y).reshape(-1)
  if jnp.issubdtype(y.dtype, jnp.integer) or jnp.issubdtype(y.dtype, jnp.bool_):
    return y.astype(jnp.int32) % num_classes
  ranks = jnp.argsort(jnp.argsort(y))
  return (ranks * num_classes // y.shape[0]).astype(jnp.int32)


def make_targets(name: str, y: Array, out_dim: int, dtype=jnp.float32) -> Array:
  """Training targets for loss `name` and a head with `out_dim` outputs.

  mse, 1 output: +-1 (n, 1); mse, C > 1 outputs: one-hot (n, C);
  logistic: +-1 (n,); cross_entropy: integer classes (n,).
  """
  check_loss(name, out_dim)
  if name == 'cross_entropy':
    return class_labels(y, out_dim)
  if out_dim == 1:
    pm = 2.0 * class_labels(y, 2).astype(dtype) - 1.0
    return pm.reshape(-1, 1) if name == 'mse' else pm
  return jax.nn.one_hot(class_labels(y, out_dim), out_dim, dtype=dtype)


def gauss_newton_top_eigenvalue(apply_fn: Callable[[Any, Array], Array], params: Any, x: Array,
                                iters: int = 30, key: Array | None = None) -> Array:
  """lambda_max(J^T J / n), J = d vec f(X) / d params, by power iteration on jvp/vjp."""
  f = lambda p: apply_fn(p, x)
  _, f_jvp = jax.linearize(f, params)
  _, f_vjp = jax.vjp(f, params)
  n = x.shape[0]
  key = jax.random.PRNGKey(0) if key is None else key
  leaves, tree = jax.tree.flatten(params)
  keys = jax.random.split(key, len(leaves))
  v = jax.tree.unflatten(tree, [jax.random.normal(k, l.shape, l.dtype)
                                for k, l in zip(keys, leaves)])

  def norm(t):
    return jnp.sqrt(sum(jnp.sum(l ** 2) for l in jax.tree.leaves(t)))

  def step(v, _):
    v = jax.tree.map(lambda l: l / norm(v), v)
    w = f_vjp(f_jvp(v))[0]
    w = jax.tree.map(lambda l: l / n, w)
    return w, None

  v, _ = jax.lax.scan(step, v, None, length=iters)
  return norm(v)  # ||A v|| with ||v|| = 1 after the last normalisation -> lambda_max


def auto_learning_rate(apply_fn: Callable[[Any, Array], Array], params: Any, x: Array) -> float:
  """lr = 1 / lambda_max(J^T J / n) at params: half the GD stability edge on the MSE."""
  lam = float(jax.jit(lambda p, x: gauss_newton_top_eigenvalue(apply_fn, p, x))(params, x))
  return 1.0 / lam


def make_optimizer(lr: float, momentum: float = 0.0,
                   weight_decay: float = 0.0) -> optax.GradientTransformation:
  """Full-batch GD (heavy-ball when momentum > 0): every head update is a combination of
  past head gradients, so W_L(T) - W_L(0) stays in their span (Adam's rescaling would not).

  weight_decay > 0 adds weight_decay * W to every gradient (a defence: W_L(T) - W_L(0) then
  holds -(1 - (1 - lr wd)^T) W_L(0) besides the span, without momentum)."""
  sgd = optax.sgd(lr, momentum=momentum if momentum > 0 else None)
  if weight_decay > 0:
    return optax.chain(optax.add_decayed_weights(weight_decay), sgd)
  return sgd


def loss_value(name: str, outputs: Array, targets: Array) -> Array:
  """Mean training loss `name` of outputs (n, C) against targets."""
  if name == 'mse':
    return 0.5 * jnp.mean(jnp.sum((outputs - targets.reshape(outputs.shape)) ** 2, axis=-1))
  if name == 'logistic':
    return jnp.mean(jax.nn.softplus(-targets.reshape(-1) * outputs.reshape(-1)))
  if name == 'cross_entropy':
    return jnp.mean(optax.softmax_cross_entropy_with_integer_labels(outputs, targets))
  raise ValueError(f'victim.train.loss: unknown name {name!r}; accepted: {", ".join(choices.LOSSES)}')


def per_example_losses(name: str, outputs: Array, targets: Array) -> Array:
  """The loss `name` of every sample (n,): `loss_value` is their mean."""
  return jax.vmap(lambda o, t: loss_value(name, o[None], t[None]))(outputs, targets)


def gd_step(value_and_grad: Callable, optimizer: optax.GradientTransformation, params: Any,
            opt_state: Any) -> Tuple[Any, Any, Array]:
  """One full-batch step: (params', opt_state', L(params)) (`program`'s)."""
  value, grads = value_and_grad(params)
  updates, opt_state = optimizer.update(grads, opt_state, params)
  return optax.apply_updates(params, updates), opt_state, value


class TrainProgram(NamedTuple):
  """`train`'s steps as pure functions (a sweep vmaps them over victims):
  init(params, key) -> carry; chunk(carry, stop) -> carry (a lax.while_loop up to step `stop`,
  unjitted); objective(params) -> the mean loss; early_stop: chunk also stops at tol.
  carry = (params, optimiser state, step, loss, ok, key, duals)."""
  init: Callable[[Any, Optional[Array]], Tuple]
  chunk: Callable[[Tuple, Array], Tuple]
  objective: Callable[[Any], Array]
  early_stop: bool


def program(apply_fn: Callable[[Any, Array], Array], x: Array, targets: Array, *, loss: str,
            optimizer: optax.GradientTransformation, tol: float = 0.0, gradients: str = 'batch',
            sample_rate: float = 1.0, duals_lr: Optional[float] = None) -> TrainProgram:
  """The steps of `train` (its docstring) on (x, targets), as a `TrainProgram`."""
  if gradients not in ('batch', 'per_example'):
    raise ValueError(f'gradients: unknown {gradients!r}; accepted: batch, per_example')
  if gradients == 'per_example' and duals_lr is not None:
    raise ValueError('duals_lr: duals are accumulated for batch gradients only')
  chex.assert_equal(x.shape[0], targets.shape[0])
  n = x.shape[0]

  def objective(p):
    return loss_value(loss, apply_fn(p, x), targets)

  value_and_grad = jax.value_and_grad(objective)
  per_example_grads = jax.vmap(jax.grad(lambda p, xi, ti: loss_value(
      loss, apply_fn(p, xi[None]), ti[None])), in_axes=(None, 0, 0))
  early_stop = gradients == 'batch' and duals_lr is None

  def body(c):
    p, o, step, l, ok, k, duals = c
    if duals_lr is not None:
      out, vjp = jax.vjp(lambda q: apply_fn(q, x), p)
      g_out = jax.grad(lambda f: loss_value(loss, f, targets))(out)
      (g,) = vjp(g_out)
      finite = jnp.all(jnp.asarray([jnp.all(jnp.isfinite(leaf)) for leaf in jax.tree.leaves(g)]))
      updates, o2 = optimizer.update(g, o, p)
      p2 = optax.apply_updates(p, updates)
      keep = ok & finite
      p = jax.tree.map(lambda a, b: jnp.where(keep, a, b), p2, p)
      o = jax.tree.map(lambda a, b: jnp.where(keep, a, b), o2, o)
      return p, o, step + 1, l, keep, k, jnp.where(keep, duals - duals_lr * g_out, duals)
    if gradients == 'per_example':
      k, k_batch = jax.random.split(k)
      g = per_example_grads(p, x, targets)
      if sample_rate < 1.0:
        drawn = jax.random.bernoulli(k_batch, sample_rate, (n,))
        g = jax.tree.map(lambda a: a * drawn.reshape((n,) + (1,) * (a.ndim - 1)).astype(a.dtype),
                         g)
      updates, o = optimizer.update(g, o, p)
      return optax.apply_updates(p, updates), o, step + 1, l, ok, k, duals
    p, o, l_now = gd_step(value_and_grad, optimizer, p, o)
    return p, o, step + 1, objective(p), jnp.isfinite(l_now), k, duals

  def chunk(carry, stop):
    def cond(c):
      go = c[2] < stop
      return go & c[4] & (c[3] > tol) if early_stop else go
    return jax.lax.while_loop(cond, body, carry)

  def init(params, key=None):
    l0 = objective(params) if early_stop else jnp.asarray(jnp.inf, x.dtype)
    out0 = apply_fn(params, x) if duals_lr is not None else None
    return (params, optimizer.init(params), jnp.zeros((), jnp.int32), l0,
            jnp.isfinite(l0) if early_stop else jnp.asarray(True),
            key if key is not None else jax.random.PRNGKey(0),
            jnp.zeros(out0.shape, out0.dtype) if out0 is not None else jnp.zeros(()))

  return TrainProgram(init, chunk, objective, early_stop)


def train(apply_fn: Callable[[Any, Array], Array], params: Any, x: Array, targets: Array, *,
          loss: str, optimizer: optax.GradientTransformation, max_steps: int, tol: float = 0.0,
          gradients: str = 'batch', sample_rate: float = 1.0, key: Optional[Array] = None,
          duals_lr: Optional[float] = None, chunk_steps: int = 1000) -> Tuple[Any, Dict[str, Any]]:
  """The one trainer of GD-trained victims: `optimizer` on the mean loss L of the full batch,
  compiled in chunks (lax.while_loop) of `chunk_steps`.

    gradients 'batch'        theta <- theta + update(grad L(theta)); stops once L <= tol
                             (or max_steps, or a non-finite loss)
    gradients 'per_example'  DP-SGD: the per-example gradients grad l_i(theta), sample i in
                             step t's batch with probability `sample_rate` (Poisson, from
                             `key`; 1: all), go to `optimizer`
                             (`recon.models.privacy.dp_optimizer` clips, sums and noises
                             them); exactly max_steps steps (the accountant's T)
    duals_lr = eta           (batch gradients, `optimizer` plain SGD at lr eta) also
                             accumulates the per-sample duals
                                 duals_i = -eta sum_t dL/df(x_i)(theta_t),
                             so that exactly theta_T - theta_0 = sum_t sum_i
                             duals_t,i . grad_theta f(theta_t; x_i) (the KKT attack's
                             victims); exactly max_steps steps, a non-finite gradient
                             freezes the parameters where they were

  Returns (params, info) with info = {steps, final_loss, reached_tol, finite} (and `duals`
  (n, C) with duals_lr).
  """
  prog = program(apply_fn, x, targets, loss=loss, optimizer=optimizer, tol=tol,
                 gradients=gradients, sample_rate=sample_rate, duals_lr=duals_lr)
  objective, early_stop, chunk = prog.objective, prog.early_stop, jax.jit(prog.chunk)
  carry = prog.init(params, key)
  while True:
    step, l, ok = int(carry[2]), float(carry[3]), bool(carry[4])
    if step >= max_steps or (early_stop and (not ok or not np.isfinite(l) or l <= tol)):
      break
    carry = chunk(carry, jnp.asarray(min(step + chunk_steps, max_steps), jnp.int32))
  params, steps, ok = carry[0], int(carry[2]), bool(carry[4])
  final = float(carry[3]) if early_stop else float(objective(params))
  info = {'steps': steps, 'final_loss': final,
          'reached_tol': bool(np.isfinite(final) and final <= tol),
          'finite': bool(np.isfinite(final)) and (ok or gradients == 'per_example')}
  if duals_lr is not None:
    info['duals'] = carry[6]
  return params, info


def accuracy(name: str, outputs: Array, targets: Array) -> Array:
  """Share of samples classified right: the sign for one output (targets +-1), else argmax."""
  if name == 'cross_entropy':
    return jnp.mean(jnp.argmax(outputs, -1) == targets)
  if outputs.shape[-1] == 1 or name == 'logistic':
    return jnp.mean(jnp.sign(outputs.reshape(-1)) == jnp.sign(targets.reshape(-1)))
  return jnp.mean(jnp.argmax(outputs, -1) == jnp.argmax(targets, -1))


def utility(apply_fn: Callable[[Any, Array], Array], params: Any, x: Array, targets: Array,
            loss: str) -> Dict[str, float]:
  """{loss, accuracy} of params on (x, targets)."""
  out = apply_fn(params, x)
  return {'loss': float(loss_value(loss, out, targets)),
          'accuracy': float(accuracy(loss, out, targets))}
