"""Sample splitting (Shen, Wang, Qian, Lei 2026): a curvature-aware refinement for any objective.

Every objective here has a data term ||r||^2 / s with residual
  r = target - sum_j c_j G(x_j)
(KKT: c_j G(x_j) = lambda_j grad_theta g_j(theta; x_j); projection loss: G = phi, the
c_j = alpha_j are the eliminated span coefficients). Replacing candidate j by two
children x_j +- eps v with weight c_j / 2 each changes the explanation by
c_j eps^2 / 2 * D^2 G(x_j)[v, v] + O(eps^4) (the first-order terms cancel), so
  L_split - L = eps^2 / 2 * v^T T_j v + O(eps^4),  T_j = -(2 / s) D^2_x <r, c_j G(x)>|_{x_j},
the splitting matrix (r held fixed). If lambda_min(T_j) < 0 its eigenvector gives a
descent direction that plain gradient steps on x_j cannot see (at a stationary point
the Gauss-Newton part of the x-Hessian can be PSD while T_j is not).

T_j v is a Hessian-vector product (jax.jvp of jax.grad); the smallest eigenpair comes
from a dense eigh of T_j (d <= split_dense_max_dim, built column by column from HVPs)
or Lanczos with full re-orthogonalisation on HVPs. Projection loss: the weight is
implicit (alpha is re-solved after the split), so splitting = adding a candidate at
x_j + eps v and moving x_j to x_j - eps v; its decrease is at least the fixed-weight
one. Choices the paper leaves open are config fields (`recon.config.sections.Split`).
"""
from __future__ import annotations

from typing import Any, Callable, Dict, List, NamedTuple, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from recon.config import choices, sections
from recon.models import features

Array = jax.Array

class SplitError(ValueError):
  """Invalid splitting input; one-line message."""


class SplitModel(NamedTuple):
  """What splitting needs to know about an objective.

  residual(state, problem) -> (r (P,), s (scalar), coef (m, ...)): the data term is ||r||^2/s;
  contribution(x_j, coef_j, fields_j, problem) -> (P,): candidate j's share c_j G(x_j);
  x_key: key of the candidates in a dict state (None: the state is the candidate array);
  weight_key: state leaf halved on a split (None: implicit weights, projection loss);
  per_candidate: problem keys with a leading candidate axis (copied to both children).
  """
  residual: Callable
  contribution: Callable
  x_key: Optional[str] = 'x'
  weight_key: Optional[str] = 'lam'
  per_candidate: Tuple[str, ...] = ('labels',)


def check_config(cfg: sections.Split, activation: Optional[str] = None) -> None:
  """One-line errors for a bad split budget or an activation without curvature."""
  if cfg.mode not in choices.SPLIT_MODES:
    raise SplitError(f'attack.split.mode: unknown mode {cfg.mode!r}; accepted: '
                     f'{", ".join(choices.SPLIT_MODES)}')
  if cfg.budget < 0:
    raise SplitError(f'attack.split.budget: invalid value {cfg.budget!r}; accepted: int >= 0')
  if cfg.mode != 'none' and activation is not None and not features.has_second_derivative(
      activation):
    raise SplitError(f'victim.activation: {activation!r} has no second derivative (piecewise '
                     'linear), which sample splitting needs; accepted: a smooth activation such as '
                     "'relu_smooth', 'cubic', 'relu_tanh'")


def _get_x(state, model: SplitModel):
  return state if model.x_key is None else state[model.x_key]


def splitting_hvp(model: SplitModel, state: Any, problem: Any) -> Callable:
  """hvp(j, v) = T_j v for every candidate j (vmappable over j)."""
  r, s, coef = model.residual(state, problem)
  r, s, coef = jax.lax.stop_gradient((r, s, coef))
  x = _get_x(state, model)
  fields = {k: problem[k] for k in model.per_candidate}

  def scalar(xj, j):
    fj = {k: v[j] for k, v in fields.items()}
    return -(2.0 / s) * jnp.vdot(r, model.contribution(xj, coef[j], fj, problem))

  def hvp(j, v):
    return jax.jvp(lambda z: jax.grad(scalar)(z, j), (x[j],), (v,))[1]

  return hvp


def splitting_matrix(model: SplitModel, state: Any, problem: Any, j: int) -> Array:
  """Dense T_j (d x d) from d HVPs (small d only; tests, `eig_method='dense'`)."""
  hvp = splitting_hvp(model, state, problem)
  d = _get_x(state, model).shape[1]
  eye = jnp.eye(d, dtype=_get_x(state, model).dtype)
  return jax.vmap(lambda e: hvp(j, e))(eye)


def lanczos_smallest(matvec: Callable[[Array], Array], v0: Array, steps: int
                     ) -> Tuple[Array, Array]:
  """Smallest eigenpair of a symmetric operator: `steps` Lanczos steps, full re-orthogonalisation."""
  d = v0.shape[0]
  k = min(steps, d)
  tiny = jnp.finfo(v0.dtype).tiny ** 0.5

  def body(i, carry):
    basis, alphas, betas = carry
    v = basis[i]
    w = matvec(v)
    a = jnp.vdot(v, w)
    w = w - basis.T @ (basis @ w)
    w = w - basis.T @ (basis @ w)
    b = jnp.linalg.norm(w)
    ok = b > tiny * (1.0 + jnp.abs(a))
    nxt = jnp.where(ok, w / jnp.where(ok, b, 1.0), 0.0)
    basis = jnp.where(i + 1 < k, basis.at[jnp.minimum(i + 1, k - 1)].set(nxt), basis)
    return basis, alphas.at[i].set(a), betas.at[i].set(jnp.where(ok, b, 0.0))

  basis = jnp.zeros((k, d), v0.dtype).at[0].set(v0 / jnp.linalg.norm(v0))
  basis, alphas, betas = jax.lax.fori_loop(
      0, k, body, (basis, jnp.zeros((k,), v0.dtype), jnp.zeros((k,), v0.dtype)))
  tri = jnp.diag(alphas) + jnp.diag(betas[:-1], 1) + jnp.diag(betas[:-1], -1)
  evals, evecs = jnp.linalg.eigh(tri)
  vec = basis.T @ evecs[:, 0]
  vec = vec / jnp.maximum(jnp.linalg.norm(vec), tiny)
  return jnp.vdot(vec, matvec(vec)), vec  # Rayleigh quotient with the true operator


def smallest_eigenpairs(model: SplitModel, state: Any, problem: Any, cfg: sections.Split,
                        key: Array) -> Tuple[Array, Array]:
  """(eigenvalues (m,), unit eigenvectors (m, d)) of every candidate's splitting matrix."""
  hvp = splitting_hvp(model, state, problem)
  x = _get_x(state, model)
  m, d = x.shape
  dense = cfg.eig_method == 'dense' or (cfg.eig_method == 'auto' and d <= cfg.dense_max_dim)
  idx = jnp.arange(m)
  if dense:
    eye = jnp.eye(d, dtype=x.dtype)
    mats = jax.vmap(lambda j: jax.vmap(lambda e: hvp(j, e))(eye))(idx)
    mats = 0.5 * (mats + jnp.swapaxes(mats, 1, 2))
    evals, evecs = jnp.linalg.eigh(mats)
    return evals[:, 0], evecs[:, :, 0]
  v0 = jax.random.normal(key, (m, d), x.dtype)
  return jax.vmap(lambda j, v: lanczos_smallest(lambda u: hvp(j, u), v, cfg.lanczos_steps))(
      idx, v0)


def split_state(state: Any, problem: Any, model: SplitModel, which: Array, dirs: Array,
                eps) -> Tuple[Any, Any]:
  """Children: x_j -> x_j + eps v_j (in place) and x_j - eps v_j (appended); weights halved."""
  x = _get_x(state, model)
  delta = eps * dirs
  new_x = jnp.concatenate([x.at[which].add(delta), x[which] - delta], axis=0)
  if model.x_key is None:
    new_state = new_x
  else:
    new_state = dict(state)
    new_state[model.x_key] = new_x
    if model.weight_key is not None:
      w = state[model.weight_key]
      half = w[which] / 2
      new_state[model.weight_key] = jnp.concatenate([w.at[which].set(half), half], axis=0)
  new_problem = dict(problem)
  for k in model.per_candidate:
    new_problem[k] = jnp.concatenate([problem[k], problem[k][which]], axis=0)
  return new_state, new_problem


def merge_pair(state: Any, problem: Any, model: SplitModel, a: int, b: int) -> Tuple[Any, Any]:
  """Merges candidate b into a: x_a = mean, weight_a = sum (implicit weights: b dropped)."""
  keep = np.array([i for i in range(_get_x(state, model).shape[0]) if i != b])
  x = _get_x(state, model)
  x = x.at[a].set(0.5 * (x[a] + x[b]))[keep]
  if model.x_key is None:
    new_state = x
  else:
    new_state = dict(state)
    new_state[model.x_key] = x
    if model.weight_key is not None:
      w = state[model.weight_key]
      new_state[model.weight_key] = w.at[a].add(w[b])[keep]
  new_problem = dict(problem)
  for k in model.per_candidate:
    new_problem[k] = problem[k][keep]
  return new_state, new_problem


class Splitter:
  """Host-side refinement: decides when to split, performs rounds, merges collapsed children.

  `__call__(state_x, problem, step, history)` returns None or (new_x, new_problem);
  `log` records every round (step, eigenvalues, eps, loss before/after, splits, merges).
  """

  def __init__(self, cfg: sections.Split, model: SplitModel, loss_fn: Callable,
               constraint: Callable, *, seed: int):
    """`cfg`: the section attack.split, whole; `seed`: the run's (its rounds' keys)."""
    self.cfg, self.model, self.loss_fn, self.constraint = cfg, model, loss_fn, constraint
    self.seed = seed
    self.splits = 0
    self.merges = 0
    self.last_step = 0
    self.pairs: List[Tuple[int, int]] = []  # (id_a, id_b) of children of one split
    self.ids: Optional[np.ndarray] = None
    self.log: List[Dict[str, Any]] = []
    self._eig = jax.jit(lambda s, p, k: smallest_eigenpairs(model, s, p, cfg, k))
    self._loss = jax.jit(loss_fn)

  def _due(self, step: int, history: List[Tuple[int, float]]) -> bool:
    cfg = self.cfg
    if cfg.mode == 'none' or self.splits >= cfg.budget:
      return False
    if step - self.last_step < (cfg.every if cfg.mode == 'every' else cfg.plateau_window):
      return False
    if cfg.mode == 'every':
      return True
    old = [l for s, l in history if s <= step - cfg.plateau_window]
    if not old:
      return False
    now = history[-1][1]
    return (old[-1] - now) <= cfg.plateau_tol * abs(old[-1])

  def _merge(self, state, problem):
    x = np.asarray(_get_x(state, self.model))
    changed = False
    for a_id, b_id in list(self.pairs):
      pos = {int(i): k for k, i in enumerate(self.ids)}
      if a_id not in pos or b_id not in pos:
        self.pairs.remove((a_id, b_id))
        continue
      a, b = pos[a_id], pos[b_id]
      scale = max(np.linalg.norm(x[a]), np.linalg.norm(x[b]), 1e-30)
      if np.linalg.norm(x[a] - x[b]) / scale < self.cfg.merge_tol:
        state, problem = merge_pair(state, problem, self.model, a, b)
        self.ids = np.delete(self.ids, b)
        x = np.asarray(_get_x(state, self.model))
        self.pairs.remove((a_id, b_id))
        self.merges += 1
        changed = True
    return state, problem, changed

  def __call__(self, state, problem, step: int, history) -> Optional[Tuple[Any, Any]]:
    m = _get_x(state, self.model).shape[0]
    if self.ids is None:
      self.ids = np.arange(m)
    state, problem, merged = self._merge(state, problem)
    if not self._due(step, history):
      return (state, problem) if merged else None
    self.last_step = step
    cfg = self.cfg
    key = jax.random.fold_in(jax.random.PRNGKey(self.seed), step)
    evals, evecs = self._eig(state, problem, key)
    evals = np.asarray(evals)
    order = np.argsort(evals)
    n_new = min(cfg.max_per_round, cfg.budget - self.splits)
    which = [int(j) for j in order[:n_new] if evals[j] < -cfg.eig_tol]
    entry = {'step': int(step), 'min_eig': float(evals.min()),
             'n_negative': int(np.sum(evals < -cfg.eig_tol)), 'n_candidates': int(m)}
    if not which:
      entry.update(accepted=False, reason='no negative eigenvalue')
      self.log.append(entry)
      return (state, problem) if merged else None
    loss0 = float(self._loss(state, problem))
    which_a = jnp.asarray(which)
    dirs = evecs[which_a]
    x = _get_x(state, self.model)
    radius = float(np.median(np.linalg.norm(np.asarray(x), axis=1)))
    grid = radius * np.geomspace(cfg.eps_min, cfg.eps_max, cfg.eps_grid)

    def loss_at(eps):
      s, p = split_state(state, problem, self.model, which_a, dirs, eps)
      return self.loss_fn(self.constraint(s), p)

    losses = np.asarray(jax.jit(jax.vmap(loss_at))(jnp.asarray(grid, x.dtype)))
    losses = np.where(np.isfinite(losses), losses, np.inf)
    best = int(np.argmin(losses))
    entry.update(loss_before=loss0, loss_after=float(losses[best]), eps=float(grid[best]),
                 split=[int(j) for j in which],
                 predicted_decrease=float(0.5 * grid[best] ** 2 * evals[which].sum()))
    if cfg.require_decrease and not losses[best] < loss0:
      entry.update(accepted=False, reason='no eps lowers the loss')
      self.log.append(entry)
      return (state, problem) if merged else None
    new_state, new_problem = split_state(state, problem, self.model, which_a, dirs,
                                         float(grid[best]))
    new_state = self.constraint(new_state)
    new_ids = np.arange(self.ids.max() + 1, self.ids.max() + 1 + len(which))
    self.pairs += [(int(self.ids[j]), int(i)) for j, i in zip(which, new_ids)]
    self.ids = np.concatenate([self.ids, new_ids])
    self.splits += len(which)
    entry.update(accepted=True)
    self.log.append(entry)
    return new_state, new_problem

  def summary(self) -> Dict[str, Any]:
    return {'n_splits': self.splits, 'n_merges': self.merges,
            'n_rounds': len(self.log), 'rounds': self.log}


# ----------------------------------------------------------------------------------------
# Split models of the project's objectives.


def projection_split_model(feature_one: Callable[[Array, Any], Array], jitter: float,
                           target_key: str = 'theta') -> SplitModel:
  """Projection loss ||P_perp theta||^2/||theta||^2, feature rows feature_one(x, problem): (P,) or (k, P).

  r = theta - Phi^T alpha, s = ||theta||^2, c_j = alpha_j (implicit weights; k per candidate).
  """
  from recon.objectives import projection  # pylint: disable=import-outside-toplevel

  def rows(xj, problem):
    f = feature_one(xj, problem)
    return f.reshape(-1, f.shape[-1])

  def residual(x, problem):
    phi = jax.vmap(lambda xj: rows(xj, problem))(x)  # (m, k, P)
    m, k, p = phi.shape
    theta = problem[target_key]
    alpha = projection.span_coefficients(phi.reshape(m * k, p), theta, jitter)
    return theta - alpha @ phi.reshape(m * k, p), jnp.sum(theta ** 2), alpha.reshape(m, k)

  def contribution(xj, coef_j, fields_j, problem):
    return coef_j @ rows(xj, problem)

  return SplitModel(residual=residual, contribution=contribution, x_key=None, weight_key=None,
                    per_candidate=())


def kkt_split_model(apply_vec, kind: str) -> SplitModel:
  """KKT objective (recon.objectives.kkt): r = target - sum_j lambda_j grad g_j, s = ||target||^2."""
  from recon.objectives import kkt  # pylint: disable=import-outside-toplevel

  def residual(state, problem):
    r = kkt.residual(state, problem, apply_vec=apply_vec, kind=kind)
    return r, jnp.sum(problem['target'] ** 2), state['lam']

  def contribution(xj, lam_j, fields_j, problem):
    return kkt.candidate_term(xj, lam_j * problem.get('lam_scale', 1.0), fields_j['labels'],
                              problem['theta'],
                              apply_vec=apply_vec, kind=kind)

  return SplitModel(residual=residual, contribution=contribution)
