"""Beyond one host: `jax.distributed.initialize`, once, before any JAX computation.

A run spans several processes (hosts, or several processes on one host) when either
  * the config sets `run.distributed = True` (then `jax.distributed.initialize()` auto-detects
    the cluster: SLURM, Open MPI, Cloud TPU pods, GKE, ... or reads the variables below), or
  * the environment sets JAX_COORDINATOR_ADDRESS (host:port of process 0) together with
    JAX_NUM_PROCESSES and JAX_PROCESS_ID (this process's index); optional
    JAX_LOCAL_DEVICE_IDS (comma-separated, read by JAX itself).
`recon.main` calls `initialize(config.run.distributed)` right after parsing, before any array
exists.
Afterwards `jax.devices()` lists every process's devices: `victim.feature_shards` may be up
to `jax.device_count()` (the feature axis of the memory-lean loss is sharded over the global
devices, `recon.objectives.projection_streamed.feature_mesh`) and a sweep's grid axis is
sharded over all of them. Every process runs the same program on the same inputs (the
data, V's key and the candidates follow from the seed); process 0 writes WORKDIR, process i
writes WORKDIR.process<i> (`process_workdir`).

On CPU the cross-process collectives are gloo's (JAX 0.10.2: tested with two processes on
127.0.0.1, tests/test_distributed.py); on GPUs NCCL, on TPUs the ICI/DCN.
"""
from __future__ import annotations

import os
from typing import Any, Dict, Optional

ENV_ADDRESS = 'JAX_COORDINATOR_ADDRESS'
ENV_NUM = 'JAX_NUM_PROCESSES'
ENV_ID = 'JAX_PROCESS_ID'

_state = {'initialized': False}


def requested(flag: bool = False, environ: Optional[Dict[str, str]] = None) -> Optional[dict]:
  """The keyword arguments of jax.distributed.initialize this run asks for (None: a
  single-process run); `flag` is the config's run.distributed. Raises ValueError on an
  incomplete environment."""
  environ = os.environ if environ is None else environ
  address = environ.get(ENV_ADDRESS)
  if not address and not flag:
    return None
  kwargs: Dict[str, Any] = {}
  if address:
    missing = [v for v in (ENV_NUM, ENV_ID) if v not in environ]
    if missing and not flag:
      raise ValueError(f'{ENV_ADDRESS}={address} is set but {", ".join(missing)} is not; '
                       f'accepted: all three of {ENV_ADDRESS}, {ENV_NUM}, {ENV_ID}, or '
                       'config.run.distributed=True on a cluster JAX detects')
    kwargs['coordinator_address'] = address
    if not missing:
      try:
        kwargs['num_processes'] = int(environ[ENV_NUM])
        kwargs['process_id'] = int(environ[ENV_ID])
      except ValueError:
        raise ValueError(f'{ENV_NUM} and {ENV_ID} must be integers; got '
                         f'{environ[ENV_NUM]!r}, {environ[ENV_ID]!r}') from None
      if not 0 <= kwargs['process_id'] < kwargs['num_processes']:
        raise ValueError(f'{ENV_ID} must be in [0, {ENV_NUM}); got {kwargs["process_id"]} '
                         f'of {kwargs["num_processes"]}')
  return kwargs


def initialize(flag: bool = False) -> bool:
  """Calls jax.distributed.initialize once when `flag` (run.distributed) or the
  environment asks for it; True when this process is part of a multi-process run."""
  kwargs = requested(flag)
  if kwargs is None:
    return False
  if not _state['initialized']:
    import jax  # pylint: disable=import-outside-toplevel
    jax.distributed.initialize(**kwargs)
    _state['initialized'] = True
  return True


def process_index() -> int:
  import jax  # pylint: disable=import-outside-toplevel
  return jax.process_index()


def process_workdir(workdir: str) -> str:
  """WORKDIR for process 0, WORKDIR.process<i> for the others (no two write one file)."""
  i = process_index() if _state['initialized'] else 0
  return workdir if i == 0 else f'{workdir}.process{i}'


def replicate(tree, mesh):
  """Every leaf as a global array replicated over `mesh` (a no-op on one process): inputs
  of a program whose mesh spans processes must be global arrays, not one process's."""
  import jax  # pylint: disable=import-outside-toplevel
  import numpy as np  # pylint: disable=import-outside-toplevel
  if mesh is None or jax.process_count() == 1:
    return tree
  sharding = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec())
  return jax.tree.map(lambda a: jax.device_put(np.asarray(a), sharding), tree)
