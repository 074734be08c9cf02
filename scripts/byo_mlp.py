"""The auditor's own model of docs/audit.md and scripts/audit_regimes.py: an ordinary Flax MLP
with biases, defined outside recon's library (attacked as victim 'flax_module',
`victim.module='scripts.byo_mlp:MLP'`)."""
import flax.linen as nn
import jax


class MLP(nn.Module):
  """Dense(hidden) -> relu -> Dense(1), biases on both layers."""
  hidden: int = 1280

  @nn.compact
  def __call__(self, x):
    return nn.Dense(1)(jax.nn.relu(nn.Dense(self.hidden)(x)))
