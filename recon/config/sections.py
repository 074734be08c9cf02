"""The config's sections, each field defined once: a typed, frozen definition per section.

A class here is the one definition of its config section: every field's default and what it
accepts (a `Spec`), its comment saying what it is. configs/base.py takes its defaults from it
(`Attack.defaults()`), the validator its Specs (`Attack.specs()`, recon/config/schema.py), and a
consumer the whole value, read once from the validated section
(`Escalate.from_section(cfg.attack.escalate)`), with no defaults of its own
(tests/test_config.py walks the consumers' signatures):

  data             Data
  victim           Victim     (victim.train: Train, victim.train.dp: DP)
  attack           Attack     with the sections of its rescue steps and refiners:
  attack.reseed    Reseed     recon.attack.rescue.reseed.Reseeder
  attack.escalate  Escalate   recon.attack.rescue.escalate.Escalator
  attack.pursue    Pursue     recon.attack.rescue.pursuit.PursuitStep
  attack.swap      Swap       recon.attack.rescue.swap.SwapStep
  attack.cut       Cut        recon.attack.rescue.cut.CutStep
  attack.polish    Polish     recon.certify.rung.certify_or_polish
  attack.split     Split      recon.attack.splitting.Splitter
  attack.kkt       Kkt        recon.pipelines.kkt (the KKT attacks' own fields)
  attack.subspace  Subspace   recon.pipelines.subspace (the subspace search's own fields)
  run              Run
  leak_width       LeakWidth  (pipeline 'leak_width', recon/audit/leak_width.py)
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, Optional, Type, TypeVar

import ml_collections

from recon import registry
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
    """The settings of a (validated) config section: every field read, none left over (a
    section already read is itself)."""
    if isinstance(section, cls):
      return section
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
  # Give up after this many plateaus in a row that no escalation lowered (a replacement or a new
  # set not kept): the run stops as 'stalled' at the loss it has, instead of spending its budget
  # on a floor (a trained network's head holds a loss no candidate set goes below). 0: never.
  give_up_after: int = setting(0, _count(0))


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
  # 'every' K steps, or on a 'plateau' of the loss
  mode: str = setting('none', Spec(str, choices=choices.SPLIT_MODES))
  every: int = setting(2000, _count())  # K (and the minimum gap between two rounds)
  # steps over which the relative decrease is measured
  plateau_window: int = setting(1000, _count())
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
  # reject a round whose best eps does not lower the loss
  require_decrease: bool = setting(True, Spec(bool))



@dataclasses.dataclass(frozen=True)
class Kkt(Section):
  """The KKT attacks on homogeneous MLPs (recon/pipelines/kkt.py, recon/objectives/kkt.py;
  docs/kkt.md): the target, the duals, the candidates' prior and start, the equations fitted.
  Read by the KKT pipeline only (its objectives kkt_* and projection on a homogeneous MLP)."""
  # the attacker's activation and its backward alpha (None: the victim's); 'relu_smooth':
  # relu forward, sigmoid(act_alpha z) backward (Haim et al.)
  activation: Optional[str] = setting(None, Spec(str, choices=choices.ACTIVATIONS, optional=True))
  act_alpha: Optional[float] = setting(None, Spec(float, low=0.0, low_open=True, optional=True))
  # theta | delta (= theta_T - theta_0) | planted (an oracle from the training duals)
  target: str = setting('theta', Spec(str, choices=choices.KKT_TARGETS))
  # 'all', or comma-separated layer names: only their KKT equations (recon.objectives.kkt)
  layers: str = setting('all', Spec(str))
  # 'first_layer': candidates in the span of W1's rows
  candidate_subspace: str = setting('none', Spec(str, choices=choices.CANDIDATE_SUBSPACES))
  candidate_subspace_rank: Optional[int] = setting(None, Spec(int, low=1, optional=True))  # None: n
  candidate_init_scale: float = setting(1.0, Spec(float, low=0.0, low_open=True))
  lambda_min: float = setting(0.0, Spec(float, low=0.0))
  # projection (clip) | penalty (lambda_weight relu(.)^2)
  lambda_constraint: str = setting('projection', Spec(str, choices=choices.LAMBDA_CONSTRAINTS))
  lambda_weight: float = setting(5.0, Spec(float, low=0.0))
  lambda_init: str = setting('lstsq', Spec(str, choices=choices.LAMBDA_INITS))  # or 'uniform'
  # 'eliminate': variable projection
  lambda_solve: str = setting('optimize', Spec(str, choices=choices.LAMBDA_SOLVES))
  # sphere (radius = median data norm) | box (penalty) | none
  prior: str = setting('sphere', Spec(str, choices=choices.PRIORS))
  prior_bound: float = setting(1.0, Spec(float, low=0.0, low_open=True))
  prior_weight: float = setting(1.0, Spec(float, low=0.0))
  residual_weights: str = setting('none', Spec(str, choices=choices.RESIDUAL_WEIGHTS))


@dataclasses.dataclass(frozen=True)
class Subspace(Section):
  """Subspace-aware reconstruction (objective 'unified'; recon/pipelines/subspace.py,
  recon/attack/data_subspace.py, recon/objectives/unified.py; docs/subspace.md): where the
  candidates are searched, where the Jacobian is taken, how alpha is found. A mode other than
  'none' or a free alpha runs the subspace pipeline (recon.config.routes)."""
  # 'none' (R^d) | 'known' (the data's planted basis) | 'estimated' (from dW1)
  mode: str = setting('none', Spec(str, choices=choices.SUBSPACE_MODES))
  # None: automatic (largest gap) / the known basis' k
  dim: Optional[int] = setting(None, Spec(int, low=1, optional=True))
  # relative floor of dW1's singular values for the automatic k and the rank
  noise_floor: float = setting(1e-3, Spec(float, low=0.0, low_open=True, high=1.0))
  # 'trained' | 'initial' | 'both' (W1 moves during training)
  gradient_at: str = setting('trained', Spec(str, choices=choices.GRADIENT_AT))
  # or 'joint' (free alpha, warm-started at its optimum)
  alpha_mode: str = setting('closed_form', Spec(str, choices=choices.ALPHA_MODES))


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


@dataclasses.dataclass(frozen=True)
class Data(Section):
  """The training set (recon/data): synthetic_sphere 10 x 10, labels with noise 0.5."""
  # a registered data set (recon/data: recon.registry.names('dataset'))
  name: str = setting('synthetic_sphere',
                      Spec(str, choices=lambda: registry.known_names('dataset')))
  # a folder of downloaded files (cifar10, ...); None: the default cache
  dir: Optional[str] = setting(None, Spec(str, optional=True))
  # name 'file': the auditor's own training set, an .npz holding 'x' (n, d) or (n, H, W[, C])
  # and optionally 'y' (n,) (recon/data/auditor.py; docs/audit.md)
  path: Optional[str] = setting(None, Spec(str, optional=True))
  n: Optional[int] = setting(10, Spec(int, low=1, optional=True))  # name 'file': None = its length
  d: Optional[int] = setting(10, Spec(int, low=1, optional=True))  # name 'file': None = its row size
  # the classes kept (None: the data set's own choice; checked against the data set by data.load)
  classes: Optional[tuple] = setting(None, Spec((tuple, list), optional=True))
  # Classes of the labels: 1 = one scalar target; the KKT attacks need >= 2 (2: binary +-1).
  num_classes: int = setting(1, _count())
  image_size: Optional[int] = setting(None, Spec(int, low=1, optional=True))  # None: native
  # NHWC shape of a row for conv / ViT victims (None: flat)
  image_shape: Optional[tuple] = setting(None, Spec((tuple, list), optional=True))
  grayscale: bool = setting(False, Spec(bool))
  # 'sphere': rows on the sqrt(d)-sphere
  preprocess: str = setting('sphere', Spec(str, choices=choices.PREPROCESS))
  label_noise: float = setting(0.5, Spec(float, low=0.0))  # synthetic labels: y = noise * N(0, 1)
  # synthetic_subspace: the dimension k of its subspace
  planted_dim: Optional[int] = setting(None, Spec(int, low=1, optional=True))
  # KKT binary labels from two classes, or 'parity' of the class
  binary_rule: str = setting('classes', Spec(str, choices=choices.BINARY_RULES))


@dataclasses.dataclass(frozen=True)
class Victim(Section):
  """The model under attack: random features p = 1000, relu+tanh; the GD trainer's defaults."""
  # a registered victim (recon.registry.names('victim'))
  name: str = setting('random_features', Spec(str, choices=lambda: registry.known_names('victim')))
  p: int = setting(1000, _count())  # random features: the number of features
  width: int = setting(250, _count())  # trained networks: hidden width
  depth: int = setting(1, _count())  # hidden layers / blocks
  activation: str = setting('relu_tanh', Spec(str, choices=choices.ACTIVATIONS))
  # backward sigmoid(alpha z) of 'relu_smooth'
  act_alpha: float = setting(50.0, Spec(float, low=0.0, low_open=True))
  # homogeneous MLP: initial weight scale (hidden layers)
  init_scale: float = setting(0.2, Spec(float, low=0.0, low_open=True))
  # homogeneous MLP: initial weight scale of the first layer
  first_init_scale: float = setting(1.0, Spec(float, low=0.0, low_open=True))
  num_heads: int = setting(2, _count())  # ViT
  patch_size: int = setting(2, _count())  # ViT
  # ResNet / ViT: 'mean' or 'flatten' the tokens / pixels before the head
  pool: str = setting('mean', Spec(str, choices=choices.POOLS))
  # 'zeros': W_L(0) = 0 (the original ViT's convention)
  head_init: str = setting('fan_in', Spec(str, choices=choices.HEAD_INITS))
  # Random features: V is regenerated chunk by chunk from its key (never stored) when p*d
  # exceeds the budget, or always with feature_mode='lean' / feature_shards > 1
  # (recon/objectives/projection_streamed.py).
  feature_mode: str = setting('auto', Spec(str, choices=choices.FEATURE_MODES))
  feature_memory_budget_mb: float = setting(1024.0, Spec(float, low=0.0, low_open=True))
  feature_chunk: int = setting(4096, _count())
  # auto | two_pass | gram | stored (docs/performance.md)
  feature_residual: str = setting('auto', Spec(str, choices=('auto',) + choices.RESIDUAL_MODES))
  feature_shards: int = setting(1, _count())
  # Generator of V: 'threefry' (jax.random, per-row fold_in), 'hash' (counter-based hash +
  # erfinv) or 'hash_box_muller' (counter hash + Box-Muller: same distribution, the cheapest
  # to regenerate; use it for lean runs).
  weight_rng: str = setting('threefry', Spec(str, choices=choices.WEIGHT_RNGS))
  # A saved model (recon.model/1 folder, or a run's workdir) to attack instead of training one.
  checkpoint: Optional[str] = setting(None, Spec(str, optional=True))
  # Its format: 'recon' (a recon.model/1 folder or a run's workdir), 'orbax' (a params tree
  # saved by orbax), 'msgpack' (flax.serialization), 'safetensors' (a PyTorch MLP's
  # state_dict, victim 'torch_mlp'); recon/models/foreign.py, docs/audit.md.
  format: str = setting('recon', Spec(str, choices=choices.FORMATS))
  # the initial params, same format (attacks using W(0))
  init_checkpoint: Optional[str] = setting(None, Spec(str, optional=True))
  # the attacked parameter collection (None: the last one, the head)
  layer: Optional[str] = setting(None, Spec(str, optional=True))
  # victim 'flax_module': 'package.module:ClassName', and its constructor arguments (JSON values)
  module: Optional[str] = setting(None, Spec(str, optional=True))
  module_kwargs: Optional[dict] = setting(
      None, Spec((dict, ml_collections.ConfigDict), optional=True))
  train: Train = subsection(Train)  # GD training and its defences
  # Gaussian noise on the released trained weights (random features: on theta*, output
  # perturbation), relative: noise norm ~ release_noise * ||W|| per array; 0: off.
  release_noise: float = setting(0.0, Spec(float, low=0.0))


@dataclasses.dataclass(frozen=True)
class Attack(Section):
  """The objective, the optimiser and its rescue steps (each a sub-section defined above); the
  KKT attacks' own fields in `kkt`, the subspace search's in `subspace`."""
  # a registered objective (recon.registry.names('objective'))
  objective: str = setting('projection',
                           Spec(str, choices=lambda: registry.known_names('objective')))
  # None: n (2n for the KKT attacks)
  n_candidates: Optional[int] = setting(None, Spec(int, low=1, optional=True))
  optimizer: str = setting('sgd', Spec(str, choices=choices.OPTIMIZERS))
  lr: float = setting(5.0, Spec(float, low=0.0, low_open=True))
  momentum: float = setting(0.9, Spec(float, low=0.0, high=0.999999))  # SGD's momentum, Adam's b1
  # 'cosine': lr -> lr * final_ratio over decay_steps
  schedule: str = setting('constant', Spec(str, choices=choices.SCHEDULES))
  # None: max_steps
  decay_steps: Optional[int] = setting(None, Spec(int, low=1, high=STEPS_MAX, optional=True))
  final_ratio: float = setting(0.05, Spec(float, low=0.0, high=1.0))
  max_steps: int = setting(20000, Spec(int, low=1, high=STEPS_MAX))
  tol: float = setting(1e-7, Spec(float, low=0.0))  # stop when the loss is below
  jitter: float = setting(1e-6, Spec(float, low=0.0))  # ridge of the projection's Gram solve
  # Steps of iterative refinement of the projection's coefficients on the explicit residual
  # (random features, dense): the loss then tends to the ridge-free one, without its floor.
  refine: int = setting(0, Spec(int, low=0, high=100))
  # Random features with a relu-like activation (odd part linear; sigmoid-like: even part
  # constant): the features with the compensating space projected out, blind to every row's
  # sign (recon/attack/sign_quotient.py; dense features only). 'auto': when n_candidates > d (the
  # sign traps), 'on': always, 'off': the papers' plain loss.
  sign_quotient: str = setting('auto', Spec(str, choices=choices.SIGN_QUOTIENT))
  lbfgs_memory: int = setting(10, _count())  # optimizer 'lbfgs'
  lbfgs_linesearch_steps: int = setting(20, _count())
  # Trained networks: which parameters are read and what the attacker knows.
  # 'init_and_trained' / 'midpoint' need knows_init
  jacobian_at: str = setting('trained', Spec(str, choices=choices.JACOBIAN_AT))
  # The initial parameters W(0): None = known whenever they are given (a model recon trains, a
  # recon checkpoint holding them, victim.init_checkpoint); True = required (refused without
  # them); False = ignored even when given (one log line says so). recon.config.validate.knows_init.
  knows_init: Optional[bool] = setting(None, Spec(bool, optional=True))
  # The adaptive attack against weight decay (docs/defences.md): True adds the initial head
  # W_L(0) to the features' span (projected out of theta and of every feature row), since
  # GD with decay leaves -(1 - (1 - lr wd)^T) W_L(0) in W_L(T) - W_L(0). Needs knows_init.
  init_in_span: bool = setting(False, Spec(bool))
  knows_n: bool = setting(True, Spec(bool))
  # The certificate's Jacobian test (recon/certify/certificate.py): 'auto' picks dense / gram /
  # matrix_free by size; 'off' computes none, and certification then needs the counting
  # margin p >= 2 m d (said in the evidence) -- for the papers' CIFAR size, where the
  # matrix-free test costs minutes of float64 passes over V (docs/random_features.md).
  certify_jacobian: str = setting('auto', Spec(str, choices=choices.JACOBIAN_METHODS + ('off',)))
  # Restarts chosen by the blind loss (recon/attack/restarts.py): K candidate sets optimised at
  # once (vmapped), the one with the lowest loss wins; 1 = one candidate set.
  restarts: int = setting(1, _count())
  # The rescue steps (recon/attack/rescue/chain.py), each a registered name with its section below:
  # 'reseed' and 'escalate' act between chunks of the descent, in this order; 'polish' (the
  # float64 precision rung) after it, when the certificate fails. () : none.
  rescue: tuple = setting(('escalate', 'polish'), Spec(
      (tuple, list), choices=lambda: registry.known_names('rescue'), each=True))
  reseed: Reseed = subsection(Reseed)  # blind re-seeding of collapsed candidates
  escalate: Escalate = subsection(Escalate)  # escalation on a loss plateau
  pursue: Pursue = subsection(Pursue)  # residual pursuit
  swap: Swap = subsection(Swap)  # row swaps
  cut: Cut = subsection(Cut)  # m > n candidates cut to n
  polish: Polish = subsection(Polish)  # the float64 precision rung
  split: Split = subsection(Split)  # sample splitting (recon/attack/splitting.py), off
  kkt: Kkt = subsection(Kkt)  # the KKT attacks (recon/pipelines/kkt.py)
  subspace: Subspace = subsection(Subspace)  # subspace-aware search (recon/pipelines/subspace.py)


# {section path: its definition}: the sections configs/base.py and the validator derive.
SECTIONS: Dict[str, Type[Section]] = {
    'attack.reseed': Reseed, 'attack.escalate': Escalate, 'attack.pursue': Pursue,
    'attack.swap': Swap, 'attack.cut': Cut, 'attack.polish': Polish, 'attack.split': Split,
    'attack.kkt': Kkt, 'attack.subspace': Subspace,
    'victim.train': Train, 'run': Run, 'leak_width': LeakWidth, 'data': Data, 'victim': Victim,
    'attack': Attack,
}


@dataclasses.dataclass(frozen=True)
class RunSpec:
  """One run, resolved and validated once (recon/execution.py `execute`): its typed sections.

  The composition root reads the config once into this frozen spec and hands each builder
  the section it is defined by (`spec.attack.escalate`, `spec.victim.train`), never the
  whole; `to_dict()` is the config as summary.json and the checkpoints record it.
  """
  name: str
  seed: int
  pipeline: Optional[str]
  data: Data
  victim: Victim
  attack: Attack
  run: Run
  leak_width: LeakWidth
  record: Dict[str, Any] = dataclasses.field(repr=False, compare=False)

  @classmethod
  def from_config(cls, config: Any) -> 'RunSpec':
    """The spec of a validated, resolved ConfigDict (every field read, none left over)."""
    return cls(name=config.name, seed=config.seed, pipeline=config.pipeline,
               data=Data.from_section(config.data), victim=Victim.from_section(config.victim),
               attack=Attack.from_section(config.attack), run=Run.from_section(config.run),
               leak_width=LeakWidth.from_section(config.leak_width), record=config.to_dict())

  def replaced(self, section: str, **fields: Any) -> 'RunSpec':
    """This spec with `fields` of `section` replaced, in its record too (what a run found out,
    such as whether the attack used the initial weights, is what summary.json records)."""
    record = self.to_dict()
    record[section].update(fields)
    return dataclasses.replace(self, record=record, **{
        section: dataclasses.replace(getattr(self, section), **fields)})

  def to_dict(self) -> Dict[str, Any]:
    """The config this spec was read from, as a plain dict (a copy)."""
    import copy  # pylint: disable=import-outside-toplevel
    return copy.deepcopy(self.record)


@dataclasses.dataclass(frozen=True)
class Federated(Section):
  """A federated client's local training and the attack on its update (pipeline 'federated',
  recon/pipelines/federated.py; docs/federated.md): the server sends W(0) (the victim section's
  network at initialisation), the client trains `epochs` local epochs in minibatches of `batch`
  on its data.n records with step `lr`, and returns W(1); the server attacks W_L(1) - W_L(0)."""
  epochs: int = setting(1, _count())  # E: local epochs
  batch: Optional[int] = setting(None, Spec(int, low=1, optional=True))  # B (None: n, full batch)
  lr: float = setting(0.1, Spec(float, low=0.0, low_open=True))  # eta: the local step size
  # 'sgd' (GD when batch is n) | 'adam' (optax defaults but the step)
  optimizer: str = setting('sgd', Spec(str, choices=choices.FEDERATED_OPTIMIZERS))
  loss: str = setting('cross_entropy', Spec(str, choices=choices.LOSSES))  # the client's loss
  # the head's Jacobian rows at W(0) ('init': exact for one full-batch GD step) or at W(0) and
  # W(1) stacked ('init_and_update': the local trajectory's two ends)
  features_at: str = setting('init', Spec(str, choices=choices.FEDERATED_FEATURES))
  # the peers' attack beside it on the same update (recon/attack/gradient_matching.py: the
  # client's training simulated with its labels and hyper-parameters, cosine distance, TV)
  baseline: str = setting('none', Spec(str, choices=choices.FEDERATED_BASELINES))
  baseline_lr: float = setting(0.05, Spec(float, low=0.0, low_open=True))  # its Adam step
  baseline_steps: int = setting(2000, _count())
  baseline_tv: float = setting(0.0, Spec(float, low=0.0))  # its total-variation weight


SECTIONS['federated'] = Federated
