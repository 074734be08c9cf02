"""Data sets: one interface, `load(config, key) -> (X, y, meta)`.

`synthetic_sphere` (the law-of-reconstruction paper's): rows uniform on the sphere
of radius sqrt(d); labels y = <x, g> + eps with g ~ N(0, I/d), eps ~ N(0, noise^2).
The generator is a pure JAX function of a key, so sweeps can vmap it over seeds.
`planted_subspace` (`recon.subspace.planted_subspace`): the same, with rows in a
random `planted_dim`-dimensional subspace of R^d; meta['subspace_basis'] holds it.
"""
from __future__ import annotations

from typing import Any, Dict, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from recon import subspace

Array = jax.Array

DATASETS = ('synthetic_sphere', 'planted_subspace')


def sphere_rows(key: Array, n: int, d: int, dtype=jnp.float32) -> Array:
  """n rows uniform on the sphere of radius sqrt(d) in R^d."""
  z = jax.random.normal(key, (n, d), dtype)
  return z * (jnp.sqrt(jnp.asarray(d, dtype)) / jnp.linalg.norm(z, axis=1, keepdims=True))


def synthetic_sphere(key: Array, n: int, d: int, noise: float = 0.5,
                     dtype=jnp.float32) -> Tuple[Array, Array]:
  """(X, y): X on the sqrt(d)-sphere, y = X g + eps, g ~ N(0, I/d), eps ~ N(0, noise^2)."""
  kx, kg, ke = jax.random.split(key, 3)
  x = sphere_rows(kx, n, d, dtype)
  g = jax.random.normal(kg, (d,), dtype) / jnp.sqrt(jnp.asarray(d, dtype))
  y = x @ g + noise * jax.random.normal(ke, (n,), dtype)
  return x, y


def load(config: Any, key: Array, dtype=jnp.float32) -> Tuple[Array, Array, Dict[str, Any]]:
  """Returns (X (n, d), y (n,), meta) for `config.dataset`."""
  if config.dataset == 'synthetic_sphere':
    x, y = synthetic_sphere(key, config.n, config.d, config.label_noise, dtype)
    return x, y, {'name': 'synthetic_sphere', 'image_shape': None,
                  'row_norms': np.full(config.n, np.sqrt(config.d))}
  if config.dataset == 'planted_subspace':
    k = config.get('planted_dim')
    if k is None or k > config.d:
      raise ValueError(f'planted_dim: {k!r} must be set and <= d={config.d}; '
                       f'accepted: 1..{config.d}')
    x, y, basis = subspace.planted_subspace(key, config.n, config.d, k, config.label_noise, dtype)
    return x, y, {'name': 'planted_subspace', 'image_shape': None,
                  'row_norms': np.full(config.n, np.sqrt(config.d)), 'subspace_basis': basis}
  raise ValueError(f'dataset: unknown name {config.dataset!r}; accepted: {", ".join(DATASETS)}')
