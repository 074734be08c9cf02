"""Identifiability of the cubic KKT system (docs/kkt.md, "Identifiability"; scripts/kkt.py --part=identifiability).

n=6 samples on the sqrt(d)-sphere in d=8, balanced +-1 labels; f(x) = a^T (W x)^3, width 48
(>= d(d+1)/2 = 36: the neuron Gram {w_k w_k^T} spans Sym^2), GD on the logistic loss.
ORACLE target: sum_i lambda_i y_i grad_theta f(theta; x_i) at the true data with the
training duals (an exactly satisfied KKT system at generic neurons). The attack fits
n_candidates = n candidates (the theorem's setting: the n-term decomposition of the cubic
tensor is unique, a 2n-term one is not), duals eliminated in closed form (variable
projection), equations balanced by gradient-RMS weights, L-BFGS in float64, from a random
init. Expected: recon_error ~ 1e-10. Under a minute on 2 CPU cores.
  python -m recon.main --config=configs/kkt_identifiability.py --workdir=results/runs/kkt_id
"""
import ml_collections

from configs import base


def get_config() -> ml_collections.ConfigDict:
  c = base.get_config()
  c.name = 'kkt_identifiability'

  c.data.n = 6
  c.data.d = 8
  c.data.num_classes = 2

  c.victim.name = 'homogeneous_mlp'
  c.victim.activation = 'cubic'
  c.victim.width = 48
  c.victim.train.lr = 0.2

  c.attack.n_candidates = 6  # = n
  c.attack.optimizer = 'lbfgs'
  c.attack.lr = 1.0  # scales the L-BFGS direction before the line search
  c.attack.max_steps = 3000
  c.attack.tol = 1e-24
  c.attack.rescue = ()
  c.attack.objective = 'kkt_binary'
  c.attack.kkt.target = 'planted'
  # optimize | eliminate (variable projection, free-sign duals)
  c.attack.kkt.lambda_solve = 'eliminate'
  c.attack.kkt.residual_weights = 'gradient_rms'  # none | gradient_rms

  c.run.dtype = 'float64'
  c.run.chunk_steps = 500
  return c
