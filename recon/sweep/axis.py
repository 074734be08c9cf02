"""The point axis of a vectorised sweep group, shared by the random-features (recon.sweep.grid),
networks and KKT sweeps: the group's points padded to a multiple of the devices (the last
point repeated; its results are dropped), stacked, and sharded along one mesh axis, with the
attack's per-point hyper-parameters (attack.lr, attack.momentum: read from each point's
optimiser state, `optax.inject_hyperparams`).
"""
from __future__ import annotations

import math
from typing import Any, List, Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

GRID_AXIS = 'grid'
# The random-features width: a network's is victim.width (a static axis of the networks and
# KKT sweeps, which refuse these).
WIDTH_AXES = ('victim.p', 'victim.p_over_dn')


def padded_size(size: int, n_devices: int) -> int:
  """The smallest multiple of n_devices that holds `size` points."""
  return int(math.ceil(size / n_devices) * n_devices)


def padded(points: Sequence[Any], n_devices: int) -> List[Any]:
  """`points`, the last one repeated up to `padded_size`."""
  return list(points) + [points[-1]] * (padded_size(len(points), n_devices) - len(points))


def sharding(devices: Sequence[Any]) -> NamedSharding:
  """Arrays split along their leading (point) axis over `devices`."""
  return NamedSharding(Mesh(np.asarray(devices), (GRID_AXIS,)), PartitionSpec(GRID_AXIS))


def stack(trees: Sequence[Any]) -> Any:
  """The trees' leaves stacked on a new leading axis."""
  return jax.tree.map(lambda *a: jnp.stack(a), *trees)


def attack_hyper(points: Sequence[Any], dtype) -> Tuple[jax.Array, jax.Array]:
  """(attack.lr, attack.momentum) of every point, in the run's dtype."""
  return (jnp.asarray([pt.cfg.attack.lr for pt in points], dtype),
          jnp.asarray([pt.cfg.attack.momentum for pt in points], dtype))
