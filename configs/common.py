"""Fields every config shares: run bookkeeping and reliability (checkpoints, resume).

Each `configs/*.py` builds its own data / model / attack fields and then calls
`add_bookkeeping(c, ...)` with the few values it changes.
"""
import ml_collections


def add_bookkeeping(c: ml_collections.ConfigDict, *, chunk_steps: int = 200,
                    log_every_seconds: float = 5.0, seed: int = 0,
                    recovered_threshold: float = 0.1) -> ml_collections.ConfigDict:
  """Adds seed, chunking, logging, the recovered threshold and the reliability fields."""
  c.seed = seed
  c.chunk_steps = chunk_steps  # steps per compiled call (progress / checkpoints between)
  c.log_every_seconds = log_every_seconds
  c.recovered_threshold = recovered_threshold  # relative distance that counts as recovered
  c.overwrite = False  # True: replace a finished run in the same workdir
  # jax_default_matmul_precision for every compiled program: 'highest' (full float32; GPUs
  # otherwise use TF32), 'high', or 'default' (the backend's own). Recorded in summary.json.
  c.matmul_precision = 'highest'
  # True: jax.distributed.initialize() at start-up (cluster auto-detection); the environment
  # JAX_COORDINATOR_ADDRESS + JAX_NUM_PROCESSES + JAX_PROCESS_ID does the same (recon/distributed.py).
  c.distributed = False
  # Reliability (docs/reliability.md): checkpoints, resume, saved models.
  c.resume = False  # True: continue from WORKDIR/checkpoints (start fresh if there is none)
  c.checkpoint_every_seconds = 60.0  # 0: off
  c.checkpoint_every_steps = 0  # 0: off; a stopped run is always checkpointed
  c.checkpoint_keep = 2
  # A saved model (recon.model/1 folder, or a run's workdir) to attack instead of training one.
  c.model_checkpoint = ml_collections.config_dict.placeholder(str)
  return c


def add_splitting(c: ml_collections.ConfigDict, *, every: int = 2000,
                  plateau_window: int = 1000) -> ml_collections.ConfigDict:
  """Adds the sample-splitting fields (recon/splitting.py; docs/kkt.md, "Sample splitting"), off."""
  c.split = 'none'  # none | every | plateau
  c.split_every = every
  c.split_plateau_window = plateau_window
  c.split_plateau_tol = 1e-3
  c.split_budget = 8
  c.split_max_per_round = 2
  c.split_eig_tol = 1e-9
  c.split_eig_method = 'auto'
  c.split_dense_max_dim = 64
  c.split_lanczos_steps = 20
  c.split_eps_min = 1e-3
  c.split_eps_max = 0.3
  c.split_eps_grid = 16
  c.split_merge_tol = 1e-3
  c.split_require_decrease = True
  return c


def add_polish(c: ml_collections.ConfigDict, *, mode: str = 'auto') -> ml_collections.ConfigDict:
  """Adds the precision rung's fields (recon/polish.py; docs/random_features.md#escalation).

  When the certificate fails with p >= m d, the rows it leaves free are re-searched in
  float64 one at a time (the others held to first order) and the set is polished by
  Gauss-Newton; the polished set is certified in float64 against polish_tol.

  polish_tol 1e-12: the float64 loss at the true rows of a float32 victim is 1e-14 .. 2e-14
  (the rounding of theta; n = 8, d in {8, 16}, 5 seeds), so 1e-12 leaves a 50x margin; where
  theta's coefficients cancel (data in a low-dim subspace) its rounding floor is higher, and
  the tolerance is raised to 4x its blind estimate (`recon.polish.rounding_floor`).
  """
  c.polish = mode  # 'auto' | 'off'
  c.polish_tol = 1e-12
  c.polish_starts = 32  # starts per re-searched row: the row, its mirror image, 30 random
  c.polish_row_steps = 1000
  c.polish_lm_iters = 20
  # Polish only when at most this share of the rows (at least one) is free: the rung is for
  # a row or two that float32 cannot resolve (the misses had 1 or 2 of 8), not a failed run.
  c.polish_max_free_share = 0.25
  # relu: passes of greedy sign flips (x_j := -x_j, kept if the float64 loss falls) first;
  # 0 = none. Measured: 3 of 6 relu runs with data in a 4-dim subspace of R^64 (8 kn) that
  # ended with candidates at mirror images reach the float64 floor.
  c.polish_sign_sweeps = 2
  return c


def add_escalation(c: ml_collections.ConfigDict, *, mode: str = 'auto', every: int = 500,
                   window: int = 1500, trial_steps: int = 500, restart_after: int = 1,
                   restart_steps: int = 3000,
                   accept_ratio: float = 0.5) -> ml_collections.ConfigDict:
  """Adds the escalation fields (recon/escalate.py; docs/random_features.md#escalation).

  On a loss plateau above tol the weakest candidate (leave-one-out loss) is replaced by its
  mirror image or a random proposal, kept if a short trial halves the loss; after
  `restart_after` rejected replacements in a row a whole new candidate set is tried for
  `restart_steps` and kept if its loss is lower. 'auto': on for one candidate set; 'off'.

  window 1500 and restart_after 1 were chosen over 3000 and 2 by the certified rate (a blind
  signal) of 20-seed sweeps at n = d = 8: relu p = 16 dn 0.95 vs 0.75, p = 4 dn 0.85 vs 0.55;
  relu+tanh p = 4 dn 0.95 vs 1.0 (scripts/recovery_law.py; docs/random_features.md).
  """
  c.escalate = mode
  c.escalate_every = every
  c.escalate_window = window
  c.escalate_trial_steps = trial_steps
  c.escalate_restart_after = restart_after
  c.escalate_restart_steps = restart_steps
  c.escalate_accept_ratio = accept_ratio  # a trial is kept if it brings the loss below this x L
  return c
