"""scripts/job_times.py: its pieces in-process (the timed run itself: tests/test_scripts.py)."""
from scripts import job_times


def test_the_last_line_drops_absl_s_prefix_and_blank_lines():
  text = ('noise\nI1127 17:31:05.882651 139629676145536 execution.py:217] optimizer: converged '
          'after 177 steps; reconstructed: 6 of 6\n\n')
  assert job_times.last_line(text) == 'optimizer: converged after 177 steps; reconstructed: 6 of 6'
  assert job_times.last_line('plain line') == 'plain line' and job_times.last_line('') == ''


def test_an_unknown_job_is_one_line_and_exit_2(tmp_path, capsys):
  assert job_times.main(['--jobs=rf_synthetic,nope', f'--out={tmp_path / "t"}']) == 2
  err = capsys.readouterr().err
  assert "--jobs: unknown ['nope']" in err and 'rf_synthetic' in err
  assert not (tmp_path / 't.json').exists()


def test_every_job_of_the_readme_table_is_timed_and_exists():
  import os
  import re
  with open(os.path.join(job_times.ROOT, 'README.md')) as f:
    table = re.findall(r'^\| `(\w+)\.py` \|', f.read(), re.M)
  assert table == list(job_times.JOBS)
  assert all(os.path.exists(os.path.join(job_times.ROOT, 'configs', j + '.py')) for j in table)


def test_the_audit_job_has_the_page_s_two_files():
  files = job_times.doc_files()
  assert set(files) == {'my_models.py', 'train_mlp.py'} and 'class MLP' in files['my_models.py']


def test_the_readme_s_times_are_the_measured_ones():
  # Every time cell of the README's Jobs table (and the CPU shrink of rf_cifar) is
  # results/job_times.json's wall time rounded to the second: a re-measurement that changes a
  # time fails here until the README says it.
  import json
  import os
  import re
  with open(os.path.join(job_times.ROOT, 'results', 'job_times.json')) as f:
    measured = {r['job']: r for r in json.load(f)['records']}
  with open(os.path.join(job_times.ROOT, 'README.md')) as f:
    rows = re.findall(r'^\| `(\w+)\.py` \| (.*) \| (.*) \| .* \|$', f.read(), re.M)
  assert {job for job, _, _ in rows} == set(measured)
  for job, what, time_cell in rows:
    rec = measured[job]
    assert rec['exit_status'] == 0, job
    cell = what if job == 'rf_cifar' else time_cell
    seconds = re.findall(r'(\d+) s\b', cell)
    assert seconds and int(seconds[-1]) == round(rec['seconds']), (job, cell, rec['seconds'])
