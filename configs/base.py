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

from recon.config import sections

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
  c.preprocess = 'sphere'  # rows on the sqrt(d)-sphere; recon/config/choices.py PREPROCESS
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
  # Training of GD-trained victims and its defences (weight decay, DP-SGD `train.dp`), defined
  # once in recon/config/sections.py (Train, DP; docs/defences.md).
  c.train = sections.Train.defaults()
  # Gaussian noise on the released trained weights (random features: on theta*, output
  # perturbation), relative: noise norm ~ release_noise * ||W|| per array; 0: off.
  c.release_noise = 0.0
  return c


def attack() -> ml_collections.ConfigDict:
  """The objective, the optimiser and its rescue steps (each with its defaults)."""
  c = ml_collections.ConfigDict()
  c.objective = 'projection'  # a registered objective (recon.registry.names('objective'))
  c.n_candidates = placeholder(int)  # None: n (2n for the KKT attacks)
  c.optimizer = 'sgd'  # recon/config/choices.py OPTIMIZERS
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
  # Their sections and sample splitting's, each defined once (defaults, bounds, provenance)
  # in recon/config/sections.py, where its consumer reads it whole.
  c.reseed = sections.Reseed.defaults()  # blind re-seeding of collapsed candidates
  c.escalate = sections.Escalate.defaults()  # escalation on a loss plateau
  c.pursue = sections.Pursue.defaults()  # residual pursuit
  c.swap = sections.Swap.defaults()  # row swaps
  c.cut = sections.Cut.defaults()  # m > n candidates cut to n
  c.polish = sections.Polish.defaults()  # the float64 precision rung
  c.split = sections.Split.defaults()  # sample splitting (recon/attack/splitting.py), off
  return c


def run() -> ml_collections.ConfigDict:
  """Precision, checkpoints and logging (docs/reliability.md), the report's thresholds: defined
  once in recon/config/sections.py (Run)."""
  return sections.Run.defaults()


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
  """The leak-width prediction (pipeline 'leak_width'; docs/audit.md): defined once in
  recon/config/sections.py (LeakWidth)."""
  return sections.LeakWidth.defaults()


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
