"""scripts/ call only the public API: `import recon` and its names (recon.api.PUBLIC_NAMES:
recon.run, recon.get_config, recon.registry, ...) and the public modules (recon.api.PUBLIC_MODULES:
recon.runtime.io, recon.runtime.machine, recon.metrics, ...), never a pipeline's or the optimiser's internals.

Parsed with `ast` (nothing is imported; the public lists are read from recon/api.py's source).
Every import is counted, including those inside functions, and so is every `recon.X` attribute
read on the imported package.
"""
import ast
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPTS = os.path.join(ROOT, 'scripts')

LEAD_EDITING = ()

# Scripts that measure or probe one internal piece, which no public call isolates, with the
# internals each may reach (exactly: a new internal fails the test, and so does an entry that
# is no longer needed, so the list cannot go stale). Their results/ files report the numbers
# of those internals.
INTERNAL_PROBES = {
    'bench.py': ('times the compiled step, dense and lean, against the roofline, and a whole '
                 "run by phase (the profile wraps the driver's phases and the rescue chain)", {
        'recon.runtime.compile_cache', 'recon.attack.driver', 'recon.models.features', 'recon.runtime.host',
        'recon.attack.optimiser', 'recon.pipelines.random_features', 'recon.runtime.runs',
        'recon.execution', 'recon.attack.rescue.chain'}),
    'bench_sweep.py': ('times one compiled sweep group against the per-point loop', {
        'recon.runtime.compile_cache', 'recon.attack.driver', 'recon.runtime.host', 'recon.attack.optimiser', 'recon.pipelines',
        'recon.pipelines.random_features', 'recon.runtime.runs', 'recon.sweep.grid'}),
    'certificate.py': ("the certificate on hand-built feature maps and solutions, at the "
                       "rung's float64 loss, and its solve routes and feature maps at scale", {
        'recon.certify.certificate', 'recon.models.features', 'recon.certify.float64_loss',
        'recon.models.random_features', 'recon.certify.symmetry'}),
    'soak.py': ("a workdir's manifest: what recon owns there, checked after each fault", {
        'recon.runtime.ownership'}),
    # One trained KKT victim attacked from chosen initial candidates (truth + 3% noise, fixed
    # random restarts): no config field sets the initial candidates.
    'kkt.py': ('KKT attacks from chosen initial candidates on one trained victim', {
        'recon.pipelines.kkt', 'recon.pipelines.reconstruct', 'recon.runtime.runs', 'recon.pipelines.victims'}),
}


def _literal(tree, name):
  for node in tree.body:
    if isinstance(node, ast.Assign) and any(getattr(t, 'id', None) == name for t in node.targets):
      return ast.literal_eval(node.value)
  raise AssertionError(f'recon/api.py defines no {name}')


API = ast.parse(open(os.path.join(ROOT, 'recon', 'api.py')).read())
PUBLIC_NAMES = set(_literal(API, 'PUBLIC_NAMES'))
PUBLIC_MODULES = set(_literal(API, 'PUBLIC_MODULES'))


def _public_module(name):
  """`name` (dotted) is a public module or lies inside one (recon.data.preprocess)."""
  return any(name == m or name.startswith(m + '.') for m in PUBLIC_MODULES)


def internal_uses(path):
  """The non-public recon names `path` reaches: ['recon.pipelines', 'recon.api.load', ...]."""
  tree = ast.parse(open(path).read(), path)
  bad, package_names = [], set()
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      for a in node.names:
        if a.name == 'recon':
          package_names.add(a.asname or 'recon')
        elif a.name.startswith('recon.') and not _public_module(a.name):
          bad.append(a.name)
    elif isinstance(node, ast.ImportFrom) and not node.level and node.module and (
        node.module == 'recon' or node.module.startswith('recon.')):
      for a in node.names:
        if node.module == 'recon':
          ok = a.name in PUBLIC_NAMES or _public_module(f'recon.{a.name}')
        else:
          ok = _public_module(node.module) or _public_module(f'{node.module}.{a.name}')
        if not ok:
          bad.append(f'{node.module}.{a.name}')
  inner = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Attribute)}
  for node in ast.walk(tree):  # recon.X.Y on the imported package (the longest chain)
    if not isinstance(node, ast.Attribute) or id(node) in inner:
      continue
    chain, root = [], node
    while isinstance(root, ast.Attribute):
      chain.insert(0, root.attr)
      root = root.value
    if not (isinstance(root, ast.Name) and root.id in package_names):
      continue
    dotted = ['recon'] + chain
    public = chain[0] in PUBLIC_NAMES or chain[0].startswith('__') or any(
        _public_module('.'.join(dotted[:k])) for k in range(2, len(dotted) + 1))
    if not public:
      # the deepest prefix naming a module (recon.sweep.grid.run -> recon.sweep.grid)
      name = '.'.join(dotted[:2])
      for k in range(len(dotted), 1, -1):
        rel = os.path.join(ROOT, *dotted[:k])
        if os.path.isfile(rel + '.py') or os.path.isdir(rel):
          name = '.'.join(dotted[:k])
          break
      bad.append(name)
  return sorted(set(bad))


def _scripts():
  return sorted(f for f in os.listdir(SCRIPTS) if f.endswith('.py') and f != '__init__.py')


@pytest.mark.parametrize('script', _scripts())
def test_script_uses_only_the_public_api(script):
  if script in LEAD_EDITING:
    pytest.skip('being edited in parallel (issue 29); moves in its own change')
  bad = internal_uses(os.path.join(SCRIPTS, script))
  if script in INTERNAL_PROBES:
    allowed = INTERNAL_PROBES[script][1]
    assert set(bad) <= allowed, f'scripts/{script} reaches new internals {set(bad) - allowed}'
    assert set(bad) == allowed, (f'scripts/{script} no longer reaches {allowed - set(bad)}: '
                                 'shrink its INTERNAL_PROBES entry (or remove it)')
    return
  assert not bad, (f'scripts/{script} reaches recon internals {bad}; use recon.run / '
                   'recon.get_config / the public modules (docs/api.md), or promote a documented '
                   'function into recon/api.py')


def test_exceptions_name_existing_scripts():
  assert set(INTERNAL_PROBES) | set(LEAD_EDITING) <= set(_scripts())


def test_public_lists_match_the_package():
  """Every public name is served by recon/__init__.py, every public module exists."""
  init = ast.parse(open(os.path.join(ROOT, 'recon', '__init__.py')).read())
  served = set(_literal(init, '_API')) | {'registry'}
  assert served == PUBLIC_NAMES
  for module in PUBLIC_MODULES:
    rel = os.path.join(ROOT, *module.split('.'))
    assert os.path.isfile(rel + '.py') or os.path.isfile(os.path.join(rel, '__init__.py')), module


def test_the_check_catches_internal_imports(tmp_path):
  """The detector itself: each way of reaching an internal is caught, public ones are not."""
  script = tmp_path / 's.py'
  script.write_text('import recon\nfrom recon.runtime import io, machine\nfrom recon import run, pipelines\n'
                    'from recon.pipelines import kkt as k\nimport recon.attack.optimiser\n'
                    'from recon.data import preprocess\n'
                    'def f():\n  from recon.attack import driver\n  return recon.sweep.grid, recon.run\n')
  assert internal_uses(str(script)) == ['recon.attack.driver', 'recon.attack.optimiser', 'recon.pipelines',
                                        'recon.pipelines.kkt', 'recon.sweep.grid']
