"""Escalation when the projection-loss descent is stuck: blind, from the loss alone.

A known way the attack stalls above the threshold: every candidate but one has found
its training sample, and the last one sits in a poor local minimum, for relu often
near the *mirror image* -x of its sample (relu(z) = |z|/2 + z/2 only sees the sign
through its linear part). The loss then plateaus at 1e-4 instead of reaching `tol`.

Detection and repair use only the candidates and the loss, never the ground truth:

  plateau:  at a check, L > tol, no escalation within the last `window` steps, and
            either L > `PLATEAU_RATIO` * L_w (L_w: the loss one `window` of steps ago) or,
            given `max_steps`, the loss falls too slowly to reach tol in the budget left:
                window * log(L / tol) / log(L_w / L) > max_steps - step
            (a candidate creeping along a shallow valley at a wrong point);
  weak:     every candidate whose removal costs little compared with the others', from the
            leave-one-out losses of all m candidates in one vectorised pass
            (`leave_one_out_losses`: L_{-j} = L(X with x_j := x_{j+1}) -- a duplicate adds
            nothing to the span, so this is the loss without candidate j -- vmapped over j in
            batches of `LOO_BATCH`). With the gain D_j = L_{-j} - L >= 0,
                W = {j : D_j <= `weak_ratio` * median_k D_k}  U  {argmin_j D_j},
            the `max_weak` = max(1, floor(`max_weak_share` * m)) smallest D_j at most.
            Why relative to the others: write theta = sum_i a_i phi(x_i). A candidate on
            sample i carries the part of theta no other candidate can, D_j ~ u_i (u_i the
            sample's unique share); a stuck candidate explaining a fraction f_j of its sample
            carries D_j ~ f_j u_i. So the gain ranks candidates by f (argmin D: the former
            one-row rule), and a stuck one stands out from the typical (median) candidate by
            the factor f_j -- for a candidate far from every sample (f ~ 0) clearly, for a
            near miss (f -> 1) not at all (the descent itself finishes those). It is not a
            classifier: a right candidate whose sample's share u_i is small (a small label
            coefficient a_i), or is explained by its neighbours, has a small gain too
            (measured on planted sets, n = 12 .. 32: a right row now and then has D_j ~ 0.02
            median D while wrong rows sit at 0.005 .. 0.5 median D). Hence the cap, and the
            trials below judge every replacement by the loss. The weakest candidate
            (argmin D_j) is always in W; |W| = 1 is the former rule;
  trials:   for every row of W, its mirror image -x_j and the best of `N_PROPOSALS` random
            points for its slot, the others held (`refine.best_replacement`, vmapped over the
            rows of W), with the loss of each with that row alone replaced. Trials: the
            weakest alone by its mirror ('mirror') and by its random proposal ('random') --
            the one-row rule, so a round never does worse than it -- and, when |W| > 1,
            'chosen': every row of W whose better proposal beats it on the spot (that loss
            below L) takes it, the weakest always, the others stay. Three trials, not two, per
            plateau with several weak rows; all start from the same state and run
            `trial_steps` each. The rows of W have their
            optimiser state zeroed (`optimize.reset_rows`), the rest of
            the state is kept, so the other candidates keep their moments and the
            learning-rate schedule keeps its place (a fresh state would restart a cosine
            schedule at its peak and shake the candidates that had already converged);
  accept:   the best trial if its loss is below `accept_ratio` * L; its steps count
            towards the budget. Otherwise the run continues from where it was.
  restart:  after `restart_after` rejected trials in a row (many candidates are wrong, one
            replacement cannot halve the loss), the next plateau tries a whole new candidate
            set instead: fresh random candidates and a fresh optimiser state (moments and
            step counts zeroed, hyper-parameters kept), optimised for `restart_steps` and
            kept if its loss is below L; the plateau after it tries replacements again
            (the rungs alternate). 0 turns the rung off.

The same object serves one run and a vmapped batch of runs (`batched=True`, as in
`recon.sweep.grid`): state and problem then carry a leading batch axis, every run keeps its
own trace, schedule and counters, the flagged runs' trials are computed together (runs
not flagged simply advance by the trial's steps) and each flagged run keeps its best
trial or its own state independently of the others.

`summary()` reports the rounds tried and kept and `escalation_seconds`, the wall time spent in
rounds (a resumed run counts from its resume). Its state (traces of checked losses, last
escalation, key, counters) is `state_dict()`,
saved with the run's checkpoints, so a resumed run escalates exactly as an unbroken one.
"""
from __future__ import annotations

import time
from typing import Any, Callable, List, Optional, Tuple

import jax
import jax.numpy as jnp
import numpy as np
import optax
from absl import logging

from recon.attack import optimiser as optimize
from recon.config import sections
from recon.attack.rescue.step import Step
from recon.attack.rescue import reseed as refine
from recon.objectives import projection
from recon.attack.optimiser import reset_rows, reset_state
from recon.attack.optimiser import select_runs as _select

Array = jax.Array


LOO_BATCH = 16  # candidates per vmapped batch of the leave-one-out pass (bounds its memory)
TRIAL_CHUNK = 250  # steps per compiled call of a restart's trial (a progress line between)
TRIAL_LOG_SECONDS = 10.0  # a restart trial's progress line at most this often
PLATEAU_RATIO = 0.9  # a plateau: the loss above this x the loss one window ago
N_PROPOSALS = 64  # random proposals per weak row and trial


def leave_one_out_losses(x: Array, loss_fn: Callable[[Array, Any], Array], problem: Any,
                         batch_size: int = LOO_BATCH) -> Array:
  """(m,) L(X with row j replaced by row j+1): the loss without candidate j's contribution,
  all m in one pass (vmapped over j in batches of `batch_size`)."""
  m = x.shape[0]
  def one(j):
    return loss_fn(x.at[j].set(x[(j + 1) % m]), problem)
  losses = jax.lax.map(one, jnp.arange(m), batch_size=max(1, min(int(batch_size), m)))
  return jnp.where(jnp.isfinite(losses), losses, jnp.inf)


def weak_rows(loo: Array, loss: Array, *, ratio: float, max_weak: int) -> Array:
  """(..., m) bool: the weak candidates of the module docstring, per run (leading axes):
  gain D_j = L_{-j} - L at most `ratio` times the median gain, the argmin of D always, at
  most `max_weak` (the smallest gains). Blind: leave-one-out losses and the loss only."""
  loss = jnp.asarray(loss)[..., None]
  gain = jnp.maximum(loo - loss, 0.0)
  rank = jnp.argsort(jnp.argsort(gain, axis=-1), axis=-1)  # 0 for the smallest gain
  typical = jnp.median(jnp.where(jnp.isfinite(gain), gain, jnp.nan), axis=-1, keepdims=True)
  return (rank == 0) | ((gain <= ratio * typical) & (rank < max_weak))


def _bucket(k: int) -> int:
  """k rounded up to a power of two (few compiled shapes of the proposal pass)."""
  return 1 << max(0, int(k) - 1).bit_length()


class Escalator(Step):
  """Wraps a compiled chunk `chunk(state, stop) -> state`; see the module docstring."""

  def __init__(self, key: Array, loss_fn: Callable[[Array, Any], Array], problem: Any,
               constraint: Callable[[Array], Array], optimizer: optax.GradientTransformation,
               settings: sections.Escalate, *, tol: float, max_steps: Optional[int] = None,
               batched: bool = False,
               residual_pursuit: Optional[Callable[[Any, float], Any]] = None,
               rows_fn: Optional[Callable[[Any, Any], Any]] = None,
               jitter: float = projection.DEFAULT_JITTER):
    """`settings`: the section attack.escalate, whole; `residual_pursuit` (one run's
    `recon.attack.rescue.pursuit.Pursuit`) joins the trials when settings.pursuit is 'auto'."""
    every, window = settings.every, settings.window
    self._batched = batched
    self._pursuit = residual_pursuit if not batched and settings.pursuit == 'auto' else None
    # One key per run (a batch passes its runs' keys stacked), so that a run's draws do not
    # depend on the other runs of its batch.
    self._keys = key if batched else jnp.asarray(key)[None]
    # A batch's problems are stacked per run; one run's is shared (in_axes None), never copied.
    self._problem, pa = problem, (0 if batched else None)
    self._optimizer = optimizer
    self._tol = tol
    self._every = every
    self._window = window
    self._plateau_ratio = PLATEAU_RATIO
    self._trial_steps = settings.trial_steps
    self._accept_ratio = settings.accept_ratio
    self._restart_after = settings.restart_after
    self._max_steps = max_steps
    self._restart_steps = settings.restart_steps
    self._give_up_after = settings.give_up_after
    self._weak_ratio = settings.weak_ratio
    self._max_weak_share = settings.max_weak_share
    size = jax.tree.leaves(problem)[0].shape[0] if batched else 1
    self._next = [every] * size
    self._trace: List[List[Tuple[int, float]]] = [[] for _ in range(size)]
    self._last = [-window] * size
    self.tried_per_run = [0] * size
    self.accepted_per_run = [0] * size
    self.rejected_in_row = [0] * size
    self.failed_in_row = [0] * size  # plateaus in a row that no escalation lowered
    self.restarts_per_run = [0] * size
    self.restarts_kept_per_run = [0] * size
    self.pursuits_accepted = 0
    self.seconds = 0.0  # wall time in escalation rounds (LOO, proposals, trials); not saved
    self.chunk = None  # the compiled chunk (of one run, or of the batch), set before the run
    # Leave-one-out losses: with the projection loss's rows, all m from one Cholesky
    # (`projection.removal_losses`), else m losses with a row duplicated.
    loo = (lambda x, prob: leave_one_out_losses(x, loss_fn, prob)) if rows_fn is None else (
        lambda x, prob: projection.removal_losses(*rows_fn(x, prob), jitter))
    self._loo = jax.jit(jax.vmap(loo, in_axes=(0, pa)))
    def proposals(key, x, idx, prob):
      """For the rows idx (K,) of one run: the best random point of each slot (the others
      held) and its loss, the mirror image and its loss. Slot 0 draws with the run's key
      itself (one weak row: the former single-row proposal), slot k > 0 with fold_in(key, k)."""
      keys = jnp.concatenate([key[None], jax.vmap(lambda k: jax.random.fold_in(key, k))(
          jnp.arange(1, idx.shape[0]))]) if idx.shape[0] > 1 else key[None]
      # Over the slots in batches of LOO_BATCH (a vmap over all K would hold K copies of
      # the features: 49 GB at n = 500, p = 32 000 with K = 128); 1 where the runtime
      # deadlocks on the batched form (`refine.proposal_batch`).
      batch = refine.proposal_batch(idx.shape[0], LOO_BATCH)
      score = None
      if rows_fn is not None:  # proposals ranked by rank-two updates of one Cholesky
        basis = projection.replacement_basis(*rows_fn(x, prob), jitter)
        score = lambda j, z: projection.replacement_losses(  # noqa: E731
            basis, j, rows_fn(z, prob)[0])
      z, lz = jax.lax.map(lambda kj: refine.best_replacement(
          kj[0], x, kj[1], loss_fn, prob, constraint, N_PROPOSALS, score), (keys, idx),
                          batch_size=batch)
      mirror = constraint(-x[idx])
      lm = jax.lax.map(lambda jz: loss_fn(x.at[jz[0]].set(jz[1]), prob), (idx, mirror),
                       batch_size=batch)
      lm = jnp.where(jnp.isfinite(lm), lm, jnp.inf)
      return z, lz, mirror, lm
    self._proposals = jax.jit(jax.vmap(proposals, in_axes=(0, 0, 0, pa)))
    self._loss = jax.jit(jax.vmap(loss_fn, in_axes=(0, pa)))
    self._constraint = constraint
    self._fresh = jax.jit(lambda keys, x: jax.vmap(
        lambda k, xi: constraint(jax.random.normal(k, xi.shape, xi.dtype)))(keys, x))

  def state_dict(self) -> dict:
    key = self._keys
    if jax.dtypes.issubdtype(getattr(key, 'dtype', None), jax.dtypes.prng_key):
      key = jax.random.key_data(key)
    key = key if self._batched else key[0]
    per_run = {'next': [int(v) for v in self._next], 'last': [int(v) for v in self._last],
               'trace': [[[int(s), float(v)] for s, v in t] for t in self._trace],
               'tried': list(self.tried_per_run), 'accepted': list(self.accepted_per_run),
               'rejected_in_row': list(self.rejected_in_row),
               'failed_in_row': list(self.failed_in_row),
               'restarts': list(self.restarts_per_run),
               'restarts_kept': list(self.restarts_kept_per_run)}
    if not self._batched:  # one run: plain values (the format of single-run checkpoints)
      per_run = {k: v[0] for k, v in per_run.items()}
    return {'key': np.asarray(key).tolist(), **per_run}

  def load_state_dict(self, saved: dict) -> None:
    raw = jnp.asarray(np.asarray(saved['key'], np.uint32))
    raw = raw if self._batched else raw[None]
    if jax.dtypes.issubdtype(getattr(self._keys, 'dtype', None), jax.dtypes.prng_key):
      raw = jax.random.wrap_key_data(raw)
    self._keys = raw
    wrap = (lambda v: list(v)) if self._batched else (lambda v: [v])
    self._next = [int(v) for v in wrap(saved['next'])]
    self._last = [int(v) for v in wrap(saved['last'])]
    self._trace = [[(int(s), float(v)) for s, v in t] for t in wrap(saved['trace'])]
    self.tried_per_run = [int(v) for v in wrap(saved['tried'])]
    self.accepted_per_run = [int(v) for v in wrap(saved['accepted'])]
    for name, attr in (('rejected_in_row', 'rejected_in_row'), ('restarts', 'restarts_per_run'),
                       ('restarts_kept', 'restarts_kept_per_run'),
                       ('failed_in_row', 'failed_in_row')):  # absent in old checkpoints
      setattr(self, attr, [int(v) for v in wrap(saved[name])] if name in saved
              else [0] * len(self._next))

  def per_run(self) -> dict:
    return {'escalations_tried': self.tried_per_run, 'escalations_accepted':
            self.accepted_per_run, 'escalation_restarts': self.restarts_per_run,
            'escalation_restarts_kept': self.restarts_kept_per_run}

  def summary(self) -> dict:
    return {**{k: int(sum(v)) for k, v in self.per_run().items()},
            'escalation_seconds': round(float(self.seconds), 3),
            **({'escalation_pursuits': self._pursuit.calls,
                'escalation_pursuits_accepted': self.pursuits_accepted}
               if self._pursuit is not None else {})}

  def _plateau(self, b: int, step: int, loss: float) -> bool:
    if not loss > self._tol or step - self._last[b] < self._window:
      return False
    past = [v for s, v in self._trace[b] if s <= step - self._window]
    if not past:
      return False
    if loss > self._plateau_ratio * past[-1]:
      return True
    if self._max_steps is None or not self._tol > 0:  # tol = 0: no loss is fast enough
      return False
    # Too slow: at this window's rate the loss would not reach tol within the budget left.
    windows = np.log(loss / self._tol) / np.log(past[-1] / loss)
    return bool(windows * self._window > self._max_steps - step)

  def _flagged(self, steps, status, losses) -> List[int]:
    flagged = []
    for b in range(len(steps)):
      step, loss = int(steps[b]), float(losses[b])
      if step < self._next[b] or int(status[b]) != optimize.RUNNING:
        continue
      self._next[b] = step + self._every
      plateau = self._plateau(b, step, loss)
      self._trace[b].append((step, loss))
      self._trace[b] = [(s, v) for s, v in self._trace[b] if s >= step - 2 * self._window]
      if plateau:
        flagged.append(b)
    return flagged

  def update(self, state: optimize.ReconState) -> optimize.ReconState:
    if self._batched:
      return self._escalate(state, self.chunk)
    add = lambda t: jax.tree.map(lambda a: jnp.asarray(a)[None], t)  # noqa: E731
    drop = lambda t: jax.tree.map(lambda a: a[0], t)  # noqa: E731
    out = self._escalate(add(state), lambda s, stop: add(self.chunk(drop(s), stop)))
    return state if out is None else drop(out)

  def _escalate(self, state, chunk):
    steps, status, losses = jax.device_get((state.step, state.status, state.loss))
    steps, losses = np.asarray(steps), np.asarray(losses)
    flagged = self._flagged(steps, np.asarray(status), losses)
    if not flagged:
      return None if not self._batched else state
    t0 = time.time()
    for b in flagged:
      self._last[b] = int(steps[b])
    restart = [b for b in flagged
               if self._restart_after and self.rejected_in_row[b] >= self._restart_after]
    single = [b for b in flagged if b not in restart]
    if single:
      state = self._replace_weakest(state, chunk, single, steps, losses)
    if restart:
      state = self._restart(state, chunk, restart, steps, losses)
    state = self._give_up(state, flagged)
    jax.block_until_ready(state)
    self.seconds += time.time() - t0
    return state

  def _keys_for(self, flag: np.ndarray) -> Array:
    """One fresh subkey per run; only the flagged runs' keys advance."""
    pairs = jax.vmap(jax.random.split)(self._keys)
    self._keys = jnp.where(jnp.asarray(flag).reshape((-1,) + (1,) * (pairs.ndim - 2)),
                           pairs[:, 0], self._keys)
    return pairs[:, 1]

  def _trial(self, state, chunk, xt, opt_state, stop, what: str = '', runs=()):
    """The trial state run to step `stop`. With `what` (a long trial: the restart's) it runs
    `TRIAL_CHUNK` steps per call, the chunks being one descent, and logs where it is every
    `TRIAL_LOG_SECONDS` (the best loss among `runs`, the runs on trial)."""
    trial = state._replace(x=xt, opt_state=opt_state,
                           loss=self._loss(xt, self._problem).astype(state.loss.dtype))
    if not what:
      out = chunk(trial, stop)
    else:  # `optimize.drive`'s chunks, the runs left running
      t0, last = time.time(), [time.time()]

      def progress(s):
        at = int(np.max(np.asarray(s.step)))
        if at < int(stop) and time.time() - last[0] >= TRIAL_LOG_SECONDS:  # the verdict ends it
          last[0] = time.time()
          logging.info('%s: step %d of %d, trial loss best %.2e (%.0fs)', what, at, int(stop),
                       float(np.min(np.asarray(s.loss).reshape(-1)[list(runs)])), last[0] - t0)
      out = optimize.drive(trial, chunk, max_steps=int(stop), chunk_steps=TRIAL_CHUNK,
                           on_chunk=progress, mark_budget=False)
    loss = np.where(np.asarray(out.status) == optimize.NONFINITE, np.inf, np.asarray(out.loss))
    return out, loss

  def _prefix(self, b: int) -> str:
    return f'run {b}: ' if self._batched else ''

  def _replace_weakest(self, state, chunk, flagged, steps, losses):
    size = len(self._next)
    flag = np.zeros(size, bool)
    flag[flagged] = True
    for b in flagged:
      self.tried_per_run[b] += 1
    x, t_round = state.x, time.time()
    m = x.shape[1]
    max_weak = max(1, int(self._max_weak_share * m))
    loo = self._loo(x, self._problem)  # (B, m), every candidate in one pass
    weak = np.asarray(weak_rows(loo, jnp.asarray(losses, loo.dtype), ratio=self._weak_ratio,
                                max_weak=max_weak)) & flag[:, None]  # (B, m)
    # The weak rows of each run, weakest first, padded to a power of two by repeating the
    # weakest (padded slots are never applied).
    gain = np.asarray(loo) - np.asarray(losses)[:, None]
    order = np.argsort(np.where(weak, gain, np.inf), axis=1, kind='stable')
    count = weak.sum(axis=1)
    k = min(_bucket(int(count.max())), m)
    idx = np.where(np.arange(k)[None, :] < count[:, None], order[:, :k], order[:, :1])
    z_rand, l_rand, z_mirror, l_mirror = self._proposals(
        self._keys_for(flag), x, jnp.asarray(idx), self._problem)  # (B, k, d), (B, k)
    pick = np.asarray(l_mirror) <= np.asarray(l_rand)
    z_chosen = jnp.where(jnp.asarray(pick)[..., None], z_mirror, z_rand)
    valid = np.arange(k)[None, :] < count[:, None]  # (B, k)
    # 'chosen': the rows whose better proposal beats them on the spot, the weakest always.
    beats = np.minimum(np.asarray(l_mirror), np.asarray(l_rand)) < np.asarray(losses)[:, None]
    chosen = valid & (beats | (np.arange(k)[None, :] == 0))
    def placed(z, slots):  # row idx[b, s] := z[b, s] for the slots (B, k) given
      onto = np.where(slots, idx, m)  # index m: dropped
      full = jnp.zeros((size, m + 1) + x.shape[2:], x.dtype)
      full = full.at[jnp.arange(size)[:, None], jnp.asarray(onto)].set(z.astype(x.dtype))
      rows = np.zeros((size, m + 1), bool)
      rows[np.arange(size)[:, None], onto] = True
      rows = jnp.asarray(rows[:, :m])
      return jnp.where(rows[..., None], full[:, :m], x), reset_rows(state.opt_state, x, rows)
    stop = jnp.asarray(int(np.max(steps[flag])) + self._trial_steps, jnp.int32)
    first = np.arange(k)[None, :] == 0  # the weakest (slot 0) of every run
    sets = [('mirror', z_mirror, first & valid), ('random', z_rand, first & valid)]
    several = count > 1
    if several.any():  # the weak rows together, each by its proposal that beats it on the spot
      sets.append(('chosen', z_chosen, chosen & several[:, None]))
    logging.info('escalation: step %d, %d weak row(s) over %d run(s) (leave-one-out and '
                 'proposals %.0fs); %d trial(s) of %d steps', int(np.max(steps[flag])),
                 int(count[flag].sum()), int(flag.sum()), time.time() - t_round, len(sets),
                 self._trial_steps)
    trials = [(name, *self._trial(state, chunk, *placed(z, slots), stop))
              for name, z, slots in sets]
    pursued = None if self._pursuit is None else self._pursuit.batch(x, float(losses[0]))
    if pursued is not None:  # (x (1, m, d), the re-placed rows (1, m))
      trials.append(('pursuit', *self._trial(
          state, chunk, pursued[0], reset_rows(state.opt_state, x, pursued[1]), stop)))
    trial_loss = np.stack([t[2] for t in trials])  # (trials, B)
    trial_loss[2:len(sets), ~several] = np.inf  # one weak row: only the one-row trials
    best = np.argmin(trial_loss, axis=0)  # (B,) the best trial per run
    # Runs not flagged advanced through the trial chunk unchanged (all trials alike).
    out = trials[0][1]
    for t in range(1, len(trials)):
      out = _select(jnp.asarray(best == t), trials[t][1], out)
    keep_trial = np.ones(size, bool)
    for b in flagged:
      new = float(trial_loss[best[b], b])
      name = trials[best[b]][0]
      which = ([int(i) for i in np.flatnonzero(pursued[1][0])] if name == 'pursuit' else
               [int(i) for i in idx[b][chosen[b] if name == 'chosen' else first[0] & valid[b]]])
      if new < self._accept_ratio * float(losses[b]):
        self.accepted_per_run[b] += 1
        self.rejected_in_row[b] = 0
        self.failed_in_row[b] = 0
        self._next[b] = int(np.asarray(out.step)[b]) + self._every
        self.pursuits_accepted += name == 'pursuit'
        what = (f'{len(which)} stuck candidate(s) by pin radius {which} re-placed by residual '
                'pursuit' if name == 'pursuit' else
                f'{len(which)} weak candidate(s) by leave-one-out loss {which} (gain / L '
                f'{", ".join(f"{g:.2g}" for g in gain[b, which] / float(losses[b]))}) replaced by their '
                f'{name} proposals')
        logging.info('%sstep %d: loss plateau at %.2e; %s: %.2e after %d trial steps',
                     self._prefix(b), int(steps[b]), float(losses[b]), what, new,
                     self._trial_steps)
      else:
        keep_trial[b] = False
        self.rejected_in_row[b] += 1
        self.failed_in_row[b] += 1
        logging.info('%sstep %d: loss plateau at %.2e; replacing the %d weak candidate(s) %s '
                     '(by leave-one-out loss) did not help (best trial %.2e); continuing',
                     self._prefix(b), int(steps[b]), float(losses[b]), len(which), which, new)
    return _select(jnp.asarray(keep_trial), out, state)

  def _give_up(self, state, flagged):
    """Marks STALLED the flagged runs whose last `give_up_after` plateaus no escalation
    lowered (0: never): they stop at the loss they have."""
    if not self._give_up_after:
      return state
    stop = np.zeros(len(self._next), bool)
    for b in flagged:
      if self.failed_in_row[b] >= self._give_up_after:
        stop[b] = True
        logging.info('%sstalled: %d plateaus in a row that no escalation lowered; the run stops '
                     'at this loss (attack.escalate.give_up_after)', self._prefix(b),
                     self.failed_in_row[b])
    if not stop.any():
      return state
    stalled = jnp.where(jnp.asarray(stop), optimize.STALLED, state.status)
    return state._replace(status=stalled.astype(state.status.dtype))

  def _restart(self, state, chunk, flagged, steps, losses):
    size = len(self._next)
    flag = np.zeros(size, bool)
    flag[flagged] = True
    for b in flagged:
      self.restarts_per_run[b] += 1
    runs = jnp.asarray(flag)
    x = state.x
    xt = jnp.where(runs[:, None, None], self._fresh(self._keys_for(flag), x), x)
    opt_state = reset_state(state.opt_state, x, runs)
    stop = jnp.asarray(int(np.max(steps[flag])) + self._restart_steps, jnp.int32)
    out, new_loss = self._trial(
        state, chunk, xt, opt_state, stop, runs=[int(b) for b in flagged],
        what=(f'escalation: new candidate sets on trial for runs {[int(b) for b in flagged]}'
              if self._batched else 'escalation: a new candidate set on trial'))
    keep = np.ones(size, bool)
    for b in flagged:
      self.rejected_in_row[b] = 0  # kept or not, the next plateau tries replacements again
      if float(new_loss[b]) < float(losses[b]):
        self.restarts_kept_per_run[b] += 1
        self.failed_in_row[b] = 0
        self._next[b] = int(np.asarray(out.step)[b]) + self._every
        logging.info('%sstep %d: loss plateau at %.2e after %d rejected replacements; a new '
                     'candidate set reached %.2e in %d steps: kept', self._prefix(b),
                     int(steps[b]), float(losses[b]), self._restart_after,
                     float(new_loss[b]), self._restart_steps)
      else:
        keep[b] = False
        self.failed_in_row[b] += 1
        logging.info('%sstep %d: loss plateau at %.2e; a new candidate set reached only %.2e '
                     'in %d steps: discarded', self._prefix(b), int(steps[b]),
                     float(losses[b]), float(new_loss[b]), self._restart_steps)
    return _select(jnp.asarray(keep), out, state)
