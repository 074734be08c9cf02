"""A wheel is enough: built from a copy of the source (as a Colab user uploads it), installed
with --no-deps into a bare prefix, it imports, finds its job configs and builds a config with
no checkout on the path (recon/api.py configs_dir; setup.cfg's data_files)."""
import glob
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.slow
def test_a_wheel_carries_the_configs_and_runs_without_a_checkout(tmp_path):
  src = tmp_path / 'src'
  src.mkdir()
  for name in ('recon', 'configs'):
    shutil.copytree(os.path.join(ROOT, name), src / name,
                    ignore=shutil.ignore_patterns('__pycache__'))
  for name in ('setup.cfg', 'pyproject.toml', 'README.md'):
    shutil.copy(os.path.join(ROOT, name), src / name)
  subprocess.run([sys.executable, '-m', 'pip', 'wheel', '-q', '--no-deps', '--no-build-isolation',
                  '-w', str(tmp_path / 'dist'), str(src)], check=True, capture_output=True,
                 timeout=600)
  (wheel,) = glob.glob(str(tmp_path / 'dist' / 'recon-*.whl'))
  prefix = tmp_path / 'prefix'
  subprocess.run([sys.executable, '-m', 'pip', 'install', '-q', '--no-deps', '--no-index',
                  '--prefix', str(prefix), wheel], check=True, capture_output=True, timeout=600)
  (site,) = glob.glob(str(prefix / 'lib' / 'python*' / 'site-packages'))
  assert sorted(f for f in os.listdir(prefix / 'share' / 'recon' / 'configs')
                if f.endswith('.py')) == sorted(
      f for f in os.listdir(os.path.join(ROOT, 'configs')) if f.endswith('.py'))
  code = ('import os, recon\n'
          'from recon import api\n'
          'assert recon.__file__.startswith(os.environ["SITE"]), recon.__file__\n'
          'print(api.configs_dir())\n'
          'c = recon.get_config("audit", {"data.n": 3})\n'
          'print(c.data.n, c.name)\n')
  # the installed copy first on the path, the checkout nowhere on it (cwd is elsewhere)
  env = dict(os.environ, PYTHONPATH=site, SITE=site)
  out = subprocess.run([sys.executable, '-c', code], cwd=tmp_path, env=env, capture_output=True,
                       text=True, timeout=300)
  assert out.returncode == 0, out.stderr
  where, built = out.stdout.split('\n')[:2]
  assert where == str(prefix / 'share' / 'recon' / 'configs'), where
  assert built.split()[0] == '3'
