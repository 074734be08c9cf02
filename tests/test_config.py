"""The one validator: every config in configs/ validates; bad values fail in one line, early.

Defaults live in configs/base.py only: every job starts from it, defines no field it lacks,
and recon/ reads no field with a fallback default (`cfg.get(name, default)`).
"""
import dataclasses
import glob
import importlib
import importlib.util
import inspect
import os
import re
import subprocess
import sys

import ml_collections
import pytest

from configs import base
from recon.config import choices, sections
from recon.config import validate as config_lib
from recon.config.spec import flatten
from recon.runtime import io, ownership
from conftest import subprocess_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIGS = sorted(glob.glob(os.path.join(ROOT, 'configs', '*.py')))
JOBS = [f for f in CONFIGS if os.path.basename(f) != 'base.py']
RF = os.path.join(ROOT, 'configs', 'rf_synthetic.py')


def load_config(path):
  spec = importlib.util.spec_from_file_location(os.path.basename(path)[:-3], path)
  module = importlib.util.module_from_spec(spec)
  spec.loader.exec_module(module)
  return module.get_config()


def test_configs_found():
  assert RF in CONFIGS


@pytest.mark.parametrize('path', CONFIGS, ids=os.path.basename)
def test_every_config_loads_and_validates(path):
  cfg = load_config(path)
  assert isinstance(cfg, ml_collections.ConfigDict)
  config_lib.validate(cfg)


def test_base_defines_every_field_once():
  """configs/base.py holds a default for exactly the fields the schema knows."""
  fields = flatten({k: v for k, v in base.get_config().items() if k != 'sweep'})
  assert sorted(fields) == sorted(config_lib.FIELDS)
  axes = flatten(base.sweep())
  assert sorted(axes) == sorted(config_lib.SWEEP_VECTORISED + config_lib.SWEEP_STATIC)
  assert all(v is None for v in axes.values())


@pytest.mark.parametrize('path', JOBS, ids=os.path.basename)
def test_every_job_starts_from_base(path):
  """A job is base.get_config() plus overrides: the same fields, nothing new."""
  text = open(path).read()
  assert 'base.get_config()' in text
  assert 'ConfigDict(' not in text, 'a job adds no section or field of its own'
  assert sorted(flatten(load_config(path))) == sorted(flatten(base.get_config()))


def _recon_sources():
  for path in glob.glob(os.path.join(ROOT, 'recon', '**', '*.py'), recursive=True):
    yield os.path.relpath(path, ROOT), open(path).read()


def test_recon_reads_no_field_with_a_fallback_default():
  """0 `cfg.get(name, default)` in recon/ (nor `get = cfg.get`): every default comes from
  configs/base.py; `config.get('sweep')` is the one optional part of a config."""
  found = [f'{path}: {m.group(0)}' for path, text in _recon_sources()
           for m in re.finditer(r"\b(?:cfg|config|c)\.get\b(?!\('sweep'\))", text)]
  assert not found


def test_every_field_recon_reads_has_a_default_in_base():
  """Each `cfg.<section>.<field>` read in recon/ is a field (or section) of configs/base.py."""
  known = set(config_lib.FIELDS)
  for path in config_lib.FIELDS:
    parts = path.split('.')
    known.update('.'.join(parts[:i]) for i in range(1, len(parts)))
  pattern = r'\b(?:cfg|config)\.((?:data|victim|attack|run)(?:\.[a-z_0-9]+)*)'
  read = {(path, m.group(1)) for path, text in _recon_sources()
          for m in re.finditer(pattern, text)}
  assert read
  # A trailing method (cfg.attack.to_dict, cfg.victim.get_ref) is not a field.
  unknown = sorted(f'{path}: {field}' for path, field in read
                   if field not in known and field.rsplit('.', 1)[0] not in known)
  assert not unknown


@pytest.mark.parametrize('path', CONFIGS, ids=os.path.basename)
def test_every_field_of_every_config_is_checked(path):
  """A value no spec accepts, put in any field, is caught and its full path is named."""
  cfg = load_config(path)
  for field in config_lib.FIELDS:
    bad = ml_collections.ConfigDict(cfg.to_dict())
    with bad.ignore_type():
      config_lib.set_path(bad, field, {1, 2})  # a set: no spec accepts it
    with pytest.raises(config_lib.ConfigError,
                       match=rf'^config\.{re.escape(field)}: invalid value'):
      config_lib.validate(bad)


@pytest.mark.parametrize('field,message', [
    ('data.nn', 'config.data.nn: unknown field (did you mean data.n?)'),
    ('attack.escalate.windw', 'config.attack.escalate.windw: unknown field (did you mean '
                              'attack.escalate.window?)'),
    ('victim.activaton', 'config.victim.activaton: unknown field (did you mean '
                         'victim.activation'),
    ('attack.n_candidate', 'config.attack.n_candidate: unknown field (did you mean '
                           'attack.n_candidates'),
    # A field of a section's own sub-section, named at the section (the KKT attacks' fields).
    ('attack.kkt_target', 'config.attack.kkt_target: unknown field (did you mean '
                          'attack.kkt.target?)'),
    ('attack.prior', 'config.attack.prior: unknown field (did you mean attack.kkt.prior?)'),
    ('attack.candidate_subspace', 'config.attack.candidate_subspace: unknown field (did you mean '
                                  'attack.kkt.candidate_subspace,'),
    ('attack.activation', 'config.attack.activation: unknown field (did you mean '
                          'attack.kkt.activation, victim.activation?)'),
    # The subspace search's fields (attack.subspace): the section itself names its mode first.
    ('attack.subspace_dim', 'config.attack.subspace_dim: unknown field (did you mean '
                            'attack.subspace.dim?)'),
    ('attack.subspace_noise_floor', 'config.attack.subspace_noise_floor: unknown field (did you '
                                    'mean attack.subspace.noise_floor?)'),
    ('attack.gradient_at', 'config.attack.gradient_at: unknown field (did you mean '
                           'attack.subspace.gradient_at?)'),
    ('attack.alpha_mode', 'config.attack.alpha_mode: unknown field (did you mean '
                          'attack.subspace.alpha_mode?)'),
])
def test_unknown_fields_name_the_closest_paths(field, message):
  cfg = load_config(RF)
  *parents, leaf = field.split('.')
  section = config_lib.get_path(cfg, '.'.join(parents))
  with section.unlocked():
    section[leaf] = 1
  with pytest.raises(config_lib.ConfigError) as err:
    config_lib.validate(cfg)
  assert str(err.value).startswith(message)
  assert str(err.value).endswith('accepted: a field configs/base.py defines')


def test_flat_names_suggest_their_section():
  """A field name from before the sections (n, lr) finds its path."""
  assert config_lib.near_names('n', config_lib.FIELDS) == ' (did you mean data.n?)'
  assert 'attack.lr' in config_lib.near_names('lr', config_lib.FIELDS)


def test_missing_field_and_flat_config_are_refused():
  cfg = load_config(RF)
  with cfg.attack.unlocked():
    del cfg.attack['tol']
  with pytest.raises(config_lib.ConfigError, match=r'^config\.attack\.tol: missing; accepted: '
                     'a config that starts from configs/base.py'):
    config_lib.validate(cfg)
  flat = ml_collections.ConfigDict({'name': 'old', 'n': 3, 'data': 'x'})
  with pytest.raises(config_lib.ConfigError, match=r'^config: not in sections'):
    config_lib.validate(flat)


def test_sweep_axes_are_section_paths():
  cfg = load_config(os.path.join(ROOT, 'configs', 'rf_phase_transition.py'))
  assert sorted(config_lib.sweep_axes(cfg.sweep)) == ['seed', 'victim.activation',
                                                       'victim.p_over_dn']
  cfg.sweep.victim.p = (8, 16)
  with pytest.raises(config_lib.ConfigError, match=r'^config\.sweep\.victim\.p_over_dn: both'):
    config_lib.validate(cfg)
  cfg.sweep.victim.p = None
  cfg.sweep.attack.lr = (0.0,)
  with pytest.raises(config_lib.ConfigError,
                     match=r'^config\.sweep\.attack\.lr: invalid value 0\.0; accepted: float > 0'):
    config_lib.validate(cfg)
  cfg.sweep.attack.lr = None
  with cfg.sweep.attack.unlocked():
    cfg.sweep.attack.beta = (1.0,)
  with pytest.raises(config_lib.ConfigError, match=r'^config\.sweep\.attack\.beta: unknown '
                     'sweep axis'):
    config_lib.validate(cfg)


# (override, expected one-line error). Sizes, names, learning rate, types, unknown fields.
BAD = [
    ('data.n=0', "config.data.n: invalid value 0; accepted: int >= 1"),
    ('data.d=-3', "config.data.d: invalid value -3; accepted: int >= 1"),
    ('victim.p=0', "config.victim.p: invalid value 0; accepted: int >= 1"),
    ('attack.n_candidates=0', "config.attack.n_candidates: invalid value 0; accepted: int >= 1 (or None)"),
    ('attack.max_steps=0', "config.attack.max_steps: invalid value 0; accepted: int >= 1"),
    ('run.chunk_steps=-1', "config.run.chunk_steps: invalid value -1; accepted: int >= 1"),
    ('run.checkpoint_keep=0', "config.run.checkpoint_keep: invalid value 0; accepted: int >= 1"),
    ('run.checkpoint_every_steps=-5',
     "config.run.checkpoint_every_steps: invalid value -5; accepted: int >= 0"),
    ('run.checkpoint_every_seconds=-1',
     "config.run.checkpoint_every_seconds: invalid value -1.0; accepted: float >= 0"),
    ('attack.lr=-0.1', "config.attack.lr: invalid value -0.1; accepted: float > 0"),
    ('attack.lr=0', "config.attack.lr: invalid value 0.0; accepted: float > 0"),
    ('attack.momentum=1.5', "config.attack.momentum: invalid value 1.5; accepted: float >= 0 and <= 0.999999"),
    ('attack.tol=-1', "config.attack.tol: invalid value -1.0; accepted: float >= 0"),
    ('attack.refine=-1', "config.attack.refine: invalid value -1; accepted: int >= 0 and <= 100"),
    ('attack.swap.lr=0', "config.attack.swap.lr: invalid value 0.0; accepted: float > 0"),
    ('attack.swap.start_points=grid', "config.attack.swap.start_points: invalid value 'grid'; accepted: one of 'sphere', 'rows'"),
    ('seed=-1', "config.seed: invalid value -1; accepted: int >= 0"),
    ('data.label_noise=-0.5', "config.data.label_noise: invalid value -0.5; accepted: float >= 0"),
    ('victim.activation=bogus', "config.victim.activation: invalid value 'bogus'; accepted: one of 'cubic', "),
    ('attack.optimizer=bfgs', "config.attack.optimizer: invalid value 'bfgs'; accepted: one of 'sgd', 'adam', 'lbfgs'"),
    ('data.name=cifar100', "config.data.name: invalid value 'cifar100'; accepted: one of "),
    ('victim.name=vgg', "config.victim.name: invalid value 'vgg'; accepted: one of "),
    ('run.dtype=float16', "config.run.dtype: invalid value 'float16'; accepted: one of 'float32', "),
    ('data.n=abc', "config.data.n: invalid value 'abc'; accepted: int >= 1"),
    ('data.n=1.5', "config.data.n: invalid value '1.5'; accepted: int >= 1"),
    ('attack.lr=fast', "config.attack.lr: invalid value 'fast'; accepted: float > 0"),
    ('run.overwrite=maybe', "config.run.overwrite: invalid value 'maybe'; accepted: bool"),
    ('data.nn=10', "config.data.nn: unknown field (did you mean data.n?); accepted: a field "
                   'configs/base.py defines'),
    ('n=10', 'config.n: unknown field (did you mean data.n?); accepted: a field configs/base.py '
             'defines'),
    ('attack.lambda_solve=eliminate', 'config.attack.lambda_solve: unknown field (did you mean '
     'attack.kkt.lambda_solve?); accepted: a field configs/base.py defines'),
    ('attack.subspace=known', 'config.attack.subspace: unknown field (did you mean '
     'attack.subspace.mode, attack.subspace.dim, attack.subspace.noise_floor?); accepted: a '
     'field configs/base.py defines'),
]


def _python_value(override):
  """The override as a config-file value (type errors as the wrong Python type)."""
  field, text = override.split('=', 1)
  for cast in (int, float):
    try:
      return field, cast(text)
    except ValueError:
      pass
  return field, text


@pytest.mark.parametrize('override,expected', BAD, ids=[b[0] for b in BAD])
def test_validator_table(override, expected):
  """The same table through `validate` directly (values as a config file would hold them)."""
  field, value = _python_value(override)
  cfg = load_config(RF)
  *parents, leaf = field.split('.')
  section = config_lib.get_path(cfg, '.'.join(parents)) if parents else cfg
  with section.ignore_type(), section.unlocked():
    section[leaf] = value
  with pytest.raises(config_lib.ConfigError) as err:
    config_lib.validate(cfg)
  message = str(err.value)
  assert '\n' not in message
  assert message.startswith(f'config.{field}: ')
  # The value's repr may differ from the CLI's (0 vs 0.0); what is accepted may not.
  assert expected.split('; accepted')[1] in message


# Through the CLI, concurrently (each case is a fresh process, ~3 CPU-seconds of imports):
# the kinds of error tests/test_main.py does not already run through the CLI (wrong types,
# unknown fields, the new fields); the table above covers the rest in-process.
CLI_CASES = [b for b in BAD if b[0] in (
    'data.n=abc', 'attack.lr=fast', 'run.overwrite=maybe', 'data.nn=10', 'n=10',
    'run.checkpoint_keep=0', 'attack.lambda_solve=eliminate', 'attack.subspace=known')] + [
    ('run.resume=True --config.run.overwrite=True',
     'run.resume, run.overwrite: both True; accepted: at most one of them'),
    ('victim.checkpoint=/nonexistent/model', "victim.checkpoint: no model.json in '/nonexistent"),
]


@pytest.mark.slow  # 10 CLI subprocesses (test_validator_table covers the values in-process)
def test_cli_rejects_bad_values_in_one_line_and_writes_nothing(tmp_path):
  workdir = tmp_path / 'existing'  # a recon workdir holding an earlier run's file
  ownership.take(str(workdir))
  ownership.claim(str(workdir / 'keep.txt'))
  (workdir / 'keep.txt').write_text('untouched')
  procs = []
  for override, _ in CLI_CASES:
    cmd = [sys.executable, '-m', 'recon.main', f'--config={RF}', f'--workdir={workdir}'] + [
        '--config.' + o for o in override.split(' --config.')]
    procs.append(subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True, env=subprocess_env(JAX_PLATFORMS='cpu')))
  # A config file that does not start from configs/base.py has no run.resume to override.
  bare = tmp_path / 'bare.py'
  bare.write_text('import ml_collections\n\ndef get_config():\n'
                  '  return ml_collections.ConfigDict({"name": "bare", "n": 3})\n')
  procs.append(subprocess.Popen(
      [sys.executable, '-m', 'recon.main', f'--config={bare}', f'--workdir={workdir}',
       '--config.run.resume=True'], cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
      text=True, env=subprocess_env(JAX_PLATFORMS='cpu')))
  cases = CLI_CASES + [('run.resume=True', 'config.run.resume: unknown field')]
  for (override, expected), proc in zip(cases, procs):
    out, err = proc.communicate(timeout=300)
    lines = err.strip().splitlines()
    assert proc.returncode == 2, (override, err)
    assert len(lines) == 1, (override, err)
    assert lines[0].startswith('error: ' + expected), (override, lines[0])
    assert out == ''
  assert sorted(os.listdir(workdir)) == [ownership.MANIFEST, 'keep.txt']
  assert (workdir / 'keep.txt').read_text() == 'untouched'


# Each consumer of a section of recon/config/sections.py, taking it whole.
def _consumers():
  from recon.attack import splitting  # pylint: disable=import-outside-toplevel
  from recon.attack.rescue import escalate  # pylint: disable=import-outside-toplevel
  from recon.attack.rescue import cut, pursuit, reseed, swap  # pylint: disable=import-outside-toplevel
  from recon.certify import rung  # pylint: disable=import-outside-toplevel
  from recon.attack import data_subspace  # pylint: disable=import-outside-toplevel
  from recon.objectives import kkt, unified  # pylint: disable=import-outside-toplevel
  return {'attack.reseed': [reseed.Reseeder.__init__],
          'attack.escalate': [escalate.Escalator.__init__],
          'attack.pursue': [pursuit.PursuitStep.__init__],
          'attack.swap': [swap.SwapStep.__init__],
          'attack.cut': [cut.CutStep.__init__],
          'attack.polish': [rung.certify_or_polish],
          'attack.split': [splitting.Splitter.__init__, splitting.check_config],
          # every function of the modules that read these sections' fields
          'attack.kkt': _functions(kkt),
          'attack.subspace': _functions(data_subspace) + _functions(unified)}


def _functions(module) -> list:
  """The functions `module` defines (not those it imports)."""
  return [f for _, f in inspect.getmembers(module, inspect.isfunction)
          if f.__module__ == module.__name__]


def defaults_outside(definition, consumer) -> list:
  """The parameters of `consumer` that hold a default of one of `definition`'s fields (a
  parameter named as a field, with a default): settings a consumer declares a second time."""
  fields = {f.name for f in dataclasses.fields(definition)}
  return sorted(name for name, p in inspect.signature(consumer).parameters.items()
                if name in fields and p.default is not inspect.Parameter.empty)


def test_base_holds_each_sections_defaults_as_its_definition():
  """configs/base.py's values of a section are its definition's defaults, field by field and
  type by type (a value set in base beside the definition fails here)."""
  cfg = base.get_config()
  assert set(sections.SECTIONS) >= set(_consumers())
  for path, definition in sections.SECTIONS.items():
    held = flatten(config_lib.get_path(cfg, path))
    own = flatten(dataclasses.asdict(definition()))
    assert sorted(held) == sorted(own), path
    for name, value in own.items():
      assert held[name] == value and type(held[name]) is type(value), f'{path}.{name}'
    assert definition.from_section(config_lib.get_path(cfg, path)) == definition()
    specs = flatten(definition.specs())
    assert {f'{path}.{k}': s for k, s in specs.items()} == {
        k: v for k, v in config_lib.FIELDS.items() if k.startswith(path + '.')}
    assert all(specs[k].check(v) for k, v in own.items()), path


def test_consumers_declare_no_setting_of_their_own():
  """0 defaults outside a setting's definition: a consumer takes its section whole, none of
  its fields as a parameter of its own (the check flags a consumer that does)."""
  for path, consumers in _consumers().items():
    for consumer in consumers:
      assert defaults_outside(sections.SECTIONS[path], consumer) == [], consumer
  def toy(settings, *, window=3000, tol=1e-9):  # a second default of escalate.window
    return settings, window, tol
  assert defaults_outside(sections.Escalate, toy) == ['window']


def test_a_section_read_from_a_config_refuses_unknown_fields():
  section = sections.Split.defaults()
  section.budgett = 3
  with pytest.raises(TypeError, match='budgett'):
    sections.Split.from_section(section)


# The modules that keep a table keyed by the names a field accepts (recon/config/choices.py;
# the other names are read from there).
TABLES = (('ACTIVATIONS', 'recon.models.features', 'ACTIVATIONS'),
          ('HEAD_INITS', 'recon.models.networks', 'HEAD_INITS'))


@pytest.mark.parametrize('name,module,attr', TABLES, ids=[t[0] for t in TABLES])
def test_the_names_a_field_accepts_are_those_its_module_acts_on(name, module, attr):
  table = getattr(importlib.import_module(module), attr)
  assert sorted(table) == sorted(getattr(choices, name))


def test_validating_a_config_imports_no_model_code():
  """validate() of every shipped config, in a fresh interpreter, imports neither jax nor any
  module of recon's models, data, objectives, attack, certify or pipelines (the registry's
  built-in names are known without importing them)."""
  code = ('import glob, importlib.util, sys\n'
          'from recon.config import validate\n'
          "for path in sorted(glob.glob('configs/*.py')):\n"
          "  spec = importlib.util.spec_from_file_location('c', path)\n"
          '  module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)\n'
          '  validate.validate(module.get_config())\n'
          "print(sorted(m for m in sys.modules if m == 'jax' or m.startswith(('recon.models', "
          "'recon.attack', 'recon.objectives', 'recon.certify', 'recon.data', 'recon.pipelines'))))")
  out = subprocess.run([sys.executable, '-c', code], cwd=ROOT, capture_output=True, text=True,
                       check=True, env=subprocess_env()).stdout.strip()
  assert out == '[]'


def test_the_registry_knows_its_built_in_names_before_importing_them():
  """registry.BUILTIN_NAMES (what the validator accepts without importing model code) are the
  names the built-in modules register, kind by kind."""
  from recon import registry  # pylint: disable=import-outside-toplevel
  for kind, names in registry.BUILTIN_NAMES.items():
    registered = {n for n in registry.names(kind)
                  if registry.origin(kind, n).startswith('recon.')}
    assert registered == set(names), kind


def test_the_registry_knows_its_built_in_capabilities_before_importing_them():
  """registry.BUILTIN_CAPABILITIES (what the validator reads without importing model code)
  are the registered built-in entries' fields, and `capability` reads the same before and after
  the import."""
  from recon import registry  # pylint: disable=import-outside-toplevel
  for (kind, field), names in registry.BUILTIN_CAPABILITIES.items():
    having = {n for n in registry.names(kind) if registry.origin(kind, n).startswith('recon.')
              and getattr(registry.lookup(kind, n), field)}
    assert having == set(names), (kind, field)
    for name in registry.BUILTIN_NAMES[kind]:
      assert registry.capability(kind, name, field) == (name in names)
