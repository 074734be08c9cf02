"""Haim et al. (2022)-style KKT reconstruction from a trained MLP on real images (issue #19).

Victim: bias-free MLP D-1000-1000-1 (relu), first layer initialised 1e-3 times the fan-in
scale (Haim: 1e-4; see docs/kkt.md), full-batch GD on the logistic loss with +-1 labels,
pixels in [0, 1] minus the subset's mean; default scikit-learn digits (8x8) odd vs even,
n = 50. `dataset='lfw_faces', classes=(0, 1), image_size=...` gives faces vs non-faces.
Attack: m = 2n candidates (half per label), duals lambda >= lambda_min by the penalty
5 relu(lambda_min - lambda)^2, relu forward with sigmoid(alpha z) backward, box prior
[-1, 1], Adam over candidates and duals. Hyper-parameters were chosen by the final KKT
loss only (never by SSIM against the training set): docs/kkt.md, "Trained networks".
A few minutes on 2 CPU cores (float32).
"""
import ml_collections

from configs import common



def get_config() -> ml_collections.ConfigDict:
  c = ml_collections.ConfigDict()
  c.name = 'kkt_haim'
  c.model = 'homogeneous_mlp'
  c.objective = 'kkt_binary'
  # Data.
  c.dataset = 'digits'  # digits | lfw_faces | mnist | cifar10
  c.n = 50
  c.d = 64
  c.n_classes = 2
  c.classes = ml_collections.config_dict.placeholder(tuple)  # None: all ten digits
  c.binary_rule = 'parity'  # digits odd (+1) vs even (-1); 'classes' for lfw_faces (0, 1)
  c.image_size = ml_collections.config_dict.placeholder(int)
  c.grayscale = False
  c.preprocess = 'center'
  # Victim: D-1000-1000-1, relu, no biases.
  c.width = 1000
  c.depth = 2
  c.activation = 'relu'
  c.act_alpha = 50.0
  c.init_scale = 1.0
  c.first_init_scale = 1e-3
  c.train_lr = 0.05
  c.train_steps = 6000
  c.train_polish = False
  # Attack (Haim et al.).
  c.attack_activation = 'relu_smooth'
  c.attack_alpha = 50.0
  c.kkt_target = 'theta'
  # Only the KKT equations of the first layer and the head: the middle layer keeps its
  # random init (98% of ||theta||^2) and is nowhere near stationarity (docs/kkt.md).
  c.kkt_layers = 'hidden_0,head'  # 'all': every equation (Haim et al. as written)
  c.n_candidates = ml_collections.config_dict.placeholder(int)  # None: 2n
  c.lambda_min = 0.05
  c.lambda_constraint = 'penalty'
  c.lambda_weight = 5.0
  c.lambda_init = 'uniform'
  c.prior = 'box'
  c.prior_bound = 1.0
  c.prior_weight = 1.0
  # Candidates kept in the top-n left singular subspace of W_1 (what the net can see).
  c.candidate_subspace = 'first_layer'  # 'none': free pixels
  c.candidate_subspace_rank = ml_collections.config_dict.placeholder(int)  # None: n
  c.candidate_init_scale = 0.3  # candidates start at the data scale (|x| ~ 2.4 for d=64)
  c.jitter = 1e-6
  c.optimizer = 'adam'
  c.lr = 0.01
  c.momentum = 0.9
  c.max_steps = 3000
  c.tol = 1e-12
  c.dtype = 'float32'
  common.add_splitting(c, every=500)
  c.split_eig_method = 'lanczos'
  c.split_lanczos_steps = 20
  common.add_bookkeeping(c, chunk_steps=500, log_every_seconds=30.0)
  return c
