"""Every name a config can hold, registered once beside what it names.

A registry is a table per kind of thing: `kind -> {name -> entry}`. The module that
defines a victim, an objective, a data set, an optimiser or a pipeline registers it
where it is defined (breaching's `objective_lookup`, done as a call at the definition):

    registry.register('victim', 'two_layer', registry.Victim(pipeline='networks', ...))

and every other module looks it up (`lookup('victim', cfg.victim.name)`) instead of
keeping a list of names. A new victim is one module that registers itself plus one
config; tests/test_registry.py registers a toy victim and a toy objective from the test
file and runs them end to end without touching a library file.

Kinds and their entries:

  victim     `Victim`: which pipeline trains and attacks it, the Flax module it builds
             from the `victim` section, the hyper-parameters a saved model fixes
  objective  `Objective`: a loss on candidate features (projection-type objectives) or
             the pipeline that owns it (KKT, unified)
  dataset    `Dataset`: its loader `(data section, key, dtype) -> (X (n, d), y (n,), meta)` and
             whether the rows bring their own sizes (data.n / data.d None)
  pipeline   `Pipeline`: `run(spec, workdir, dtype, resuming) -> summary` and its checks
  rescue     `Rescue`: a step of `attack.rescue` (recon/attack/rescue/chain.py): its builder and where it
             acts (between chunks of the descent, or after it)
  sweep      `Sweep`: how a sweep vectorises the victims of a pipeline (recon/sweep/), under
             that pipeline's name

This module is the lowest layer of the house: it imports nothing of `recon` but the
error type, so every module can register itself.
"""
from __future__ import annotations

import contextlib
import dataclasses
import difflib
import sys
from typing import Any, Callable, Dict, Iterator, Mapping, Optional, Tuple

from recon.errors import ReconError

KINDS = ('victim', 'objective', 'dataset', 'pipeline', 'rescue', 'sweep')
# The config field that names an entry of each kind (used in error messages).
FIELD = {'victim': 'victim.name', 'objective': 'attack.objective', 'dataset': 'data.name',
         'pipeline': 'pipeline', 'rescue': 'attack.rescue', 'sweep': 'victim.name (its pipeline)'}

_TABLES: Dict[str, Dict[str, Any]] = {kind: {} for kind in KINDS}
# (kind, name) -> the module whose `register` call added it: the one place that may compare a
# config's name with it (tests/test_registry.py: every other module asks the entry).
_ORIGINS: Dict[Tuple[str, str], str] = {}
# The modules whose import registers every built-in entry (the pipelines import every victim,
# objective and data set module; the audit's leak-width pipeline runs sweeps of them). They are imported by name on the first read of a table, not
# here: this module stays importable first, from any module, with no import circle.
BUILTINS = ('recon.pipelines', 'recon.audit.leak_width')
_builtins_state = {'loaded': False}
# The names BUILTINS register, known without importing them: what a config may name, read by
# the validator (`known_names`), so validating a config imports no model code. tests/test_config.py
# checks that BUILTINS register exactly these.
BUILTIN_NAMES = {
    'victim': ('flax_module', 'homogeneous_mlp', 'random_features', 'random_features_gd',
               'resnet', 'torch_mlp', 'two_layer', 'vit'),
    'objective': ('kkt_binary', 'kkt_general', 'kkt_multiclass', 'projection', 'unified'),
    'dataset': ('cifar10', 'digits', 'file', 'lfw_faces', 'mnist', 'photo_patches',
                'synthetic_sphere', 'synthetic_subspace'),
    'pipeline': ('federated', 'kkt', 'leak_width', 'networks', 'random_features', 'subspace'),
    'rescue': ('cut', 'escalate', 'polish', 'pursue', 'reseed', 'swap'),
}
# The built-in entries' capabilities the validator reads, known the same way:
# {(kind, entry field): the built-in names whose entry has it True}. tests/test_config.py checks
# them against the registered entries.
BUILTIN_CAPABILITIES = {
    ('dataset', 'own_sizes'): ('file',),
}


class RegistryError(ReconError, ValueError):
  """An unknown or doubly registered name; the message is one line naming the accepted ones."""


@dataclasses.dataclass(frozen=True)
class Victim:
  """What a victim name means.

  pipeline            the pipeline that trains (or loads) and attacks it ('random_features',
                      'networks', 'kkt'); a registered pipeline name
  build               (victim section, num_classes) -> the Flax module (networks, kkt)
  architecture        the Flax class a saved model of it holds (model.json names it by
                      its class name); None for the random-features model (kind
                      'random_features')
  checkpoint_fields   {hyper-parameter: config path} a saved model fixes (its values
                      replace the config's)
  from_checkpoint     optional (hparams) -> {config path: value}: fields derived otherwise
                      (HomogeneousMLP's `widths` -> victim.width, victim.depth)
  image_input         rows are reshaped to data.image_shape before the module (True: it
                      is required; None: when data.image_shape is set)
  restartable         the attack optimises one (m, d) candidate array, so
                      attack.restarts > 1 can stack K of them
  candidates_per_sample  attack.n_candidates defaults to this times n (Haim et al.'s
                      KKT attack: 2n)
  check               optional (victim section) -> an error message or None: cross-field
                      checks of the section, before any compute
  features            what the attack's features of a candidate are: 'gradient' (parameter
                      gradients of a trained network: its initial parameters and dW1 exist)
                      or 'random' (sigma(V x) of a fixed random first layer V, given with
                      the model and never trained: victim.p is its width)
  homogeneous         positively homogeneous in its parameters and trained toward max
                      margin: the KKT conditions of its training hold (attack.kkt.target)
  patched             cuts an image input into victim.patch_size patches (the image's
                      sides are multiples of it)
  """
  pipeline: str
  build: Optional[Callable[[Any, int], Any]] = None
  architecture: Optional[type] = None
  checkpoint_fields: Mapping[str, str] = dataclasses.field(default_factory=dict)
  from_checkpoint: Optional[Callable[[Mapping[str, Any]], Dict[str, Any]]] = None
  image_input: Optional[bool] = False
  restartable: bool = True
  candidates_per_sample: int = 1
  check: Optional[Callable[[Any], Optional[str]]] = None
  features: str = 'gradient'
  homogeneous: bool = False
  patched: bool = False


@dataclasses.dataclass(frozen=True)
class Dataset:
  """What a data set name means.

  load       (data section, key, dtype) -> (X (n, d), y (n,) or None, meta)
  own_sizes  the rows come with their sizes (the auditor's file): data.n and data.d may be
             None, and take them
  """
  load: Callable[..., Tuple[Any, Any, Dict[str, Any]]]
  own_sizes: bool = False


@dataclasses.dataclass(frozen=True)
class Objective:
  """What an objective name means.

  loss        (features (rows, p), target (p,), jitter) -> scalar: an objective on the
              candidates' features, applied by every pipeline in `pipelines`
              (the projection loss ||P_perp theta||^2 / ||theta||^2 is one)
  pipeline    the pipeline that owns the objective (its loss is built there: the KKT
              conditions, the unified subspace objective); None: the victim's pipeline
  pipelines   the victims' pipelines whose attack accepts `loss`
  head_rows   `loss` may read a linear head's penultimate rows against the reshaped target
              (`recon.objectives.parameter_gradients.head_rows`) instead of the per-class
              Jacobian rows: the same value with a C-times smaller Gram (the projection loss)
  kkt_labels  the label kind of the KKT conditions it writes ('binary', 'multiclass',
              'general'; its state holds candidates and duals); None for a loss on features
  """
  loss: Optional[Callable[..., Any]] = None
  pipeline: Optional[str] = None
  pipelines: Tuple[str, ...] = ()
  head_rows: bool = False
  kkt_labels: Optional[str] = None


@dataclasses.dataclass(frozen=True)
class Pipeline:
  """How a pipeline runs: `run(spec, workdir, dtype, resuming) -> summary` (its entry reads the
  run's frozen `recon.config.sections.RunSpec` and hands each builder its sections), and
  `check(*sections)`,
  its cross-field refusals (one-line errors) of the config sections named by `sections`, in
  that order, called before the workdir is touched."""
  run: Callable[..., Dict[str, Any]]
  check: Optional[Callable[..., None]] = None
  sections: Tuple[str, ...] = ('data', 'victim', 'attack')

  def check_sections(self, **sections: Any) -> None:
    """`check` on the named sections (`data=..., victim=..., attack=...`; nothing when the
    pipeline has none)."""
    if self.check is not None:
      self.check(*(sections[name] for name in self.sections))


@dataclasses.dataclass(frozen=True)
class Rescue:
  """What a rescue-step name in `attack.rescue` means (recon/attack/rescue/chain.py): an
  (init, update) pair, as an Optax transformation (recon/attack/rescue/step.py).

  section   the `attack` sub-section it reads (`attack.escalate`)
  init      (its config section, recon.attack.rescue.chain.Context) -> its state, a
            `recon.attack.rescue.step.Step` whose `update(state) -> state` runs after each chunk
            of the descent (stage 'descent')
  applies   Context -> None where the step acts on this attack, else why not (the step is
            left out and the log says why); None: it always acts
  stage     'descent': between chunks, in the order of `attack.rescue`; 'end': once after the
            descent, where the certificate fails (the precision rung, recon.certify.rung)
  batched   it also serves a vmapped batch of runs (recon.sweep.grid; attack.restarts)
  pursuit   its section -> whether it uses residual pursuit (Context.pursuit, built for the
            run only when a listed step does); None: never
  loo_batch the leave-one-out losses its pass computes at once on the device (the memory
            estimate, recon.attack.memory); 0: none
  """
  section: str
  init: Optional[Callable[[Any, Any], Any]] = None
  applies: Optional[Callable[[Any], Optional[str]]] = None
  stage: str = 'descent'
  batched: bool = False
  pursuit: Optional[Callable[[Any], bool]] = None
  loo_batch: int = 0


@dataclasses.dataclass(frozen=True)
class Sweep:
  """How a sweep (recon/sweep/grid.py) vectorises the victims of one pipeline, registered under
  the pipeline's name and looked up by the victim's.

  check      (one point's data, victim and attack sections, the swept field paths) -> None:
             one-line ConfigError for what it cannot vectorise, before any compute
  run_group  (group, *, devices, log_every_seconds, label) -> the group's per-point arrays,
             as one jit(vmap(...)) program
  record     (point, run_group's arrays, i) -> (point i's record, its candidates)
  trains     it trains the group's victims (a point's memory is its single run's estimate;
             no saved features to recertify)
  resumable  run_group also takes `partial` (recon.sweep.store.Partial): its running descent
             is saved and resumed
  """
  check: Callable[..., None]
  run_group: Callable[..., Dict[str, Any]]
  record: Callable[..., Tuple[Dict[str, Any], Any]]
  trains: bool = True
  resumable: bool = False


def register(kind: str, name: str, entry: Any) -> Any:
  """Adds `entry` under `name` (once: a second registration of a name is an error)."""
  table = _table(kind)
  if name in table and table[name] is not entry:
    raise RegistryError(f'{kind} {name!r}: registered twice; accepted: one registration per name')
  if name in table:  # the same entry again: a no-op (its origin stays the first module's)
    return entry
  table[name] = entry
  caller = sys._getframe(1)  # pylint: disable=protected-access
  _ORIGINS[(kind, name)] = caller.f_globals.get('__name__', '')
  return entry


def unregister(kind: str, name: str) -> None:
  """Removes a name (tests that register toys clean up with it)."""
  _table(kind).pop(name, None)
  _ORIGINS.pop((kind, name), None)


def origin(kind: str, name: str) -> str:
  """The module that registered `name` (its dotted name)."""
  lookup(kind, name)
  return _ORIGINS[(kind, name)]


@contextlib.contextmanager
def registered(kind: str, name: str, entry: Any) -> Iterator[Any]:
  """Registers `entry` for the duration of a `with` block."""
  register(kind, name, entry)
  try:
    yield entry
  finally:
    unregister(kind, name)


def load_builtins() -> None:
  """Imports BUILTINS once (their modules register themselves). Every read of a table calls
  it; a read made while they are being imported sees the entries registered so far."""
  if _builtins_state['loaded']:
    return
  _builtins_state['loaded'] = True
  import importlib  # pylint: disable=import-outside-toplevel
  for module in BUILTINS:
    importlib.import_module(module)


def names(kind: str) -> Tuple[str, ...]:
  """The registered names of a kind, sorted (registration order depends on import order)."""
  return tuple(sorted(_table(kind, read=True)))


def known_names(kind: str) -> Tuple[str, ...]:
  """The built-in names of a kind and those registered since (a user's, a test's toy), sorted,
  without importing the built-ins (what the validator accepts)."""
  return tuple(sorted(set(BUILTIN_NAMES[kind]) | set(_table(kind))))


def capability(kind: str, name: str, field: str) -> Any:
  """The field `field` of the entry registered under `name`; for a built-in entry not yet
  imported, read from BUILTIN_CAPABILITIES (what the validator asks without importing model
  code)."""
  table = _table(kind)
  if name not in table and name in BUILTIN_NAMES[kind] and (kind, field) in BUILTIN_CAPABILITIES:
    return name in BUILTIN_CAPABILITIES[(kind, field)]
  return getattr(lookup(kind, name), field)


def lookup(kind: str, name: str) -> Any:
  """The entry registered under `name`; a one-line RegistryError naming the config field,
  the closest names and all accepted ones otherwise."""
  table = _table(kind, read=True)
  if name not in table:
    close = difflib.get_close_matches(str(name), list(table), n=3, cutoff=0.6)
    hint = f' (did you mean {", ".join(close)}?)' if close else ''
    raise RegistryError(f'{FIELD[kind]}: unknown name {name!r}{hint}; accepted: '
                        f'{", ".join(sorted(table))}')
  return table[name]


def items(kind: str) -> Tuple[Tuple[str, Any], ...]:
  return tuple(_table(kind, read=True).items())


def victims_with_architecture(architecture: str) -> Tuple[str, ...]:
  """The victim names whose saved models hold the Flax class named `architecture`."""
  return tuple(name for name, v in items('victim')
               if v.architecture is not None and v.architecture.__name__ == architecture)


def architectures() -> Dict[str, type]:
  """{class name: Flax class} of every registered victim's architecture (what a saved
  model's `architecture` may name)."""
  return {v.architecture.__name__: v.architecture for _, v in items('victim')
          if v.architecture is not None}


def _table(kind: str, read: bool = False) -> Dict[str, Any]:
  if kind not in _TABLES:
    raise RegistryError(f'registry kind {kind!r}: unknown; accepted: {", ".join(KINDS)}')
  if read:
    load_builtins()
  return _TABLES[kind]
