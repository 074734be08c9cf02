"""Shared test set-up: tests run on the CPU with tiny sizes."""
import atexit
import os
import shutil
import sys
import tempfile

os.environ.setdefault('JAX_PLATFORMS', 'cpu')
# One persistent compilation cache per test session (recon/runtime/compile_cache.py), in a temporary
# folder that subprocesses (CLI and script tests) inherit: tests that build the same program
# compile it once, and nothing is written to the user's ~/.cache. RECON_COMPILATION_CACHE set
# by the caller (a folder, or 'off') is respected.
if 'RECON_COMPILATION_CACHE' not in os.environ:
  _CACHE = tempfile.mkdtemp(prefix='recon-tests-jax-cache-')
  os.environ['RECON_COMPILATION_CACHE'] = _CACHE
  atexit.register(shutil.rmtree, _CACHE, ignore_errors=True)
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
  sys.path.insert(0, REPO_ROOT)


import jax  # noqa: E402  (after JAX_PLATFORMS is set)
import pytest  # noqa: E402

from recon.runtime import compile_cache  # noqa: E402

compile_cache.enable()


@pytest.fixture(autouse=True)
def _restore_x64():
  """A float64 run switches jax_enable_x64 on process-wide; give the next test float32 back."""
  before = jax.config.jax_enable_x64
  yield
  if jax.config.jax_enable_x64 != before:
    jax.config.update('jax_enable_x64', before)


@pytest.fixture(autouse=True)
def _restore_matmul_precision():
  """A run sets jax_default_matmul_precision process-wide (config.run.matmul_precision)."""
  before = jax.config.jax_default_matmul_precision
  yield
  if jax.config.jax_default_matmul_precision != before:
    jax.config.update('jax_default_matmul_precision', before)


def subprocess_env(**extra):
  """os.environ for a child Python that imports this checkout's `recon` and the parent's
  packages: PYTHONPATH = the repo root + the parent's sys.path (JAX 0.11's tests ran
  subprocesses without the parent's import path), plus `extra`."""
  env = dict(os.environ)
  paths = [REPO_ROOT] + [p for p in sys.path if p and p != REPO_ROOT]
  old = env.get('PYTHONPATH')
  if old:
    paths += [p for p in old.split(os.pathsep) if p and p not in paths]
  env['PYTHONPATH'] = os.pathsep.join(paths)
  env.update({k: str(v) for k, v in extra.items()})
  return env


# --cpu-times=PATH: each test's CPU seconds (its process's and the children it waited for), one
# `seconds<TAB>node id` line each, and their total in the summary. On a shared machine a test's
# wall time follows the load; its CPU time does not, so compare these before and after a change.
def pytest_addoption(parser):
  parser.addoption('--cpu-times', metavar='PATH', default=None,
                   help="write each test's CPU seconds to PATH and print the total")


def _cpu_seconds():
  import resource  # pylint: disable=import-outside-toplevel
  own, children = (resource.getrusage(who) for who in (resource.RUSAGE_SELF,
                                                       resource.RUSAGE_CHILDREN))
  return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pytest_configure(config):
  path = config.getoption('cpu_times')
  if path and not hasattr(config, 'workerinput'):  # the controller (or -n 0) starts it empty
    open(path, 'w', encoding='utf-8').close()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # pylint: disable=unused-argument
  path = item.config.getoption('cpu_times')
  start = _cpu_seconds() if path else None
  yield
  if path:
    with open(path, 'a', encoding='utf-8') as f:
      f.write(f'{_cpu_seconds() - start:.2f}\t{item.nodeid}\n')


def pytest_terminal_summary(terminalreporter, config):
  path = config.getoption('cpu_times')
  if not path or hasattr(config, 'workerinput') or not os.path.exists(path):
    return
  rows = [line.split('\t', 1) for line in open(path, encoding='utf-8') if '\t' in line]
  rows = sorted(((float(s), n.strip()) for s, n in rows), reverse=True)
  terminalreporter.write_sep('=', f'CPU seconds: {sum(s for s, _ in rows):.0f} over {len(rows)} '
                             f'tests (per test: {path})')
  for seconds, node in rows[:15]:
    terminalreporter.write_line(f'{seconds:8.2f}s  {node}')
