"""Every default of every job, once, in sections (recon/config/validate.py validates them).

A job is `configs/<job>.py`: `c = base.get_config()`, then only what differs
(`c.victim.name = 'resnet'`, `c.data.n = 4`, ...). The sections are what the
command line names: `--config.data.n=8`, `--config.victim.p=400`,
`--config.attack.lr=0.1`, `--config.seed=3`, sweep axes `--config.sweep.victim.p='(8, 16)'`.

  data    the training set: which, how many, its shape, labels, preprocessing
  victim  the model the attacker holds: architecture, width, activation, its training
          (`victim.train`), or a saved one (`victim.checkpoint`)
  attack  the objective, the optimiser and its rescue steps (restarts, reseed,
          escalate, polish, split)
  run     precision, checkpoints, resume / overwrite, logging, the report's thresholds
  leak_width  the shadow sweep of the leak-width prediction (pipeline 'leak_width')
  seed, name, pipeline, sweep
"""
import ml_collections

placeholder = ml_collections.config_dict.placeholder


def data() -> ml_collections.ConfigDict:
  """The training set (recon/data): synthetic_sphere 10 x 10, labels with noise 0.5."""
  c = ml_collections.ConfigDict()
  c.name = 'synthetic_sphere'  # a registered data set (recon/data: recon.registry.names('dataset'))
  c.dir = placeholder(str)  # a folder of downloaded files (cifar10, ...); None: the default cache
  # name 'file': the auditor's own training set, an .npz holding 'x' (n, d) or (n, H, W[, C])
  # and optionally 'y' (n,) (recon/data/auditor.py; docs/audit.md)
  c.path = placeholder(str)
  c.n = 10  # name 'file': None = the file's length
  c.d = 10  # name 'file': None = the file's row size
  c.classes = placeholder(tuple)  # the classes kept (None: the data set's own choice)
  # Classes of the labels: 1 = one scalar target; the KKT attacks need >= 2 (2: binary +-1).
  c.num_classes = 1
  c.image_size = placeholder(int)  # images resized to this side (None: native)
  c.image_shape = placeholder(tuple)  # NHWC shape of a row for conv / ViT victims (None: flat)
  c.grayscale = False
  c.preprocess = 'sphere'  # rows on the sqrt(d)-sphere; recon.data.PREPROCESS
  c.label_noise = 0.5  # synthetic labels: y = noise * N(0, 1)
  c.planted_dim = placeholder(int)  # synthetic_subspace: the dimension k of its subspace
  c.binary_rule = 'classes'  # KKT binary labels from two classes, or 'parity' of the class
  return c


def victim() -> ml_collections.ConfigDict:
  """The model under attack: random features p = 1000, relu+tanh; the GD trainer's defaults."""
  c = ml_collections.ConfigDict()
  c.name = 'random_features'  # a registered victim (recon.registry.names('victim'))
  c.p = 1000  # random features: the number of features
  c.width = 250  # trained networks: hidden width
  c.depth = 1  # hidden layers / blocks
  c.activation = 'relu_tanh'  # recon.models.features.ACTIVATIONS
  c.act_alpha = 50.0  # backward sigmoid(alpha z) of 'relu_smooth'
  c.init_scale = 0.2  # homogeneous MLP: initial weight scale (hidden layers)
  c.first_init_scale = 1.0  # homogeneous MLP: initial weight scale of the first layer
  c.num_heads = 2  # ViT
  c.patch_size = 2  # ViT
  c.pool = 'mean'  # ResNet / ViT: 'mean' or 'flatten' the tokens / pixels before the head
  c.head_init = 'fan_in'  # 'zeros': W_L(0) = 0 (the original ViT's convention)
  # Random features: V is regenerated chunk by chunk from its key (never stored) when p*d
  # exceeds the budget, or always with feature_mode='lean' / feature_shards > 1.
  c.feature_mode = 'auto'  # auto | dense | lean
  c.feature_memory_budget_mb = 1024.0
  c.feature_chunk = 4096
  c.feature_residual = 'auto'  # auto | two_pass | gram | stored (docs/performance.md)
  c.feature_shards = 1
  # Generator of V: 'threefry' (jax.random, per-row fold_in), 'hash' (counter-based hash +
  # erfinv) or 'hash_box_muller' (counter hash + Box-Muller: same distribution, the cheapest
  # to regenerate; use it for lean runs).
  c.weight_rng = 'threefry'
  # A saved model (recon.model/1 folder, or a run's workdir) to attack instead of training one.
  c.checkpoint = placeholder(str)
  # Its format: 'recon' (a recon.model/1 folder or a run's workdir), 'orbax' (a params tree
  # saved by orbax), 'msgpack' (flax.serialization), 'safetensors' (a PyTorch MLP's
  # state_dict, victim 'torch_mlp'); docs/audit.md.
  c.format = 'recon'
  c.init_checkpoint = placeholder(str)  # the initial params, same format (attacks using W(0))
  c.layer = placeholder(str)  # the attacked parameter collection (None: the last one, the head)
  c.module = placeholder(str)  # victim 'flax_module': 'package.module:ClassName'
  c.module_kwargs = placeholder(dict)  # its constructor arguments
  # Training of GD-trained victims (networks, homogeneous MLPs, the subspace two-layer net).
  t = c.train = ml_collections.ConfigDict()
  t.loss = 'mse'  # recon.models.train.LOSSES
  t.lr = placeholder(float)  # None: 1 / lambda_max(J^T J / n) at init
  t.momentum = 0.0
  t.max_steps = 20000  # homogeneous MLPs run all of them; networks stop early at tol
  t.tol = 1e-6
  t.weight_decay = 0.0  # homogeneous MLPs: > 0 ends at the exact stationary point (L-BFGS)
  t.stationary_steps = 20000  # the L-BFGS steps of that stationary point
  t.polish = False  # homogeneous MLPs: SLSQP to the exact KKT point of the max-margin problem
  # Defences (recon/models/privacy.py; docs/defences.md). weight_decay above is one for the
  # GD-trained networks too. DP-SGD of the GD-trained networks: per-example clipping to
  # `clip`, Gaussian noise noise_multiplier * clip on the sum, Poisson batches of expected
  # size batch_size (None: n, full-batch DP-GD), exactly max_steps steps; epsilon at `delta`
  # from the accountant (dp_accounting). Give noise_multiplier or target_epsilon (the
  # accountant's smallest noise multiplier that meets it), not both.
  t.dp = ml_collections.ConfigDict()
  t.dp.mode = 'off'  # 'off' | 'on'
  t.dp.clip = 1.0
  t.dp.noise_multiplier = placeholder(float)
  t.dp.target_epsilon = placeholder(float)
  t.dp.batch_size = placeholder(int)
  t.dp.delta = 1e-5
  t.dp.accountant = 'rdp'  # recon.models.privacy.ACCOUNTANTS
  # Gaussian noise on the released trained weights (random features: on theta*, output
  # perturbation), relative: noise norm ~ release_noise * ||W|| per array; 0: off.
  c.release_noise = 0.0
  return c


def attack() -> ml_collections.ConfigDict:
  """The objective, the optimiser and its rescue steps (each with its defaults)."""
  c = ml_collections.ConfigDict()
  c.objective = 'projection'  # a registered objective (recon.registry.names('objective'))
  c.n_candidates = placeholder(int)  # None: n (2n for the KKT attacks)
  c.optimizer = 'sgd'  # recon.attack.optimiser.OPTIMIZERS
  c.lr = 5.0
  c.momentum = 0.9  # SGD's momentum, Adam's b1
  c.schedule = 'constant'  # 'cosine': lr -> lr * final_ratio over decay_steps
  c.decay_steps = placeholder(int)  # None: max_steps
  c.final_ratio = 0.05
  c.max_steps = 20000
  c.tol = 1e-7  # stop when the loss is below
  c.jitter = 1e-6  # ridge of the projection's Gram solve
  # Steps of iterative refinement of the projection's coefficients on the explicit residual
  # (random features, dense): the loss then tends to the ridge-free one, without its floor.
  c.refine = 0
  # Random features with a relu-like activation (odd part linear; sigmoid-like: even part
  # constant): the features with the compensating space projected out, blind to every row's
  # sign (recon/attack/sign_quotient.py; dense features only). 'auto': when n_candidates > d (the
  # sign traps), 'on': always, 'off': the papers' plain loss.
  c.sign_quotient = 'auto'
  c.lbfgs_memory = 10  # optimizer 'lbfgs'
  c.lbfgs_linesearch_steps = 20
  # Trained networks: which parameters are read and what the attacker knows.
  c.jacobian_at = 'trained'  # or 'init_and_trained' / 'midpoint' (need knows_init)
  # The initial parameters W(0): None = known whenever they are given (a model recon trains, a
  # recon checkpoint holding them, victim.init_checkpoint); True = required (refused without
  # them); False = ignored even when given (one log line says so). recon.config.validate.knows_init.
  c.knows_init = placeholder(bool)
  # The adaptive attack against weight decay (docs/defences.md): True adds the initial head
  # W_L(0) to the features' span (projected out of theta and of every feature row), since
  # GD with decay leaves -(1 - (1 - lr wd)^T) W_L(0) in W_L(T) - W_L(0). Needs knows_init.
  c.init_in_span = False
  c.knows_n = True
  # Subspace-aware reconstruction (objective 'unified'; docs/subspace.md).
  c.subspace = 'none'  # 'none' | 'known' | 'estimated' (from dW1)
  c.subspace_dim = placeholder(int)  # None: automatic (largest gap) / the known basis' k
  c.subspace_noise_floor = 1e-3
  c.gradient_at = 'trained'  # 'trained' | 'initial' | 'both' (W1 moves during training)
  c.alpha_mode = 'closed_form'  # or 'joint' (free alpha, warm-started at its optimum)
  # KKT attacks on homogeneous MLPs (docs/kkt.md).
  c.activation = placeholder(str)  # the attacker's activation (None: the victim's)
  c.act_alpha = placeholder(float)  # its backward alpha (None: the victim's)
  c.kkt_target = 'theta'  # theta | delta (= theta_T - theta_0) | planted
  c.kkt_layers = 'all'  # or comma-separated layer names (recon.objectives.kkt)
  c.candidate_subspace = 'none'  # 'first_layer': candidates in the span of W1's rows
  c.candidate_subspace_rank = placeholder(int)  # None: n
  c.candidate_init_scale = 1.0
  c.lambda_min = 0.0
  c.lambda_constraint = 'projection'  # projection (clip) | penalty (lambda_weight relu(.)^2)
  c.lambda_weight = 5.0
  c.lambda_init = 'lstsq'  # or 'uniform'
  c.lambda_solve = 'optimize'  # 'eliminate': variable projection
  c.prior = 'sphere'  # sphere (radius = median data norm) | box (penalty) | none
  c.prior_bound = 1.0
  c.prior_weight = 1.0
  c.residual_weights = 'none'  # or 'gradient_rms'
  # Restarts chosen by the blind loss (recon/attack/restarts.py): K candidate sets optimised at
  # once (vmapped), the one with the lowest loss wins; 1 = one candidate set.
  # The certificate's Jacobian test (recon/certify/certificate.py): 'auto' picks dense / gram /
  # matrix_free by size; 'off' computes none, and certification then needs the counting
  # margin p >= 2 m d (said in the evidence) -- for the papers' CIFAR size, where the
  # matrix-free test costs minutes of float64 passes over V (docs/random_features.md).
  c.certify_jacobian = 'auto'
  c.restarts = 1
  # The rescue steps (recon/attack/rescue/chain.py), each a registered name with its section below:
  # 'reseed' and 'escalate' act between chunks of the descent, in this order; 'polish' (the
  # float64 precision rung) after it, when the certificate fails. () : none.
  c.rescue = ('escalate', 'polish')
  # Blind re-seeding of candidates that collapsed onto one another (recon/attack/rescue/reseed.py).
  c.reseed = ml_collections.ConfigDict()
  c.reseed.every = 2000  # steps between checks
  c.reseed.threshold = 0.95
  c.reseed.proposals = 64
  c.escalate = escalate()
  c.pursue = pursue()
  c.swap = swap()
  c.cut = cut()
  c.polish = polish()
  c.split = split()
  return c


def escalate() -> ml_collections.ConfigDict:
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
  c = ml_collections.ConfigDict()
  c.every = 500
  c.window = 1500
  c.trial_steps = 500
  c.restart_after = 1  # 0: never restart the whole set
  c.restart_steps = 3000
  c.accept_ratio = 0.5  # a trial is kept if it brings the loss below this x L
  # Weak candidates, replaced together: leave-one-out gain L_{-j} - L at most weak_ratio x the
  # median gain (the weakest always), at most max(1, max_weak_share x m) (recon/attack/rescue/escalate.py).
  c.weak_ratio = 0.25
  c.max_weak_share = 0.25
  # 'auto': one more trial per plateau of a single projection run with a feature map (random
  # features): the rows the certificate's pin radii call stuck, re-placed by residual pursuit
  # (recon/attack/rescue/pursuit.py). 'off' (default): not yet measured on reported seeds.
  c.pursuit = 'off'
  # Residual pursuit's search per re-placed row: Adam runs from this many random starts, this
  # many steps each (recon/attack/rescue/pursuit.py). Fewer starts where many rows are dead (n = 100 photos).
  c.pursuit_starts = 512
  c.pursuit_steps = 300
  return c


def pursue() -> ml_collections.ConfigDict:
  """Residual pursuit as a rescue step (recon/attack/rescue/pursuit.py `PursuitStep`; docs/random_features.md).

  On while 'pursue' is in attack.rescue, for one projection run on a feature map (random
  features): every `every` steps from step `start`, the dead rows (leave-one-out gain at most
  dead_ratio x the median; the pin radii's stuck rows where the dense Jacobian fits) are
  re-placed one after another where the residual of theta points, each by `starts` Adam runs
  of `steps` on the sphere, and the new set is kept when its loss is lower on the spot.
  The defaults were set on photo patches at n = 100 (shadow seed 1000, docs/random_features.md).
  """
  c = ml_collections.ConfigDict()
  c.every = 4000
  c.start = 8000
  c.starts = 32
  c.steps = 200
  c.dead_ratio = 0.1
  # The learning rate from a kept round on, the schedule decaying on from it; 0: unchanged.
  c.lr = 0.01
  c.stop = 0  # no round from this step on (0: none stops them); e.g. where 'swap' starts
  # Where each row's search starts: 'sphere' (uniform) or 'rows' (the kept rows' second
  # moment, recon/attack/rescue/pursuit.py `start_factor`).
  c.start_points = 'sphere'
  return c


def swap() -> ml_collections.ConfigDict:
  """Row swaps as a rescue step (recon/attack/rescue/swap.py `SwapStep`; docs/random_features.md).

  On while 'swap' is in attack.rescue, for one projection run on a feature map (random
  features): from step `start`, after every chunk, the row of smallest leave-one-out gain is
  re-placed by residual pursuit (`starts` Adam runs of `search_steps`), the descent runs `steps`
  steps from a fresh optimiser (lr a cosine from `lr`), and the swap is kept when the loss is
  then lower, else undone; `patience` refused swaps in a row end the swaps.
  Set on photo patches at n = 100 (shadow seed 1000, docs/random_features.md).
  """
  c = ml_collections.ConfigDict()
  c.start = 16000
  c.steps = 800
  c.lr = 0.003
  c.patience = 8
  c.starts = 32
  c.search_steps = 200
  # 'rows': the search starts where the kept rows lie (their second moment); on the shadow
  # seed's end state 8 swaps ended at loss 4.9e-5 against 1.3e-4 from 'sphere' starts.
  c.start_points = 'rows'
  return c


def cut() -> ml_collections.ConfigDict:
  """The cut of m > n candidates to n (recon/attack/rescue/cut.py `CutStep`; docs/random_features.md).

  On while 'cut' is in attack.rescue and attack.n_candidates exceeds data.n, for one projection
  run on a feature map (random features): once, when the run stops (or after the chunk that
  reaches step `at` > 0), the rows of smallest leave-one-out gain are dropped, 5% at a time,
  until n remain; the descent goes on with the optimiser's state of the kept rows.
  `at` 0 (at the stop) on photo patches at n = 100, shadow seed 1000: a cut at step 12 000 of
  20 000 raised the loss 7x in the next 200 steps and ended at 4.4e-4, where a cut at the stop
  kept every row the 200 candidates held (docs/random_features.md).
  """
  c = ml_collections.ConfigDict()
  c.at = 0  # 0: when the run stops
  # The optimiser's state after the cut: 'fresh' (new, at the lr reached) or the 'kept' rows' own;
  # a cut at step 12 000 ended at 3.2e-4 fresh against 4.6e-4 kept (same seed, blind: the loss).
  c.state = 'fresh'
  return c


def polish() -> ml_collections.ConfigDict:
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
  c = ml_collections.ConfigDict()
  c.tol = 1e-12
  c.starts = 32  # starts per re-searched row: the row, its mirror image, 30 random
  c.row_steps = 1000
  c.lm_iters = 20
  # Polish only when at most this share of the rows (at least one) is free: the rung is for
  # a row or two that float32 cannot resolve (the misses had 1 or 2 of 8), not a failed run.
  # Counted again after a first Gauss-Newton pass when more are free at the float32 loss.
  c.max_free_share = 0.25
  # relu: passes of greedy sign flips (x_j := -x_j, kept if the float64 loss falls) first;
  # 0 = none. Measured: 3 of 6 relu runs with data in a 4-dim subspace of R^64 (8 kn) that
  # ended with candidates at mirror images reach the float64 floor.
  c.sign_sweeps = 2
  return c


def split() -> ml_collections.ConfigDict:
  """Sample splitting (recon/attack/splitting.py; docs/kkt.md, "Sample splitting"), off."""
  c = ml_collections.ConfigDict()
  c.mode = 'none'  # none | every | plateau
  c.every = 2000
  c.plateau_window = 1000
  c.plateau_tol = 1e-3
  c.budget = 8
  c.max_per_round = 2
  c.eig_tol = 1e-9
  c.eig_method = 'auto'
  c.dense_max_dim = 64
  c.lanczos_steps = 20
  c.eps_min = 1e-3
  c.eps_max = 0.3
  c.eps_grid = 16
  c.merge_tol = 1e-3
  c.require_decrease = True
  return c


def run() -> ml_collections.ConfigDict:
  """Precision, checkpoints and logging (docs/reliability.md), the report's thresholds."""
  c = ml_collections.ConfigDict()
  c.dtype = 'float32'  # 'float64': slower, for ill-conditioned solves
  # jax_default_matmul_precision for every compiled program: 'highest' (full float32; GPUs
  # otherwise use TF32), 'high', or 'default' (the backend's own). Recorded in summary.json.
  c.matmul_precision = 'highest'
  # True: jax.distributed.initialize() at start-up (cluster auto-detection); the environment
  # JAX_COORDINATOR_ADDRESS + JAX_NUM_PROCESSES + JAX_PROCESS_ID does the same
  # (recon/runtime/distributed.py).
  c.distributed = False
  c.chunk_steps = 200  # steps per compiled call (progress / checkpoints between)
  c.log_every_seconds = 10.0
  c.overwrite = False  # True: replace a finished run in the same workdir
  c.resume = False  # True: continue from WORKDIR/checkpoints (start fresh if there is none)
  c.checkpoint_every_seconds = 60.0  # 0: off
  c.checkpoint_every_steps = 0  # 0: off; a stopped run is always checkpointed
  c.checkpoint_keep = 2
  c.sweep_memory_budget_gb = 8.0  # a sweep group's estimated peak (recon/sweep/grid.py)
  c.recovered_threshold = 0.1  # relative distance that counts as recovered
  c.ssim_threshold = 0.7  # images: recovered = matched and SSIM above this
  c.ssim_filter_size = placeholder(int)  # None: 11 for sides >= 16 pixels, else 3
  return c


def sweep() -> ml_collections.ConfigDict:
  """Sweep axes (recon/sweep/grid.py): a tuple of values per swept field, None = not swept.

  Vectorised axes share one compiled program (widths padded to the largest p, lr and
  momentum in the optimiser state, seeds as a batch of keys); static axes change shapes
  or code and loop outside, one compiled group per value. `victim.p_over_dn` sweeps
  p = p_over_dn * d * n; `victim.width` is a network victim's (recon/sweep/networks.py).
  """
  c = ml_collections.ConfigDict()
  c.seed = placeholder(tuple)
  c.data = ml_collections.ConfigDict(
      {k: placeholder(tuple) for k in ('n', 'd', 'label_noise')})
  c.victim = ml_collections.ConfigDict(
      {k: placeholder(tuple) for k in ('p', 'p_over_dn', 'activation', 'width')})
  c.attack = ml_collections.ConfigDict(
      {k: placeholder(tuple) for k in ('lr', 'momentum', 'n_candidates', 'optimizer', 'jitter',
                                       'tol', 'max_steps')})
  c.run = ml_collections.ConfigDict({'dtype': placeholder(tuple)})
  return c


def leak_width() -> ml_collections.ConfigDict:
  """The leak-width prediction (pipeline 'leak_width', recon/audit/threshold.py; docs/audit.md,
  "How wide before it leaks"): shadow problems of the victim's family at small n, the
  threshold p* = c D n fitted on them, the prediction for the victim's width."""
  c = ml_collections.ConfigDict()
  c.shadow_n = (4, 8, 16)  # training-set sizes of the shadow problems
  c.ratios = (0.75, 1.0, 1.25, 1.5, 2.0, 3.0)  # shadow widths p = ratio * D * n
  c.shadow_seeds = (1000, 1001, 1002, 1003, 1004)  # never the seeds anything is reported on
  # D: 'd' (the row size), 'pca' (k, the intrinsic dimension of data.path's rows by PCA),
  # 'auto' (pca for data.name 'file', else d)
  c.dim = 'auto'
  c.variance = 0.99  # k = the fewest principal components holding this share of the variance
  c.bootstrap = 200  # bootstrap resamples (over seeds) of the threshold fit
  # 'trend': c(n) = exp(mu0) n^gamma fitted over the shadow sizes (needs >= 2); 'constant': one c
  c.model = 'trend'
  return c


def get_config() -> ml_collections.ConfigDict:
  """The defaults: random features on synthetic sphere data (configs/rf_synthetic.py's job)."""
  c = ml_collections.ConfigDict()
  c.name = 'run'
  c.seed = 0  # the key tree of a run: data, model, candidate initialisation
  # None: the victim's (or objective's) own pipeline; 'leak_width': predict the width at
  # which the described model leaks instead of attacking it (configs/leak_width.py)
  c.pipeline = placeholder(str)
  c.data = data()
  c.victim = victim()
  c.attack = attack()
  c.run = run()
  c.sweep = sweep()
  c.leak_width = leak_width()
  return c
