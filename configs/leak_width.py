"""How wide before it leaks: predict the width at which your model reconstructs its training set.

Describe your model as for an audit: its family (`victim.name` 'random_features' with
`victim.activation` relu or relu_tanh, or 'two_layer', trained with MSE), its width
(`victim.p`; the two-layer net's `victim.width`, its attacked layer holding width x
data.num_classes parameters), its training set (`data.n`, `data.d`, or your rows with
`data.name='file'` and `data.path`: n, d and the intrinsic dimension k by PCA come from them).
Nothing is attacked: small shadow problems of the same family and shape (`leak_width.*`) fit
the threshold p* = c D n (D = d, or k), and WORKDIR/leak_width.{json,png} give your width's
margin p / p* and predicted recovery (docs/audit.md, "How wide before it leaks").

  python -m recon.main --config=configs/leak_width.py \
    --config.data.n=100 --config.data.d=16 --config.victim.p=4000 --config.victim.activation=relu

The attack of every shadow is the random-features default of configs/rf_synthetic.py (Adam,
cosine decay, escalation) (20 000 steps), without the precision rung: the setting
scripts/leak_width.py validates.
"""
import ml_collections

from configs import base


def get_config() -> ml_collections.ConfigDict:
  c = base.get_config()
  c.name = 'leak_width'
  c.pipeline = 'leak_width'

  c.data.n = 100
  c.data.d = 16
  c.data.preprocess = 'none'  # data.name 'file': the rows as the model saw them (PCA on them)

  c.victim.p = 4000  # your model's width (random features)
  c.victim.activation = 'relu_tanh'

  # The shadows' attack: configs/rf_synthetic.py's.
  c.attack.optimizer = 'adam'
  c.attack.lr = 0.05
  c.attack.schedule = 'cosine'
  c.attack.decay_steps = 20000
  c.attack.tol = 1e-09
  # As validated (scripts/leak_width.py): no precision rung (it re-searches rows in float64 point
  # by point after the vectorised sweep: about a minute per point on 2 shared cores).
  c.attack.rescue = ('escalate',)

  c.run.log_every_seconds = 30.0
  return c
