"""The workdir lock (recon.runtime.workdir_lock) on its own: one holder at a time, a hostile or
stale lock file taken over and rewritten, a file replaced under its owner left alone, the
unlink race retried. The whole-run refusals are in tests/test_reliability.py."""
import fcntl
import os
import subprocess
import sys

import pytest

from recon.errors import ExperimentError
from recon.runtime import workdir_lock

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture
def umask_022():
  old = os.umask(0o022)
  yield
  os.umask(old)


def test_acquire_creates_the_workdir_and_a_lock_naming_this_pid(tmp_path, umask_022):
  w = tmp_path / 'a' / 'b'
  lock = workdir_lock.acquire(str(w))
  path = w / workdir_lock.NAME
  assert lock.path == str(path)
  assert path.read_text() == f'{os.getpid()}\n'
  assert os.stat(path).st_mode & 0o777 == 0o644
  assert workdir_lock.owner(str(w)) == os.getpid()
  lock.release()
  assert not path.exists() and os.listdir(w) == []
  lock.release()  # idempotent
  assert os.listdir(w) == []


def test_a_hostile_stale_lock_longer_than_ours_is_truncated_not_overwritten(tmp_path):
  """A stale .lock (its owner dead: no flock held) holding a longer pid and trailing junk:
  the new owner's file is exactly its own pid, not its pid over the old tail."""
  w = tmp_path / 'w'
  w.mkdir()
  (w / workdir_lock.NAME).write_text('987654321987654321\n# junk left by someone else\n')
  lock = workdir_lock.acquire(str(w))
  try:
    assert (w / workdir_lock.NAME).read_text() == f'{os.getpid()}\n'
    assert workdir_lock.owner(str(w)) == os.getpid()
  finally:
    lock.release()


def test_a_held_lock_refuses_a_second_holder_naming_the_owner(tmp_path):
  """flock locks an open file description: a second acquire, even in this process, is
  refused at once in one line naming the pid the file records."""
  w = str(tmp_path / 'w')
  lock = workdir_lock.acquire(w)
  try:
    with pytest.raises(ExperimentError) as e:
      workdir_lock.acquire(w)
    msg = str(e.value)
    assert msg.startswith(f'workdir: {w} in use by pid {os.getpid()} ')
    assert os.path.join(w, workdir_lock.NAME) in msg and '\n' not in msg
    assert workdir_lock.owner(w) == os.getpid()  # the refusal rewrote nothing
  finally:
    lock.release()
  workdir_lock.acquire(w).release()  # free again once released


def test_a_holder_whose_file_names_no_pid_is_unknown(tmp_path):
  w = tmp_path / 'w'
  w.mkdir()
  path = str(w / workdir_lock.NAME)
  fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
  try:
    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # held, but the file is empty
    with pytest.raises(ExperimentError, match=r'in use by pid unknown \(another run holds'):
      workdir_lock.acquire(str(w))
  finally:
    os.close(fd)


def test_a_lock_held_by_another_process_refuses_until_it_dies(tmp_path):
  w = str(tmp_path / 'w')
  code = ('import time; from recon.runtime import workdir_lock; '
          f'workdir_lock.acquire({w!r}); print("locked", flush=True); time.sleep(60)')
  holder = subprocess.Popen([sys.executable, '-c', code], cwd=ROOT, stdout=subprocess.PIPE,
                            env=dict(os.environ, PYTHONPATH=ROOT), text=True)
  try:
    assert holder.stdout.readline().strip() == 'locked'
    with pytest.raises(ExperimentError, match=rf'in use by pid {holder.pid} '):
      workdir_lock.acquire(w)
  finally:
    holder.kill()
    holder.wait()
  assert workdir_lock.owner(w) == holder.pid  # stale file, dead owner, no flock
  lock = workdir_lock.acquire(w)
  assert workdir_lock.owner(w) == os.getpid()
  lock.release()


@pytest.mark.parametrize('text, pid', [('', None), ('0\n', None), ('  42 \n', 42),
                                       ('pid 42', None), ('-', None), ('7', 7),
                                       ('\uff14\uff12\n', None)])
def test_owner_reads_the_recorded_pid_or_none(tmp_path, text, pid):
  """The file recon writes is ASCII digits; anything else (full-width digits, which int()
  would read as 42 from UTF-8) is not a pid recon wrote: None."""
  (tmp_path / workdir_lock.NAME).write_text(text, encoding='utf-8')
  assert workdir_lock.owner(str(tmp_path)) == pid


def test_owner_of_a_workdir_without_a_lock_is_none(tmp_path):
  assert workdir_lock.owner(str(tmp_path)) is None
  assert workdir_lock.owner(str(tmp_path / 'missing')) is None


def test_release_leaves_a_file_that_replaced_ours_alone(tmp_path):
  """Another process unlinked our .lock and made its own: releasing ours must not unlink
  theirs (it would let a third run in beside them)."""
  w = tmp_path / 'w'
  lock = workdir_lock.acquire(str(w))
  path = w / workdir_lock.NAME
  os.unlink(path)
  path.write_text('4242\n')
  lock.release()
  assert path.read_text() == '4242\n'


def test_release_after_our_file_vanished_closes_quietly(tmp_path):
  w = tmp_path / 'w'
  lock = workdir_lock.acquire(str(w))
  os.unlink(w / workdir_lock.NAME)
  lock.release()
  assert os.listdir(w) == []
  workdir_lock.acquire(str(w)).release()


def test_acquire_retries_when_the_file_it_locked_was_unlinked_meanwhile(tmp_path, monkeypatch):
  """The race the module's docstring names: the previous owner unlinks the file between our
  open and our flock; the lock we got is on a dead inode, so acquire locks the new file."""
  w = tmp_path / 'w'
  w.mkdir()
  path = w / workdir_lock.NAME
  real, calls = fcntl.flock, []

  def racing(fd, op):
    calls.append(os.fstat(fd).st_ino)
    if len(calls) == 1:
      os.unlink(path)  # the previous owner releases meanwhile ...
      path.write_text('')  # ... and a new file appears at the path
    return real(fd, op)

  monkeypatch.setattr(workdir_lock.fcntl, 'flock', racing)
  lock = workdir_lock.acquire(str(w))
  try:
    assert len(calls) == 2 and calls[0] != calls[1]
    assert calls[1] == os.stat(path).st_ino
    assert path.read_text() == f'{os.getpid()}\n'
  finally:
    lock.release()
  assert not path.exists()


def test_acquire_gives_up_after_a_hundred_lost_races(tmp_path, monkeypatch):
  tries = []

  def never(fd, path):
    tries.append(fd)
    return False

  monkeypatch.setattr(workdir_lock, '_same_file', never)
  with pytest.raises(ExperimentError, match=r'^workdir: .*: could not lock .*\.lock; accepted'):
    workdir_lock.acquire(str(tmp_path / 'w'))
  assert len(tries) == 100


def test_same_file_compares_device_and_inode(tmp_path):
  a, b = tmp_path / 'a', tmp_path / 'b'
  a.write_text('x')
  b.write_text('x')
  fd = os.open(a, os.O_RDONLY)
  try:
    assert workdir_lock._same_file(fd, str(a))
    assert not workdir_lock._same_file(fd, str(b))
    assert not workdir_lock._same_file(fd, str(tmp_path / 'missing'))
    os.link(a, tmp_path / 'c')  # a hard link names the same inode
    assert workdir_lock._same_file(fd, str(tmp_path / 'c'))
  finally:
    os.close(fd)
