"""Failures of the machine rather than of the run: a full or read-only disk, as one line.

A full disk (ENOSPC, EDQUOT), a read-only file system (EROFS) or a file-size limit (EFBIG:
`ulimit -f`; Python ignores SIGXFSZ, so the write fails instead) can strike any write:
`recon.runtime.io`'s atomic files, orbax's checkpoints and saved models (through tensorstore,
whose errors are `ValueError: RESOURCE_EXHAUSTED ... No space left on device
[os_error_code='28']`, not OSError, and which must not be read as out of *memory*).
`disk_error(exc)` recognises them anywhere in an exception's chain and words them as one
line naming the file, e.g. `workdir: no space left on device while writing
W/checkpoints/50/...; accepted: free space there, then --config.run.resume=True`. Every
write is atomic (temporary file or folder + rename), so the checkpoints already written
are intact and a resume after freeing space is bit-identical.

`quiet(record)` tells the log filter which records to drop: orbax's background threads
log the same error once per array, each with a traceback. `end_process(status)` ends a
failed CLI run without the interpreter's shutdown, during which orbax coroutines that
outlive a failed save print 'Exception ignored in ...' tracebacks.
"""
from __future__ import annotations

import errno
import logging
import os
import re
import signal
import sys
from typing import Optional

_DISK_ERRNOS = {errno.ENOSPC: 'no space left on device', errno.EDQUOT: 'disk quota exceeded',
                errno.EROFS: 'read-only file system',
                errno.EFBIG: 'file too large (the file-size limit, ulimit -f)'}
_TEXTS = {'No space left on device': errno.ENOSPC, "os_error_code='28'": errno.ENOSPC,
          'Disk quota exceeded': errno.EDQUOT, 'Read-only file system': errno.EROFS,
          "os_error_code='30'": errno.EROFS, 'File too large': errno.EFBIG,
          "os_error_code='27'": errno.EFBIG}
_REMEDY = {errno.EFBIG: 'raise the file-size limit (ulimit -f)'}
_PATH = re.compile(r'(?:Failed writing|Error writing local file|local file|Error opening '
                   r'file|Failed to open)[: ]*"([^"]+)"')


def _chain(exc: BaseException):
  seen = set()
  while exc is not None and id(exc) not in seen:
    seen.add(id(exc))
    yield exc
    exc = exc.__cause__ or exc.__context__


def _classify(exc: BaseException):
  """(errno, path or None) of a disk failure in exc's chain, else None."""
  for e in _chain(exc):
    if isinstance(e, OSError) and e.errno in _DISK_ERRNOS:
      return e.errno, e.filename
    text = str(e)
    for needle, code in _TEXTS.items():
      if needle in text:
        paths = _PATH.findall(text)
        return code, (paths[-1] if paths else None)
  return None


def disk_error(exc: BaseException, workdir: str) -> Optional[str]:
  """One line for a full / read-only disk anywhere in exc's chain (None for anything else)."""
  found = _classify(exc)
  if found is None:
    return None
  code, path = found
  where = f'while writing {path}' if path else f'while writing to {workdir}'
  remedy = _REMEDY.get(code, 'free space there (or make it writable)')
  return (f'workdir: {_DISK_ERRNOS[code]} {where}; accepted: {remedy}, then rerun with '
          '--config.run.resume=True: the checkpoints written so far are intact')


def quiet(record) -> bool:
  """True for a log record that repeats a disk failure (orbax's per-array thread errors)."""
  if record.levelno < 30 or 'orbax' not in getattr(record, 'pathname', ''):
    return False
  try:
    text = record.getMessage()
  except Exception:  # pylint: disable=broad-except
    return False
  if any(needle in text for needle in _TEXTS):
    return True
  exc = (record.exc_info or (None, None))[1]
  return exc is not None and _classify(exc) is not None


def end_process(status: int) -> None:
  """Ends the CLI with `status`. A failed or interrupted run ends at once (`os._exit`, after
  flushing the log and the streams): orbax's threads of a failed save and XLA's of an
  interrupted computation would otherwise print tracebacks, or keep the process alive,
  during interpreter shutdown. Every output is written atomically, so nothing is lost.

  A finished run (status 0) exits normally, ignoring SIGINT / SIGTERM from here on: at
  shutdown Python gives the signals their default action back (its finaliser resets every
  handler it installed, and XLA's threads can take a while to stop), so a signal then used to
  kill a run whose outputs were all written (exit -2 / -15, no line; the soak found it)."""
  if status == 0:
    for signum in (signal.SIGINT, signal.SIGTERM):
      try:
        signal.signal(signum, signal.SIG_IGN)  # kept by the finaliser, unlike a handler
      except ValueError:  # not the main thread (an in-process caller): nothing to guard
        pass
    sys.exit(0)
  logging.shutdown()
  for stream in (sys.stdout, sys.stderr):
    try:
      stream.flush()
    except (OSError, ValueError):
      pass
  os._exit(status)  # pylint: disable=protected-access


def _orbax_after_failure(exc_type, exc) -> bool:
  """A RuntimeError('Event loop is closed') that tensorstore reports from a callback of a
  write that an earlier failure (a full disk) abandoned: noise after the real error."""
  return exc_type is RuntimeError and str(exc) == 'Event loop is closed'


def quiet_unraisable() -> None:
  """sys.unraisablehook without two kinds of noise: the closed-event-loop reports of abandoned
  tensorstore writes (its callback threads report them as unraisable, with no object, so they
  print as a bare traceback), and a Ctrl-C's KeyboardInterrupt that landed in a finaliser
  (`__del__`, a weakref callback), where Python swallows it: the CLI's watchdog
  (recon/runtime/signals.py) then ends the run within seconds with its one line. Everything else as
  before."""
  previous = sys.unraisablehook

  def hook(unraisable):
    if unraisable.exc_type is KeyboardInterrupt:
      return
    if not _orbax_after_failure(unraisable.exc_type, unraisable.exc_value):
      previous(unraisable)
  sys.unraisablehook = hook
