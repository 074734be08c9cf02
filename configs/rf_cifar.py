"""The papers' CIFAR-10 setting: n = 100 images, d = 32*32*3 = 3072, relu, p = 10 d n = 3,072,000.

Default data: `photo_patches` (32x32x3 patches of six colour photographs bundled with
scikit-image / scikit-learn, labels +1/-1 by photograph; no download). Real CIFAR-10, same
code: --config.data.name=cifar10 --config.data.dir=DIR (the python-version batches) and
--config.data.classes='(0, 1)' for +-1 labels. d and p follow --config.data.image_size and
--config.data.n (p = 10 d n); a CPU-sized run: --config.data.image_size=8
--config.data.n=10 (d = 192, p = 19,200), best with --config.attack.restarts=4
--config.attack.rescue="('escalate', 'polish')" (no re-seeding; measured: docs/data.md, "Showcase: faces and photo
patches").

At full size V (p x d) is 37.7 GB in float32: feature_mode 'auto' regenerates it chunk by
chunk from its key (weight_rng 'hash_box_muller', the cheapest generator to regenerate),
and the fit solves the n x n Gram problem in float64 on the float32 features (recon/models/min_norm.py):
these correlated patches give cond(G) ~ 1e6, where a float32 Gram left train_mse / var(y) 7.5e-5
and the float64 solve leaves 3.9e-19, theta* and the attack staying float32
(docs/random_features.md, "The fit at any width"; results/bench.md). A GPU run.
"""
import ml_collections

from configs import base


def get_config() -> ml_collections.ConfigDict:
  c = base.get_config()
  c.name = 'rf_cifar'

  # Data.
  c.data.name = 'photo_patches'  # or 'cifar10' with data.dir
  c.data.image_size = 32  # a divisor of 32
  c.data.n = 100
  c.data.d = c.data.get_ref('image_size') * c.data.get_ref('image_size') * 3
  c.data.label_noise = 0.0  # unused for real data

  # Model: p = 10 d n.
  c.victim.p = 10 * c.data.get_ref('d') * c.data.get_ref('n')
  c.victim.activation = 'relu'
  c.victim.weight_rng = 'hash_box_muller'

  c.attack.optimizer = 'adam'
  # Chosen by the blind final projection loss (relu, 8x8, n=10, seed 0, 30k steps): 9.7e-6 at
  # lr 0.02 against 1.7e-5 at 0.05.
  c.attack.lr = 0.02
  c.attack.schedule = 'cosine'  # lr -> lr * final_ratio over decay_steps
  c.attack.decay_steps = 30000
  c.attack.max_steps = 30000
  # Blind re-seeding of candidates that collapsed onto one another every 2000 steps
  # (attack.reseed), before escalation; the precision rung after the descent.
  c.attack.rescue = ('reseed', 'escalate', 'polish')
  return c
