"""recon: reconstructing a model's training set from its parameters (JAX).

The Python API (recon/api.py), imported on first use so that `import recon` stays cheap:

    recon.get_config(job, overrides)   configs/<job>.py with {'section.field': value} applied
    recon.run(config, workdir)         one run (or sweep) as the CLI runs it -> recon.Result
    recon.load(workdir)                the Result of a finished run
    recon.registry                     the registered victims, objectives, data sets
    recon.setup_process()              the command line's once-per-process setup (scripts)
    recon.load_data(config, seed)      the training set a run of `config` at `seed` draws
    recon.leak_width_shadows(...)      the leak-width pipeline's shadow runs, without its fit
    recon.recertify(from_dir, to_dir)  a finished sweep's certificate and rung run again
    recon.sample_shares(workdir)       the share of theta each training sample of a run carries
    recon.truth_certificate(workdir)   the certificate at a run's true rows: the most any attack certifies

Public modules besides (recon.api.PUBLIC_MODULES, docs/api.md): recon.registry, recon.config.validate,
recon.data, recon.metrics, recon.runtime.io, recon.runtime.machine, recon.audit.rero, recon.audit.threshold. Everything else
is internal.
"""

__version__ = '0.1.0'

_API = ('run', 'load', 'get_config', 'Result', 'RunError', 'setup_process', 'load_data',
        'leak_width_shadows', 'recertify', 'sample_shares', 'truth_certificate')


def __getattr__(name):
  if name in _API:
    from recon import api  # pylint: disable=import-outside-toplevel
    return getattr(api, name)
  if name == 'registry':  # its first read imports the built-ins (registry.BUILTINS)
    import importlib  # pylint: disable=import-outside-toplevel
    return importlib.import_module('recon.registry')
  raise AttributeError(f'module recon has no attribute {name!r}')
