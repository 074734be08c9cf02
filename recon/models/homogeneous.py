"""Homogeneous bias-free MLPs and margin-maximising training (the KKT attack's victims).

f(x) = W_L s(W_{L-1} ... s(W_1 x)) with no biases: for a positively homogeneous
activation of degree q, f(c theta; x) = c^D f(theta; x) with D = degree_in_params.
Gradient descent on the logistic (or cross-entropy) loss converges in direction to
a KKT point of  min ||theta||^2  s.t.  y_i f(theta; x_i) >= 1  (Lyu & Li 2020), i.e.
theta = sum_i lambda_i y_i grad_theta f(theta; x_i), lambda_i >= 0 — what
`recon.objectives.kkt` inverts.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Sequence, Tuple

import chex
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

from recon import registry
from recon.models import features, train

Array = jax.Array



def _fan_in_normal(scale: float) -> Callable:
  """W ~ N(0, scale^2 / fan_in)."""
  return nn.initializers.variance_scaling(scale ** 2, 'fan_in', 'normal')


class HomogeneousMLP(nn.Module):
  """f(x) = W_head s(W_k ... s(W_1 x)); no biases; W ~ N(0, scale^2 / fan_in).

  scale = init_scale for every layer, times first_init_scale for W_1 (Haim et al.'s
  tiny first layer). A small init makes theta_T >> theta_0, so that the KKT
  condition theta_T = sum lambda grad g holds without a theta_0 term.

  Layers are named 'hidden_0', ..., 'head'. `alpha` parametrises 'relu_smooth'.
  """
  widths: Sequence[int]
  out_dim: int = 1
  activation: str = 'cubic'
  alpha: Optional[float] = None
  first_init_scale: float = 1.0
  init_scale: float = 1.0
  param_dtype: Any = jnp.float32  # float64 for KKT work (the KKT fit is squared: 1e-7 -> 1e-14)

  @nn.compact
  def __call__(self, x):
    act = features.make_activation(self.activation, self.alpha)
    h = x
    for i, w in enumerate(self.widths):
      scale = self.init_scale * (self.first_init_scale if i == 0 else 1.0)
      h = act(nn.Dense(w, use_bias=False, kernel_init=_fan_in_normal(scale),
                       param_dtype=self.param_dtype, name=f'hidden_{i}')(h))
    return nn.Dense(self.out_dim, use_bias=False, kernel_init=_fan_in_normal(self.init_scale),
                    param_dtype=self.param_dtype, name='head')(h)


def degree_in_params(activation: str, depth: int) -> Optional[int]:
  """D with f(c theta) = c^D f(theta) (c > 0) for `depth` hidden layers; None if not homogeneous."""
  q = features.HOMOGENEITY_DEGREE.get(activation)
  if q is None:
    return None
  deg = 0
  for _ in range(depth):
    deg = q * (deg + 1)
  return deg + 1


def margins(outputs: Array, labels: Array, kind: str) -> Array:
  """Per-sample margins: y f (binary, labels +-1) or f_y - max_{j != y} f_j (multiclass)."""
  if kind == 'binary':
    return labels.reshape(-1) * outputs.reshape(-1)
  own = jnp.take_along_axis(outputs, labels[:, None], axis=1)[:, 0]
  others = jnp.where(jax.nn.one_hot(labels, outputs.shape[1], dtype=bool), -jnp.inf, outputs)
  return own - jnp.max(others, axis=1)


def normalized_margin(apply_fn, params, x: Array, labels: Array, kind: str,
                      degree: Optional[int]) -> float:
  """min_i margin_i / ||theta||^D: non-decreasing (asymptotically) under GD on the logistic loss."""
  m = float(jnp.min(margins(apply_fn(params, x), labels, kind)))
  if degree is None:
    return float('nan')
  norm = float(jnp.sqrt(sum(jnp.sum(p ** 2) for p in jax.tree.leaves(params))))
  return m / norm ** degree


def polish_max_margin(apply_fn: Callable[[Any, Array], Array], params: Any, x: Array,
                      labels: Array, kind: str, *, max_iter: int = 200,
                      tol: float = 1e-12) -> Tuple[Any, Dict[str, Any]]:
  """A KKT point of  min ||theta||^2 / 2  s.t.  margins >= 1, started from GD's direction.

  GD on the logistic loss only approaches this point at a logarithmic rate; SLSQP
  (scipy) from theta / min_margin^(1/D) lands on the nearby KKT point, so the KKT
  equations hold to solver precision. Multiclass uses the smooth per-pair
  constraints f_y - f_j >= 1 (j != y). Returns (params, info{success, message,
  n_active, multipliers unavailable -> fitted later}).
  """
  from jax.flatten_util import ravel_pytree  # pylint: disable=import-outside-toplevel
  from scipy.optimize import minimize  # pylint: disable=import-outside-toplevel
  theta0, unravel = ravel_pytree(params)
  dtype = theta0.dtype

  if kind != 'binary':
    # The pairs (i, j != y_i) are fixed by the labels: static indices, so `cons` traces.
    lab_np = np.asarray(labels).astype(np.int64).reshape(-1)
    n_out = int(np.shape(apply_fn(params, x))[1])
    pair_rows, pair_cols = np.nonzero(np.arange(n_out)[None, :] != lab_np[:, None])

  def cons(th):
    out = apply_fn(unravel(th), x)
    if kind == 'binary':
      return labels.reshape(-1) * out.reshape(-1) - 1.0
    lab = labels.astype(jnp.int32)
    own = jnp.take_along_axis(out, lab[:, None], axis=1)
    diff = own - out  # (n, C), zero at j = y
    return diff[pair_rows, pair_cols] - 1.0

  cons_j = jax.jit(cons)
  jac_j = jax.jit(jax.jacrev(cons))
  m0 = float(jnp.min(cons_j(theta0) + 1.0))
  if m0 <= 0:
    return params, {'success': False, 'message': 'training set not separated', 'n_active': 0}
  deg = 1
  # Find the homogeneity degree numerically: margin(2 theta) / margin(theta) = 2^D.
  ratio = float(jnp.min(cons_j(2 * theta0) + 1.0)) / m0
  deg = max(int(round(np.log2(ratio))), 1)
  start = np.asarray(theta0 / m0 ** (1.0 / deg), np.float64)
  res = minimize(lambda t: 0.5 * float(np.dot(t, t)), start, jac=lambda t: t,
                 constraints=[{'type': 'ineq', 'fun': lambda t: np.asarray(cons_j(jnp.asarray(t, dtype)), np.float64),
                               'jac': lambda t: np.asarray(jac_j(jnp.asarray(t, dtype)), np.float64)}],
                 method='SLSQP', options={'maxiter': max_iter, 'ftol': tol})
  c = np.asarray(cons_j(jnp.asarray(res.x, dtype)))
  return unravel(jnp.asarray(res.x, dtype)), {
      'success': bool(res.success), 'message': str(res.message),
      'n_active': int(np.sum(c < 1e-6)), 'min_constraint': float(c.min()),
      'degree': deg}


def train_stationary(apply_fn: Callable[[Any, Array], Array], params: Any, x: Array,
                     targets: Array, *, loss: str, weight_decay: float, max_steps: int = 5000,
                     grad_tol: float = 1e-13, memory_size: int = 20) -> Tuple[Any, Dict[str, Any]]:
  """An exact stationary point of R(theta) = L(theta) + weight_decay ||theta||^2 / 2 by L-BFGS.

  L is the mean loss (`recon.models.train.loss_value`). At grad R = 0,
    theta = sum_i mu_i . grad_theta f(theta; x_i),  mu_i = -dL/df(x_i) / weight_decay,
  the 'general' KKT form with free-sign duals (for the logistic loss mu_i = y_i lambda_i,
  lambda_i = sigmoid(-y_i f_i) / (n weight_decay) > 0: also the binary form). optax.lbfgs
  with its zoom line search, run until ||grad R|| <= grad_tol ||theta|| or max_steps.
  Returns (params, info{steps, grad_norm, objective, final_loss, duals (n, C)}).
  """
  from jax.flatten_util import ravel_pytree  # pylint: disable=import-outside-toplevel
  if not weight_decay > 0:
    raise ValueError(f'victim.train.weight_decay: invalid value {weight_decay!r} for an exact '
                     'stationary point; accepted: float > 0')
  theta0, unravel = ravel_pytree(params)

  def objective(th):
    return (train.loss_value(loss, apply_fn(unravel(th), x), targets)
            + 0.5 * weight_decay * jnp.sum(th ** 2))

  opt = optax.lbfgs(memory_size=memory_size)
  value_and_grad = optax.value_and_grad_from_state(objective)

  def cond(carry):
    th, _, k, gnorm = carry
    return (k < max_steps) & (gnorm > grad_tol * jnp.linalg.norm(th))

  def body(carry):
    th, state, k, _ = carry
    value, grad = value_and_grad(th, state=state)
    updates, state = opt.update(grad, state, th, value=value, grad=grad, value_fn=objective)
    th = optax.apply_updates(th, updates)
    return th, state, k + 1, jnp.linalg.norm(jax.grad(objective)(th))

  g0 = jnp.linalg.norm(jax.grad(objective)(theta0))
  th, _, steps, gnorm = jax.jit(lambda c: jax.lax.while_loop(cond, body, c))(
      (theta0, opt.init(theta0), jnp.zeros((), jnp.int32), g0))
  out = apply_fn(unravel(th), x)
  g_out = jax.grad(lambda o: train.loss_value(loss, o, targets))(out)
  return unravel(th), {'steps': int(steps), 'grad_norm': float(gnorm),
                       'objective': float(objective(th)),
                       'final_loss': float(train.loss_value(loss, out, targets)),
                       'duals': -g_out / weight_decay, 'finite': bool(jnp.isfinite(gnorm))}


def neuron_gram_rank(first_layer: Array, x: Optional[Array] = None,
                     rel_tol: float = 1e-6) -> Tuple[int, int]:
  """(rank of {w_k w_k^T} in Sym^2, the dimension it needs for the cubic identifiability).

  first_layer: (d, m) kernel (column k = neuron w_k). Without x: rank in Sym^2(R^d),
  needed d(d+1)/2. With x (n, d): neurons projected onto span(x) (an exact KKT point has
  w_k in span(x_1..x_n)), needed r(r+1)/2 with r = rank(x): the cubic tensor
  T = sum_i mu_i x_i^(x)3 is determined on span(x) when this rank is full.
  """
  w = np.asarray(first_layer, np.float64).T
  if x is not None:
    u, s, _ = np.linalg.svd(np.asarray(x, np.float64).T, full_matrices=False)
    basis = u[:, s > rel_tol * s[0]]
    w = w @ basis
  k = w.shape[1]
  iu = np.triu_indices(k)
  q = np.stack([np.outer(v, v)[iu] for v in w])
  sv = np.linalg.svd(q, compute_uv=False)
  return int(np.sum(sv > rel_tol * sv[0])), int(k * (k + 1) // 2)


def _widths_fields(hparams) -> Dict[str, Any]:
  """victim.width and victim.depth of a saved HomogeneousMLP (its widths all equal)."""
  widths = list(hparams.get('widths') or [])
  if not widths or len(set(widths)) != 1:
    raise registry.RegistryError(
        f'victim.checkpoint: holds a HomogeneousMLP with widths {widths}; accepted: equal '
        'hidden widths (victim.width, victim.depth)')
  return {'victim.width': widths[0], 'victim.depth': len(widths)}


# The KKT pipeline's victim (recon/pipelines/kkt.py builds it with the attack's dtype);
# Haim et al.'s attack uses 2n candidates.
registry.register('victim', 'homogeneous_mlp', registry.Victim(
    pipeline='kkt', architecture=HomogeneousMLP, restartable=False, candidates_per_sample=2,
    homogeneous=True,
    checkpoint_fields={'activation': 'victim.activation', 'alpha': 'victim.act_alpha',
                       'init_scale': 'victim.init_scale',
                       'first_init_scale': 'victim.first_init_scale'},
    from_checkpoint=_widths_fields))
