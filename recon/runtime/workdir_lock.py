"""One run per workdir: an advisory lock file WORKDIR/.lock held for the whole run.

The lock is `fcntl.flock` on WORKDIR/.lock (holding the owner's pid, for the message). The
kernel drops a flock when its process dies, however it dies (SIGKILL included), so a lock
left by a killed run is free and the next run takes it over; no pid-liveness guess is
needed, and a reused pid cannot keep a workdir locked. A second run on a locked workdir is
refused at once, in one line naming the owner: `workdir: W in use by pid N; ...`
(ExperimentError, exit status 2).

`release` removes the file. Unlinking a locked file can race with a process that opened
it just before: `acquire` therefore checks, once it holds the flock, that the path still
names the file it locked, and retries otherwise.
"""
from __future__ import annotations

import fcntl
import os
from typing import Optional

from recon.errors import ExperimentError

NAME = '.lock'


class WorkdirLock:
  """A held lock; `release()` (idempotent) unlinks the file and closes it."""

  def __init__(self, path: str, fd: int):
    self.path = path
    self._fd: Optional[int] = fd

  def release(self) -> None:
    if self._fd is None:
      return
    try:
      if _same_file(self._fd, self.path):
        os.unlink(self.path)
    except OSError:
      pass
    os.close(self._fd)
    self._fd = None


def _same_file(fd: int, path: str) -> bool:
  try:
    st = os.stat(path)
  except OSError:
    return False
  own = os.fstat(fd)
  return (st.st_dev, st.st_ino) == (own.st_dev, own.st_ino)


def owner(workdir: str) -> Optional[int]:
  """The pid recorded in WORKDIR/.lock (None when absent or unreadable)."""
  try:
    with open(os.path.join(workdir, NAME), encoding='ascii') as f:
      return int(f.read().strip() or 0) or None
  except (OSError, ValueError):
    return None


def acquire(workdir: str) -> WorkdirLock:
  """Creates `workdir` if needed and locks it; a one-line ExperimentError when another live
  process holds it."""
  os.makedirs(workdir, exist_ok=True)
  path = os.path.join(workdir, NAME)
  for _ in range(100):
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      os.close(fd)
      pid = owner(workdir)
      raise ExperimentError(
          f'workdir: {workdir} in use by pid {pid if pid else "unknown"} (another run holds '
          f'{path}); accepted: wait for it to end, or choose another --workdir') from None
    if not _same_file(fd, path):  # unlinked by its previous owner meanwhile: lock afresh
      os.close(fd)
      continue
    os.ftruncate(fd, 0)
    os.write(fd, f'{os.getpid()}\n'.encode())
    return WorkdirLock(path, fd)
  raise ExperimentError(f'workdir: {workdir}: could not lock {path}; accepted: a workdir '
                        'that no other run is creating and removing locks in')
