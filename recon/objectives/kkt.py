"""The KKT (stationarity) objective of max-margin training (Haim et al. 2022; Buzaglo et al. 2023).

A homogeneous net trained long on the logistic loss satisfies (Lyu & Li 2020)
  theta = sum_i lambda_i grad_theta g_i(theta; x_i),  lambda_i >= 0,
with g_i = y_i f (binary, y in {-1, +1}) or f_{y_i} - max_{j != y_i} f_j (multiclass
margin). The 'general' form (regression / any loss, Loo et al. 2023) uses free-sign
vector duals, g_i = <lambda_i, f(theta; x_i)>, no lambda_min and no labels. The
attack fits candidates x_hat and duals lambda to
  L(x_hat, lambda) = ||target - sum_i grad_theta g_i(theta; x_hat_i)||^2 / ||target||^2
                     + prior(x_hat) + lambda-penalty,
with target = theta (or theta - theta_0). sum_i lambda_i grad g_i is ONE backward pass
of sum_i lambda_i g_i. The state is the pytree {'x': (m, d), 'lam': (m,) or (m, C)}, the
duals in units of the optional `problem['lam_scale']` (so one optimiser learning rate
suits x and lambda; lambda_min is in the same units).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Tuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
import optax
from jax.flatten_util import ravel_pytree

from recon import registry
from recon.models import homogeneous

Array = jax.Array

KINDS = ('binary', 'multiclass', 'general')


class KKTError(ValueError):
  """Invalid KKT input (labels, lambda_min); the message is one line."""


def flatten_model(apply_fn: Callable[[Any, Array], Array], params: Any
                  ) -> Tuple[Array, Callable[[Array, Array], Array]]:
  """(theta as a flat vector, apply_vec(theta_vec, x) -> outputs (m, C))."""
  theta, unravel = ravel_pytree(params)
  return theta, lambda th, x: apply_fn(unravel(th), x)


def check_labels(labels, kind: str, out_dim: int) -> None:
  """Binary labels must be +-1; multiclass labels integers in [0, out_dim); one-line errors."""
  labels = np.asarray(labels)
  if kind == 'binary':
    if not np.all(np.isin(labels, (-1, 1))):
      bad = labels[~np.isin(labels, (-1, 1))][0]
      raise KKTError(f'labels: value {bad!r} outside the binary model\'s classes; accepted: -1, +1')
    if out_dim != 1:
      raise KKTError(f'labels: the binary KKT form needs a model with 1 output, got {out_dim}')
  elif kind == 'multiclass':
    bad = labels[(labels < 0) | (labels >= out_dim) | (labels != np.round(labels))]
    if bad.size:
      raise KKTError(f'labels: value {bad[0]!r} outside the model\'s classes; accepted: '
                     f'integers 0..{out_dim - 1}')
    if out_dim < 2:
      raise KKTError('labels: the multiclass KKT form needs a model with >= 2 outputs')
  elif kind != 'general':
    raise KKTError(f'kind: unknown name {kind!r}; accepted: {", ".join(KINDS)}')


def check_lambda_min(lambda_min: float) -> None:
  if not lambda_min >= 0:
    raise KKTError(f'attack.kkt.lambda_min: invalid value {lambda_min!r}; accepted: float >= 0')


def weighted_output(outputs: Array, lam: Array, labels: Array, kind: str) -> Array:
  """sum_i lambda_i g_i (the scalar whose theta-gradient is the KKT sum)."""
  if kind == 'binary':
    return jnp.sum(lam * labels * outputs[:, 0])
  if kind == 'multiclass':
    return jnp.sum(lam * homogeneous.margins(outputs, labels.astype(jnp.int32), 'multiclass'))
  return jnp.sum(lam.reshape(outputs.shape) * outputs)


def explained(x: Array, lam: Array, labels: Array, theta: Array, *,
              apply_vec: Callable[[Array, Array], Array], kind: str) -> Array:
  """sum_i lambda_i grad_theta g_i(theta; x_i) as a flat (P,) vector."""
  return jax.grad(lambda th: weighted_output(apply_vec(th, x), lam, labels, kind))(theta)


def candidate_term(x_j: Array, lam_j: Array, label_j: Array, theta: Array, *,
                   apply_vec, kind: str) -> Array:
  """One candidate's share lambda_j grad_theta g_j(theta; x_j) (P,)."""
  return explained(x_j[None], lam_j[None], label_j[None], theta, apply_vec=apply_vec, kind=kind)


def layer_mask(params: Any, layers) -> Array:
  """0/1 vector over flat theta (ravel_pytree order): 1 on the parameters of the named layers
  (a layer matches when its name is a key on the leaf's path, e.g. 'hidden_0', 'head')."""
  names = tuple(layers)
  known = set()

  def leaf(path, a):
    keys = [getattr(k, 'key', getattr(k, 'name', None)) for k in path]
    known.update(k for k in keys if isinstance(k, str))
    return jnp.full(jnp.shape(a), float(any(n in keys for n in names)), jnp.asarray(a).dtype)

  mask = ravel_pytree(jax.tree_util.tree_map_with_path(leaf, params))[0]
  missing = [n for n in names if n not in known]
  if missing or not names:
    raise KKTError(f'attack.kkt.layers: unknown layer {missing[0] if missing else "(none)"!r}; '
                   f'accepted: a comma-separated subset of '
                   f'{", ".join(sorted(k for k in known if k != "params" and k != "kernel"))}, '
                   "or 'all'")
  return mask


def residual(state: Dict[str, Array], problem: Dict[str, Array], *, apply_vec,
             kind: str) -> Array:
  """r = target - sum_i lambda_i grad_theta g_i(theta; x_hat_i), lambda = lam * lam_scale;
  with `problem['mask']` only the masked equations (the target is then masked too)."""
  lam = state['lam'] * problem.get('lam_scale', 1.0)
  ex = explained(state['x'], lam, problem['labels'], problem['theta'], apply_vec=apply_vec,
                 kind=kind)
  if 'mask' in problem:
    ex = ex * problem['mask']
  return problem['target'] - ex


def penalties(state: Dict[str, Array], *, kind: str, lambda_min: float, lambda_constraint: str,
              lambda_weight: float, prior: str, prior_bound: float, prior_weight: float) -> Array:
  """lambda_weight * mean_i relu(lambda_min - lambda_i)^2  (+ box prior, mean over candidates)."""
  m = state['x'].shape[0]
  total = jnp.zeros((), state['x'].dtype)
  if kind != 'general' and lambda_constraint == 'penalty':
    total += lambda_weight * jnp.sum(jax.nn.relu(lambda_min - state['lam']) ** 2) / m
  if prior == 'box':
    x = state['x']
    total += prior_weight * jnp.sum(jax.nn.relu(x - prior_bound) ** 2
                                    + jax.nn.relu(-prior_bound - x) ** 2) / m
  return total


# `penalties`' settings, fields of the attack.kkt section (recon.config.sections.Kkt, their one
# definition and defaults): `kkt_loss` takes them all, `penalty_settings` reads them off it.
PENALTY_FIELDS = ('lambda_min', 'lambda_constraint', 'lambda_weight', 'prior', 'prior_bound',
                  'prior_weight')


def penalty_settings(section: Any) -> Dict[str, Any]:
  """{field: value} of `PENALTY_FIELDS` in an attack.kkt section (`kkt_loss`'s keywords)."""
  return {name: getattr(section, name) for name in PENALTY_FIELDS}


def kkt_loss(state: Dict[str, Array], problem: Dict[str, Array], *, apply_vec, kind: str,
             lambda_min: float, lambda_constraint: str, lambda_weight: float, prior: str,
             prior_bound: float, prior_weight: float) -> Array:
  """||w r||^2 / ||w target||^2 + penalties (see module docstring); w = problem['weights']
  (`residual_weights`) or 1. The penalties' settings are attack.kkt's (`penalty_settings`)."""
  chex.assert_rank(state['x'], 2)
  chex.assert_equal(state['x'].shape[0], state['lam'].shape[0])
  r = residual(state, problem, apply_vec=apply_vec, kind=kind)
  t = problem['target']
  if 'weights' in problem:  # row scaling of the KKT equations (`residual_weights`)
    r, t = r * problem['weights'], t * problem['weights']
  fit = jnp.sum(r ** 2) / jnp.sum(t ** 2)
  return fit + penalties(state, kind=kind, lambda_min=lambda_min,
                         lambda_constraint=lambda_constraint, lambda_weight=lambda_weight,
                         prior=prior, prior_bound=prior_bound, prior_weight=prior_weight)


def make_constraint(kind: str, prior: str, radius: float, lambda_min: float,
                    lambda_constraint: str) -> Callable[[Dict[str, Array]], Dict[str, Array]]:
  """Per-leaf projection: x onto the sphere (prior 'sphere'), lambda onto [lambda_min, inf)."""
  def project(state):
    x, lam = state['x'], state['lam']
    if prior == 'sphere':
      norms = jnp.linalg.norm(x, axis=-1, keepdims=True)
      x = x * (radius / jnp.maximum(norms, jnp.finfo(x.dtype).tiny))
    if kind != 'general' and lambda_constraint == 'projection':
      lam = jnp.maximum(lam, lambda_min)
    return {'x': x, 'lam': lam}
  return project


def balanced_labels(m: int, kind: str, out_dim: int, dtype=jnp.float32) -> Array:
  """Fixed candidate labels: +1 for the first ceil(m/2), -1 after (binary); i mod C (multiclass)."""
  if kind == 'binary':
    return jnp.where(jnp.arange(m) < (m + 1) // 2, 1.0, -1.0).astype(dtype)
  if kind == 'multiclass':
    return (jnp.arange(m) % out_dim).astype(dtype)
  return jnp.zeros((m,), dtype)


def lambda_shape(m: int, kind: str, out_dim: int) -> Tuple[int, ...]:
  return (m, out_dim) if kind == 'general' else (m,)


def lstsq_lambda(x: Array, labels: Array, theta: Array, target: Array, *, apply_vec,
                 kind: str, out_dim: int, ridge: float = 1e-8, mask=None) -> Array:
  """argmin_lambda ||target - M sum_i lambda_i grad g_i||^2 (unconstrained; ridge-regularised;
  M = diag(mask) or I)."""
  m = x.shape[0]
  shape = lambda_shape(m, kind, out_dim)
  # Jacobian of the explained vector w.r.t. lambda (linear map), via one jacfwd.
  jac = jax.jacfwd(lambda lam: explained(x, lam.reshape(shape), labels, theta,
                                         apply_vec=apply_vec, kind=kind))(
                                             jnp.zeros((int(np.prod(shape)),), x.dtype))
  if mask is not None:
    jac = jac * mask[:, None]
  gram = jac.T @ jac
  eps = ridge * jnp.trace(gram) / gram.shape[0] + jnp.finfo(gram.dtype).tiny
  lam = jnp.linalg.solve(gram + eps * jnp.eye(gram.shape[0], dtype=gram.dtype), jac.T @ target)
  return lam.reshape(shape)


def fit_lambda(x: Array, labels: Array, problem: Dict[str, Array], *, apply_vec, kind: str,
               out_dim: int, lambda_min: float, steps: int, lr: float) -> Array:
  """Duals for fixed candidates: least squares, then `steps` of projected Adam (learning rate
  `lr` x the least-squares duals' mean size) on the KKT fit, lambda >= lambda_min (no prior,
  no penalty: the projection keeps the bound)."""
  lam0 = lstsq_lambda(x, labels, problem['theta'], problem['target'], apply_vec=apply_vec,
                      kind=kind, out_dim=out_dim)
  if kind == 'general':
    return lam0
  lam0 = jnp.maximum(lam0, lambda_min)
  loss = lambda lam: kkt_loss({'x': x, 'lam': lam}, dict(problem, labels=labels),
                              apply_vec=apply_vec, kind=kind, lambda_min=lambda_min,
                              lambda_constraint='projection', lambda_weight=0.0, prior='none',
                              prior_bound=1.0, prior_weight=0.0)
  opt = optax.adam(lr * (jnp.mean(jnp.abs(lam0)) + 1e-12))

  def body(carry, _):
    lam, o = carry
    g = jax.grad(loss)(lam)
    u, o = opt.update(g, o, lam)
    return (jnp.maximum(optax.apply_updates(lam, u), lambda_min), o), None

  (lam, _), _ = jax.lax.scan(body, (lam0, opt.init(lam0)), None, length=steps)
  return lam


def on_sphere(x: Array, radius) -> Array:
  """Rows rescaled to norm `radius` (a smooth reparametrisation: the sphere prior
  without a projection step, which would break a quasi-Newton method's curvature pairs)."""
  norms = jnp.linalg.norm(x, axis=-1, keepdims=True)
  return x * (radius / jnp.maximum(norms, jnp.finfo(x.dtype).tiny))


def dual_jacobian(x: Array, labels: Array, theta: Array, *, apply_vec, kind: str,
                  out_dim: int) -> Array:
  """J (P, m*C) with sum_i lambda_i grad g_i = J vec(lambda) (the KKT sum is linear in lambda)."""
  shape = lambda_shape(x.shape[0], kind, out_dim)
  return jax.jacfwd(lambda lam: explained(x, lam.reshape(shape), labels, theta,
                                          apply_vec=apply_vec, kind=kind))(
                                              jnp.zeros((int(np.prod(shape)),), x.dtype))


def eliminated_loss(state: Dict[str, Array], problem: Dict[str, Array], *, apply_vec,
                    kind: str, out_dim: int, radius=None) -> Array:
  """Variable projection: min over free-sign lambda of the KKT fit, in closed form,
  L(x_hat) = ||(I - Q Q^T) target||^2 / ||target||^2, Q = orth(J(x_hat)) (reduced QR).

  With `radius`, rows are first put on the sphere (`on_sphere`); for a q-homogeneous
  activation J's columns scale as |x|^q, so the loss ignores the row norms either way.
  The sign constraint lambda >= lambda_min is not imposed (free-sign duals).
  """
  x = state['x']
  chex.assert_rank(x, 2)
  if radius is not None:
    x = on_sphere(x, radius)
  jac = dual_jacobian(x, problem['labels'], problem['theta'], apply_vec=apply_vec, kind=kind,
                      out_dim=out_dim)
  chex.assert_axis_dimension_gt(jac, 0, jac.shape[1] - 1)  # P >= m*C
  t = problem['target']
  if 'weights' in problem:  # row scaling of the KKT equations (`residual_weights`)
    jac = jac * problem['weights'][:, None]
    t = t * problem['weights']
  q, _ = jnp.linalg.qr(jac)
  r = t - q @ (q.T @ t)
  return jnp.sum(r ** 2) / jnp.sum(t ** 2)


def residual_weights(theta: Array, apply_vec, d: int, radius: float, key: Array,
                     n_probes: int = 256, floor: float = 1e-3) -> Array:
  """w_p = 1 / max(RMS_x |d f(theta; x) / d theta_p|, floor * max_p RMS) over random x
  on the sphere (P,). The floor keeps dead neurons (theta_p ~ 0, satisfied only to
  absolute precision) from dominating.

  Dividing each KKT equation by the typical size of its gradient balances the
  equations of neurons with small weights against those of large ones (for a
  two-layer net, a_j's equation by |w_j|^q, w_j's by q |a_j| |w_j|^(q-1)): the
  zeros of the fit are unchanged, its conditioning improves by orders of magnitude.
  """
  probes = radius * jax.random.normal(key, (n_probes, d), theta.dtype)
  probes = on_sphere(probes, radius)
  grads = jax.vmap(lambda z: jax.grad(lambda th: jnp.sum(apply_vec(th, z[None])))(theta))(probes)
  rms = jnp.sqrt(jnp.mean(grads ** 2, axis=0))
  return 1.0 / jnp.maximum(rms, floor * jnp.max(rms))


def eliminated_lambda(x: Array, problem: Dict[str, Array], *, apply_vec, kind: str,
                      out_dim: int, radius=None) -> Array:
  """The lambda `eliminated_loss` uses at x (least squares; for reporting)."""
  if radius is not None:
    x = on_sphere(x, radius)
  jac = dual_jacobian(x, problem['labels'], problem['theta'], apply_vec=apply_vec, kind=kind,
                      out_dim=out_dim)
  lam = jnp.linalg.lstsq(jac, problem['target'])[0]
  return lam.reshape(lambda_shape(x.shape[0], kind, out_dim))


def first_layer_subspace(kernel: Array, rank: int) -> Tuple[Array, Array]:
  """(U (d, rank), singular values (min(d, width),)) of the first-layer kernel (d, width):
  the input directions the net can see. A net trained by GD from a tiny first layer has
  kernel = K_0 + sum_i x_i u_i^T, so its top-n left singular vectors span the data (up to
  |K_0|); input components outside them change no KKT equation at all (no gradient), so
  the attack keeps candidates inside (docs/kkt.md, "Trained networks")."""
  u, s, _ = jnp.linalg.svd(kernel, full_matrices=False)
  return u[:, :rank], s


def subspace_constraint(base: Callable[[Dict[str, Array]], Dict[str, Array]], basis: Array
                        ) -> Callable[[Dict[str, Array]], Dict[str, Array]]:
  """`base`, then candidates projected onto span(basis) (x -> x U U^T)."""
  def project(state):
    state = base(state)
    return dict(state, x=(state['x'] @ basis) @ basis.T)
  return project


# The KKT conditions of a homogeneous MLP trained toward max margin (Haim et al.; Buzaglo et
# al.), built by the KKT pipeline (recon/pipelines/kkt.py) for each label kind.
for _kind in KINDS:
  registry.register('objective', f'kkt_{_kind}', registry.Objective(
      pipeline='kkt', pipelines=('kkt',), kkt_labels=_kind))
