"""Shared test set-up: tests run on the CPU with tiny sizes."""
import os
import sys

os.environ.setdefault('JAX_PLATFORMS', 'cpu')
REPO_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO_ROOT not in sys.path:
  sys.path.insert(0, REPO_ROOT)


import jax  # noqa: E402  (after JAX_PLATFORMS is set)
import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _restore_x64():
  """A float64 run switches jax_enable_x64 on process-wide; give the next test float32 back."""
  before = jax.config.jax_enable_x64
  yield
  if jax.config.jax_enable_x64 != before:
    jax.config.update('jax_enable_x64', before)
