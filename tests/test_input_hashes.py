"""recon/runtime/input_hashes.py: a resumed run reads the same input files it started on."""
import os
import shutil

import pytest

from configs import rf_synthetic
from recon import errors, main
from recon.runtime import checkpoint, input_hashes


def _small(overrides=None):
  c = rf_synthetic.get_config()
  c.data.n, c.data.d, c.victim.p, c.attack.max_steps, c.run.chunk_steps = 4, 8, 320, 200, 25
  c.update_from_flattened_dict(overrides or {})
  return c


def test_content_hash_of_a_file_and_a_folder(tmp_path):
  f = tmp_path / 'a.bin'
  f.write_bytes(b'abc')
  one = input_hashes.content_hash(str(f))
  assert one['bytes'] == 3
  f.write_bytes(b'abd')  # same size, other bytes
  assert input_hashes.content_hash(str(f))['sha256'] != one['sha256']
  d = tmp_path / 'd'
  (d / 'sub').mkdir(parents=True)
  (d / 'sub' / 'x').write_bytes(b'1')
  (d / 'y').write_bytes(b'2')
  h = input_hashes.content_hash(str(d))
  assert h['bytes'] == 2 and h['of'] == 'content'
  os.rename(d / 'y', d / 'z')  # a renamed file is another folder
  assert input_hashes.content_hash(str(d))['sha256'] != h['sha256']


def test_check_names_the_changed_field(tmp_path):
  f = tmp_path / 'model.npz'
  f.write_bytes(b'one')
  c = _small({'victim.checkpoint': str(f)})
  saved = input_hashes.current(c)
  assert set(saved) == {'victim.checkpoint'}
  input_hashes.check(saved, c)  # unchanged: accepted
  input_hashes.check(None, c)  # an older run without a record: not checked
  f.write_bytes(b'two')
  with pytest.raises(errors.ExperimentError,
                     match=r'run.resume: victim.checkpoint: .*model.npz changed since the run'):
    input_hashes.check(saved, c)
  os.remove(f)
  with pytest.raises(errors.ExperimentError, match='is missing now'):
    input_hashes.check(saved, c)


@pytest.mark.slow  # three small runs
def test_a_stopped_audit_does_not_resume_on_another_model(tmp_path, monkeypatch, capsys):
  """#74 item 3: same path, same shapes, other weights -> refused in one line, exit 2."""
  assert main.execute(_small({'seed': 1}), str(tmp_path / 'a')) == 0
  assert main.execute(_small({'seed': 2}), str(tmp_path / 'b')) == 0
  model = tmp_path / 'model'
  shutil.copytree(tmp_path / 'a' / 'model', model)
  audit = {'victim.checkpoint': str(model), 'run.checkpoint_every_steps': 25}
  real = checkpoint.RunCheckpointer.__call__

  def killed(self, *a, **k):
    out = real(self, *a, **k)
    if self.saves:
      raise SystemExit(137)
    return out

  monkeypatch.setattr(checkpoint.RunCheckpointer, '__call__', killed)
  with pytest.raises(SystemExit):
    main.execute(_small(audit), str(tmp_path / 'audit'))
  monkeypatch.undo()
  assert checkpoint.read_inputs(str(tmp_path / 'audit'))['victim.checkpoint']['path'] == str(model)
  shutil.rmtree(model)
  shutil.copytree(tmp_path / 'b' / 'model', model)  # another model at the same path
  capsys.readouterr()
  assert main.execute(_small(dict(audit, **{'run.resume': True})), str(tmp_path / 'audit')) == 2
  err = capsys.readouterr().err.strip().splitlines()
  assert len(err) == 1 and 'victim.checkpoint' in err[0] and 'changed since the run started' in err[0]
  assert not (tmp_path / 'audit' / 'summary.json').exists()
  shutil.rmtree(model)
  shutil.copytree(tmp_path / 'a' / 'model', model)  # the original again: resumes and finishes
  assert main.execute(_small(dict(audit, **{'run.resume': True})), str(tmp_path / 'audit')) == 0
