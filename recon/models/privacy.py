"""Defences of a victim: DP-GD / DP-SGD training with its accountant, noise on the release.

DP-SGD (Abadi et al. 2016). Each step t draws a Poisson batch B_t (every sample in with
probability q = batch_size / n; q = 1 is full-batch DP-GD), clips every per-example
gradient to norm C and adds Gaussian noise to their sum:
    g_t = ( sum_{i in B_t} g_i min(1, C / ||g_i||)  +  N(0, sigma^2 C^2 I) ) / (q n),
    theta_{t+1} = theta_t - lr (g_t + weight_decay theta_t)
(heavy-ball momentum when victim.train.momentum > 0). The clipping and the noise are
optax's `contrib.differentially_private_aggregate` (noise std = sigma C on the sum, the
sum divided by the array's batch axis n), followed by a rescaling by 1/q, so that with q = 1
and no clipping active g_t is the full-batch mean gradient the non-private trainer uses.
Excluded samples enter as zero gradients (clipping leaves zero at zero). Weight decay is
data-independent post-processing and costs no privacy.

The accountant. T steps of the subsampled Gaussian mechanism with noise multiplier sigma
and rate q are the DpEvent SelfComposed(PoissonSampled(q, Gaussian(sigma)), T) (q = 1: no
sampling), and `dp_accounting` (RDP, Mironov 2017 / Mironov et al. 2019, or the PLD
accountant) turns it into epsilon at a given delta. A target epsilon becomes the smallest
sigma that meets it (`dp_accounting.calibrate_dp_mechanism`, Brent's method). The number of
steps is fixed in advance (victim.train.max_steps): a data-dependent stopping time would
itself leak.

Noise on the release (no DP guarantee: the noise is not calibrated to a sensitivity): every
released trained array W gets W + N(0, s^2 ||W||^2 / size(W) I), so that the noise has norm
about s ||W|| (s = victim.release_noise). For random features this is output perturbation of
theta* = Phi^+ y (the min-norm interpolant has unbounded sensitivity, so s is a relative
strength, not an epsilon).

What DP promises against reconstruction (the ReRo bounds of Hayes et al.) is recon/audit/rero.py.
"""
from __future__ import annotations

import contextlib
import logging
from typing import Any, Dict, Optional

import jax
import jax.numpy as jnp
import optax
from optax import contrib

from recon.config import choices

# Key offsets folded into the run's seed: the defences draw their own randomness, so the
# data, model and candidate keys (recon.runtime.runs.split_keys) stay as they are.
DP_KEY, RELEASE_KEY = 0xD9, 0xDEF


def _accounting():
  """dp_accounting, imported on first use: it pulls in scipy.signal, seconds of a cold start
  that a run without DP never needs."""
  import dp_accounting  # pylint: disable=import-outside-toplevel
  return dp_accounting


def _drop_unconverged_orders(record: logging.LogRecord) -> bool:
  return not str(record.msg).startswith('_compute_log_a_frac failed to converge')


@contextlib.contextmanager
def _quiet_rdp():
  """The RDP accountant logs an absl warning for every Renyi order whose series does not
  converge (small orders at q < 1: ~10 lines a calibration). It leaves that order out of the
  minimum over orders, so epsilon stays an upper bound; the lines only cloud the console."""
  logger = logging.getLogger('absl')
  logger.addFilter(_drop_unconverged_orders)
  try:
    yield
  finally:
    logger.removeFilter(_drop_unconverged_orders)


def dp_event(noise_multiplier: float, sample_rate: float, steps: int):
  """T steps of the (Poisson-subsampled when q < 1) Gaussian mechanism, as a DpEvent."""
  event = _accounting().GaussianDpEvent(noise_multiplier)
  if sample_rate < 1.0:
    event = _accounting().PoissonSampledDpEvent(sample_rate, event)
  return _accounting().SelfComposedDpEvent(event, int(steps))


def make_accountant(name: str):
  """A fresh `dp_accounting` accountant: 'rdp' (Renyi DP) or 'pld' (privacy loss distribution)."""
  if name == 'rdp':
    return _accounting().rdp.RdpAccountant()
  if name == 'pld':
    return _accounting().pld.PLDAccountant()
  raise ValueError(f'victim.train.dp.accountant: unknown {name!r}; accepted: '
                   f'{", ".join(choices.ACCOUNTANTS)}')


def epsilon(noise_multiplier: float, sample_rate: float, steps: int, delta: float,
            accountant: str = 'rdp') -> float:
  """epsilon of T DP-SGD steps at delta (inf for noise_multiplier 0)."""
  if noise_multiplier <= 0:
    return float('inf')
  acc = make_accountant(accountant)
  with _quiet_rdp():
    acc.compose(dp_event(noise_multiplier, sample_rate, steps))
    return float(acc.get_epsilon(delta))


def noise_multiplier_for(target_epsilon: float, sample_rate: float, steps: int, delta: float,
                         accountant: str = 'rdp') -> float:
  """The smallest noise multiplier sigma whose T steps meet (target_epsilon, delta).

  The PLD search starts from the RDP answer: PLD is the tighter accountant, so its sigma lies
  below RDP's (and, for DP-SGD, well above a quarter of it); its discretised loss distribution
  grows as sigma falls (38 GiB at sigma 1e-3, q 0.25, T 50), so it is never evaluated near 0.
  """
  lower, guess = 1e-3, 1.0
  if accountant == 'pld':
    guess = noise_multiplier_for(target_epsilon, sample_rate, steps, delta, 'rdp')
    lower = guess / 4
  with _quiet_rdp():
    return float(_accounting().calibrate_dp_mechanism(
        lambda: make_accountant(accountant),
        lambda sigma: dp_event(sigma, sample_rate, steps),
        target_epsilon, delta,
        bracket_interval=_accounting().LowerEndpointAndGuess(lower, guess), tol=1e-4))


def resolve(dp: Any, n: int, steps: int) -> Dict[str, Any]:
  """The mechanism of a `victim.train.dp` section for n samples and T steps:
  {clip, noise_multiplier, sample_rate, batch_size, steps, delta, epsilon, accountant,
  noise_source}. epsilon always comes from the accountant (also when sigma is given)."""
  batch = n if dp.batch_size is None else int(dp.batch_size)
  q = min(1.0, batch / n)
  if dp.noise_multiplier is not None:
    sigma, source = float(dp.noise_multiplier), 'config'
  else:
    sigma = noise_multiplier_for(float(dp.target_epsilon), q, steps, float(dp.delta),
                                 dp.accountant)
    source = f'accountant: target epsilon {float(dp.target_epsilon):g}'
  return {'clip': float(dp.clip), 'noise_multiplier': sigma, 'noise_source': source,
          'batch_size': batch, 'sample_rate': q, 'steps': int(steps), 'delta': float(dp.delta),
          'accountant': dp.accountant,
          'epsilon': epsilon(sigma, q, steps, float(dp.delta), dp.accountant)}


def dp_optimizer(lr: float, *, clip: float, noise_multiplier: float, sample_rate: float,
                 key: jax.Array, momentum: float = 0.0,
                 weight_decay: float = 0.0) -> optax.GradientTransformation:
  """DP-SGD on per-example gradients (leading axis n, zeros for samples not drawn)."""
  parts = [contrib.differentially_private_aggregate(clip, noise_multiplier, key=key)]
  if sample_rate < 1.0:
    parts.append(optax.scale(1.0 / sample_rate))
  if weight_decay > 0:
    parts.append(optax.add_decayed_weights(weight_decay))
  parts.append(optax.sgd(lr, momentum=momentum if momentum > 0 else None))
  return optax.chain(*parts)


def add_release_noise(tree: Any, relative: float, key: jax.Array) -> Any:
  """Every array W of `tree` plus N(0, (relative ||W|| / sqrt(size W))^2): noise norm ~
  relative ||W||. relative = 0 returns the tree unchanged."""
  if relative <= 0:
    return tree
  leaves, treedef = jax.tree.flatten(tree)
  keys = jax.random.split(key, len(leaves))
  noised = []
  for leaf, k in zip(leaves, keys):
    leaf = jnp.asarray(leaf)
    scale = relative * jnp.linalg.norm(leaf.reshape(-1)) / jnp.sqrt(max(leaf.size, 1))
    noised.append(leaf + scale * jax.random.normal(k, leaf.shape, leaf.dtype))
  return jax.tree.unflatten(treedef, noised)


def release_key(seed: int) -> jax.Array:
  return jax.random.fold_in(jax.random.PRNGKey(seed), RELEASE_KEY)


def dp_key(seed: int) -> jax.Array:
  return jax.random.fold_in(jax.random.key(seed), DP_KEY)  # a typed key (optax wants one)


def describe_release(relative: float) -> Optional[Dict[str, Any]]:
  """What summary.json records of the release noise (None when off)."""
  if relative <= 0:
    return None
  return {'release_noise': float(relative),
          'release_noise_rule': 'W + N(0, (s ||W|| / sqrt(size W))^2) per released array'}
