"""A memory estimate of a single run before compute, against what the device has.

`check(data, victim, attack, dtype)` (the config's sections, resolved) refuses (one-line ExperimentError, exit status 2) a run whose dominant
arrays would not fit: for random features the sweep's per-point estimate
(`point_bytes`, shared with the sweep: V p x d, the fit's n x p arrays, about 8 m x p for one
loss-and-gradient step, the (n + m)^2 Gram matrices); for the memory-lean path the same
with p replaced by one feature chunk (V and the attack's features are never stored whole),
plus the fit's n x p arrays when it trains the victim (the fit builds Phi whole); for the
other models the m x m Gram and m x d candidate arrays plus m x width activations per
layer. It is a rough lower bound of the peak, meant to turn an out-of-memory crash
minutes into a run into one line before it.

Available memory: the accelerator's `memory_stats()['bytes_limit']`; on the CPU the
host's MemAvailable (/proc/meminfo), else the free physical pages (os.sysconf).
"""
from __future__ import annotations

from typing import Any, Optional, Tuple

from recon.attack.rescue import chain as rescue_chain
from recon import registry
from recon.attack import sign_quotient
from recon.errors import ExperimentError
from recon.runtime import host


def _itemsize(dtype: str) -> int:
  return 8 if dtype == 'float64' else 4


def n_candidates(data: Any, victim: Any, attack: Any) -> int:
  """The candidates one run optimises: attack.n_candidates (None: the victim's candidates per
  sample times data.n) times attack.restarts."""
  m = attack.n_candidates
  if m is None:
    m = registry.lookup('victim', victim.name).candidates_per_sample * data.n
  return int(m) * int(attack.restarts or 1)


def point_bytes(*, n: int, d: int, m: int, p_total: int, batch: int, itemsize: int,
                quotient: bool = False, loo_batch: int = 0) -> int:
  """Rough peak bytes of a padded group: per point V (P d), the fit (about 3 n P: Phi, its
  SVD factor, the fit residual), one loss-and-gradient step (about 8 m P: candidate
  pre-activations, features, their cotangents, the residual) and the small m x m / n x n
  / candidate arrays, times the batch. With the sign quotient (`recon.attack.sign_quotient`) also
  its basis Q (P d) and the projected features and their cotangents (2 m P); with a rescue
  step's leave-one-out pass (escalation's, `recon.attack.rescue.chain.loo_batch`) `loo_batch`
  forward losses at once (about 3 m P each: pre-activations, features, the projected rows)."""
  per_point = (p_total * d + 3 * n * p_total + 8 * m * p_total + 4 * p_total
               + 2 * (n + m) ** 2 + 6 * m * d + 2 * n * d)
  if quotient:
    per_point += p_total * d + 2 * m * p_total
  per_point += loo_batch * 3 * m * p_total
  return int(per_point * batch * itemsize)


def estimate_bytes(data: Any, victim: Any, attack: Any, dtype: str) -> int:
  """Rough peak bytes of the dominant arrays of one run (see the module doc): the config's
  `data`, `victim` and `attack` sections and `run.dtype`."""
  n, d, m = int(data.n), int(data.d), n_candidates(data, victim, attack)
  itemsize = _itemsize(dtype)
  if registry.lookup('victim', victim.name).features == 'random':
    p = int(victim.p)
    if not _lean(victim, d, itemsize):
      quotient = sign_quotient.active(attack.sign_quotient, victim.activation, m, d)
      return point_bytes(n=n, d=d, m=m, p_total=p, batch=1, itemsize=itemsize,
                         quotient=quotient, loo_batch=rescue_chain.loo_batch(attack.rescue))
    chunk = min(p, int(victim.feature_chunk))
    fit = 0 if victim.checkpoint else 3 * n * p * itemsize  # Phi, its factor, residual
    stored = p * d * itemsize if victim.feature_mode == 'blocked' else 0  # V itself
    return fit + stored + point_bytes(n=n, d=d, m=m, p_total=chunk, batch=1,
                                      itemsize=itemsize,
                                      loo_batch=rescue_chain.loo_batch(attack.rescue))
  width = int(victim.width or 0)
  depth = int(victim.depth or 1)
  per_item = (2 * (n + m) ** 2 + 6 * m * d + 2 * n * d + 8 * m * width * depth
              + 2 * width * width * depth)
  return int(per_item * itemsize)


def group_bytes(data: Any, victim: Any, attack: Any, dtype: str, *, p_total: int,
                batch: int) -> int:
  """`point_bytes` of a sweep's group of random-features runs (dense features padded to
  p_total), with the sign quotient and escalation as the sections set them."""
  m = int(attack.n_candidates)
  return point_bytes(n=int(data.n), d=int(data.d), m=m, p_total=p_total, batch=batch,
                     itemsize=_itemsize(dtype),
                     quotient=sign_quotient.active(attack.sign_quotient, victim.activation, m,
                                                   int(data.d)),
                     loo_batch=rescue_chain.loo_batch(attack.rescue))


def _lean(victim: Any, d: int, itemsize: int) -> bool:
  mode = victim.feature_mode
  if mode in ('lean', 'blocked') or victim.feature_shards > 1:
    return True
  if mode == 'dense':
    return False
  megabytes = victim.p * d * itemsize / 2 ** 20
  return megabytes > victim.feature_memory_budget_mb


def available_bytes(device: Any = None) -> Tuple[Optional[int], str]:
  """(bytes the device can hold, its description); (None, ...) when unknown."""
  import jax  # pylint: disable=import-outside-toplevel
  device = device if device is not None else jax.devices()[0]
  if device.platform != 'cpu':
    try:
      stats = device.memory_stats() or {}
    except Exception:  # pylint: disable=broad-except
      stats = {}
    limit = stats.get('bytes_limit')
    return (int(limit) if limit else None), f'{device.platform} device memory'
  return host.host_available_bytes(), 'available host memory'



def check(data: Any, victim: Any, attack: Any, dtype: str, available: Optional[int] = None,
          where: str = '') -> int:
  """Raises a one-line ExperimentError when the estimate exceeds the device's memory;
  returns the estimate in bytes. The sections are the resolved config's (a saved model's n,
  p, d adopted: `recon.pipelines.victims.resolve`). `available` overrides the device query (tests)."""
  need = estimate_bytes(data, victim, attack, dtype)
  if available is None:
    available, where = available_bytes()
  if available is not None and need > available:
    raise ExperimentError(
        f'memory: this run needs about {need / 2 ** 30:.3g} GB (n_candidates '
        f'{n_candidates(data, victim, attack)}, n {data.n}, d {data.d}'
        + (f', p {victim.p}' if registry.lookup('victim', victim.name).features == 'random'
           else '')
        + f') but the device has {available / 2 ** 30:.3g} GB ({where or "available"}); '
        'accepted: a smaller n_candidates / p / n, or a larger device')
  return need
