"""What recon owns in a workdir: the top-level entries its runs wrote, in a manifest.

recon deletes or moves only what it wrote. A workdir recon runs in holds a manifest,
WORKDIR/.recon-manifest.json, listing the top-level names its runs created. Every writer
claims its name in the manifest before it creates it (`claim`: recon.runtime.io's atomic writes,
the checkpoint and model folders, sweep and leak-width sub-runs), so a run killed at any
moment leaves no output unlisted. Overwrite moves aside, and the stale-temporary cleanup
removes, listed entries only (and `.NAME.XXXX.tmp` files of listed names).

A run is accepted on a workdir that is new, empty, or holds a manifest and nothing but the
entries it lists (`take`); a folder holding anything else (a user's notes, photos, a git
repository) is refused in one line, whatever run.overwrite says, as are the file system's
root, the home folder and a repository's root (`refuse_special`).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
from typing import List, Optional, Set

from recon.errors import ExperimentError

MANIFEST = '.recon-manifest.json'
LOCK = '.lock'  # recon.runtime.workdir_lock.NAME
REPLACED = '.replaced'  # an overwrite's set-aside outputs (recon.runtime.runs)
BOOKKEEPING = (MANIFEST, LOCK, REPLACED)  # recon's own, never outputs of a run
_TEMP = re.compile(r'\.(?P<name>.+)\.[A-Za-z0-9_]+\.tmp')  # mkstemp/mkdtemp '.NAME.XXXX.tmp'
_SHOWN = 6  # foreign entries named in a refusal


def manifest_path(workdir: str) -> str:
  return os.path.join(workdir, MANIFEST)


def owned(workdir: str) -> Set[str]:
  """The top-level names the manifest of `workdir` lists (empty without a manifest)."""
  try:
    with open(manifest_path(workdir), encoding='utf-8') as f:
      entries = json.load(f).get('entries', [])
  except (OSError, ValueError, AttributeError):
    return set()
  return {e for e in entries if isinstance(e, str)}


def has_manifest(workdir: str) -> bool:
  return os.path.isfile(manifest_path(workdir)) and not os.path.islink(manifest_path(workdir))


def _write(workdir: str, entries: Set[str]) -> None:
  """The manifest, atomically (a temporary file in the workdir, then a rename)."""
  fd, tmp = tempfile.mkstemp(dir=workdir, prefix=MANIFEST + '.', suffix='.tmp')
  try:
    with os.fdopen(fd, 'w', encoding='utf-8') as f:
      json.dump({'written_by': 'recon', 'entries': sorted(entries)}, f, indent=1)
      f.write('\n')
    os.replace(tmp, manifest_path(workdir))
  except BaseException:
    if os.path.exists(tmp):
      os.remove(tmp)
    raise


def _owner_of(path: str) -> Optional[str]:
  """The nearest folder strictly above `path` that holds a manifest (None: no workdir)."""
  folder = os.path.dirname(path)
  while True:
    if has_manifest(folder):
      return folder
    parent = os.path.dirname(folder)
    if parent == folder:
      return None
    folder = parent


def claim(path: str) -> None:
  """Lists `path`'s top-level entry in the manifest of the workdir it lies in (before it is
  created); a path in no workdir, or an entry already listed, changes nothing."""
  path = os.path.abspath(path)
  workdir = _owner_of(path)
  if workdir is None:
    return
  name = os.path.relpath(path, workdir).split(os.sep)[0]
  if name in BOOKKEEPING or name == os.curdir:
    return
  entries = owned(workdir)
  if name not in entries:
    _write(workdir, entries | {name})


def is_temp_of(name: str, entries: Set[str]) -> bool:
  """`name` is a temporary file of an atomic write of a listed entry ('.NAME.XXXX.tmp')."""
  m = _TEMP.fullmatch(name)
  return bool(m) and (m.group('name') in entries or m.group('name') == MANIFEST)


def foreign(workdir: str) -> List[str]:
  """The top-level entries of `workdir` recon did not write (sorted)."""
  if not os.path.isdir(workdir):
    return []
  entries = owned(workdir)
  return sorted(e for e in os.listdir(workdir)
                if e not in entries and e not in BOOKKEEPING and not is_temp_of(e, entries))


def outputs(workdir: str) -> List[str]:
  """The listed entries that exist (what a run wrote and an overwrite replaces)."""
  if not os.path.isdir(workdir):
    return []
  entries = owned(workdir)
  return sorted(e for e in os.listdir(workdir) if e in entries)


def stale_temps(workdir: str) -> List[str]:
  """Temporary files and folders of listed entries, left by a killed atomic write."""
  if not os.path.isdir(workdir):
    return []
  entries = owned(workdir)
  return sorted(e for e in os.listdir(workdir) if is_temp_of(e, entries))


def remove(path: str) -> None:
  """Deletes one entry recon owns: a symbolic link itself (never its target), a file, or a
  folder's tree (links inside it are unlinked, not followed)."""
  if os.path.islink(path) or not os.path.isdir(path):
    try:
      os.remove(path)
    except FileNotFoundError:
      pass
    return
  shutil.rmtree(path, ignore_errors=True)


def refuse_special(workdir: str) -> None:
  """One line for a workdir that is the file system's root, the home folder, or the root of
  a repository (a folder holding .git): their entries are never a run's outputs."""
  real = os.path.realpath(workdir)
  home = os.path.realpath(os.path.expanduser('~'))
  what = None
  if os.path.dirname(real) == real:
    what = "the file system's root"
  elif real == home:
    what = 'the home folder'
  elif os.path.lexists(os.path.join(real, '.git')):
    what = 'the root of a repository (it holds .git)'
  if what is not None:
    raise ExperimentError(f'workdir: {workdir} is {what}; accepted: a new or empty folder for '
                          'the run (e.g. results/runs/NAME)')


def take(workdir: str) -> bool:
  """Makes `workdir` a recon workdir before anything is written there: creates it (and its
  manifest) when new or empty; accepts one whose entries the manifest lists; refuses, in one
  line, a folder holding anything recon did not write. Returns True when it created the
  manifest (the caller removes it again if the run then writes nothing)."""
  refuse_special(workdir)
  if os.path.isdir(workdir) and has_manifest(workdir):
    alien = foreign(workdir)
    if alien:
      raise ExperimentError(_refusal(workdir, alien, listed=True))
    return False
  if os.path.isdir(workdir):
    alien = [e for e in os.listdir(workdir) if e != LOCK or not _is_lock_file(workdir)]
    if alien:
      raise ExperimentError(_refusal(workdir, sorted(alien), listed=False))
  claim(workdir)  # a sub-run's folder (a sweep's n5/, shadows/) is its outer workdir's
  os.makedirs(workdir, exist_ok=True)
  _write(workdir, set())
  return True


def _is_lock_file(workdir: str) -> bool:
  """A '.lock' that is recon's: a plain file holding a pid or nothing (a run killed between
  creating its workdir's lock and its manifest)."""
  path = os.path.join(workdir, LOCK)
  if os.path.islink(path) or not os.path.isfile(path):
    return False
  try:
    with open(path, encoding='ascii') as f:
      text = f.read(32).strip()
  except (OSError, UnicodeDecodeError):
    return False
  return text == '' or text.isdigit()


def _refusal(workdir: str, alien: List[str], listed: bool) -> str:
  shown = ', '.join(alien[:_SHOWN]) + (f' and {len(alien) - _SHOWN} more'
                                       if len(alien) > _SHOWN else '')
  why = ('that its manifest does not list' if listed else
         f'and no {MANIFEST} (it is not a folder a recon run created)')
  return (f'workdir: {workdir} holds entries recon did not write ({shown}) {why}; recon '
          'replaces and cleans only its own outputs; accepted: a new or empty folder, or the '
          'workdir of a recon run (move those entries out first)')


def release(workdir: str, created: bool) -> None:
  """Removes a manifest `take` created when the run wrote nothing it lists."""
  if created and has_manifest(workdir) and not outputs(workdir):
    try:
      os.remove(manifest_path(workdir))
    except OSError:
      pass
