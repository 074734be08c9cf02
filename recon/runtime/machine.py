"""What a result ran on: one line naming the JAX device(s) and the host CPU.

Every file in results/ records it, e.g. 'cpu: Intel(R) Xeon(R) Processor @ 2.50GHz,
2 cores visible' or '1 x NVIDIA H100 80GB HBM3 (gpu); host: AMD EPYC ..., 16 cores visible'.
"""
from __future__ import annotations

import os
import platform


def cpu_model() -> str:
  """The CPU's model name from /proc/cpuinfo, else Python's platform description."""
  try:
    with open('/proc/cpuinfo') as f:
      return next(line.split(':', 1)[1].strip() for line in f if line.startswith('model name'))
  except (OSError, StopIteration):
    return platform.processor() or platform.machine()


def describe() -> str:
  """'<n> x <device kind> (<platform>); host: <cpu>, <k> cores visible', or for CPU-only
  runs '<platform>: <cpu>, <k> cores visible'."""
  import jax  # pylint: disable=import-outside-toplevel
  devices = jax.devices()
  host = f'{cpu_model()}, {os.cpu_count()} cores visible'
  if devices[0].platform == 'cpu':
    return f'cpu: {host}'
  return f'{len(devices)} x {devices[0].device_kind} ({devices[0].platform}); host: {host}'
