"""The projection loss with the feature matrix streamed in chunks (never materialised).

Same loss as `recon.objectives.projection.projection_loss`,
L(X_hat) = ||theta - Phi_hat^T alpha||^2 / ||theta||^2,  alpha = (G + eps I)^{-1} Phi_hat theta,
but Phi_hat (m x P) is only ever seen one column chunk at a time through
`chunk_fn(aux, x, c) -> Phi_hat[:, c*chunk:(c+1)*chunk]` (e.g. random features whose
weights are regenerated from a PRNG key, `recon.models.features.rf_feature_chunk`).

Forward:  pass 1 accumulates G = sum_c Phi_c Phi_c^T and v = sum_c Phi_c theta_c;
          alpha from a Cholesky solve; then the residual norm either
          'two_pass':  a second pass, sum_c ||theta_c - Phi_c^T alpha||^2 (accurate), or
          'gram':      ||theta||^2 - 2 alpha^T v + alpha^T G alpha (one pass; cancels in
                       float32 once the loss is below ~1e-5: absolute error ~ eps_32 * ||theta||^2),
          'stored':    pass 1 also keeps the pre-activations Z_c (m x P in all, the size of
                       Phi_hat), so the explicit residual and the backward's sigma'(Z) need no
                       regeneration: one regeneration in the forward, one in the backward (for
                       the pull-back dZ V), exact like 'two_pass'. Needs chunk_fn split as
                       post(aux, pre(aux, x, c), c) (`split_fn`); memory O(m P) instead of O(m chunk).
Backward (custom VJP, one pass, either mode): with r = theta - Phi^T alpha,
w = (G + eps I)^{-1} Phi r and eps = jitter tr(G)/m,
  dL/dPhi_c = (-2 [(alpha + w) r_c^T - alpha (Phi_c^T w)^T] + (4 jitter/m)(w.alpha) Phi_c) / ||theta||^2,
pulled back to X through `jax.vjp(chunk_fn)`; r_c is re-formed explicitly per chunk, so the
gradient does not cancel. Peak memory O(m chunk + chunk d + m^2) per device, plus theta.

Sharding: with a `mesh`, the chunk axis is split over the mesh axis `axis`; each device
regenerates its own chunks, and G, v, ||r||^2, Phi r and dL/dX are summed by `psum`.
"""
from __future__ import annotations

from typing import Any, Callable, Optional, Tuple

import chex
import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from recon.config import choices
from recon.objectives.projection import DEFAULT_JITTER

Array = jax.Array


def _zero_cotangent(a):
  a = jnp.asarray(a)
  if jnp.issubdtype(a.dtype, jnp.inexact):
    return jnp.zeros_like(a)
  return np.zeros(a.shape, dtype=jax.dtypes.float0)


def make_streamed_projection_loss(chunk_fn: Callable[[Any, Array, Array], Array], *,
                                  jitter: float = DEFAULT_JITTER, residual: str = 'two_pass',
                                  mesh: Optional[jax.sharding.Mesh] = None,
                                  axis: str = 'features',
                                  split_fn: Optional[Tuple[Callable, Callable]] = None
                                  ) -> Callable[[Array, Array, Any], Array]:
  """Returns loss(x (m, d), theta_chunks (n_chunks, chunk), aux) -> scalar, with a custom VJP.

  `aux` (a pytree, e.g. {'key': ..., 'p': ...}) is passed to `chunk_fn` and receives zero
  cotangents; so does theta (the loss is differentiated in x only). With a `mesh`,
  n_chunks must be a multiple of the mesh's `axis` size. `split_fn = (pre, post)` with
  chunk_fn(aux, x, c) == post(aux, pre(aux, x, c), c) is required by residual='stored'
  (pre holds the expensive part, e.g. regenerating V_c; post is cheap and elementwise).
  """
  if residual not in choices.RESIDUAL_MODES:
    raise ValueError(f'residual: unknown mode {residual!r}; accepted: {", ".join(choices.RESIDUAL_MODES)}')
  if residual == 'stored' and split_fn is None:
    raise ValueError("residual: 'stored' needs split_fn=(pre, post); accepted without it: "
                     "two_pass, gram")
  if residual == 'stored':
    return _make_stored_loss(split_fn, jitter=jitter, mesh=mesh, axis=axis)

  def reduce(tree):
    return jax.lax.psum(tree, axis) if mesh is not None else tree

  def stats(aux, x, idx, th):
    m = x.shape[0]

    def body(carry, inp):
      c, t = inp
      phi = chunk_fn(aux, x, c)
      return (carry[0] + phi @ phi.T, carry[1] + phi @ t), None

    init = (jnp.zeros((m, m), x.dtype), jnp.zeros((m,), x.dtype))
    return reduce(jax.lax.scan(body, init, (idx, th))[0])

  def resid(aux, x, alpha, idx, th):
    def body(carry, inp):
      c, t = inp
      phi = chunk_fn(aux, x, c)
      r = t - alpha @ phi
      return (carry[0] + r @ r, carry[1] + phi @ r), None

    init = (jnp.zeros((), x.dtype), jnp.zeros(alpha.shape, x.dtype))
    return reduce(jax.lax.scan(body, init, (idx, th))[0])

  def grad_x(aux, x, alpha, w, coef, idx, th):
    def body(dx, inp):
      c, t = inp
      phi, vjp = jax.vjp(lambda xx: chunk_fn(aux, xx, c), x)
      r = t - alpha @ phi
      dphi = (-2.0 * (jnp.outer(alpha + w, r) - jnp.outer(alpha, w @ phi)) + coef * phi)
      return dx + vjp(dphi)[0], None

    return reduce(jax.lax.scan(body, jnp.zeros_like(x), (idx, th))[0])

  if mesh is not None:
    rep, shd = P(), P(axis)
    smap = lambda f, n_rep: jax.shard_map(  # noqa: E731
        f, mesh=mesh, in_specs=(rep,) * n_rep + (shd, shd), out_specs=rep, check_vma=False)
    stats = smap(stats, 2)
    resid = smap(resid, 3)
    grad_x = smap(grad_x, 5)

  def forward(x, theta_chunks, aux):
    chex.assert_rank([x, theta_chunks], 2)
    m = x.shape[0]
    idx = jnp.arange(theta_chunks.shape[0], dtype=jnp.uint32)
    gram, v = stats(aux, x, idx, theta_chunks)
    tt = jnp.sum(theta_chunks ** 2)
    eps = jitter * jnp.trace(gram) / m + jnp.finfo(gram.dtype).tiny
    chol = jax.scipy.linalg.cho_factor(gram + eps * jnp.eye(m, dtype=gram.dtype), lower=True)
    alpha = jax.scipy.linalg.cho_solve(chol, v)
    if residual == 'two_pass':
      rss, phi_r = resid(aux, x, alpha, idx, theta_chunks)
    else:
      g_alpha = gram @ alpha
      rss = jnp.maximum(tt - 2.0 * alpha @ v + alpha @ g_alpha, 0.0)
      phi_r = v - g_alpha
    return rss / tt, (x, theta_chunks, aux, chol, alpha, phi_r, tt)

  @jax.custom_vjp
  def loss(x, theta_chunks, aux):
    return forward(x, theta_chunks, aux)[0]

  def loss_bwd(res, g):
    x, theta_chunks, aux, chol, alpha, phi_r, tt = res
    m = x.shape[0]
    w = jax.scipy.linalg.cho_solve(chol, phi_r)
    coef = 4.0 * jitter / m * (w @ alpha)
    idx = jnp.arange(theta_chunks.shape[0], dtype=jnp.uint32)
    dx = grad_x(aux, x, alpha, w, coef, idx, theta_chunks) * (g / tt)
    return dx, jnp.zeros_like(theta_chunks), jax.tree.map(_zero_cotangent, aux)

  loss.defvjp(forward, loss_bwd)
  return loss


def _make_stored_loss(split_fn, *, jitter: float, mesh, axis: str):
  """The 'stored' variant: pass 1 keeps Z_c = pre(aux, x, c); see the module docstring."""
  pre, post = split_fn

  def reduce(tree):
    return jax.lax.psum(tree, axis) if mesh is not None else tree

  def stats(aux, x, idx, th):
    m = x.shape[0]

    def body(carry, inp):
      c, t = inp
      z = pre(aux, x, c)
      phi = post(aux, z, c)
      return (carry[0] + phi @ phi.T, carry[1] + phi @ t), z

    init = (jnp.zeros((m, m), x.dtype), jnp.zeros((m,), x.dtype))
    acc, z = jax.lax.scan(body, init, (idx, th))
    return reduce(acc), z

  def resid(aux, alpha, idx, z, th):
    def body(carry, inp):
      c, zc, t = inp
      phi = post(aux, zc, c)
      r = t - alpha @ phi
      return (carry[0] + r @ r, carry[1] + phi @ r), None

    init = (jnp.zeros((), alpha.dtype), jnp.zeros(alpha.shape, alpha.dtype))
    return reduce(jax.lax.scan(body, init, (idx, z, th))[0])

  def grad_x(aux, x, alpha, w, coef, idx, z, th):
    def body(dx, inp):
      c, zc, t = inp
      phi, post_vjp = jax.vjp(lambda zz: post(aux, zz, c), zc)
      r = t - alpha @ phi
      dphi = (-2.0 * (jnp.outer(alpha + w, r) - jnp.outer(alpha, w @ phi)) + coef * phi)
      dz = post_vjp(dphi)[0]
      _, pre_vjp = jax.vjp(lambda xx: pre(aux, xx, c), x)  # its primal is dead code
      return dx + pre_vjp(dz)[0], None

    return reduce(jax.lax.scan(body, jnp.zeros_like(x), (idx, z, th))[0])

  if mesh is not None:
    rep, shd = P(), P(axis)
    stats = jax.shard_map(stats, mesh=mesh, in_specs=(rep, rep, shd, shd),
                          out_specs=(rep, shd), check_vma=False)
    resid = jax.shard_map(resid, mesh=mesh, in_specs=(rep, rep, shd, shd, shd),
                          out_specs=rep, check_vma=False)
    grad_x = jax.shard_map(grad_x, mesh=mesh, in_specs=(rep,) * 5 + (shd, shd, shd),
                           out_specs=rep, check_vma=False)

  def forward(x, theta_chunks, aux):
    chex.assert_rank([x, theta_chunks], 2)
    m = x.shape[0]
    idx = jnp.arange(theta_chunks.shape[0], dtype=jnp.uint32)
    (gram, v), z = stats(aux, x, idx, theta_chunks)
    tt = jnp.sum(theta_chunks ** 2)
    eps = jitter * jnp.trace(gram) / m + jnp.finfo(gram.dtype).tiny
    chol = jax.scipy.linalg.cho_factor(gram + eps * jnp.eye(m, dtype=gram.dtype), lower=True)
    alpha = jax.scipy.linalg.cho_solve(chol, v)
    rss, phi_r = resid(aux, alpha, idx, z, theta_chunks)
    return rss / tt, (x, theta_chunks, aux, chol, alpha, phi_r, tt, z)

  @jax.custom_vjp
  def loss(x, theta_chunks, aux):
    return forward(x, theta_chunks, aux)[0]

  def loss_bwd(res, g):
    x, theta_chunks, aux, chol, alpha, phi_r, tt, z = res
    m = x.shape[0]
    w = jax.scipy.linalg.cho_solve(chol, phi_r)
    coef = 4.0 * jitter / m * (w @ alpha)
    idx = jnp.arange(theta_chunks.shape[0], dtype=jnp.uint32)
    dx = grad_x(aux, x, alpha, w, coef, idx, z, theta_chunks) * (g / tt)
    return dx, jnp.zeros_like(theta_chunks), jax.tree.map(_zero_cotangent, aux)

  loss.defvjp(forward, loss_bwd)
  return loss


def streamed_gram(chunk_fn: Callable[[Any, Array, Array], Array], x: Array, n_chunks: int,
                  aux: Any) -> Array:
  """G = Phi_hat Phi_hat^T accumulated over chunks (for diagnostics: condition number)."""
  def body(gram, c):
    phi = chunk_fn(aux, x, c)
    return gram + phi @ phi.T, None
  init = jnp.zeros((x.shape[0],) * 2, x.dtype)
  return jax.lax.scan(body, init, jnp.arange(n_chunks, dtype=jnp.uint32))[0]


def feature_mesh(n_devices: int, axis: str = 'features') -> jax.sharding.Mesh:
  """A 1-D mesh over the first `n_devices` global devices (every process's, after
  `jax.distributed.initialize`; on one process the local ones), named `axis`.

  Across processes every process must take part: n_devices a multiple of the process count
  and each process's devices in it (`jax.devices()` orders them process by process)."""
  devices = jax.devices()
  if n_devices > len(devices):
    raise ValueError(f'victim.feature_shards: {n_devices} devices requested, {len(devices)} '
                     f'available ({jax.process_count()} process(es))')
  chosen = devices[:n_devices]
  if jax.process_count() > 1 and {d.process_index for d in chosen} != set(
      range(jax.process_count())):
    raise ValueError(f'victim.feature_shards: {n_devices} of {len(devices)} devices leave a '
                     f'process out of the mesh; accepted: {len(devices)} (every device of the '
                     f'{jax.process_count()} processes)')
  return jax.sharding.Mesh(np.array(chosen), (axis,))
