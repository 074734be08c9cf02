"""Row swaps: the deadest row re-placed where the residual points, one at a time, judged after
the other rows have moved.

Residual pursuit's rounds (`recon.attack.rescue.pursuit.PursuitStep`) re-place every dead row at once and
judge the new set on the spot. Late in a run that stops paying: the rows on their samples lean
on the wrong ones (they sit slightly off to make up for them), so a re-placed row shows its
worth only after the others have moved back, and a round of many rows re-places right rows
too. A swap changes one row and lets the descent answer before judging:

1. the row j with the smallest leave-one-out gain D_j = L_{-j} − L among the rows not tried
   since the last kept swap (`Pursuit.gains`: the part of θ only x_j explains);
2. x_j re-placed by residual pursuit (`Pursuit.place_rows`: the point of the √d-sphere whose
   feature vector, off the other rows' span, explains the largest share of θ's residual);
3. `steps` steps of the attack's own descent from a fresh optimiser state, its learning rate
   a cosine from `lr` to `pursuit.ROUND_FINAL_RATIO`·lr, set every `LR_CHUNK` steps;
4. kept when the loss is then below the loss before the swap; else the candidates and the
   optimiser's state return to the swap's start. The steps count against the budget either way.

After `patience` refused swaps in a row the step stops swapping and the descent goes on.
Cost per swap: one leave-one-out pass (one Cholesky), one pursuit search (`starts` Adam runs of
`search_steps`), `steps` descent steps. Measured where it was built (photo patches, n = 100,
d = 48, p = 10·dn, shadow seed 1000, from the pursuit recipe's end at 83 rows, loss 1.2·10⁻⁴
with `attack.refine=3`): five swaps of 800 steps in a row were kept, 89 rows at 3.9·10⁻⁵ after
160 s (ground truth for the row count only; docs/random_features.md).
"""
from __future__ import annotations

import time
from typing import Callable

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from recon.attack import optimiser as optimize
from recon.attack.rescue.pursuit import DEAD_RATIO, Pursuit, ROUND_FINAL_RATIO
from recon.config import sections
from recon.attack.rescue.step import Step

LR_CHUNK = 100  # steps between two settings of a swap's learning rate
SALT = 0x5A90000  # swap k's search key: the pursuit's key folded with SALT + k


def swap_learning_rate(lr: float, step: int, steps: int) -> float:
  """lr (r + (1 − r)(1 + cos(π min(step / steps, 1))) / 2), r = ROUND_FINAL_RATIO."""
  u = min(max(step, 0) / max(steps, 1), 1.0)
  r = ROUND_FINAL_RATIO
  return lr * (r + (1 - r) * 0.5 * (1 + np.cos(np.pi * u)))


class SwapStep(Step):
  """The rescue step 'swap' (`recon.attack.rescue.chain`; module docstring): from step `start`, after every
  chunk, one swap of the deadest untried row, kept when the loss after `steps` steps of descent
  is lower. One projection run on a feature map (random features) only."""

  def __init__(self, pursuit: Pursuit, loss_fn: Callable, problem,
               optimizer: optax.GradientTransformation, settings: sections.Swap, *,
               unit: Callable = lambda t: 1.0):
    """`pursuit`: the run's residual pursuit, searched as `settings` (the section
    attack.swap, whole) say."""
    start, steps, lr, patience = settings.start, settings.steps, settings.lr, settings.patience
    if steps < 1 or lr <= 0 or patience < 1:
      raise ValueError(f'swap: steps {steps}, lr {lr}, patience {patience} must be positive')
    self._pursuit = pursuit.with_search(starts=settings.starts, steps=settings.search_steps,
                                        dead_ratio=DEAD_RATIO, start_points=settings.start_points)
    self._problem, self._optimizer = problem, optimizer
    self._start, self._steps, self._lr = int(start), int(steps), float(lr)
    self._patience, self._unit = int(patience), unit
    self._loss = jax.jit(loss_fn)
    self.swaps = self.kept = self.refused_in_row = 0
    self.tried: list = []  # rows refused since the last kept swap
    self.seconds = 0.0
    self.chunk = None  # the bare chunk, set by `recon.attack.rescue.chain.Chain.wrap`

  def state_dict(self) -> dict:
    return {'swaps': self.swaps, 'kept': self.kept, 'refused_in_row': self.refused_in_row,
            'tried': [int(j) for j in self.tried]}

  def load_state_dict(self, saved: dict) -> None:
    self.swaps, self.kept = int(saved['swaps']), int(saved['kept'])
    self.refused_in_row = int(saved['refused_in_row'])
    self.tried = [int(j) for j in saved['tried']]

  def summary(self) -> dict:
    return {'swaps': self.swaps, 'swaps_kept': self.kept}

  @property
  def done(self) -> bool:
    return self.refused_in_row >= self._patience

  def _descend(self, state, x_new):
    """`steps` steps of the bare chunk from x_new and a fresh optimiser state."""
    opt_state = self._optimizer.init(x_new)
    s = state._replace(x=x_new, opt_state=opt_state,
                       loss=self._loss(x_new, self._problem).astype(state.loss.dtype))
    begin, end = int(state.step), int(state.step) + self._steps
    while int(s.status) == optimize.RUNNING and int(s.step) < end:
      lr = swap_learning_rate(self._lr, int(s.step) - begin, self._steps)
      s = s._replace(opt_state=optimize.set_learning_rate(s.opt_state, lr, self._unit))
      s = self.chunk(s, jnp.asarray(min(int(s.step) + LR_CHUNK, end), jnp.int32))
    return s

  def update(self, state):
    step = int(state.step)
    if int(state.status) != optimize.RUNNING or step < self._start or self.done:
      return state
    t0 = time.time()
    x = np.asarray(state.x)
    gains = self._pursuit.gains(x)
    untried = [int(j) for j in np.argsort(gains, kind='stable') if int(j) not in self.tried]
    if not untried:
      self.refused_in_row = self._patience
      return state
    j = untried[0]
    current = float(self._loss(state.x, self._problem))
    x_new = jnp.asarray(self._pursuit.place_rows(x, [j], SALT + self.swaps), state.x.dtype)
    out = self._descend(state, x_new)
    new = float(self._loss(out.x, self._problem))
    self.swaps += 1
    kept = bool(np.isfinite(new) and new < current)
    if kept:
      self.kept += 1
      self.refused_in_row, self.tried = 0, []
    else:
      self.refused_in_row += 1
      self.tried.append(j)
      status = out.status if int(out.status) != optimize.NONFINITE else state.status
      out = out._replace(x=state.x, opt_state=state.opt_state, loss=state.loss, status=status)
    self.seconds += time.time() - t0
    logging.info('step %d: swap %d (row %d, gain %.1e x median): loss %.2e -> %.2e after %d '
                 'steps, %s (%.0fs)%s', step, self.swaps, j,
                 gains[j] / max(float(np.median(gains)), 1e-300), current, new,
                 int(out.step) - step, 'kept' if kept else 'refused', time.time() - t0,
                 '; swaps stop here' if self.done else '')
    return out
