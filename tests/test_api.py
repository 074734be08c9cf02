"""The Python API (recon/api.py): recon.get_config / recon.run / recon.load, no process."""
import numpy as np
import pytest

import recon


def test_import_recon_is_cheap_and_names_the_api():
  assert recon.__version__ and 'two_layer' in recon.registry.names('victim')
  with pytest.raises(AttributeError, match="no attribute 'nope'"):
    recon.nope  # pylint: disable=pointless-statement


def test_get_config_applies_overrides_and_refuses_unknown_fields():
  c = recon.get_config('rf_synthetic', {'data.n': 4, 'victim.p': 320})
  assert (c.data.n, c.victim.p) == (4, 320)
  with pytest.raises(recon.RunError, match=r'^config.data.nn: unknown field \(did you mean data.n'):
    recon.get_config('rf_synthetic', {'data.nn': 4})
  with pytest.raises(recon.RunError, match="^job: no config 'rf_nope'"):
    recon.get_config('rf_nope')


def test_a_refused_run_raises_the_clis_line_and_exit_status(tmp_path):
  with pytest.raises(recon.RunError, match=r'^config.data.n: invalid value 0') as e:
    recon.run(recon.get_config('rf_synthetic', {'data.n': 0}), str(tmp_path / 'w'))
  assert e.value.exit_code == 2 and not (tmp_path / 'w').exists()


@pytest.fixture(scope='module')
def finished(tmp_path_factory):
  """Three tiny finished runs that the tests below read (one run each, not one per test): the
  training file train4.npz (4 samples, d = 8) given by a path relative to the working directory,
  in float32 and float64 (both tol 1e-8), and train1.npz (one sample)."""
  import jax  # pylint: disable=import-outside-toplevel
  folder = tmp_path_factory.mktemp('api')
  rng = np.random.default_rng(0)
  runs, before = {}, (jax.config.jax_enable_x64, jax.config.jax_default_matmul_precision)
  with pytest.MonkeyPatch.context() as mp:
    mp.chdir(folder)
    for name, n, dtype in (('float32', 4, 'float32'), ('float64', 4, 'float64'),
                           ('one', 1, 'float32')):
      if not (folder / f'train{n}.npz').exists():
        np.savez(folder / f'train{n}.npz', x=rng.normal(size=(n, 8)),
                 y=rng.normal(size=n) + 2.0)
      c = recon.get_config('rf_synthetic', {'data.name': 'file', 'data.path': f'train{n}.npz',
                                            'data.n': None, 'data.d': None, 'victim.p': 256,
                                            'attack.max_steps': 20, 'attack.tol': 1e-8,
                                            'run.dtype': dtype})
      given = c.to_dict()
      result = recon.run(c, str(folder / name))
      runs[name] = {'workdir': str(folder / name), 'result': result, 'config': c,
                    'given': given, 'file': str(folder / f'train{n}.npz')}
  jax.config.update('jax_enable_x64', before[0])
  jax.config.update('jax_default_matmul_precision', before[1])
  return runs


def test_run_leaves_the_callers_config_as_it_was(finished):
  """The run resolves paths and the file's sizes on its own copy: a config reused for a second
  run (another workdir, another cwd) still says what the caller wrote."""
  run = finished['float32']
  assert run['result'].summary['config']['data']['path'] == run['file']
  c = run['config']
  assert c.to_dict() == run['given'] and c.data.path == 'train4.npz' and c.data.n is None


@pytest.mark.slow
def test_run_returns_what_it_wrote(tmp_path):
  c = recon.get_config('rf_synthetic', {'data.n': 4, 'data.d': 8, 'victim.p': 320,
                                        'attack.max_steps': 3000})
  result = recon.run(c, str(tmp_path / 'w'))
  assert result.metrics['frac_recovered'] == 1.0 and result.certified
  assert result.candidates.shape == (4, 8) and len(result.records) == 4
  assert {r['verdict'] for r in result.records} == {'pinned'}
  again = recon.load(str(tmp_path / 'w'))
  np.testing.assert_array_equal(again.candidates, result.candidates)
  assert 'frac_recovered=1.0' in repr(result)


def test_docs_api_shows_a_complete_audit_in_at_most_15_lines():
  """The issue's bound; tests/test_foreign.py runs the snippet as written."""
  from test_foreign import api_audit_snippet  # pylint: disable=import-outside-toplevel
  block = api_audit_snippet()
  assert len(block.strip().splitlines()) <= 15 and block.startswith('import recon\n')
  assert "'victim.module': 'my_models:MLP'" in block and 'recon.run(cfg' in block


def test_load_data_is_the_runs_training_set():
  """recon.load_data draws with the run's data key: the rows a run of that seed trains on."""
  from recon import data  # pylint: disable=import-outside-toplevel
  from recon.runtime import runs
  c = recon.get_config('rf_synthetic', {'data.n': 4, 'data.d': 5})
  x, y, meta = recon.load_data(c, 3)
  x_run, y_run, _ = data.load(c.data, runs.split_keys(3)['data'])
  assert x.shape == (4, 5) and y.shape == (4,) and isinstance(meta, dict)
  np.testing.assert_array_equal(x, x_run)
  np.testing.assert_array_equal(y, y_run)
  assert not np.array_equal(x, recon.load_data(c, 4)[0])


def test_setup_process_is_idempotent():
  first = recon.setup_process()
  assert recon.setup_process() == first


@pytest.mark.slow  # two runs, ~13 s
def test_a_nonfinite_run_raises_unless_nonfinite_ok(tmp_path):
  """Exit status 3 (the loss became non-finite) is a RunError, or with nonfinite_ok the Result
  of the last finite state (status 'nonfinite'), as a grid that expects divergence wants."""
  c = recon.get_config('rf_synthetic', {'data.n': 3, 'data.d': 4, 'victim.p': 120,
                                        'attack.max_steps': 50, 'run.chunk_steps': 25,
                                        'data.label_noise': 1e38})
  with pytest.raises(recon.RunError, match='non-finite') as e:
    recon.run(c, str(tmp_path / 'a'))
  assert e.value.exit_code == 3
  result = recon.run(c, str(tmp_path / 'b'), nonfinite_ok=True)
  assert result.metrics['status'] == 'nonfinite' and result.candidates is not None


def test_load_reads_nonfinite_numbers_back_as_floats(tmp_path):
  from recon.runtime import io  # pylint: disable=import-outside-toplevel
  io.write_json(str(tmp_path / 'summary.json'),
                {'metrics': {'loss': float('nan'), 'at': [float('inf'), -float('inf'), 1.0],
                             'status': 'nonfinite', 'name': 'inference'}})
  m = recon.load(str(tmp_path)).metrics
  assert np.isnan(m['loss']) and m['at'] == [float('inf'), -float('inf'), 1.0]
  assert (m['status'], m['name']) == ('nonfinite', 'inference')


def test_sample_shares_of_a_finished_run(finished, tmp_path):
  """One sample carries all of theta (theta = phi(x) y / ||phi||^2: share exactly 1); with more,
  each share is |alpha_i| ||phi_i|| / ||theta||, finite and positive; no model: one line, exit 2."""
  for name, n in (('one', 1), ('float32', 4)):
    shares = recon.sample_shares(finished[name]['workdir'])
    assert shares.shape == (n,) and np.all(np.isfinite(shares)) and np.all(shares > 0), shares
    if n == 1:
      np.testing.assert_allclose(shares, [1.0], rtol=1e-4)
  with pytest.raises(recon.RunError) as e:
    recon.sample_shares(str(tmp_path / 'nothing'))
  assert e.value.exit_code == 2 and '\n' not in str(e.value), str(e.value)


def test_truth_certificate_of_a_finished_run(finished, tmp_path):
  """The run's own tol and threshold; V regenerated in the victim's dtype (a float64 victim's
  truth scores float64's loss, not float32's); no model: one line, exit 2."""
  losses = {}
  for dtype in ('float32', 'float64'):
    out = recon.truth_certificate(finished[dtype]['workdir'])
    assert out['theta_dtype'] == dtype and out['attack']['tol'] == 1e-8, out
    assert out['certifiable'] and out['attack']['rows_pinned'] == 4, out
    losses[dtype] = out['loss64']
  assert losses['float64'] < 1e-20 < losses['float32'] < 1e-9, losses
  with pytest.raises(recon.RunError) as e:
    recon.truth_certificate(str(tmp_path / 'nothing'))
  assert e.value.exit_code == 2 and '\n' not in str(e.value), str(e.value)


def test_certified_is_none_where_the_attack_has_no_certificate(tmp_path):
  """repr and the property agree: None (no certificate: networks), True, False."""
  from recon.runtime import io  # pylint: disable=import-outside-toplevel
  for value in (None, True, False):
    metrics = {} if value is None else {'certified': value}
    io.write_json(str(tmp_path / 'summary.json'), {'metrics': metrics})
    result = recon.load(str(tmp_path))
    assert result.certified is value and f'certified={value}' in repr(result)
