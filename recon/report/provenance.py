"""Where a result came from: recon's version and commit, when, the inputs' hashes, the command.

A report is evidence only with its provenance: the code that produced it (the package version
and, in a git checkout, the commit and whether the tree had local changes), the time, the
content hash of every input file (`recon.runtime.input_hashes`: the model, its initial parameters, the
data) and the command that reproduces it (the command line of a CLI run; the whole config is in
summary.json beside it). `record` gathers it for summary.json; report.html shows it.
"""
from __future__ import annotations

import os
import shlex
import subprocess
import sys
import time
from typing import Any, Dict, Optional

from recon.runtime import input_hashes

_PACKAGE = os.path.dirname(os.path.abspath(__file__))  # recon/ (a module here: no import circle)


def version() -> str:
  """The installed recon's version (setup.cfg's), or 'unknown' when it is not installed."""
  from importlib import metadata  # pylint: disable=import-outside-toplevel
  try:
    return metadata.version('recon')
  except metadata.PackageNotFoundError:
    return 'unknown'


def git_commit(folder: str = _PACKAGE) -> Optional[Dict[str, Any]]:
  """{'commit', 'dirty'} of the checkout holding `folder`, or None (no git, not a checkout)."""
  try:
    head = subprocess.run(['git', '-C', folder, 'rev-parse', 'HEAD'], capture_output=True,
                          text=True, timeout=5, check=True).stdout.strip()
    status = subprocess.run(['git', '-C', folder, 'status', '--porcelain', '--untracked-files=no'],
                            capture_output=True, text=True, timeout=5, check=True).stdout
  except (OSError, subprocess.SubprocessError):
    return None
  return {'commit': head, 'dirty': bool(status.strip())} if head else None


def command_line(argv=None) -> Optional[str]:
  """The command of a CLI run (`python -m recon.main ...`, quoted), else None (the Python API:
  the config in summary.json is the record)."""
  argv = list(sys.argv if argv is None else argv)
  if not argv or os.path.basename(argv[0]) != 'main.py' or \
      os.path.basename(os.path.dirname(os.path.abspath(argv[0]))) != 'recon':
    return None
  return 'python -m recon.main ' + shlex.join(argv[1:])


def record(config_record: Dict[str, Any]) -> Dict[str, Any]:
  """The provenance of a run of `config_record` (its config as a dict), for summary.json."""
  git = git_commit()
  return {'recon_version': version(),
          'commit': git['commit'] if git else None,
          'local_changes': git['dirty'] if git else None,
          'created': time.strftime('%Y-%m-%dT%H:%M:%S%z'),
          'inputs': input_hashes.current(config_record),
          'command': command_line()}
