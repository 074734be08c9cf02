"""What the CLI's log leaves out: noise that a user would read as an error.

* orbax's per-save INFO lines (its warnings still pass);
* orbax's per-array thread errors repeating a full or read-only disk (`recon.runtime.failures.quiet`:
  the run's one `error:` line says it);
* matplotlib's "generated new fontManager" on a first run (a font cache being built);
* JAX's "Unable to initialize backend 'tpu': ... libtpu.so ..." on a machine without a TPU
  (JAX probes every backend it knows and logs the failure at INFO, which the CLI's verbosity
  shows), unless a TPU was asked for (JAX_PLATFORMS names 'tpu').
"""
from __future__ import annotations

import logging
import os

from recon.runtime import failures


def tpu_requested() -> bool:
  return 'tpu' in os.environ.get('JAX_PLATFORMS', '').lower()


class RunLogFilter(logging.Filter):
  """The CLI's filter on absl's handler (see the module docstring)."""

  def filter(self, record: logging.LogRecord) -> bool:
    if failures.quiet(record):
      return False
    if record.name.startswith('matplotlib') and record.levelno <= logging.INFO:
      return False
    if (record.name.startswith('jax') and not tpu_requested()
        and "Unable to initialize backend 'tpu'" in str(record.msg)):
      return False
    return record.levelno > 20 or 'orbax' not in record.pathname
