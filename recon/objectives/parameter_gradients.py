"""Last-layer parameter-Jacobian features of any model: one feature map for every network.

For a model f(params; x) in R^C and a named parameter collection L (the head),
    J[(i, c), :] = d f_c(params; x_i) / d vec(params[L])       (rows n*C, columns p_L),
built with jax.jacrev per candidate and jax.vmap over candidates. For a bias-free
linear head f = W_L^T h(x), row (i, c) is h(x_i) placed in class c's block, so
vec(W_L(T) - W_L(0)) lies in the row span of J at the training inputs (up to the
drift of h during training) and `recon.objectives.projection.projection_loss`
applies unchanged: one objective, several feature maps.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.flatten_util import ravel_pytree

from recon.objectives import projection

Array = jax.Array
ApplyFn = Callable[[Any, Array], Array]  # (params, inputs (N, ...)) -> outputs (N, C)


class UnknownLayerError(KeyError):
  """`layer` names no top-level parameter collection; the message is one line."""

  def __str__(self):
    return str(self.args[0])


def check_layer(params: Any, layer: str) -> None:
  """Raises UnknownLayerError (one line, listing the collections) if params has no `layer`."""
  if layer not in params:
    raise UnknownLayerError(
        f'victim.layer: no parameter collection {layer!r} in the model; accepted: '
        f'{", ".join(sorted(params))}')


def layer_vector(params: Any, layer: str) -> Array:
  """vec(params[layer]): the layer's leaves flattened in ravel_pytree order (length p_L)."""
  check_layer(params, layer)
  return ravel_pytree(params[layer])[0]


def layer_delta(params_t: Any, params_0: Any | None, layer: str) -> Array:
  """theta = vec(W_L(T) - W_L(0)); vec(W_L(T)) when the initial weights are unknown (None)."""
  theta = layer_vector(params_t, layer)
  if params_0 is not None:
    theta = theta - layer_vector(params_0, layer)
  return theta


def without_direction(a: Array, u: Array) -> Array:
  """a with the direction u removed from its last axis: a - (a u) u^T / ||u||^2.

  The adaptive attack against weight decay (`attack.init_in_span`): GD with decay lambda and
  step eta leaves W_L(T) - W_L(0) = -(1 - (1 - eta lambda)^T) W_L(0) + (a combination of the
  features), a part outside the features' span. With u = vec(W_L(0)) added to the span,
  ||P_perp[J; u] theta||^2 = ||P_perp[J'] theta'||^2 where J' and theta' are J and theta with
  u removed (span[J; u] = span[J'; u], and J', theta' are orthogonal to u): removing u from
  the target and from every feature row is the same as one more, free, feature row.
  """
  u = u / jnp.linalg.norm(u)
  return a - (a @ u)[..., None] * u


def last_layer_jacobian(apply_fn: ApplyFn, params: Any, x: Array, *, layer: str = 'head',
                        input_shape: Sequence[int] | None = None) -> Array:
  """J (n*C, p_L): per-class Jacobian rows of the outputs w.r.t. vec(params[layer]).

  `x` holds candidate rows (n, d); each is reshaped to `input_shape` (e.g. an
  NHWC image (H, W, channels)) before `apply_fn`, which sees a batch of one.
  Row i*C + c is d f_c(x_i) / d vec(params[layer]).
  """
  chex.assert_rank(x, 2)
  check_layer(params, layer)
  flat, unravel = ravel_pytree(params[layer])
  shape = tuple(input_shape) if input_shape is not None else x.shape[1:]
  chex.assert_equal(math.prod(shape), x.shape[1])

  def outputs(theta: Array, xi: Array) -> Array:
    p = dict(params)
    p[layer] = unravel(theta)
    return apply_fn(p, xi.reshape((1,) + shape))[0]  # (C,)

  jac = jax.vmap(jax.jacrev(outputs), in_axes=(None, 0))(flat, x)  # (n, C, p_L)
  return jac.reshape(-1, flat.shape[0])


def stacked_jacobian(apply_fn: ApplyFn, params: Any, x: Array, *, layer: str = 'head',
                     input_shape: Sequence[int] | None = None, average: bool = False) -> Array:
  """Jacobian rows at one parameter set, or stacked over a tuple/list of them.

  (params_0, params_T) gives 2 n C rows spanning h_0(x) and h_T(x): the head's GD
  path sum_t h_t(x_i) g_ti lies (nearly) in that span even when h drifts during
  training, while h_T alone leaves the drift unexplained. average=True gives
  their mean instead (n C rows: the trapezoid rule for the path integral).
  """
  if isinstance(params, (tuple, list)):
    jacs = [last_layer_jacobian(apply_fn, p, x, layer=layer, input_shape=input_shape)
            for p in params]
    return sum(jacs) / len(jacs) if average else jnp.concatenate(jacs)
  return last_layer_jacobian(apply_fn, params, x, layer=layer, input_shape=input_shape)


def head_rows(apply_fn: ApplyFn, params: Any, x: Array, *, layer: str = 'head',
              average: bool = False) -> Array:
  """H (n, q): the rows h(x_i) of a linear head's Jacobian, read from output 0 alone.

  For a head f_c(x) = sum_k h_k(x) W[k, c] (a Dense kernel (q_k, C), a bias (C,) with h = 1:
  every leaf of params[layer] ends in the C outputs), d f_c(x) / d W[k, c'] = delta_cc' h_k(x),
  so the dense Jacobian (n C, q C) is the rows of H placed in each output's block, and with
  Theta = vec(theta).reshape(q, C) (`head_target`) the projection loss of the C-column target
  Theta on H equals the dense one (`projection.projection_loss`), with an n x n Gram in place
  of an n C x n C one and one gradient per candidate in place of C. Stacked (or averaged) over
  a tuple of parameter sets as `stacked_jacobian`. Valid where `linear_head_outputs` says so.
  """
  if isinstance(params, (tuple, list)):
    rows = [head_rows(apply_fn, p, x, layer=layer) for p in params]
    return sum(rows) / len(rows) if average else jnp.concatenate(rows)
  flat, unravel = ravel_pytree(params[layer])

  def output0(theta: Array, xi: Array) -> Array:
    p = dict(params)
    p[layer] = unravel(theta)
    return apply_fn(p, xi[None])[0, 0]

  grads = jax.vmap(jax.grad(output0), in_axes=(None, 0))(flat, x)  # (n, q C)
  c = apply_fn(params, x[:1]).shape[-1]
  return grads.reshape(x.shape[0], -1, c)[:, :, 0]


def head_target(theta: Array, out_dim: int) -> Array:
  """Theta (q, C) = vec(theta).reshape(q, C): column c is output c's block (`head_rows`)."""
  return theta.reshape(-1, out_dim)


def linear_head_outputs(apply_fn: ApplyFn, params: Any, x: Array, *, layer: str = 'head',
                        rtol: float = 1e-5) -> int | None:
  """C when params[layer] is a linear head of the C outputs at the probe rows x (every leaf
  ends in C and the Jacobian is H placed in each output's block, `head_rows`), else None."""
  c = int(apply_fn(params, x[:1]).shape[-1])
  leaves = jax.tree.leaves(params[layer])
  if not leaves or any(l.ndim == 0 or l.shape[-1] != c for l in leaves):
    return None
  dense = np.asarray(last_layer_jacobian(apply_fn, params, x, layer=layer), np.float64)
  h = np.asarray(head_rows(apply_fn, params, x, layer=layer), np.float64)
  n, q = h.shape
  blocks = np.einsum('ab,nk->nakb', np.eye(c), h).reshape(n * c, q * c)
  scale = max(np.abs(dense).max(), np.finfo(np.float32).tiny)
  return c if np.abs(dense - blocks).max() <= rtol * scale else None


def jacobian_projection_loss(x_hat: Array, problem: Any, *, apply_fn: ApplyFn, layer: str,
                             input_shape: Sequence[int] | None = None,
                             jitter: float = projection.DEFAULT_JITTER,
                             average: bool = False) -> Array:
  """Projection loss of candidates against problem = {'params': trained (or a tuple of
  parameter sets whose Jacobian rows are stacked), 'theta': target}."""
  phi_hat = stacked_jacobian(apply_fn, problem['params'], x_hat, layer=layer,
                             input_shape=input_shape, average=average)
  return projection.projection_loss(phi_hat, problem['theta'], jitter)


def layer_size(params: Any, layer: str) -> int:
  """p_L = number of parameters in params[layer]."""
  return int(layer_vector(params, layer).shape[0])
