"""The point axis of a vectorised sweep group, shared by the random-features (recon.sweep.grid),
networks and KKT sweeps: the group's points padded to a multiple of the devices (the last
point repeated; its results are dropped), stacked, and sharded along one mesh axis, with the
attack's per-point hyper-parameters (attack.lr, attack.momentum: read from each point's
optimiser state, `optax.inject_hyperparams`); and the one-line refusal of what a family's
sweep cannot vectorise.
"""
from __future__ import annotations

import math
from typing import Any, List, NoReturn, Sequence, Tuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from recon.config import validate as config_lib

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


def refuse(family: str, field: str, value: Any, accepted: str) -> NoReturn:
  """The ConfigError of a setting `field` that sweeps of `family` do not vectorise."""
  raise config_lib.ConfigError(f'config.{field}: {value!r} is not supported in sweeps of '
                               f'{family}; accepted: {accepted}')


def refuse_width_axes(family: str, swept: Sequence[str]) -> None:
  """`refuse` a random-features width axis in a sweep of `family` (a network's is victim.width)."""
  for path in WIDTH_AXES:
    if path in swept:
      refuse(family, f'sweep.{path}', 'swept',
             'sweep.victim.width (victim.p is the random-features width)')
