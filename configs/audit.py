"""Audit a model you trained yourself: your Flax module (or PyTorch MLP) and your data.

The base for attacking a given model (docs/audit.md#bring-your-own-model); every field can
be overridden. Set at least the model file and your training set:

  python -m recon.main --config=configs/audit.py \
    --config.victim.module=my_models:MLP --config.victim.checkpoint=mlp.msgpack \
    --config.data.path=train.npz --config.data.n=8 --config.data.d=16

victim 'flax_module' reads `victim.module`'s params from `victim.checkpoint` (format 'msgpack'
here; 'orbax' for an orbax folder); `--config.victim.name=torch_mlp
--config.victim.format=safetensors` reads a PyTorch nn.Sequential MLP's state_dict. The data
file (`data.name='file'`) is only the truth the candidates are scored against; the attack sees
the parameters alone. With `victim.init_checkpoint` set the attack uses it (theta = W_L(T) -
W_L(0); configs/base.py's attack.knows_init None); without it, it reads the trained head.
"""
import ml_collections

from configs import base


def get_config() -> ml_collections.ConfigDict:
  c = base.get_config()
  c.name = 'audit'

  c.data.name = 'file'
  c.data.n = base.placeholder(int)  # None: the file's length (an int on the command line)
  c.data.d = base.placeholder(int)  # None: the file's row size
  c.data.preprocess = 'none'  # the rows exactly as the model saw them

  c.victim.name = 'flax_module'
  c.victim.format = 'msgpack'
  c.victim.activation = 'relu'  # the certificate's and the metric's symmetry rule

  c.attack.jacobian_at = 'trained'
  c.attack.rescue = ('escalate',)  # the precision rung re-searches random-features rows only
  return c
