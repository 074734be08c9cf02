"""A wheel is enough: built from a copy of the source (as a Colab user uploads it) and installed
with --no-deps into a bare prefix, it imports, finds its job configs (recon/api.py configs_dir;
setup.cfg's data_files) and runs the notebook in a fresh kernel with no checkout on the path."""
import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope='module')
def installed(tmp_path_factory):
  """(site-packages, prefix) of recon's wheel installed alone into a fresh prefix."""
  tmp = tmp_path_factory.mktemp('wheel')
  src = tmp / 'src'
  src.mkdir()
  for name in ('recon', 'configs'):
    shutil.copytree(os.path.join(ROOT, name), src / name,
                    ignore=shutil.ignore_patterns('__pycache__'))
  for name in ('setup.cfg', 'pyproject.toml', 'README.md'):
    shutil.copy(os.path.join(ROOT, name), src / name)
  subprocess.run([sys.executable, '-m', 'pip', 'wheel', '-q', '--no-deps', '--no-build-isolation',
                  '-w', str(tmp / 'dist'), str(src)], check=True, capture_output=True, timeout=600)
  (wheel,) = glob.glob(str(tmp / 'dist' / 'recon-*.whl'))
  prefix = tmp / 'prefix'
  # --ignore-installed: the environment's own recon (an editable install) is left alone
  subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', '--no-deps', '--no-index',
                  '--ignore-installed',
                  '--prefix', str(prefix), wheel], check=True, capture_output=True, timeout=600)
  (site,) = glob.glob(str(prefix / 'lib' / 'python*' / 'site-packages'))
  return site, prefix


def _env(site):
  # the installed copy first on the path; the checkout nowhere on it (every cwd is elsewhere)
  return dict(os.environ, PYTHONPATH=site, SITE=site)


@pytest.mark.slow
def test_a_wheel_carries_the_configs_and_builds_a_config(installed, tmp_path):
  site, prefix = installed
  assert sorted(f for f in os.listdir(prefix / 'share' / 'recon' / 'configs')
                if f.endswith('.py')) == sorted(
      f for f in os.listdir(os.path.join(ROOT, 'configs')) if f.endswith('.py'))
  code = ('import os, recon\n'
          'from recon import api\n'
          'assert recon.__file__.startswith(os.environ["SITE"]), recon.__file__\n'
          'print(api.configs_dir())\n'
          'c = recon.get_config("audit", {"data.n": 3})\n'
          'print(c.data.n, c.name)\n')
  out = subprocess.run([sys.executable, '-c', code], cwd=tmp_path, env=_env(site),
                       capture_output=True, text=True, timeout=300)
  assert out.returncode == 0, out.stderr
  where, built = out.stdout.split('\n')[:2]
  assert where == str(prefix / 'share' / 'recon' / 'configs'), where
  assert built.split()[0] == '3'


@pytest.mark.slow
def test_the_notebook_runs_from_the_wheel_in_a_fresh_kernel(installed, tmp_path):
  """notebooks/audit.ipynb as on a fresh Colab runtime given the wheel: every cell runs (a
  failing cell raises here) with recon imported from the installed copy, and every record
  comes back."""
  import nbclient  # pylint: disable=import-outside-toplevel
  import nbformat  # pylint: disable=import-outside-toplevel
  site, _ = installed
  nb = nbformat.read(os.path.join(ROOT, 'notebooks', 'audit.ipynb'), as_version=4)
  nb.cells.append(nbformat.v4.new_code_cell(
      'import json\nprint(json.dumps({"file": recon.__file__, "configs": recon.api.configs_dir(),'
      ' "recovered": float(result.metrics["frac_recovered"])}))'))
  nbclient.NotebookClient(nb, timeout=600, kernel_name='python3',
                          resources={'metadata': {'path': str(tmp_path)}}).execute(env=_env(site))
  out = json.loads(''.join(o.get('text', '') for o in nb.cells[-1].outputs
                           if o.output_type == 'stream').strip().splitlines()[-1])
  assert out['file'].startswith(site) and out['configs'].startswith(os.path.dirname(
      os.path.dirname(os.path.dirname(os.path.dirname(site))))), out
  assert out['recovered'] == 1.0, out
  assert not os.path.exists(tmp_path / 'recon')  # nothing cloned or unpacked: the wheel alone



@pytest.mark.slow
def test_installing_the_wheel_leaves_the_environments_recon_alone(installed, tmp_path):
  """The fixture installs into its own prefix only: a fresh process, away from the checkout and
  with no PYTHONPATH, still imports this checkout's recon (a test run must not uninstall the
  user's editable install)."""
  env = {k: v for k, v in os.environ.items() if k != 'PYTHONPATH'}
  out = subprocess.run([sys.executable, '-c', 'import recon; print(recon.__file__)'],
                       cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
  assert out.returncode == 0 and out.stdout.startswith(ROOT), (out.stdout, out.stderr)
