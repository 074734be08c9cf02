"""Every shell command docs/audit.md shows runs as written (#69): the page's own files, its
`python -c` data step and training script, then each `python -m recon.main` line, in a fresh
folder beside a link to configs/. Only the size changes: a few flags appended at the end (fewer
steps, tiny leak-width shadows), never a flag of the page removed or edited. Files the page
assumes you have (a PyTorch state_dict, an .npz random-features model) are made first."""
import os
import re
import shlex
import subprocess
import sys

import numpy as np
import pytest

from conftest import subprocess_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(ROOT, 'docs', 'audit.md')
# Appended to every recon.main command (a later flag wins): small budgets, tiny shadows.
TINY = ['--config.attack.max_steps=60']
TINY_LEAK_WIDTH = ['--config.leak_width.shadow_n=(3,4)', '--config.leak_width.ratios=(0.5,8.0)',
                   '--config.leak_width.shadow_seeds=(1000,1001)',
                   '--config.leak_width.bootstrap=5', '--config.leak_width.model=constant']


def page_commands(path=PAGE):
  """The commands of the page's ```bash blocks, backslash continuations joined, comments out."""
  text = open(path, encoding='utf-8').read()
  out = []
  for block in re.findall(r'```bash\n(.*?)```', text, re.S):
    joined = re.sub(r'\\\n\s*', ' ', block)
    out += [line.strip() for line in joined.splitlines()
            if line.strip() and not line.strip().startswith('#')]
  return out


def page_files(path=PAGE):
  text = open(path, encoding='utf-8').read()
  return dict(re.findall(r'<!-- file: (\S+) -->\n```python\n(.*?)```', text, re.S))


def test_the_page_shows_the_commands_this_test_runs():
  commands = page_commands()
  mains = [c for c in commands if 'recon.main' in c]
  assert len(mains) >= 5 and any('leak_width' in c for c in mains)
  assert any(c.startswith('python -c') for c in commands)
  assert set(page_files()) >= {'my_models.py', 'train_mlp.py'}


def _assumed_files(folder):
  """What the page says you bring: mlp(.|_init.)safetensors (a PyTorch nn.Sequential's
  state_dict, from the trained MLP: weight (out, in)) and rf.npz (V, theta)."""
  from flax import serialization  # pylint: disable=import-outside-toplevel
  from safetensors.numpy import save_file  # pylint: disable=import-outside-toplevel
  for name in ('mlp', 'mlp_init'):
    raw = serialization.msgpack_restore((folder / f'{name}.msgpack').read_bytes())
    state = {}
    # nn.Dense(1)(relu(nn.Dense(hidden)(x))) creates the head first: it is Dense_0
    for i, layer in ((0, 'Dense_1'), (2, 'Dense_0')):
      state[f'{i}.weight'] = np.ascontiguousarray(np.asarray(raw[layer]['kernel']).T)
      state[f'{i}.bias'] = np.asarray(raw[layer]['bias'])
    save_file(state, str(folder / f'{name}.safetensors'))
  rng = np.random.default_rng(0)
  v = rng.normal(size=(1280, 16)) / 4.0
  x = np.load(folder / 'train.npz')['x']
  phi = np.maximum(x @ v.T, 0) + np.tanh(x @ v.T)
  theta = np.linalg.pinv(phi) @ np.load(folder / 'train.npz')['y']
  np.savez(folder / 'rf.npz', V=v, theta=theta)


def _run(command, folder):
  env = subprocess_env(JAX_PLATFORMS='cpu')
  words = shlex.split(command)
  if words and '=' in words[0] and not words[0].startswith('-'):  # PYTHONPATH=. python ...
    key, _, value = words.pop(0).partition('=')
    env[key] = value
  if words[:1] == ['python']:
    words[0] = sys.executable
  if 'recon.main' in words:
    words += TINY + (TINY_LEAK_WIDTH if any('leak_width' in w for w in words) else [])
  return subprocess.run(words, cwd=folder, env=env, capture_output=True, text=True, timeout=600)


@pytest.mark.slow  # every command of the page, a process each (~2-3 min on 2 cores)
def test_every_command_of_the_audit_page_runs(tmp_path):
  os.symlink(os.path.join(ROOT, 'configs'), tmp_path / 'configs')
  for name, code in page_files().items():
    (tmp_path / name).write_text(code)
  failed = []
  for command in page_commands():
    if 'recon.main' in command and not (tmp_path / 'rf.npz').exists() and \
        (tmp_path / 'mlp.msgpack').exists():
      _assumed_files(tmp_path)
    out = _run(command, tmp_path)
    if out.returncode != 0:
      failed.append(f'{command}\n  -> exit {out.returncode}: {out.stderr.strip()[-600:]}')
  assert not failed, '\n'.join(failed)
