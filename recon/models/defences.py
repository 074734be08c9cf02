"""A run's defences: the victim trained and released under `victim.train.dp`,
`victim.train.weight_decay` and `victim.release_noise`, and what they cost in utility.

The mechanisms and the accountant are `recon.models.privacy`; this module reads them off
the config, trains a GD victim with them (`train_network_params`), noises a release
(`release`), and measures the victim's utility on its training set and on held-out samples
of the same task (`recon.data.load_held_out`), so that summary.json carries
    defences: {dp: {epsilon, delta, noise_multiplier, clip, ...} | None,
               weight_decay, release_noise, release_noise_rule},
    utility:  {train: {loss, accuracy}, held_out: {loss, accuracy, n}}
beside the attack's recovery (`utility` for every victim recon trains, defended or not).
With every defence off the victim is trained exactly as
before (`recon.models.train.train`, the same optimiser and keys): the defaults change nothing.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional, Tuple

import jax
import numpy as np

from recon.config import sections
from recon import data
from recon.runtime import runs
from recon.models import privacy, train

# Held-out samples drawn for a victim's utility (as many as the data set gives, at most).
HELD_OUT = 256


def active(victim: sections.Victim) -> bool:
  """True when any defence of the `victim` section is on."""
  t = victim.train
  return t.dp.mode == 'on' or t.weight_decay > 0 or victim.release_noise > 0


def describe(victim: sections.Victim,
             mechanism: Optional[Dict[str, Any]]) -> Dict[str, Any]:
  """summary.json's record of the `victim` section's defences (mechanism: `privacy.resolve`'s,
  or None)."""
  return {'dp': mechanism, 'weight_decay': float(victim.train.weight_decay),
          **(privacy.describe_release(victim.release_noise)
             or {'release_noise': 0.0})}


def train_network_params(t: sections.Train, seed: int, apply: Callable, params0: Any,
                         x: jax.Array, targets: jax.Array,
                         lr: float) -> Tuple[Any, Dict[str, Any], Optional[Dict[str, Any]]]:
  """(params_T, train info, DP mechanism or None) of a GD victim under the training defences
  of `t` (the `victim.train` section; `seed` keys DP-SGD's noise and batches): DP-SGD for exactly
  max_steps steps when t.dp.mode is 'on', else the full-batch GD of `train.train` (weight
  decay when > 0)."""
  if t.dp.mode != 'on':
    params, info = train.train(apply, params0, x, targets, loss=t.loss,
                               optimizer=train.make_optimizer(lr, t.momentum, t.weight_decay),
                               max_steps=t.max_steps, tol=t.tol)
    return params, info, None
  mech = privacy.resolve(t.dp, int(x.shape[0]), t.max_steps)
  opt = privacy.dp_optimizer(lr, clip=mech['clip'], noise_multiplier=mech['noise_multiplier'],
                             sample_rate=mech['sample_rate'], key=privacy.dp_key(seed),
                             momentum=t.momentum, weight_decay=t.weight_decay)
  params, info = train.train(apply, params0, x, targets, loss=t.loss, optimizer=opt,
                             max_steps=t.max_steps, tol=t.tol, gradients='per_example',
                             sample_rate=mech['sample_rate'],
                             key=jax.random.fold_in(privacy.dp_key(seed), 1))
  return params, info, mech


def release(victim: sections.Victim, seed: int, params: Any) -> Any:
  """The released trained parameters: `params` plus the `victim` section's release noise
  (unchanged when 0), keyed by the run's seed."""
  return privacy.add_release_noise(params, victim.release_noise, privacy.release_key(seed))


def held_out(data_section: sections.Data, seed: int, dtype):
  """(x', y', how) for utility: held-out samples of the run's task (`data.load_held_out`)."""
  x, y, how = data.load_held_out(data_section, runs.split_keys(seed)['data'], HELD_OUT, dtype)
  if x is not None:
    x = x.reshape(x.shape[0], -1)
  return x, y, how


def network_utility(data_section: sections.Data, loss: str, seed: int,
                    apply: Callable, params: Any, x, targets, dtype) -> Dict[str, Any]:
  """{train: {loss, accuracy}, held_out: {loss, accuracy, n, source}} of a network victim
  trained on loss `loss` (held-out samples of the `data` section's task)."""
  out = {'train': train.utility(apply, params, x, targets, loss)}
  xh, yh, how = held_out(data_section, seed, dtype)
  if xh is None or len(xh) == 0:
    out['held_out'] = {'n': 0, 'source': how}
  else:
    th = train.make_targets(loss, yh, data_section.num_classes, dtype)
    out['held_out'] = {**train.utility(apply, params, xh, th, loss), 'n': int(len(xh)),
                       'source': how}
  return out


def regression_utility(predict: Callable, x, y, data_section: sections.Data,
                       seed: int, dtype) -> Dict[str, Any]:
  """{train, held_out: {mse, sign_accuracy}} of a regression victim (random features' theta*):
  the squared error and the share of signs right."""
  def score(xs, ys):
    pred = np.asarray(predict(xs)).reshape(-1)
    ys = np.asarray(ys, np.float64).reshape(-1)
    return {'mse': float(np.mean((pred - ys) ** 2)),
            'sign_accuracy': float(np.mean(np.sign(pred) == np.sign(ys)))}
  out = {'train': score(x, y)}
  xh, yh, how = held_out(data_section, seed, dtype)
  out['held_out'] = ({'n': 0, 'source': how} if xh is None or len(xh) == 0 else
                     {**score(xh, yh), 'n': int(len(xh)), 'source': how})
  return out
