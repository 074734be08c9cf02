"""notebooks/audit.ipynb: committed clean, installs only where recon is missing, and executed top to
bottom in a fresh Jupyter kernel (nbclient) audits as its text says: every record back with W(0)."""
import json
import os

import nbformat
import pytest

import recon
from conftest import subprocess_env

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
NOTEBOOK = os.path.join(ROOT, 'notebooks', 'audit.ipynb')


def _notebook():
  nb = nbformat.read(NOTEBOOK, as_version=4)
  nbformat.validate(nb)
  return nb


def _execute(folder):
  """Runs a copy of the notebook in `folder` (its working directory) in a fresh Jupyter kernel
  with this checkout's recon first on the path (its install cell installs nothing); a cell that
  raises raises nbclient's CellExecutionError here, naming the cell. Returns the executed
  notebook."""
  import nbclient  # pylint: disable=import-outside-toplevel
  nb = _notebook()
  nbclient.NotebookClient(nb, timeout=600, kernel_name='python3',
                          resources={'metadata': {'path': folder}}).execute(env=subprocess_env())
  return nb


def _cell(nb, tag):
  (cell,) = [c for c in nb.cells if tag in c.get('metadata', {}).get('tags', [])]
  return cell


def test_the_committed_notebook_is_valid_with_outputs_cleared():
  nb = _notebook()
  code = [c for c in nb.cells if c.cell_type == 'code']
  assert [c.metadata['tags'][0] for c in code] == [
      'install', 'model', 'train', 'audit', 'records', 'verdict', 'outputs']
  assert all(c.outputs == [] and c.execution_count is None for c in code)
  # No shell or magic lines but the module file: the notebook runs the same anywhere.
  magics = [line for c in code for line in c.source.splitlines()
            if line.lstrip().startswith(('!', '%'))]
  assert magics == ['%%writefile my_models.py']


def test_the_install_cell_installs_only_where_recon_is_missing(monkeypatch, tmp_path):
  import importlib.util  # pylint: disable=import-outside-toplevel
  import subprocess  # pylint: disable=import-outside-toplevel
  import sys  # pylint: disable=import-outside-toplevel
  monkeypatch.setattr(sys, 'path', list(sys.path))  # the cell puts RECON_SOURCE on it
  source = _cell(_notebook(), 'install').source
  run = lambda: exec(compile(source, 'install', 'exec'), {})  # pylint: disable=exec-used
  calls = []
  monkeypatch.setattr(subprocess, 'check_call', calls.append)
  monkeypatch.chdir(os.path.join(ROOT, 'notebooks'))
  run()
  assert not calls  # recon is importable here: nothing installed
  real = importlib.util.find_spec
  monkeypatch.setattr(importlib.util, 'find_spec',
                      lambda name, *a: None if name == 'recon' else real(name, *a))
  run()  # as on a machine without recon: installs the checkout the notebook sits in
  assert calls == [[sys.executable, '-m', 'pip', 'install', '-q', '-e', '..']]
  assert sys.path[0] == ROOT
  monkeypatch.chdir(tmp_path)  # Colab's /content with no ./recon and no RECON_PIP: one clear error
  with pytest.raises(FileNotFoundError, match='no recon repository at .* RECON_PIP is empty'):
    run()
  assert len(calls) == 1
  # RECON_PIP set (an uploaded wheel): installed as given, never the index's unrelated 'recon'
  wheel = 'recon-0.1.0-py3-none-any.whl'
  exec(compile(source.replace("RECON_PIP = ''", f'RECON_PIP = {wheel!r}'), 'install', 'exec'), {})  # pylint: disable=exec-used
  assert calls[1] == [sys.executable, '-m', 'pip', 'install', '-q', wheel]


def test_docs_colab_shows_the_notebooks_install_cell():
  with open(os.path.join(ROOT, 'docs', 'colab.md')) as f:
    page = f.read()
  assert _cell(_notebook(), 'install').source in page


@pytest.mark.slow
def test_the_notebook_runs_and_audits_as_it_says(tmp_path):
  """Every cell in a fresh kernel (a failing cell raises here), then the workdir it wrote."""
  nb = _execute(str(tmp_path))
  text = '\n'.join(c.source for c in nb.cells if c.cell_type == 'markdown')
  assert 'every record comes back: each within 0.1, mean distance 0.0027' in ' '.join(text.split())

  result = recon.load(str(tmp_path / 'audit_mlp'))
  m = result.metrics
  assert (m['n'], m['d'], m['p_L']) == (8, 16, 1281)
  assert m['frac_recovered'] == 1.0 and round(m['recon_error'], 4) == 0.0027
  assert sorted(r['index'] for r in result.records) == list(range(8))
  assert all(r['recovered'] and r['distance'] < 0.1 and r['verdict'] == 'uncertified'
             for r in result.records)
  assert result.candidates.shape == (8, 16) and not result.certified
  assert {'summary.json', 'records.json', 'report.html'} <= set(os.listdir(result.workdir))

  printed = lambda tag: ''.join(o.get('text', '') for o in _cell(nb, tag).outputs
                                if o.output_type == 'stream' and o.name == 'stdout')
  assert printed('verdict').startswith('8 of 8 records recovered')
  assert printed('records').count('uncertified') == 8
  with open(tmp_path / 'audit_mlp' / 'records.json') as f:
    assert json.load(f) == result.records


def test_what_the_notebook_writes_is_ignored_by_git():
  """#69: running the notebook in notebooks/ leaves no untracked file (notebooks/.gitignore
  names every file and folder its cells write)."""
  import json  # pylint: disable=import-outside-toplevel
  import re  # pylint: disable=import-outside-toplevel
  with open(os.path.join(ROOT, 'notebooks', 'audit.ipynb')) as f:
    cells = json.load(f)['cells']
  code = '\n'.join(''.join(c['source']) for c in cells if c['cell_type'] == 'code')
  written = set(re.findall(r"%%writefile (\S+)", code))
  written |= set(re.findall(r"open\('([^']+)', 'wb'\)", code))
  written |= set(re.findall(r"np\.savez\('([^']+)'", code))
  written |= {w + '/' for w in re.findall(r"workdir='([^']+)'", code)}
  written |= {w + '/' for w in re.findall(r"WORKDIR = '([^']+)'", code)}
  with open(os.path.join(ROOT, 'notebooks', '.gitignore')) as f:
    ignored = {line.strip() for line in f if line.strip() and not line.startswith('#')}
  assert written and written <= ignored, written - ignored
