"""Beyond one host (recon/runtime/distributed.py): the environment / config parsing, and two local
processes (jax.distributed over 127.0.0.1, gloo collectives on CPU) whose feature-sharded
loss and gradient equal the single-process ones."""
import json
import os
import socket
import subprocess
import sys

import numpy as np
import pytest

from recon.runtime import distributed

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORKER = os.path.join(ROOT, 'tests', 'distributed_worker.py')


def test_requested_single_process_by_default():
  assert distributed.requested(None, {}) is None
  assert distributed.requested(False, {}) is None


def test_requested_from_environment_and_config():
  env = {'JAX_COORDINATOR_ADDRESS': '10.0.0.1:1234', 'JAX_NUM_PROCESSES': '4',
         'JAX_PROCESS_ID': '3'}
  assert distributed.requested(None, env) == {'coordinator_address': '10.0.0.1:1234',
                                              'num_processes': 4, 'process_id': 3}
  assert distributed.requested(True, {}) == {}  # cluster auto-detection
  with pytest.raises(ValueError, match='JAX_NUM_PROCESSES'):
    distributed.requested(None, {'JAX_COORDINATOR_ADDRESS': 'h:1'})
  with pytest.raises(ValueError, match='must be in'):
    distributed.requested(None, dict(env, JAX_PROCESS_ID='4'))


def _free_port():
  with socket.socket() as s:
    s.bind(('127.0.0.1', 0))
    return s.getsockname()[1]


def _launch(tmp_path, residual, devices_per_process):
  port = _free_port()
  procs, outs = [], []
  for i in range(2):
    env = dict(os.environ, JAX_PLATFORMS='cpu', JAX_COORDINATOR_ADDRESS=f'127.0.0.1:{port}',
               JAX_NUM_PROCESSES='2', JAX_PROCESS_ID=str(i),
               XLA_FLAGS=f'--xla_force_host_platform_device_count={devices_per_process}')
    out = tmp_path / f'{residual}_{i}.json'
    outs.append(out)
    procs.append(subprocess.Popen([sys.executable, WORKER, str(out), residual], env=env,
                                  stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True))
  logs = []
  try:
    for p in procs:
      logs.append(p.communicate(timeout=240)[0])
  finally:
    for p in procs:
      if p.poll() is None:
        p.kill()
  for p, log in zip(procs, logs):
    assert p.returncode == 0, log[-3000:]
  return [json.loads(o.read_text()) for o in outs]


@pytest.mark.slow
@pytest.mark.parametrize('residual,devices_per_process', [('two_pass', 1), ('stored', 2)])
def test_two_processes_sharded_loss_and_grad_equal_single_process(tmp_path, residual,
                                                                  devices_per_process):
  import jax  # pylint: disable=import-outside-toplevel
  sys.path.insert(0, os.path.join(ROOT, 'tests'))
  import distributed_worker  # pylint: disable=import-outside-toplevel
  from recon.pipelines import random_features as rf  # pylint: disable=import-outside-toplevel
  results = _launch(tmp_path, residual, devices_per_process)
  # This (single) process: the same problem, unsharded.
  prob, x_hat, chunk = distributed_worker.problem_and_x()
  loss = rf.rf_lean_loss(activation='relu_tanh', chunk=chunk, jitter=1e-6, residual=residual)
  v_ref, g_ref = jax.jit(jax.value_and_grad(loss))(x_hat, prob)
  for r in results:
    assert r['process_count'] == 2
    assert r['mesh_size'] == r['device_count'] == 2 * devices_per_process
    np.testing.assert_allclose(r['loss_sharded'], float(v_ref), rtol=1e-5)
    np.testing.assert_allclose(np.asarray(r['grad_sharded']), np.asarray(g_ref), rtol=1e-4,
                               atol=1e-6)
    np.testing.assert_allclose(r['loss_local'], float(v_ref), rtol=1e-6)
  assert results[0]['loss_sharded'] == results[1]['loss_sharded']
