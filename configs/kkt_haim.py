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

from configs import base


def get_config() -> ml_collections.ConfigDict:
  c = base.get_config()
  c.name = 'kkt_haim'

  # Data.
  c.data.name = 'digits'  # digits | lfw_faces | mnist | cifar10
  c.data.preprocess = 'center'
  c.data.n = 50
  c.data.d = 64
  c.data.num_classes = 2
  c.data.binary_rule = 'parity'  # digits odd (+1) vs even (-1); 'classes' for lfw_faces (0, 1)

  # Victim: D-1000-1000-1, relu, no biases.
  c.victim.name = 'homogeneous_mlp'
  c.victim.activation = 'relu'
  c.victim.width = 1000
  c.victim.depth = 2
  c.victim.train.lr = 0.05
  c.victim.init_scale = 1.0
  c.victim.first_init_scale = 0.001
  c.victim.train.max_steps = 6000

  # Attack (Haim et al.).
  c.attack.objective = 'kkt_binary'
  c.attack.optimizer = 'adam'
  c.attack.lr = 0.01
  c.attack.max_steps = 3000
  c.attack.tol = 1e-12
  c.attack.rescue = ()
  c.attack.kkt.activation = 'relu_smooth'
  c.attack.kkt.act_alpha = 50.0
  # Only the KKT equations of the first layer and the head: the middle layer keeps its
  # random init (98% of ||theta||^2) and is nowhere near stationarity (docs/kkt.md).
  c.attack.kkt.layers = 'hidden_0,head'  # 'all': every equation (Haim et al. as written)
  # Candidates kept in the top-n left singular subspace of W_1 (what the net can see).
  c.attack.kkt.candidate_subspace = 'first_layer'  # 'none': free pixels
  c.attack.kkt.lambda_min = 0.05
  c.attack.kkt.lambda_constraint = 'penalty'
  c.attack.kkt.lambda_init = 'uniform'
  c.attack.kkt.prior = 'box'
  c.attack.kkt.candidate_init_scale = 0.3  # candidates start at the data scale (|x| ~ 2.4, d=64)
  c.attack.split.every = 500
  c.attack.split.eig_method = 'lanczos'

  c.run.chunk_steps = 500
  c.run.log_every_seconds = 30.0
  return c
