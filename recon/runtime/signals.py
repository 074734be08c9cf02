"""SIGINT and SIGTERM: a graceful stop first, a hard stop within seconds on the second signal.

SIGTERM (what preemptible machines and job schedulers send) is handled like SIGINT
(Ctrl-C): the Python-level handler (`recon.runtime.checkpoint.on_sigint`) asks a running
checkpointer for a checkpoint at the end of its chunk, and the run exits with status
128 + the signal's number (130 for SIGINT, 143 for SIGTERM; `exit_code`).

Python runs signal handlers only between bytecodes of the main thread, so a main thread
blocked in one long XLA computation (a victim fit, a compile, a precision rung) would not
see them for minutes, and a process whose main thread has finished can still wait for
XLA's threads. The CLI therefore also starts a watchdog (`start_watchdog`): the C-level
handler writes each signal's number to a pipe (`signal.set_wakeup_fd`), a daemon thread
reads it, and on a second signal (or a first one while no checkpoint is pending) it waits
`grace` seconds for the main thread to end the run normally; if the process is still
there, it prints the interrupted line once (`say_once`) and ends it with `os._exit`.
Checkpoints and outputs are written atomically, so such an exit is no worse than SIGKILL,
after which a resume is bit-identical (docs/reliability.md).
"""
from __future__ import annotations

import os
import signal
import sys
import threading
import time
from typing import Callable, Dict, Optional

SIGNALS = (signal.SIGINT, signal.SIGTERM)
_STATE: Dict[str, object] = {'signum': signal.SIGINT, 'line': None, 'said': False,
                             'graceful': None}
_LOCK = threading.Lock()


def note(signum: Optional[int]) -> None:
  """Records the signal a stop came from (its exit status is 128 + signum)."""
  if signum in SIGNALS:
    _STATE['signum'] = signum


def exit_code() -> int:
  return 128 + int(_STATE['signum'])


def reset() -> None:
  _STATE.update(signum=signal.SIGINT, said=False)


def install(handler) -> Dict[int, object]:
  """Installs `handler` for SIGINT and SIGTERM (main thread only) and forgets an earlier
  run's signal; returns the previous handlers."""
  reset()
  previous = {}
  for signum in SIGNALS:
    try:
      previous[signum] = signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
    except ValueError:  # not the main thread
      pass
  return previous


def restore(previous: Dict[int, object]) -> None:
  for signum, handler in previous.items():
    try:
      signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
    except ValueError:
      pass


def set_stop_line(line: Optional[Callable[[], str]],
                  graceful: Optional[Callable[[], bool]] = None) -> None:
  """What the watchdog prints on a hard stop (a callable giving the line), and whether a
  graceful stop (a pending checkpoint) is under way after the first signal."""
  _STATE['line'], _STATE['graceful'] = line, graceful


def say_once(line: str) -> bool:
  """Prints 'error: line' on stderr unless an interrupted line was printed already."""
  with _LOCK:
    if _STATE['said']:
      return False
    _STATE['said'] = True
    line = ''.join(c if c.isprintable() else repr(c)[1:-1] for c in line)  # stays one line
    print(f'error: {line}', file=sys.stderr)
    sys.stderr.flush()
    return True


def _hard_stop() -> None:
  line = _STATE['line']
  try:
    text = line() if callable(line) else 'interrupted'
  except Exception:  # pylint: disable=broad-except
    text = 'interrupted'
  say_once(text)
  sys.stdout.flush()
  os._exit(exit_code())  # pylint: disable=protected-access


def _watch(fd: int, grace: float) -> None:
  count = 0
  while True:
    try:
      data = os.read(fd, 64)
    except OSError:
      return
    if not data:
      return
    for signum in data:
      if signum not in SIGNALS:
        continue
      count += 1
      graceful = _STATE['graceful']
      if count >= 2 or not (callable(graceful) and graceful()):
        time.sleep(grace)  # the main thread ends the run normally meanwhile, if it can
        _hard_stop()


def start_watchdog(grace: float = 3.0) -> bool:
  """Starts the watchdog thread (main thread, once per process); False where impossible."""
  try:
    r, w = os.pipe()
    os.set_blocking(w, False)
    signal.set_wakeup_fd(w, warn_on_full_buffer=False)
  except (ValueError, OSError):
    return False
  threading.Thread(target=_watch, args=(r, grace), name='recon-signal-watchdog',
                   daemon=True).start()
  return True


def _startup_stop(signum, frame) -> None:  # pylint: disable=unused-argument
  note(signum)
  say_once('interrupted while starting, before the run began; nothing to resume from')
  os._exit(exit_code())  # pylint: disable=protected-access


def guard_startup() -> None:
  """Until `install` replaces it: SIGINT / SIGTERM while the CLI imports JAX and parses its
  flags end the process with one line (not a KeyboardInterrupt traceback, nor a silent
  SIGTERM death); nothing has been written then."""
  install(_startup_stop)
