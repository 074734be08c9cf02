"""Tests for recon/runtime/host.py: the glibc heap keeps large buffers mapped once tuned."""
import os
import subprocess
import sys

import pytest

from recon.runtime import host
from conftest import subprocess_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def fresh_state(monkeypatch):
  monkeypatch.setattr(host, '_state', {'applied': False})
  return host


def test_system_mode_leaves_the_heap_alone(fresh_state, monkeypatch):
  monkeypatch.setenv(host.ENV, 'system')
  assert fresh_state.keep_buffers_mapped() is False
  assert not fresh_state.is_tuned()


def test_bad_mode_names_the_variable_and_the_accepted_values(fresh_state, monkeypatch):
  monkeypatch.setenv(host.ENV, 'jemalloc')
  with pytest.raises(ValueError, match=r'RECON_HOST_MALLOC.*jemalloc.*tuned, system'):
    fresh_state.keep_buffers_mapped()


_PROBE = """
import numpy as np
from recon.runtime import host
def delta():
  before = host.mmapped_chunks()
  big = np.ones(64 << 18, np.float32)  # 64 MB: above glibc's largest mmap threshold (32 MB)
  return host.mmapped_chunks() - before
untuned = delta()
ok = host.keep_buffers_mapped()
print(untuned, ok, host.keep_buffers_mapped(), delta())
"""


@pytest.mark.skipif(host.mmapped_chunks() is None, reason='needs glibc (mallinfo2)')
def test_tuned_heap_serves_large_arrays_without_mmap(monkeypatch):
  """In a fresh process a 64 MB array is one mmap-served chunk; once tuned, none (idempotent)."""
  env = {k: v for k, v in subprocess_env().items() if k != host.ENV}
  out = subprocess.run([sys.executable, '-c', _PROBE], env=env, capture_output=True, text=True,
                       check=True).stdout.split()
  assert out == ['1', 'True', 'True', '0']
