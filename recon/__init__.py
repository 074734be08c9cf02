"""recon: reconstructing a model's training set from its parameters (JAX).

The Python API (recon/api.py), imported on first use so that `import recon` stays cheap:

    recon.get_config(job, overrides)   configs/<job>.py with {'section.field': value} applied
    recon.run(config, workdir)         one run (or sweep) as the CLI runs it -> recon.Result
    recon.load(workdir)                the Result of a finished run
    recon.registry                     the registered victims, objectives, data sets
"""

__version__ = '0.1.0'

_API = ('run', 'load', 'get_config', 'Result', 'RunError')


def __getattr__(name):
  if name in _API:
    from recon import api  # pylint: disable=import-outside-toplevel
    return getattr(api, name)
  if name == 'registry':  # with every built-in name registered (the pipelines import them all)
    import importlib  # pylint: disable=import-outside-toplevel
    importlib.import_module('recon.pipelines')
    return importlib.import_module('recon.registry')
  raise AttributeError(f'module recon has no attribute {name!r}')
