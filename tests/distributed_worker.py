"""One process of the two-process test (tests/test_distributed.py); not a test itself.

    python tests/distributed_worker.py OUT.json RESIDUAL   (env: XLA_FLAGS device count,
    JAX_COORDINATOR_ADDRESS, JAX_NUM_PROCESSES, JAX_PROCESS_ID)

Initialises jax.distributed through recon.runtime.distributed, builds a small memory-lean
random-features problem, and writes the feature-sharded (global mesh over both processes)
loss and gradient next to this process's unsharded ones.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from recon.runtime import distributed  # noqa: E402

N, D, P, CHUNK = 4, 6, 96, 12


def problem_and_x():
  import jax  # pylint: disable=import-outside-toplevel
  import jax.numpy as jnp  # pylint: disable=import-outside-toplevel

  from recon import data  # pylint: disable=import-outside-toplevel
  from recon.attack import driver
  from recon.runtime import runs
  from recon.pipelines import random_features as rf  # pylint: disable=import-outside-toplevel
  keys = runs.split_keys(0)
  x, y = data.synthetic_sphere(keys['data'], N, D)
  chunk, n_chunks = rf.lean_layout(P, CHUNK, 4)
  prob = jax.jit(lambda k, x, y: rf.make_rf_problem_lean(
      k, x, y, p=P, activation='relu_tanh', chunk=chunk, n_chunks=n_chunks))(keys, x, y)
  prob.pop('train_mse')
  x_hat = driver.init_candidates(keys['init'], N, D, jnp.float32)
  return prob, x_hat, chunk


def main():
  out, residual = sys.argv[1], sys.argv[2]
  assert distributed.initialize(False), 'JAX_COORDINATOR_ADDRESS etc. must be set'
  import jax  # pylint: disable=import-outside-toplevel
  import numpy as np  # pylint: disable=import-outside-toplevel

  from recon.objectives import projection_streamed  # pylint: disable=import-outside-toplevel
  from recon.pipelines import random_features as rf  # pylint: disable=import-outside-toplevel
  prob, x_hat, chunk = problem_and_x()
  mesh = projection_streamed.feature_mesh(jax.device_count())
  sharded = rf.rf_lean_loss(activation='relu_tanh', chunk=chunk, jitter=1e-6,
                            residual=residual, mesh=mesh)
  local = rf.rf_lean_loss(activation='relu_tanh', chunk=chunk, jitter=1e-6, residual=residual)
  v_s, g_s = jax.jit(jax.value_and_grad(sharded))(distributed.replicate(x_hat, mesh),
                                                  distributed.replicate(prob, mesh))
  v_l, g_l = jax.jit(jax.value_and_grad(local))(x_hat, prob)
  with open(out, 'w') as f:
    json.dump({'process_index': jax.process_index(), 'process_count': jax.process_count(),
               'device_count': jax.device_count(), 'local_device_count': jax.local_device_count(),
               'mesh_size': int(mesh.devices.size), 'loss_sharded': float(v_s),
               'grad_sharded': np.asarray(g_s).tolist(), 'loss_local': float(v_l),
               'grad_local': np.asarray(g_l).tolist()}, f)


if __name__ == '__main__':
  main()
