"""Errors a run reports as one line, and the exit status of `python -m recon.main`.

Exit status (docs/reliability.md, "Exit status and failures"):

  0    finished (summary.json written)
  1    an unexpected internal error (traceback in WORKDIR/traceback.txt, or a temporary
       file when the run had written nothing)
  2    refused input: a config field, a path, the workdir, the data, a saved model or the
       memory estimate; nothing is computed and no workdir is left behind that the run
       created (a failure after compute started marks WORKDIR/summary.json
       `status: failed` with the `reason`)
  3    stopped on non-finite values (loss or gradient); the outputs hold the last finite state
  130  interrupted (Ctrl-C / SIGINT); a checkpoint is written first when the run has one
  143  terminated (SIGTERM): handled like SIGINT, exit status 128 + 15

Lives at the bottom of the package so that low modules (data loaders, checkpoints) can
raise these without importing the experiment driver.
"""

import sys

EXIT_OK = 0
EXIT_INTERNAL = 1
EXIT_REFUSED = 2
EXIT_NONFINITE = 3
EXIT_INTERRUPTED = 130
EXIT_TERMINATED = 143


class ReconError(Exception):
  """Base of every error reported as one line; `exit_code` is the process's exit status."""
  exit_code = EXIT_REFUSED


class ExperimentError(ReconError, RuntimeError):
  """A run that cannot start or finish; the message is one line (exit status 2)."""


class NonFiniteError(ReconError):
  """The loss or its gradient became non-finite (exit status 3)."""
  exit_code = EXIT_NONFINITE


class Interrupted(ReconError):
  """SIGINT / Ctrl-C after the checkpoint was written (exit status 130)."""
  exit_code = EXIT_INTERRUPTED


def one_line(message: str) -> str:
  """`message` with its control characters escaped ('\\n'): a name holding a newline (a
  workdir, a file) cannot break the line or forge a second 'error:' line."""
  return ''.join(c if c.isprintable() else repr(c)[1:-1] for c in message)


def say_error(message: str) -> None:
  """The one line of a failure, on stderr."""
  print(f'error: {one_line(message)}', file=sys.stderr)
  sys.stderr.flush()
