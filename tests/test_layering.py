"""The package's shape: folders by role, no import circle, no import from a lower layer up.

Every import is counted, including those inside functions (a function-level import
still ties two modules together), parsed with `ast` (nothing is imported here).
"""
import ast
import os

import pytest

ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), 'recon')
# The layers, lowest first: a module imports only from its own layer or a lower one (the
# composition root, recon/{api,execution,main}.py, sits on top). A folder is one layer.
LAYERS = (
    ('recon.errors', 'recon.registry', 'recon.metrics'),
    ('recon.config',),
    ('recon.runtime',),
    ('recon.data',),
    ('recon.models',),
    ('recon.objectives',),
    ('recon.certify',),
    ('recon.attack',),  # with attack/rescue
    ('recon.report',),
    ('recon.pipelines',),
    ('recon.sweep',),
    ('recon.audit',),
    ('recon.execution', 'recon.api', 'recon.main', 'recon'),
)
MAX_TOP_LEVEL = 8  # modules directly in recon/, __init__ included


def module_files(root=ROOT):
  """{dotted module name: path} of every .py file under `root` (the package `recon`)."""
  out = {}
  base = os.path.dirname(root)
  for folder, _, files in os.walk(root):
    for name in files:
      if not name.endswith('.py'):
        continue
      path = os.path.join(folder, name)
      parts = os.path.relpath(path, base)[:-3].split(os.sep)
      if parts[-1] == '__init__':
        parts = parts[:-1]
      out['.'.join(parts)] = path
  return out


def _resolve(name, modules):
  """The module `name` stands for: itself, or its nearest enclosing module we have."""
  while name and name not in modules:
    name = name.rpartition('.')[0]
  return name or None


def imports_of(module, path, modules):
  """Modules of `modules` that `module` imports anywhere in its file."""
  tree = ast.parse(open(path).read(), path)
  is_package = os.path.basename(path) == '__init__.py'
  out = set()
  for node in ast.walk(tree):
    targets = []
    if isinstance(node, ast.Import):
      targets = [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
      if node.level:
        pkg = module.split('.') if is_package else module.split('.')[:-1]
        pkg = pkg[:len(pkg) - node.level + 1]
        base = '.'.join(pkg + ([node.module] if node.module else []))
      else:
        base = node.module or ''
      # `from a import b`: b is the module a.b when there is one, else a name in a.
      targets = [f'{base}.{a.name}' if f'{base}.{a.name}' in modules else base
                 for a in node.names]
    for target in targets:
      found = _resolve(target, modules)
      if found is not None and found != module:
        out.add(found)
  return out


def import_graph(root=ROOT):
  modules = module_files(root)
  return {m: imports_of(m, p, modules) for m, p in modules.items()}


def find_cycle(graph):
  """One import circle as a list [a, b, ..., a], or None."""
  state = {}
  stack = []

  def visit(node):
    state[node] = 'open'
    stack.append(node)
    for nxt in sorted(graph.get(node, ())):
      if state.get(nxt) == 'open':
        return stack[stack.index(nxt):] + [nxt]
      if nxt not in state:
        found = visit(nxt)
        if found:
          return found
    stack.pop()
    state[node] = 'done'
    return None

  for node in sorted(graph):
    if node not in state:
      found = visit(node)
      if found:
        return found
  return None


def test_no_import_circle():
  graph = import_graph()
  assert 'recon.pipelines' in graph and 'recon.pipelines.victims' in graph
  cycle = find_cycle(graph)
  assert cycle is None, 'import circle: ' + ' -> '.join(cycle)


def layer_of(module, layers=LAYERS):
  """The index in `layers` of the longest prefix naming `module`'s layer."""
  best = None
  for i, names in enumerate(layers):
    for name in names:
      if (module == name or module.startswith(name + '.')) and (
          best is None or len(name) > best[1]):
        best = (i, len(name))
  assert best is not None, f'{module} is in no layer: add its folder to LAYERS'
  return best[0]


def upward_imports(graph, layers=LAYERS):
  """{module: modules of a higher layer it imports}."""
  out = {}
  for module, targets in graph.items():
    up = {t for t in targets if layer_of(t, layers) > layer_of(module, layers)}
    if up:
      out[module] = up
  return out


def test_no_import_from_a_lower_layer_up():
  # recon.config among them: validating a config imports no model code (its names come from
  # the registry and recon/config/choices.py, its sections from recon/config/sections.py).
  up = upward_imports(import_graph())
  assert not up, f'upward imports: { {m: sorted(t) for m, t in up.items()} }'


def test_few_modules_directly_in_the_package():
  top = sorted(f for f in os.listdir(ROOT) if f.endswith('.py'))
  assert len(top) <= MAX_TOP_LEVEL, top
  folders = [d for d in os.listdir(ROOT) if os.path.isdir(os.path.join(ROOT, d))
             and not d.startswith('_')]
  for d in folders:  # every folder is a package with a docstring saying what it holds
    init = os.path.join(ROOT, d, '__init__.py')
    assert os.path.isfile(init) and ast.get_docstring(ast.parse(open(init).read())), d


@pytest.mark.parametrize('lower', ['recon.runtime.runs', 'recon.pipelines.victims', 'recon.attack.driver', 'recon.report.scoring',
                                   'recon.pipelines.reconstruct', 'recon.config.routes'])
def test_lower_layers_do_not_import_the_pipelines(lower):
  graph = import_graph()
  reach, todo = set(), [lower]
  while todo:
    for nxt in graph[todo.pop()]:
      if nxt not in reach:
        reach.add(nxt)
        todo.append(nxt)
  assert not {m for m in reach if m.startswith('recon.pipelines')}, reach


def test_the_check_finds_a_circle_and_an_upward_import(tmp_path):
  """The checks can fail: a function-level import closing a circle, and an upward import."""
  pkg = tmp_path / 'recon'
  (pkg / 'sub').mkdir(parents=True)
  (pkg / '__init__.py').write_text('')
  (pkg / 'sub' / '__init__.py').write_text('')
  (pkg / 'a.py').write_text('from recon.sub import b\n')
  (pkg / 'sub' / 'b.py').write_text('def f():\n  from recon import a\n  return a\n')
  (pkg / 'c.py').write_text('from . import a\n')
  graph = import_graph(str(pkg))
  assert graph['recon.a'] == {'recon.sub.b'}
  assert graph['recon.sub.b'] == {'recon.a'}
  assert graph['recon.c'] == {'recon.a'}
  assert find_cycle(graph) in (['recon.a', 'recon.sub.b', 'recon.a'],
                               ['recon.sub.b', 'recon.a', 'recon.sub.b'])
  layers = (('recon.a',), ('recon.sub',), ('recon.c', 'recon'))
  assert upward_imports(graph, layers) == {'recon.a': {'recon.sub.b'}}
  (pkg / 'sub' / 'b.py').write_text('X = 1\n')
  assert find_cycle(import_graph(str(pkg))) is None


def test_every_module_imports_first_in_a_fresh_interpreter():
  # The static graph above ignores imports made at run time (`recon.__getattr__`, the
  # registry's built-ins). A user's first import may be any module: each one is imported
  # first, with no other recon module loaded, in one subprocess (recon's modules are dropped
  # from sys.modules between imports; jax stays).
  import subprocess  # pylint: disable=import-outside-toplevel
  import sys  # pylint: disable=import-outside-toplevel
  code = '\n'.join([
      'import importlib, pkgutil, sys', 'import recon',
      "mods = sorted(m.name for m in pkgutil.walk_packages(recon.__path__, 'recon.'))",
      'bad = []', 'for name in mods:',
      "  for k in [k for k in sys.modules if k == 'recon' or k.startswith(('recon.', 'configs'))]:",
      '    del sys.modules[k]',
      '  try:', '    importlib.import_module(name)',
      '  except Exception as e:',
      "    bad.append(f'{name}: {type(e).__name__}: {e}')",
      "print(len(mods)); print('\\n'.join(bad))"])
  out = subprocess.run([sys.executable, '-c', code], cwd=os.path.dirname(ROOT), capture_output=True, text=True,
                       timeout=300, check=True).stdout.splitlines()
  assert int(out[0]) > 50 and out[1:] in ([], ['']), '\n'.join(out[1:])
