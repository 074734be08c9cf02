"""The config is read once: `recon.execution.execute` resolves and validates it into a frozen
RunSpec (recon/config/sections.py), and below the composition root builders take their typed
sections, never the whole config (issue 67, item 3).

Everything here is read with `ast` from the code's definitions and imports (nothing is
imported): which functions take the whole config, and the config's trip from `execute`, every
call that passes the config or a part of it on.
"""
import ast
import os
from typing import Dict, List, Optional, Set, Tuple

from test_layering import LAYERS, ROOT, module_files

# The composition root: the command line, the Python API and `execute`, with the config's own
# package (recon/config: reading and validating it is its job), and these functions:
ROOT_MODULES = ('recon.main', 'recon.api', 'recon.execution', 'recon.config')
ROOT_FUNCTIONS = {
    # the registry's pipeline entry call (each registered pipeline's `run(spec, ...)` too)
    'recon.pipelines.run', 'recon.pipelines.pipeline_for',
    # the config's resolution, once (a saved model's fields adopted, the data file's sizes)
    'recon.pipelines.victims.resolve', 'recon.pipelines.victims.apply_model_checkpoint',
    # the sweep's entry: its config read into one RunSpec per grid point
    'recon.sweep.grid.run', 'recon.sweep.grid.expand', 'recon.sweep.grid._grid',
}
CONFIG_NAMES = ('config', 'cfg', 'spec')
WHOLE_TYPES = ('ConfigDict', 'RunSpec')
# The parts of a config that are sections (a leaf value read off one is a setting, not the config).
PARTS = ('data', 'victim', 'attack', 'run', 'leak_width', 'sweep', 'train', 'dp', 'reseed',
         'escalate', 'pursue', 'swap', 'cut', 'polish', 'split')
MAX_CLIMBS = 10  # issue 67's targets
MAX_ENTRIES = 3
TOP = LAYERS[-1]  # recon.execution, recon.api, recon.main, recon


def _annotation(arg: ast.arg) -> str:
  return ast.unparse(arg.annotation) if arg.annotation is not None else ''


def _functions(modules: Dict[str, str]):
  """(module, qualified name, node) of every function under recon/."""
  for module, path in sorted(modules.items()):
    tree = ast.parse(open(path).read(), path)
    stack = [(tree, '')]
    while stack:
      node, prefix = stack.pop()
      for child in ast.iter_child_nodes(node):
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef)):
          name = f'{prefix}{child.name}'
          yield module, name, child
          stack.append((child, name + '.'))
        elif isinstance(child, ast.ClassDef):
          stack.append((child, f'{prefix}{child.name}.'))


def _pipeline_entries(modules: Dict[str, str]) -> Set[Tuple[str, str]]:
  """(module, function) of every `registry.Pipeline(run=...)` registration."""
  out = set()
  for module, path in modules.items():
    for node in ast.walk(ast.parse(open(path).read(), path)):
      if (isinstance(node, ast.Call) and ast.unparse(node.func).endswith('Pipeline')):
        for kw in node.keywords:
          if kw.arg == 'run' and isinstance(kw.value, ast.Name):
            out.add((module, kw.value.id))
  return out


def _is_root(module: str, name: str, entries) -> bool:
  return (any(module == r or module.startswith(r + '.') for r in ROOT_MODULES)
          or f'{module}.{name}' in ROOT_FUNCTIONS or (module, name) in entries)


def whole_config_parameters(modules: Optional[Dict[str, str]] = None) -> List[str]:
  """'module.function(param)' of every parameter below the root that takes a config as it
  comes (annotated ConfigDict) or the whole run (annotated RunSpec, or named config / cfg /
  spec unless typed as one section, `sections.X`)."""
  modules = modules or module_files()
  entries = _pipeline_entries(modules)
  out = []
  for module, name, node in _functions(modules):
    if _is_root(module, name, entries):
      continue
    args = node.args.posonlyargs + node.args.args + node.args.kwonlyargs
    for arg in args:
      ann = _annotation(arg)
      whole = any(t in ann for t in WHOLE_TYPES) or (arg.arg in CONFIG_NAMES and not (
          ann.startswith('sections.') and ann != 'sections.RunSpec'))
      if whole:
        out.append(f'{module}.{name}({arg.arg})')
  return sorted(out)


def _layer(module: str) -> int:
  for i, layer in enumerate(LAYERS):
    if any(module == m or module.startswith(m + '.') for m in layer):
      return i
  raise AssertionError(f'{module} is in no layer of tests/test_layering.py')


def _calls(node: ast.AST):
  """The calls under `node` in the order they run: a call's arguments before the call."""
  for child in ast.iter_child_nodes(node):
    yield from _calls(child)
  if isinstance(node, ast.Call):
    yield node


class _Trip:
  """The config's trip from a function: every call passing a tainted value (the config, a
  section of it, or a name assigned from one) on to a function of recon/, followed into it."""

  def __init__(self, modules: Dict[str, str]):
    self.modules = modules
    self.defs: Dict[str, Dict[str, ast.AST]] = {}
    self.imports: Dict[str, Dict[str, str]] = {}
    for module, path in modules.items():
      tree = ast.parse(open(path).read(), path)
      self.defs[module] = {n.name: n for n in tree.body
                           if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))}
      self.imports[module] = self._imports(module, path, tree)
    self.sequence: List[str] = []
    self.calls: List[bool] = []  # each step of the sequence: a call (True) or a return
    self.seen: Set[Tuple[str, str, Tuple[str, ...]]] = set()

  def _imports(self, module, path, tree) -> Dict[str, str]:
    """{local name: dotted target} of the module's imports (anywhere in the file)."""
    out = {}
    is_package = os.path.basename(path) == '__init__.py'
    for node in ast.walk(tree):
      if isinstance(node, ast.Import):
        for a in node.names:
          if a.asname:
            out[a.asname] = a.name
      elif isinstance(node, ast.ImportFrom):
        if node.level:
          pkg = module.split('.') if is_package else module.split('.')[:-1]
          pkg = pkg[:len(pkg) - node.level + 1]
          base = '.'.join(pkg + ([node.module] if node.module else []))
        else:
          base = node.module or ''
        for a in node.names:
          out[a.asname or a.name] = f'{base}.{a.name}'
    return out

  def _callee(self, module: str, func: ast.AST) -> Optional[Tuple[str, str]]:
    """(module, function) a call's target names in recon/, if it is a module-level function."""
    if isinstance(func, ast.Name):
      if func.id in self.defs[module]:
        return module, func.id
      target = self.imports[module].get(func.id)
      if target:
        mod, _, name = target.rpartition('.')
        if mod in self.defs and name in self.defs[mod]:
          return mod, name
    elif isinstance(func, ast.Attribute) and isinstance(func.value, ast.Name):
      target = self.imports[module].get(func.value.id)
      if target in self.defs and func.attr in self.defs[target]:
        return target, func.attr
    return None

  def _carries(self, value: ast.AST, target: str, names: Set[str]) -> bool:
    """Whether `target = value` holds the config or a part of it: a part read off it
    (`attack = cfg.attack`), what a method of it gives (`record = config.to_dict()`), or a
    config-named result of a call on it (`cfg = victims.resolve(config)`, `spec =
    RunSpec.from_config(cfg)`; a call's other results, a summary, are not the config)."""
    if self._tainted(value, names):
      return True
    if not isinstance(value, ast.Call):
      return False
    if isinstance(value.func, ast.Attribute) and self._tainted(value.func.value, names):
      return True
    return (target in CONFIG_NAMES or target.endswith('_cfg')) and any(
        isinstance(n, ast.Name) and n.id in names
        for a in list(value.args) + [k.value for k in value.keywords] for n in ast.walk(a))

  @staticmethod
  def _tainted(expr: ast.AST, names: Set[str]) -> bool:
    """Whether `expr` is the config or a part of it: a tainted name, or a section read off
    one (`cfg.attack`, `spec.victim.train`, `record['run']`; a leaf value, `cfg.victim.name`,
    is a setting handed on, not the config)."""
    while isinstance(expr, (ast.Attribute, ast.Subscript)):
      key = expr.attr if isinstance(expr, ast.Attribute) else (
          expr.slice.value if isinstance(expr.slice, ast.Constant) else None)
      if key not in PARTS:
        return False
      expr = expr.value
    return isinstance(expr, ast.Name) and expr.id in names

  def follow(self, module: str, name: str, params: Tuple[str, ...]) -> None:
    key = (module, name, params)
    if key in self.seen:
      return
    self.seen.add(key)
    node = self.defs[module][name]
    names = set(params)
    for stmt in ast.walk(node):  # names assigned from the config or a part of it
      if isinstance(stmt, ast.Assign):
        for t in stmt.targets:
          pairs = ([(t, stmt.value)] if not isinstance(t, ast.Tuple) else
                   list(zip(t.elts, stmt.value.elts)) if isinstance(stmt.value, ast.Tuple) else [])
          for target, value in pairs:  # `a = cfg.attack`, `d, v = spec.data, spec.victim`
            if isinstance(target, ast.Name) and self._carries(value, target.id, names):
              names.add(target.id)
    for call in _calls(node):
      callee = self._callee(module, call.func)
      if callee is None:
        continue
      target = self.defs[callee[0]][callee[1]]
      formal = [a.arg for a in target.args.posonlyargs + target.args.args]
      passed = [formal[i] for i, a in enumerate(call.args)
                if i < len(formal) and self._tainted(a, names)]
      passed += [kw.arg for kw in call.keywords if kw.arg and self._tainted(kw.value, names)]
      if not passed:
        continue
      if callee[0] != module:
        self.sequence.append(callee[0])
        self.calls.append(True)
      self.follow(callee[0], callee[1], tuple(sorted(passed)))
      if callee[0] != module:
        self.sequence.append(module)  # back in the caller
        self.calls.append(False)


def config_trip(start=('recon.execution', 'execute', ('config',)), modules=None):
  """(climbs, {module: times entered}, sequence) of the config's trip from `start`.

  The sequence is every module the config arrives in, in call order, returns included (a
  module that gets the config back and passes it on again is in it again). A climb is a step of
  it to a higher layer of tests/test_layering.py below the top one (the config came back up to
  a module below the root to be sent down again; the root handing out its next section is not
  a climb, nor are the returns after the last pass); a module is entered once per call into it
  from another module."""
  trip = _Trip(modules or module_files())
  trip.follow(*start)
  seq = [start[0]] + trip.sequence
  calls = trip.calls
  last = max((i for i, is_call in enumerate(calls) if is_call), default=-1)
  climbs = sum(1 for i in range(last + 1)
               if not calls[i] and _layer(seq[i + 1]) > _layer(seq[i])
               and seq[i + 1] not in TOP)
  entries: Dict[str, int] = {}
  for module, is_call in zip(seq[1:], calls):
    if is_call:
      entries[module] = entries.get(module, 0) + 1
  return climbs, entries, seq


def test_no_function_below_the_root_takes_the_whole_config():
  found = whole_config_parameters()
  print(f'whole-config (or ConfigDict) parameters below the composition root: {len(found)}')
  assert not found, f'take their sections instead: {found}'


def test_the_configs_trip_from_execute():
  climbs, entries, _ = config_trip()
  most = max(entries.items(), key=lambda kv: kv[1]) if entries else ('-', 0)
  print(f'config trip from execute: {climbs} climbs, {len(entries)} modules, '
        f'most entered {most[0]} x{most[1]}')
  for module, name in sorted(_pipeline_entries(module_files())):  # below the registry's entry
    c, entered, _ = config_trip((module, name, ('spec',)))
    print(f'  from {module}.{name}: {c} climbs, {len(entered)} modules, most entered '
          f'x{max(entered.values(), default=0)}')
  assert climbs <= MAX_CLIMBS
  assert most[1] <= MAX_ENTRIES


def test_the_counts_see_a_whole_config_parameter_and_a_climb(tmp_path):
  """The walkers find what they look for (a module tree written here)."""
  pkg = tmp_path / 'recon'
  (pkg / 'data').mkdir(parents=True)
  (pkg / 'pipelines').mkdir()
  (pkg / '__init__.py').write_text('')
  (pkg / 'data' / '__init__.py').write_text('def load(data):\n  return data.n\n')
  (pkg / 'pipelines' / '__init__.py').write_text(
      'from recon import data\n'
      'def helper(cfg):\n  return data.load(cfg.data)\n'
      'def build(cfg):\n  data.load(cfg.data)\n  return helper(cfg)\n')
  (pkg / 'execution.py').write_text(
      'from recon import pipelines\ndef execute(config):\n  return pipelines.build(config)\n')
  modules = module_files(str(pkg))
  assert whole_config_parameters(modules) == ['recon.pipelines.build(cfg)',
                                              'recon.pipelines.helper(cfg)']
  climbs, entries, seq = config_trip(modules=modules)
  assert seq == ['recon.execution', 'recon.pipelines', 'recon.data', 'recon.pipelines',
                 'recon.data', 'recon.pipelines', 'recon.execution']
  assert entries == {'recon.pipelines': 1, 'recon.data': 2} and climbs == 1
