"""One attack as a value: the objective a pipeline hands to the shared tail.

An attack minimises

  loss_fn(x, problem)  over the optimised variables x, from x0, under `constraint`,

where `problem` is the pytree the loss reads (the attacked parameters θ*, the victim's
fixed weights, the candidates' labels, ...) and `constraint(x)` is the projection applied
after every step (the sqrt(d) sphere, a field constraint on a pytree, the identity). x may
be one (m, k) candidate array or a pytree (subspace coordinates with free coefficients, KKT
candidates with duals); `decode(x)` maps it to the (m, d) input-space candidates that are
scored (default: the identity).

`feature_fn(X_hat)` gives the rows Φ̂ the blind certificate (`recon.certify.certificate`) checks
against θ* = certify_theta: the projection loss

  ‖P⊥_{Φ̂} θ*‖² / ‖θ*‖²

at tol, with the candidates locally unique (the certificate's docstring has the tests).
`recon.pipelines.reconstruct.reconstruct_and_report` runs an `Attack` (`recon.attack.driver.optimise`, then
`recon.report.scoring.report`).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Optional

LossFn = Callable[[Any, Any], Any]


@dataclasses.dataclass(frozen=True)
class Attack:
  """What one attack is (the module docstring has the mathematics).

  Attributes:
    problem: the pytree `loss_fn` reads; a refiner may replace it between chunks.
    loss_fn: `loss_fn(x, problem) -> scalar`, jittable.
    x0: the initial optimised variables (an array or a pytree).
    constraint: `constraint(x) -> x`, the projection after every step.
    feature_fn: `feature_fn(X_hat) -> (rows, p)` on input-space candidates (optional):
      `feature_residual` against the truth's rows, and the certificate's Φ̂.
    gram_fn: `gram_fn(X_hat) -> (m, m)` (optional): `gram_condition` of the final
      candidates (warns when the solve loses precision).
    decode: `decode(x) -> X_hat (m, d)` (optional; default identity), e.g. subspace
      coordinates or a pytree with free coefficients to input space, or the best of K
      restarts (`recon.attack.restarts.BestRestart`; its `summary()` enters the metrics).
    refiner: `refiner(x, problem, step, history) -> None | (x, problem)` (optional; e.g.
      `recon.attack.splitting.Splitter`) replaces the variables and the problem between chunks;
      the optimiser state is then reset (its `summary()` enters the metrics).
    certify_theta: θ* of a projection attack whose `feature_fn` rows are the candidates'
      features (optional): adds `metrics.certified` and its evidence.
    quotient_dims: k > 0 when `feature_fn` and `certify_theta` are the sign quotient's
      (`recon.attack.sign_quotient`: k directions projected out): the certificate counts p - k
      equations and the precision rung skips its sign flips (the quotient is sign-blind).
    rows_fn: `rows_fn(x, problem) -> (rows (m, p), target (p,))` when `loss_fn` is their
      projection loss (optional): escalation then ranks its random proposals by rank-two
      updates of one Cholesky (`recon.objectives.projection.replacement_losses`).
  """
  problem: Any
  loss_fn: LossFn
  x0: Any
  constraint: Callable[[Any], Any]
  feature_fn: Optional[Callable[[Any], Any]] = None
  gram_fn: Optional[Callable[[Any], Any]] = None
  decode: Optional[Callable[[Any], Any]] = None
  refiner: Optional[Callable[..., Any]] = None
  certify_theta: Optional[Any] = None
  quotient_dims: int = 0
  rows_fn: Optional[Callable[[Any, Any], Any]] = None

  def __post_init__(self):
    if self.x0 is None:
      raise ValueError('Attack.x0: None; accepted: the initial optimised variables')
    if not callable(self.loss_fn) or not callable(self.constraint):
      raise ValueError('Attack.loss_fn and Attack.constraint must be callable')
