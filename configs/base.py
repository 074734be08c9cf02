"""Every default of every job, in sections (recon/config/validate.py validates them).

Each section's fields are defined once, with their defaults, bounds and what they mean, in
recon/config/sections.py; this file assembles them (and the sweep axes) into a job's config.

A job is `configs/<job>.py`: `c = base.get_config()`, then only what differs
(`c.victim.name = 'resnet'`, `c.data.n = 4`, ...). The sections are what the
command line names: `--config.data.n=8`, `--config.victim.p=400`,
`--config.attack.lr=0.1`, `--config.seed=3`, sweep axes `--config.sweep.victim.p='(8, 16)'`.

  data    the training set: which, how many, its shape, labels, preprocessing
  victim  the model the attacker holds: architecture, width, activation, its training
          (`victim.train`), or a saved one (`victim.checkpoint`)
  attack  the objective, the optimiser and its rescue steps (restarts, reseed,
          escalate, polish, split); the KKT attacks' own fields (`attack.kkt`)
  run     precision, checkpoints, resume / overwrite, logging, the report's thresholds
  leak_width  the shadow sweep of the leak-width prediction (pipeline 'leak_width')
  seed, name, pipeline, sweep
"""
import ml_collections

from recon.config import sections

placeholder = ml_collections.config_dict.placeholder


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


def get_config() -> ml_collections.ConfigDict:
  """The defaults: random features on synthetic sphere data (configs/rf_synthetic.py's job)."""
  c = ml_collections.ConfigDict()
  c.name = 'run'
  c.seed = 0  # the key tree of a run: data, model, candidate initialisation
  # None: the victim's (or objective's) own pipeline; 'leak_width': predict the width at
  # which the described model leaks instead of attacking it (configs/leak_width.py)
  c.pipeline = placeholder(str)
  # The sections, each defined once in recon/config/sections.py.
  c.data = sections.Data.defaults()  # the training set (recon/data)
  c.victim = sections.Victim.defaults()  # the model under attack, its training and defences
  c.attack = sections.Attack.defaults()  # the objective, the optimiser, its rescue steps, kkt
  c.run = sections.Run.defaults()  # precision, checkpoints, logging, the report's thresholds
  c.sweep = sweep()
  c.leak_width = sections.LeakWidth.defaults()  # pipeline 'leak_width' (docs/audit.md)
  c.federated = sections.Federated.defaults()  # pipeline 'federated' (docs/federated.md)
  return c
