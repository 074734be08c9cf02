"""What a rescue step is: an (init, update) pair, as an Optax transformation is.

A step is registered once (kind 'rescue', `recon.registry.Rescue`, in
recon/attack/rescue/chain.py) by
  applies(ctx)        None when the step acts on this attack (`chain.Context`), else why not
                      (logged, the step left out of the chain)
  init(section, ctx)  the step's state: an instance of a `Step` subclass holding its settings
                      (its config section, whole) and what it counts
and the state's `update(state) -> state`, run on the host after each chunk of the descent
(`chain.Chain.wrap`). Everything else a step may do has a default here, so the chain calls
each hook on every step (no hook is looked for):
  state_dict() / load_state_dict(saved)   its state in the run's checkpoints, under its name
  summary()                               its counters in summary.json's metrics
  template(state, saved)                  the layout of a checkpoint it wrote ('cut' changes the
                                          number of candidates)
  resumed(state, budget_grew)             its catch-up after a restore ('reseed')
  per_run()                               a batch's per-run counters ('escalate' in a sweep)
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Optional


class Step:
  """A rescue step's state; `update` is the step (module docstring)."""

  # The bare compiled chunk, set by `chain.Chain.wrap`, for the step's own trials (never the
  # chain, so a trial is not itself rescued).
  chunk: Optional[Callable[[Any, Any], Any]] = None

  def update(self, state: Any) -> Any:
    """The step after a chunk: the descent's state, maybe with candidates replaced."""
    raise NotImplementedError

  def __call__(self, state: Any) -> Any:
    return self.update(state)

  def state_dict(self) -> Dict[str, Any]:
    return {}

  def load_state_dict(self, saved: Dict[str, Any]) -> None:
    del saved

  def summary(self) -> Dict[str, Any]:
    return {}

  def template(self, state: Any, saved: Dict[str, Any]) -> Any:
    """The layout of a checkpoint whose state of this step is `saved` (from the initial
    `state`): the same, unless the step changes the candidates' shape."""
    del saved
    return state

  def resumed(self, state: Any, budget_grew: bool) -> Any:
    """After a restore: what an unbroken run would have done by now (nothing by default)."""
    del budget_grew
    return state

  def per_run(self) -> Dict[str, Any]:
    """A vmapped batch's counters, one entry per run ({} for a step of one run)."""
    return {}
