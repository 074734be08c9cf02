"""Errors a run reports as one line (recon.main prints it and exits with status 2).

Lives at the bottom of the package so that low modules (data loaders) can raise
it without importing the experiment driver.
"""


class ExperimentError(RuntimeError):
  """A run that cannot start or finish; the message is one line."""
