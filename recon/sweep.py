"""Vectorised sweeps (not yet implemented: see issue 3)."""


def run(config, workdir):
  raise NotImplementedError('sweeps')
