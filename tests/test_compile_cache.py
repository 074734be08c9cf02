"""recon/runtime/compile_cache.py: the persistent compilation cache (folder choice, reuse across
processes with identical results, graceful fallback). Each process-level check runs in a
fresh interpreter, since JAX sets its cache up once per process."""
import json
import os
import subprocess
import sys

import pytest

from recon.runtime import compile_cache
from conftest import subprocess_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Enables the cache, stores every program (threshold 0: the mechanism, not the threshold, is
# under test), runs one jitted computation, reports the cache's events and the result.
PROBE = r"""
import json, sys
import jax, jax.numpy as jnp
from recon.runtime import compile_cache
events = []
jax.monitoring.register_event_listener(lambda name, **kw: events.append(name))
path = compile_cache.enable()
if path is not None:
  jax.config.update('jax_persistent_cache_min_compile_time_secs', 0.0)
x = jax.random.normal(jax.random.PRNGKey(0), (64, 32))
f = jax.jit(lambda a: jnp.sum(jnp.tanh(a @ a.T) ** 2, axis=1))
y = f(x)
print(json.dumps({'dir': path, 'jax_dir': jax.config.jax_compilation_cache_dir,
                  'hits': events.count('/jax/compilation_cache/cache_hits'),
                  'misses': events.count('/jax/compilation_cache/cache_misses'),
                  'y': [float(v).hex() for v in y]}))
"""


def _probe(**env):
  full = {k: v for k, v in subprocess_env().items()
          if k not in ('RECON_COMPILATION_CACHE', 'JAX_COMPILATION_CACHE_DIR')}
  full.update(**env)
  out = subprocess.run([sys.executable, '-c', PROBE], capture_output=True, text=True, env=full,
                       cwd=ROOT, timeout=300)
  assert out.returncode == 0, out.stderr[-2000:]
  return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def test_requested_dir(monkeypatch, tmp_path):
  monkeypatch.delenv(compile_cache.ENV, raising=False)
  monkeypatch.setenv('XDG_CACHE_HOME', str(tmp_path))
  assert compile_cache.requested_dir() == os.path.join(str(tmp_path), 'recon', 'jax')
  monkeypatch.delenv('XDG_CACHE_HOME')
  monkeypatch.setenv('HOME', str(tmp_path / 'home'))
  assert compile_cache.requested_dir() == os.path.join(str(tmp_path), 'home', '.cache', 'recon',
                                                       'jax')
  for off in ('off', 'OFF', ' off '):
    monkeypatch.setenv(compile_cache.ENV, off)
    assert compile_cache.requested_dir() is None
  monkeypatch.setenv(compile_cache.ENV, str(tmp_path / 'cc'))
  assert compile_cache.requested_dir() == str(tmp_path / 'cc')


@pytest.mark.slow  # fresh Python processes that import JAX
def test_second_process_reuses_the_program_with_identical_results(tmp_path):
  cache = tmp_path / 'cache'
  first, _ = _probe(RECON_COMPILATION_CACHE=str(cache))
  assert first['dir'] == first['jax_dir'] == str(cache)
  assert first['hits'] == 0 and first['misses'] >= 1
  stored = sorted(os.listdir(cache))
  assert stored
  second, _ = _probe(RECON_COMPILATION_CACHE=str(cache))
  assert second['hits'] >= 1 and second['misses'] == 0
  assert second['y'] == first['y']  # bit for bit
  assert sorted(os.listdir(cache)) == stored  # nothing new written on a hit


@pytest.mark.slow  # fresh Python processes that import JAX
def test_off_leaves_jax_uncached(tmp_path):
  res, _ = _probe(RECON_COMPILATION_CACHE='off', XDG_CACHE_HOME=str(tmp_path))
  assert res['dir'] is None and res['jax_dir'] is None and res['hits'] == 0
  assert not os.listdir(tmp_path)


@pytest.mark.slow  # fresh Python processes that import JAX
def test_a_folder_set_through_jax_wins(tmp_path):
  res, _ = _probe(RECON_COMPILATION_CACHE=str(tmp_path / 'ours'),
                  JAX_COMPILATION_CACHE_DIR=str(tmp_path / 'theirs'))
  assert res['dir'] == res['jax_dir'] == str(tmp_path / 'theirs')
  assert not (tmp_path / 'ours').exists()


@pytest.mark.slow  # fresh Python processes that import JAX
def test_unwritable_folder_warns_and_runs_uncached(tmp_path):
  blocker = tmp_path / 'file'
  blocker.write_text('not a folder')
  res, err = _probe(RECON_COMPILATION_CACHE=str(blocker / 'cache'))
  assert res['dir'] is None and res['jax_dir'] is None
  assert compile_cache.ENV in err and 'without a persistent cache' in err
