"""Synthetic data sets (pure JAX functions of a key, so sweeps can vmap them)."""
from __future__ import annotations

from typing import Tuple

import jax
import jax.numpy as jnp

Array = jax.Array


def sphere_rows(key: Array, n: int, d: int, dtype=jnp.float32) -> Array:
  """n rows uniform on the sphere of radius sqrt(d) in R^d."""
  z = jax.random.normal(key, (n, d), dtype)
  return z * (jnp.sqrt(jnp.asarray(d, dtype)) / jnp.linalg.norm(z, axis=1, keepdims=True))


def _linear_labels(key: Array, x: Array, noise: float) -> Array:
  """y = x g + eps, g ~ N(0, I/d), eps ~ N(0, noise^2)."""
  kg, ke = jax.random.split(key)
  n, d = x.shape
  g = jax.random.normal(kg, (d,), x.dtype) / jnp.sqrt(jnp.asarray(d, x.dtype))
  return x @ g + noise * jax.random.normal(ke, (n,), x.dtype)


def synthetic_sphere(key: Array, n: int, d: int, noise: float = 0.5,
                     dtype=jnp.float32) -> Tuple[Array, Array]:
  """(X, y): X on the sqrt(d)-sphere, y = X g + eps, g ~ N(0, I/d), eps ~ N(0, noise^2)."""
  kx, kg, ke = jax.random.split(key, 3)
  x = sphere_rows(kx, n, d, dtype)
  g = jax.random.normal(kg, (d,), dtype) / jnp.sqrt(jnp.asarray(d, dtype))
  y = x @ g + noise * jax.random.normal(ke, (n,), dtype)
  return x, y


def subspace_basis(key: Array, d: int, k: int, dtype=jnp.float32) -> Array:
  """B (d x k) with orthonormal columns spanning a uniformly random k-dim subspace."""
  q, r = jnp.linalg.qr(jax.random.normal(key, (d, k), dtype))
  return q * jnp.where(jnp.diag(r) < 0, -1.0, 1.0).astype(dtype)  # Haar: fix QR's signs


def synthetic_subspace(key: Array, n: int, d: int, k: int, noise: float = 0.5,
                       dtype=jnp.float32) -> Tuple[Array, Array, Array]:
  """(X, y, B): X = Z B^T, Z uniform on the sqrt(d)-sphere of R^k, B (d x k) orthonormal.

  Rows lie on the sqrt(d)-sphere inside span(B); y = X g + eps, g ~ N(0, I/d),
  eps ~ N(0, noise^2), as in synthetic_sphere.
  """
  kb, kz, kg, ke = jax.random.split(key, 4)
  basis = subspace_basis(kb, d, k, dtype)
  z = jax.random.normal(kz, (n, k), dtype)
  z = z * (jnp.sqrt(jnp.asarray(d, dtype)) / jnp.linalg.norm(z, axis=1, keepdims=True))
  x = z @ basis.T
  g = jax.random.normal(kg, (d,), dtype) / jnp.sqrt(jnp.asarray(d, dtype))
  y = x @ g + noise * jax.random.normal(ke, (n,), dtype)
  return x, y, basis
