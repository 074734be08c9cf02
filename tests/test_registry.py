"""The registry: names registered once, looked up everywhere; a toy victim and a toy
objective registered from this file run end to end through recon.main."""
import ast
import collections
import json
import os

import flax.linen as nn
import jax.numpy as jnp
import pytest

from configs import base
from recon.config import routes
from recon.config import validate as config_lib
from recon import main, pipelines, registry  # noqa: F401  (pipelines: built-ins)
from recon.models import features
from recon.objectives import projection


def test_every_builtin_name_is_registered_once():
  assert set(registry.names('victim')) == {'random_features', 'random_features_gd', 'two_layer',
                                           'resnet', 'vit', 'homogeneous_mlp', 'flax_module',
                                           'torch_mlp'}
  assert set(registry.names('objective')) == {'projection', 'unified', 'kkt_binary',
                                              'kkt_multiclass', 'kkt_general'}
  assert {'synthetic_sphere', 'synthetic_subspace', 'digits', 'cifar10', 'mnist', 'lfw_faces',
          'photo_patches'} <= set(registry.names('dataset'))
  assert set(registry.names('pipeline')) == {'random_features', 'networks', 'kkt', 'subspace',
                                             'leak_width', 'federated'}
  # The pipelines whose victims a sweep vectorises (recon/sweep/).
  assert set(registry.names('sweep')) == {'random_features', 'networks', 'kkt'}


def test_a_second_registration_of_a_name_is_refused():
  entry = registry.lookup('victim', 'two_layer')
  registry.register('victim', 'two_layer', entry)  # the same entry again: a no-op
  with pytest.raises(registry.RegistryError, match="^victim 'two_layer': registered twice"):
    registry.register('victim', 'two_layer', registry.Victim(pipeline='networks'))


def test_an_unknown_name_is_one_line_with_the_closest_and_the_accepted():
  with pytest.raises(registry.RegistryError,
                     match=r"^victim.name: unknown name 'two_layr' \(did you mean two_layer\?\); "
                           'accepted: flax_module, homogeneous_mlp, random_features, '):
    registry.lookup('victim', 'two_layr')
  with pytest.raises(registry.RegistryError, match='^registry kind'):
    registry.names('optimiser')


def test_the_config_accepts_exactly_the_registered_names():
  c = base.get_config()
  c.victim.name = 'toy_net'
  with pytest.raises(config_lib.ConfigError, match="^config.victim.name: invalid value 'toy_net'"):
    config_lib.validate(c)
  with registry.registered('victim', 'toy_net', registry.Victim(pipeline='networks')):
    config_lib.validate(c)
  assert 'toy_net' not in registry.names('victim')


def test_architectures_come_from_the_victims():
  archs = registry.architectures()
  assert set(archs) == {'TwoLayer', 'RandomFeatures', 'ResNet', 'ViT', 'HomogeneousMLP'}
  assert registry.victims_with_architecture('TwoLayer') == ('two_layer',)


# -- No name checks: a registered name is compared with a config's only where it is registered.

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The config field a compared expression reads, by its last identifiers: `attack.objective`,
# `cfg.victim.name`, `data_cfg.name`, `fields['data.name']`, `entry.pipeline`, `attack.rescue`.
SUFFIX_KINDS = {'objective': 'objective', 'pipeline': 'pipeline', 'rescue': 'rescue'}
OWNER_KINDS = {'victim': 'victim', 'data': 'dataset'}  # `<owner...>.name`
# Literal name checks left to remove, {(module, kind, name): count}. The test fails once a
# listed check is gone, so the list cannot go stale.
PENDING_NAME_CHECKS = {}


def _identifiers(node):
  """The names an expression reads, outermost last: cfg.victim.name -> [cfg, victim, name];
  fields['data.name'] -> [fields, data, name]; lookup(...).pipeline -> [lookup, pipeline]."""
  if isinstance(node, ast.Name):
    return [node.id]
  if isinstance(node, ast.Attribute):
    return _identifiers(node.value) + [node.attr]
  if isinstance(node, ast.Subscript):
    key = node.slice
    text = isinstance(key, ast.Constant) and isinstance(key.value, str)
    keys = key.value.split('.') if text else []
    return _identifiers(node.value) + keys
  if isinstance(node, ast.Call):
    return _identifiers(node.func)
  return []


def _field_kind(node, bound):
  """The registry kind whose names the expression holds (None: not a name field)."""
  ids = _identifiers(node)
  if not ids:
    return None
  if len(ids) == 1 and ids[0] in bound:  # a local assigned from a name field
    return bound[ids[0]]
  for suffix, kind in SUFFIX_KINDS.items():
    if ids[-1] == suffix or ids[-1].endswith('_' + suffix):
      return kind
  if ids[-1] == 'name' and len(ids) > 1:
    for owner, kind in OWNER_KINDS.items():
      if ids[-2].startswith(owner):
        return kind
  return None


def _literals(node, bound):
  """The string constants an operand is: 'a', ('a', 'b'), or a comprehension variable
  iterating over such a tuple."""
  if isinstance(node, ast.Constant) and isinstance(node.value, str):
    return [node.value]
  if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
    return [e.value for e in node.elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
  if isinstance(node, ast.Name) and isinstance(bound.get(node.id), tuple):
    return list(bound[node.id])
  return []


def name_checks(source, names):
  """[(line, kind, name)] of every comparison (==, !=, in, not in) of an expression holding
  names of a registry kind with a string literal that is a registered name of that kind
  (`names`: {kind: names}), e.g. `cfg.victim.name == 'vit'`, `'polish' in attack.rescue`."""
  tree = ast.parse(source)
  bound = {}  # a module-wide approximation of local names: family = victim.name
  for node in ast.walk(tree):
    if isinstance(node, ast.Assign) and len(node.targets) == 1 and isinstance(
        node.targets[0], ast.Name):
      kind = _field_kind(node.value, {})
      if kind:
        bound[node.targets[0].id] = kind
    if isinstance(node, ast.comprehension) and isinstance(node.target, ast.Name):
      values = _literals(node.iter, {})
      if values:
        bound[node.target.id] = tuple(values)
  kinds = {k: v for k, v in bound.items() if isinstance(v, str)}
  hits = []
  for node in ast.walk(tree):
    if not isinstance(node, ast.Compare):
      continue
    operands = [node.left] + node.comparators
    for a, b in zip(operands, operands[1:]):
      for field, other in ((a, b), (b, a)):
        kind = _field_kind(field, kinds)
        hits += [(node.lineno, kind, s) for s in _literals(other, bound)
                 if kind and s in names[kind]]
  return sorted(hits)


def _module_names(path):
  parts = os.path.relpath(path, ROOT)[:-3].split(os.sep)
  return '.'.join(parts[:-1] if parts[-1] == '__init__' else parts)


def test_no_module_compares_a_config_with_a_name_another_module_registers():
  """Dispatch by lookup: outside the module that registers a name, code asks the entry
  (`registry.Victim.features`, `.homogeneous`, `Objective.kkt_labels`, ...) instead of
  comparing the config's name with it."""
  names = {kind: set(registry.names(kind)) for kind in registry.KINDS}
  found = collections.Counter()
  where = collections.defaultdict(list)
  for folder, _, files in os.walk(os.path.join(ROOT, 'recon')):
    for file in sorted(files):
      if file.endswith('.py'):
        path = os.path.join(folder, file)
        module = _module_names(path)
        with open(path, encoding='utf-8') as f:
          for line, kind, name in name_checks(f.read(), names):
            if registry.origin(kind, name) != module:
              found[(module, kind, name)] += 1
              where[(module, kind, name)].append(f'{os.path.relpath(path, ROOT)}:{line}')
  new = {k: where[k] for k, n in found.items() if n > PENDING_NAME_CHECKS.get(k, 0)}
  assert not new, f'name checks outside the registering module (ask the entry): {new}'
  gone = {k: n for k, n in PENDING_NAME_CHECKS.items() if found[k] < n}
  assert not gone, f'PENDING_NAME_CHECKS lists checks that are gone (shrink it): {gone}'


def test_the_name_check_finds_planted_comparisons_and_only_those():
  names = {kind: set(registry.names(kind)) for kind in registry.KINDS}
  planted = """
def f(cfg, victim, attack, data_cfg, fields, entry):
  family = victim.name
  if cfg.victim.name == 'two_layer' or 'vit' != victim['name'] or family == 'resnet':
    pass
  if attack.objective in ('projection', 'kkt_binary') and fields['data.name'] != 'file':
    pass
  if 'polish' in cfg.attack.rescue or any(n in attack.rescue for n in ('swap', 'cut')):
    pass
  return data_cfg.name == 'synthetic_sphere' or entry.pipeline == 'networks'
"""
  assert sorted((kind, name) for _, kind, name in name_checks(planted, names)) == sorted([
      ('victim', 'two_layer'), ('victim', 'vit'), ('victim', 'resnet'),
      ('objective', 'projection'), ('objective', 'kkt_binary'), ('dataset', 'file'),
      ('rescue', 'polish'), ('rescue', 'swap'), ('rescue', 'cut'),
      ('dataset', 'synthetic_sphere'), ('pipeline', 'networks')])
  # Not name checks: another field holding the same word, a word no registry holds, a kind's
  # name compared with a field of another kind.
  assert name_checks("""
if attack.prior == 'projection' or kind == 'binary' or cfg.victim.name == 'toy':
  pass
if cfg.attack.objective == 'two_layer' or mode == 'random_features':
  pass
""", names) == []


# -- A toy victim and a toy objective, registered here, run through recon.main. ----------

class ToyNet(nn.Module):
  """f(x) = W_head s(W_1 x + b_1): a network recon has never heard of (a hidden bias)."""
  width: int
  out_dim: int = 1
  activation: str = 'relu_tanh'

  @nn.compact
  def __call__(self, x):
    h = features.make_activation(self.activation)(nn.Dense(self.width, name='hidden')(x))
    return nn.Dense(self.out_dim, use_bias=False, name='head')(h)


CALLS = {'objective': 0, 'build': 0}


def toy_loss(features, target, jitter):
  """||theta - Phi^T a||^2 / ||theta||^2 with a the ridge least-squares coefficients,
  written here with a plain solve (the library's projection loss has a custom JVP)."""
  CALLS['objective'] += 1
  features, target = jnp.asarray(features), jnp.asarray(target)
  gram = features @ features.T + jitter * jnp.eye(features.shape[0], dtype=features.dtype)
  coef = jnp.linalg.solve(gram, features @ target)
  residual = target - features.T @ coef
  return jnp.vdot(residual, residual) / jnp.vdot(target, target)


def toy_build(victim, num_classes):
  CALLS['build'] += 1
  return ToyNet(victim.width, num_classes, victim.activation)


@pytest.fixture
def toys():
  with registry.registered('victim', 'toy_net', registry.Victim(
      pipeline='networks', architecture=ToyNet, build=toy_build,
      checkpoint_fields={'width': 'victim.width', 'out_dim': 'data.num_classes',
                         'activation': 'victim.activation'})), \
      registry.registered('objective', 'toy_projection', registry.Objective(
          loss=toy_loss, pipelines=('networks',))):
    yield


def _toy_config():
  c = base.get_config()
  c.name = 'toy'
  c.data.n, c.data.d = 4, 8
  c.victim.name, c.victim.width = 'toy_net', 320  # p_L = 320 = 10 dn
  c.victim.train.max_steps = 2000
  c.attack.objective = 'toy_projection'
  c.attack.max_steps = 3000
  c.attack.rescue = ('escalate',)
  c.run.dtype = 'float64'
  return c


@pytest.mark.slow
def test_toy_victim_and_objective_run_end_to_end_through_main(toys, tmp_path):
  CALLS.update(objective=0, build=0)
  c = _toy_config()
  assert routes.pipeline_name(c) == 'networks'
  work = tmp_path / 'run'
  assert main.execute(c, str(work)) == 0
  assert CALLS['build'] >= 1 and CALLS['objective'] >= 1  # both looked up, not a built-in
  summary = json.loads((work / 'summary.json').read_text())
  metrics = summary['metrics']
  assert metrics['model'] == 'toy_net'
  assert metrics['frac_recovered'] == 1.0, metrics['recon_error']
  saved = json.loads((work / 'model' / 'model.json').read_text())
  assert saved['architecture'] == 'ToyNet' and saved['hparams']['width'] == 320
  # The saved toy model is attacked again as a checkpoint (its fields adopted).
  c2 = _toy_config()
  c2.victim.checkpoint = str(work / 'model')
  c2.victim.width = 7  # replaced by the checkpoint's 320
  assert main.execute(c2, str(tmp_path / 'again')) == 0
  again = json.loads((tmp_path / 'again' / 'summary.json').read_text())
  assert again['metrics']['width'] == 320
  assert again['metrics']['frac_recovered'] == 1.0


def test_the_toy_objective_equals_the_projection_loss():
  import numpy as np  # pylint: disable=import-outside-toplevel
  rng = np.random.default_rng(0)
  phi, theta = rng.normal(size=(3, 40)), rng.normal(size=40)
  assert float(toy_loss(phi, theta, 1e-9)) == pytest.approx(
      float(projection.projection_loss(phi, theta, 1e-9)), rel=1e-6)


@pytest.mark.slow  # compiles and runs an attack (over ~3 s)
def test_the_toy_victim_and_objective_sweep_with_no_more_code(toys, tmp_path):
  """A registered network victim is vectorised by `recon.sweep.networks` as it stands."""
  CALLS.update(objective=0, build=0)
  c = _toy_config()
  c.run.dtype = 'float32'
  c.victim.width = 40
  c.attack.max_steps, c.attack.rescue, c.run.chunk_steps = 200, (), 100
  c.sweep.seed = (0, 1)
  assert main.execute(c, str(tmp_path / 'sweep')) == 0
  out = json.loads((tmp_path / 'sweep' / 'sweep.json').read_text())
  assert [(r['seed'], r['model'], r['steps']) for r in out['records']] == [
      (0, 'toy_net', 200), (1, 'toy_net', 200)]
  assert CALLS['build'] >= 1 and CALLS['objective'] >= 1
