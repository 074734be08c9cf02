"""The names a config field accepts, each list defined once, here.

The validator's Specs (recon/config/schema.py, recon/config/sections.py) and the modules that
act on a name read the same tuple, so validating a config imports no model code. Where a
module keeps a table keyed by the names (`recon.models.features.ACTIVATIONS`, the head
initialisers of `recon.models.networks`), tests/test_config.py checks that its keys are these.
Names registered at run time (victims, objectives, data sets, rescue steps, pipelines) are
the registry's (`recon.registry.known_names`), not listed here.
"""

DTYPES = ('float32', 'float64')
MATMUL_PRECISIONS = ('highest', 'high', 'default')  # jax_default_matmul_precision

# data
PREPROCESS = ('sphere', 'standardize', 'center', 'none')  # recon.data's row preprocessing
BINARY_RULES = ('classes', 'parity')

# victim
ACTIVATIONS = ('cubic', 'gelu', 'quadratic', 'quartic', 'relu', 'relu_leaky_backward',
               'relu_smooth', 'relu_tanh', 'relu_tanh_leaky_backward', 'sin',
               'softplus_tanh', 'tanh')  # recon.models.features.ACTIVATIONS
POOLS = ('flatten', 'mean')  # ResNet / ViT: the tokens / pixels before the head
HEAD_INITS = ('fan_in', 'zeros')  # recon.models.networks: the head's initialiser
# random features: V stored whole ('dense'), regenerated chunk by chunk ('lean') or stored and
# streamed in blocks of its rows ('blocked'); 'auto' picks dense or lean by the memory budget
FEATURE_MODES = ('auto', 'dense', 'lean', 'blocked')
RESIDUAL_MODES = ('two_pass', 'gram', 'stored')  # the streamed projection's residual
WEIGHT_RNGS = ('threefry', 'hash', 'hash_box_muller')  # the generator of V
FORMATS = ('recon', 'orbax', 'msgpack', 'safetensors', 'npz')  # a saved model's format
LOSSES = ('mse', 'logistic', 'cross_entropy')  # the GD trainer's loss
ACCOUNTANTS = ('rdp', 'pld')  # DP-SGD's privacy accountant
DP_MODES = ('off', 'on')

# attack
OPTIMIZERS = ('sgd', 'adam', 'lbfgs')
SCHEDULES = ('constant', 'cosine')
SIGN_QUOTIENT = ('auto', 'on', 'off')  # recon.attack.sign_quotient
JACOBIAN_AT = ('trained', 'init_and_trained', 'midpoint')
SUBSPACE_MODES = ('none', 'known', 'estimated')
GRADIENT_AT = ('trained', 'initial', 'both')  # the unified objective's dW1
ALPHA_MODES = ('closed_form', 'joint')
KKT_TARGETS = ('theta', 'delta', 'planted')
CANDIDATE_SUBSPACES = ('none', 'first_layer')
LAMBDA_CONSTRAINTS = ('penalty', 'projection')
LAMBDA_INITS = ('lstsq', 'uniform')
LAMBDA_SOLVES = ('optimize', 'eliminate')
PRIORS = ('none', 'box', 'sphere')
RESIDUAL_WEIGHTS = ('none', 'gradient_rms')
JACOBIAN_METHODS = ('auto', 'dense', 'gram', 'matrix_free')  # the certificate's Jacobian test
PURSUIT = ('auto', 'off')  # escalation's residual-pursuit trial
START_POINTS = ('sphere', 'rows')  # where a residual-pursuit search starts
CUT_STATES = ('kept', 'fresh')  # the optimiser's state after a cut
SPLIT_MODES = ('none', 'every', 'plateau')  # sample splitting
EIG_METHODS = ('auto', 'dense', 'lanczos')  # the splitting matrix's smallest eigenpair

# leak_width
LEAK_DIMS = ('auto', 'd', 'pca')
LEAK_MODELS = ('trend', 'constant')

# federated
FEDERATED_OPTIMIZERS = ('sgd', 'adam')  # the client's local optimiser (sgd with batch n: GD)
FEDERATED_FEATURES = ('init', 'init_and_update')  # where the head's Jacobian rows are read
FEDERATED_BASELINES = ('none', 'gradient_matching')  # run beside the projection attack
