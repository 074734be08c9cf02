"""The settings of the attack's rescue steps and refiners: one typed, frozen definition each.

A class here is the one definition of its config section: every field's default and what it
accepts (a `Spec`). configs/base.py takes its defaults from it (`Escalate.defaults()`), the
validator its Specs (`Escalate.specs()`), and the consumer the whole value, read once from
the validated section (`Escalate.from_section(cfg.attack.escalate)`), with no defaults of its
own (tests/test_config.py walks the consumers' signatures):

  attack.reseed    Reseed    recon.attack.rescue.reseed.Reseeder
  attack.escalate  Escalate  recon.attack.rescue.escalate.Escalator
  attack.pursue    Pursue    recon.attack.rescue.pursuit.PursuitStep
  attack.swap      Swap      recon.attack.rescue.swap.SwapStep
  attack.cut       Cut       recon.attack.rescue.cut.CutStep
  attack.polish    Polish    recon.certify.rung.certify_or_polish
  attack.split     Split     recon.attack.splitting.Splitter
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Type, TypeVar

import ml_collections

from recon.config import choices
from recon.config.spec import Spec

S = TypeVar('S', bound='Section')
STEPS_MAX = 2 ** 31 - 1  # step counters are int32 on the device


def setting(default: Any, spec: Spec) -> Any:
  """A field of a section: its default and what it accepts (None: an optional field)."""
  return dataclasses.field(default=default, metadata={'spec': spec})


def subsection(cls: Type['Section']) -> Any:
  """A sub-section of a section (`victim.train`): its own definition, defaults and all."""
  return dataclasses.field(default_factory=cls, metadata={'section': cls})


def _count(low: int = 1) -> Spec:
  return Spec(int, low=low)


def _placeholder(spec: Spec) -> Any:
  """An optional field's None, typed for the command line (`--config.x=3` parses as its type)."""
  kind = spec.kind[0] if isinstance(spec.kind, tuple) else spec.kind
  return ml_collections.config_dict.placeholder(kind)


class Section:
  """What every section's definition offers (the classes below are frozen dataclasses)."""

  @classmethod
  def specs(cls) -> Dict[str, Any]:
    """{field: Spec, or a sub-section's dict of them}, in the definition's order (the
    validator's schema of the section)."""
    return {f.name: f.metadata['section'].specs() if 'section' in f.metadata
            else f.metadata['spec'] for f in dataclasses.fields(cls)}

  @classmethod
  def defaults(cls) -> ml_collections.ConfigDict:
    """The section's defaults as configs/base.py holds them (None typed by its Spec)."""
    c = ml_collections.ConfigDict()
    for f in dataclasses.fields(cls):
      if 'section' in f.metadata:
        c[f.name] = f.metadata['section'].defaults()
      else:
        c[f.name] = _placeholder(f.metadata['spec']) if f.default is None else f.default
    return c

  @classmethod
  def from_section(cls: Type[S], section: Any) -> S:
    """The settings of a (validated) config section: every field read, none left over."""
    values = dict(section.items())
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(values) - set(fields))
    if unknown:
      raise TypeError(f'{cls.__name__}: unknown field(s) {", ".join(unknown)}')
    return cls(**{k: fields[k].metadata['section'].from_section(v)
                  if 'section' in fields[k].metadata else v for k, v in values.items()})


@dataclasses.dataclass(frozen=True)
class Reseed(Section):
  """Blind re-seeding of candidates that collapsed onto one another (recon/attack/rescue/reseed.py)."""
  every: int = setting(2000, _count())  # steps between checks
  threshold: float = setting(0.95, Spec(float, low=0.0, low_open=True, high=1.0))
  proposals: int = setting(64, _count())


@dataclasses.dataclass(frozen=True)
class Escalate(Section):
  """Escalation on a loss plateau (recon/attack/rescue/escalate.py; docs/random_features.md#escalation).

  On a plateau above tol the weakest candidate (leave-one-out loss) is replaced by its
  mirror image or a random proposal, kept if a short trial halves the loss; after
  `restart_after` rejected replacements in a row a whole new candidate set is tried for
  `restart_steps` and kept if its loss is lower. On while 'escalate' is in attack.rescue, for
  each candidate set (every one of attack.restarts; skipped with sample splitting).

  window 1500 and restart_after 1 were chosen over 3000 and 2 by the certified rate (a blind
  signal) of 20-seed sweeps at n = d = 8: relu p = 16 dn 0.95 vs 0.75, p = 4 dn 0.85 vs 0.55;
  relu+tanh p = 4 dn 0.95 vs 1.0 (scripts/recovery_law.py; docs/random_features.md).
  """
  every: int = setting(500, _count())
  window: int = setting(1500, _count())
  trial_steps: int = setting(500, _count())
  restart_after: int = setting(1, _count(0))  # 0: never restart the whole set
  restart_steps: int = setting(3000, _count())
  # a trial is kept if it brings the loss below this x L
  accept_ratio: float = setting(0.5, Spec(float, low=0.0, low_open=True, high=1.0))
  # Weak candidates, replaced together: leave-one-out gain L_{-j} - L at most weak_ratio x the
  # median gain (the weakest always), at most max(1, max_weak_share x m).
  weak_ratio: float = setting(0.25, Spec(float, low=0.0))
  max_weak_share: float = setting(0.25, Spec(float, low=0.0, high=1.0))
  # 'auto': one more trial per plateau of a single projection run with a feature map (random
  # features): the rows the certificate's pin radii call stuck, re-placed by residual pursuit
  # (recon/attack/rescue/pursuit.py). 'off' (default): not yet measured on reported seeds.
  pursuit: str = setting('off', Spec(str, choices=choices.PURSUIT))
  # Residual pursuit's search per re-placed row: Adam runs from this many random starts, this
  # many steps each. Fewer starts where many rows are dead (n = 100 photos).
  pursuit_starts: int = setting(512, _count(8))
  pursuit_steps: int = setting(300, _count())


@dataclasses.dataclass(frozen=True)
class Pursue(Section):
  """Residual pursuit as a rescue step (recon/attack/rescue/pursuit.py `PursuitStep`; docs/random_features.md).

  On while 'pursue' is in attack.rescue, for one projection run on a feature map (random
  features): every `every` steps from step `start`, the dead rows (leave-one-out gain at most
  dead_ratio x the median; the pin radii's stuck rows where the dense Jacobian fits) are
  re-placed one after another where the residual of theta points, each by `starts` Adam runs
  of `steps` on the sphere, and the new set is kept when its loss is lower on the spot.
  The defaults were set on photo patches at n = 100 (shadow seed 1000, docs/random_features.md).
  """
  every: int = setting(4000, _count())
  start: int = setting(8000, _count(0))
  starts: int = setting(32, _count(8))
  steps: int = setting(200, _count())
  dead_ratio: float = setting(0.1, Spec(float, low=0.0, low_open=True, high=1.0))
  # The learning rate from a kept round on, the schedule decaying on from it; 0: unchanged.
  lr: float = setting(0.01, Spec(float, low=0.0))
  stop: int = setting(0, _count(0))  # no round from this step on (0: none stops them)
  # Where each row's search starts: 'sphere' (uniform) or 'rows' (the kept rows' second
  # moment, recon/attack/rescue/pursuit.py `start_factor`).
  start_points: str = setting('sphere', Spec(str, choices=choices.START_POINTS))


@dataclasses.dataclass(frozen=True)
class Swap(Section):
  """Row swaps as a rescue step (recon/attack/rescue/swap.py `SwapStep`; docs/random_features.md).

  On while 'swap' is in attack.rescue, for one projection run on a feature map (random
  features): from step `start`, after every chunk, the row of smallest leave-one-out gain is
  re-placed by residual pursuit (`starts` Adam runs of `search_steps`), the descent runs `steps`
  steps from a fresh optimiser (lr a cosine from `lr`), and the swap is kept when the loss is
  then lower, else undone; `patience` refused swaps in a row end the swaps.
  Set on photo patches at n = 100 (shadow seed 1000, docs/random_features.md).
  """
  start: int = setting(16000, _count(0))
  steps: int = setting(800, _count())
  lr: float = setting(0.003, Spec(float, low=0.0, low_open=True))
  patience: int = setting(8, _count())
  starts: int = setting(32, _count(8))
  search_steps: int = setting(200, _count())
  # 'rows': the search starts where the kept rows lie (their second moment); on the shadow
  # seed's end state 8 swaps ended at loss 4.9e-5 against 1.3e-4 from 'sphere' starts.
  start_points: str = setting('rows', Spec(str, choices=choices.START_POINTS))


@dataclasses.dataclass(frozen=True)
class Cut(Section):
  """The cut of m > n candidates to n (recon/attack/rescue/cut.py `CutStep`; docs/random_features.md).

  On while 'cut' is in attack.rescue and attack.n_candidates exceeds data.n, for one projection
  run on a feature map (random features): once, when the run stops (or after the chunk that
  reaches step `at` > 0), the rows of smallest leave-one-out gain are dropped, 5% at a time,
  until n remain; the descent goes on with the optimiser's state of the kept rows.
  `at` 0 (at the stop) on photo patches at n = 100, shadow seed 1000: a cut at step 12 000 of
  20 000 raised the loss 7x in the next 200 steps and ended at 4.4e-4, where a cut at the stop
  kept every row the 200 candidates held (docs/random_features.md).
  """
  at: int = setting(0, _count(0))  # 0: when the run stops
  # The optimiser's state after the cut: 'fresh' (new, at the lr reached) or the 'kept' rows' own;
  # a cut at step 12 000 ended at 3.2e-4 fresh against 4.6e-4 kept (same seed, blind: the loss).
  state: str = setting('fresh', Spec(str, choices=choices.CUT_STATES))


@dataclasses.dataclass(frozen=True)
class Polish(Section):
  """The precision rung (recon/certify/rung.py; docs/random_features.md#escalation).

  When the certificate fails with p >= m d, the rows it leaves free are re-searched in
  float64 one at a time (the others held to first order) and the set is polished by
  Gauss-Newton; the polished set is certified in float64 against tol. On while 'polish' is
  in attack.rescue, where the certificate is computed.

  tol 1e-12: the float64 loss at the true rows of a float32 victim is 1e-14 .. 2e-14
  (the rounding of theta; n = 8, d in {8, 16}, 5 seeds), so 1e-12 leaves a 50x margin; where
  theta's coefficients cancel (data in a low-dim subspace) its rounding floor is higher, and
  the tolerance is raised to 4x its blind estimate (`recon.certify.float64_loss.rounding_floor`).
  """
  tol: float = setting(1e-12, Spec(float, low=0.0, low_open=True))
  # starts per re-searched row: the row, its mirror image, starts - 2 random
  starts: int = setting(32, _count(2))
  row_steps: int = setting(1000, _count())
  lm_iters: int = setting(20, _count(0))
  # Polish only when at most this share of the rows (at least one) is free: the rung is for
  # a row or two that float32 cannot resolve (the misses had 1 or 2 of 8), not a failed run.
  # Counted again after a first Gauss-Newton pass when more are free at the float32 loss.
  max_free_share: float = setting(0.25, Spec(float, low=0.0, high=1.0))
  # relu: passes of greedy sign flips (x_j := -x_j, kept if the float64 loss falls) first;
  # 0 = none. Measured: 3 of 6 relu runs with data in a 4-dim subspace of R^64 (8 kn) that
  # ended with candidates at mirror images reach the float64 floor.
  sign_sweeps: int = setting(2, _count(0))


@dataclasses.dataclass(frozen=True)
class Split(Section):
  """Sample splitting (recon/attack/splitting.py; docs/kkt.md, "Sample splitting"), off."""
  mode: str = setting('none', Spec(str, choices=choices.SPLIT_MODES))  # 'every' K steps, or on a 'plateau'
  every: int = setting(2000, _count())  # K (and the minimum gap between two rounds)
  plateau_window: int = setting(1000, _count())  # steps over which the relative decrease is measured
  plateau_tol: float = setting(1e-3, Spec(float, low=0.0))  # plateau: relative decrease below this
  budget: int = setting(8, _count(0))  # total splits allowed in a run
  max_per_round: int = setting(2, _count())  # splits per round (most negative eigenvalues first)
  eig_tol: float = setting(1e-9, Spec(float, low=0.0))  # split only if lambda_min(T_j) < -eig_tol
  # dense if d <= dense_max_dim, else Lanczos
  eig_method: str = setting('auto', Spec(str, choices=choices.EIG_METHODS))
  dense_max_dim: int = setting(64, _count())
  lanczos_steps: int = setting(20, _count())
  eps_min: float = setting(1e-3, Spec(float, low=0.0, low_open=True))  # relative to the median norm
  eps_max: float = setting(0.3, Spec(float, low=0.0, low_open=True))
  eps_grid: int = setting(16, _count())  # log-spaced eps values tried (one eps per round)
  merge_tol: float = setting(1e-3, Spec(float, low=0.0))  # merge children closer than this
  require_decrease: bool = setting(True, Spec(bool))  # reject a round whose best eps does not lower the loss




@dataclasses.dataclass(frozen=True)
class DP(Section):
  """DP-SGD of the GD-trained networks (recon/models/privacy.py; docs/defences.md).

  Per-example clipping to `clip`, Gaussian noise noise_multiplier * clip on the sum, Poisson
  batches of expected size batch_size (None: n, full-batch DP-GD), exactly max_steps steps;
  epsilon at `delta` from the accountant (dp_accounting). Give noise_multiplier or
  target_epsilon (the accountant's smallest noise multiplier that meets it), not both.
  """
  mode: str = setting('off', Spec(str, choices=choices.DP_MODES))
  clip: float = setting(1.0, Spec(float, low=0.0, low_open=True))
  noise_multiplier: Optional[float] = setting(None, Spec(float, low=0.0, optional=True))
  target_epsilon: Optional[float] = setting(
      None, Spec(float, low=0.0, low_open=True, optional=True))
  batch_size: Optional[int] = setting(None, Spec(int, low=1, optional=True))
  delta: float = setting(1e-5, Spec(float, low=0.0, low_open=True, high=1.0))
  accountant: str = setting('rdp', Spec(str, choices=choices.ACCOUNTANTS))


@dataclasses.dataclass(frozen=True)
class Train(Section):
  """Training of GD-trained victims (networks, homogeneous MLPs, the subspace two-layer net);
  its defences: weight_decay, and `dp` (DP-SGD)."""
  loss: str = setting('mse', Spec(str, choices=choices.LOSSES))
  # None: 1 / lambda_max(J^T J / n) at init
  lr: Optional[float] = setting(None, Spec(float, low=0.0, low_open=True, optional=True))
  momentum: float = setting(0.0, Spec(float, low=0.0, high=0.999999))
  # homogeneous MLPs run all of them; networks stop early at tol
  max_steps: int = setting(20000, Spec(int, low=1, high=STEPS_MAX))
  tol: float = setting(1e-6, Spec(float, low=0.0))
  # homogeneous MLPs: > 0 ends at the exact stationary point (L-BFGS); a defence for the
  # GD-trained networks too (docs/defences.md)
  weight_decay: float = setting(0.0, Spec(float, low=0.0))
  stationary_steps: int = setting(20000, _count())  # the L-BFGS steps of that stationary point
  polish: bool = setting(False, Spec(bool))  # homogeneous MLPs: SLSQP to the exact KKT point
  dp: DP = subsection(DP)


@dataclasses.dataclass(frozen=True)
class Run(Section):
  """Precision, checkpoints and logging (docs/reliability.md), the report's thresholds."""
  dtype: str = setting('float32', Spec(str, choices=choices.DTYPES))  # 'float64': slower
  # jax_default_matmul_precision for every compiled program: 'highest' (full float32; GPUs
  # otherwise use TF32), 'high', or 'default' (the backend's own). Recorded in summary.json.
  matmul_precision: str = setting('highest', Spec(str, choices=choices.MATMUL_PRECISIONS))
  # True: jax.distributed.initialize() at start-up (cluster auto-detection); the environment
  # JAX_COORDINATOR_ADDRESS + JAX_NUM_PROCESSES + JAX_PROCESS_ID does the same
  # (recon/runtime/distributed.py).
  distributed: bool = setting(False, Spec(bool))
  chunk_steps: int = setting(200, _count())  # steps per compiled call (progress / checkpoints)
  log_every_seconds: float = setting(10.0, Spec(float, low=0.0))
  overwrite: bool = setting(False, Spec(bool))  # True: replace a finished run in the same workdir
  # True: continue from WORKDIR/checkpoints (start fresh if there is none)
  resume: bool = setting(False, Spec(bool))
  checkpoint_every_seconds: float = setting(60.0, Spec(float, low=0.0))  # 0: off
  # 0: off; a stopped run is always checkpointed
  checkpoint_every_steps: int = setting(0, _count(0))
  checkpoint_keep: int = setting(2, _count())
  # a sweep group's estimated peak (recon/sweep/grid.py)
  sweep_memory_budget_gb: float = setting(8.0, Spec(float, low=0.0, low_open=True))
  # relative distance that counts as recovered
  recovered_threshold: float = setting(0.1, Spec(float, low=0.0, low_open=True))
  # images: recovered = matched and SSIM above this
  ssim_threshold: float = setting(0.7, Spec(float, low=0.0, low_open=True, high=1.0))
  # None: 11 for sides >= 16 pixels, else 3
  ssim_filter_size: Optional[int] = setting(None, Spec(int, low=1, optional=True))


@dataclasses.dataclass(frozen=True)
class LeakWidth(Section):
  """The leak-width prediction (pipeline 'leak_width', recon/audit/threshold.py; docs/audit.md,
  "How wide before it leaks"): shadow problems of the victim's family at small n, the
  threshold p* = c D n fitted on them, the prediction for the victim's width."""
  # training-set sizes of the shadow problems (ints >= 2, checked by the pipeline)
  shadow_n: tuple = setting((4, 8, 16), Spec((tuple, list)))
  # shadow widths p = ratio * D * n (floats > 0)
  ratios: tuple = setting((0.75, 1.0, 1.25, 1.5, 2.0, 3.0), Spec((tuple, list)))
  # never the seeds anything is reported on (ints >= 0)
  shadow_seeds: tuple = setting((1000, 1001, 1002, 1003, 1004), Spec((tuple, list)))
  # D: 'd' (the row size), 'pca' (k, the intrinsic dimension of data.path's rows by PCA),
  # 'auto' (pca for data.name 'file', else d)
  dim: str = setting('auto', Spec(str, choices=choices.LEAK_DIMS))
  # k = the fewest principal components holding this share of the variance
  variance: float = setting(0.99, Spec(float, low=0.0, low_open=True, high=1.0))
  bootstrap: int = setting(200, _count())  # bootstrap resamples (over seeds) of the threshold fit
  # 'trend': c(n) = exp(mu0) n^gamma fitted over the shadow sizes (needs >= 2); 'constant': one c
  model: str = setting('trend', Spec(str, choices=choices.LEAK_MODELS))


# {section path: its definition}: the sections configs/base.py and the validator derive.
SECTIONS: Dict[str, Type[Section]] = {
    'attack.reseed': Reseed, 'attack.escalate': Escalate, 'attack.pursue': Pursue,
    'attack.swap': Swap, 'attack.cut': Cut, 'attack.polish': Polish, 'attack.split': Split,
    'victim.train': Train, 'run': Run, 'leak_width': LeakWidth,
}
