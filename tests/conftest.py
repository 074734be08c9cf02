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
