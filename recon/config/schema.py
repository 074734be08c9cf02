"""Every config field's type, range and accepted names: the schema `recon.config.validate` validates by.

A config is in sections (`data`, `victim`, `attack`, `run`, `leak_width`, plus `seed`, `name`,
`pipeline`, `sweep`); `SCHEMA` holds a `Spec` per field and a dict per (sub-)section, taken from
each section's one definition (recon/config/sections.py, where configs/base.py takes the
defaults from too), and `FIELDS` the same flattened by dotted path ('data.n',
'attack.escalate.window', 'seed'). Names a field accepts come from the registry's name lists
(`recon.registry.known_names`: victims, objectives, data sets, rescue steps, pipelines) or from
recon/config/choices.py: validating a config imports no model code. `SWEEP_*` name the fields a
`config.sweep` may vary, vectorised or one compiled group per value (recon/sweep/grid.py).
"""
from __future__ import annotations

from typing import Any, Dict

from recon import registry
from recon.config import sections
from recon.config.spec import Spec

DICT_FIELDS = ('victim.module_kwargs',)  # a dict of free keys (a user module's arguments)
SEED_MAX = 2 ** 32 - 1  # jax.random.PRNGKey keeps a seed's low 32 bits: larger ones would wrap


# The sections of a config (each defined once in recon/config/sections.py): a Spec per field,
# a dict per sub-section. Dotted paths (`data.n`, `attack.escalate.window`) are the interface.
SCHEMA: Dict[str, Any] = {
    'name': Spec(str),
    'seed': Spec(int, low=0, high=SEED_MAX),
    # None: the victim's / objective's pipeline (recon.config.routes); a registered name runs that one
    'pipeline': Spec(str, optional=True, choices=lambda: registry.known_names('pipeline')),
    'data': sections.Data.specs(),
    'victim': sections.Victim.specs(),  # with victim.train and victim.train.dp
    'attack': sections.Attack.specs(),  # with the rescue steps' and sample splitting's sections
    'leak_width': sections.LeakWidth.specs(),  # pipeline 'leak_width' (recon/audit/leak_width.py)
    'run': sections.Run.specs(),
    'federated': sections.Federated.specs(),  # pipeline 'federated' (recon/pipelines/federated.py)
}
SECTIONS = tuple(k for k, v in SCHEMA.items() if isinstance(v, dict))


def _flatten_schema(schema: Dict[str, Any], prefix: str = '') -> Dict[str, Spec]:
  out = {}
  for name, spec in schema.items():
    if isinstance(spec, dict):
      out.update(_flatten_schema(spec, f'{prefix}{name}.'))
    else:
      out[prefix + name] = spec
  return out


# Every field by its dotted path ('data.n', 'attack.escalate.window', 'seed').
FIELDS: Dict[str, Spec] = _flatten_schema(SCHEMA)

# Sweep axes (`config.sweep.<path> = (values, ...)`, see recon/sweep/grid.py), by the path of the
# field they sweep. Vectorised axes share one compiled program (widths padded to the largest
# p, lr/momentum in the optimiser state, seeds as a batch of keys); static axes change shapes
# or code and loop outside, one compiled group per value.
SWEEP_VECTORISED = ('victim.p', 'victim.p_over_dn', 'seed', 'attack.lr', 'attack.momentum')
SWEEP_STATIC = ('victim.activation', 'victim.width', 'attack.n_candidates', 'run.dtype', 'data.n', 'data.d',
                'data.label_noise', 'attack.optimizer', 'attack.jitter', 'attack.tol',
                'attack.max_steps')
SWEEP_ONLY: Dict[str, Spec] = {'victim.p_over_dn': Spec(float, low=0.0, low_open=True)}
