"""Array files sized from their headers, before a byte of an array is read or inflated.

`entries(path)` reads only headers: an .npy's (numpy.lib.format.read_magic and
read_array_header_*), each member of an .npz's (zipfile; a member is inflated no further than
its .npy header), a safetensors file's (an 8-byte little-endian length, then a JSON object of
{name: {dtype, shape, data_offsets}}). Each array comes back as an `Entry` (shape, dtype
name, bytes once read, bytes on disk), so a reader checks keys, shapes and dtypes against
what it expects, and `check_sizes` refuses a file that claims more than the host's memory (a
header of 10^12 elements) or an .npz member that inflates more than `MAX_INFLATION` times
(2 GB from 2 MB on disk), all before loading. `what_is(path)` names a path that is not an
array file of the kind expected (missing, a folder, a pickle, a safetensors file, a zip).

Every failure is a `HeaderError` whose message completes '<path> ...' (the caller adds the
field and the accepted form: one line, exit status 2).
"""
from __future__ import annotations

import dataclasses
import json
import math
import os
import stat
import struct
import zipfile
from typing import Dict, Optional, Tuple

import numpy as np
from numpy.lib import format as npy_format

from recon.runtime.host import host_available_bytes

FLOAT_DTYPES = ('float16', 'bfloat16', 'float32', 'float64')  # parameters: these only
MAX_INFLATION = 100  # an .npz member's bytes over its compressed bytes (real arrays: < 10)
INFLATION_FLOOR = 2 ** 26  # members under 64 MiB are never refused for their ratio
SAFETENSORS_MAX_HEADER = 100 * 2 ** 20  # the format's own limit on its JSON header
SAFETENSORS_DTYPES = {'F64': 'float64', 'F32': 'float32', 'F16': 'float16', 'BF16': 'bfloat16',
                      'I64': 'int64', 'I32': 'int32', 'I16': 'int16', 'I8': 'int8',
                      'U64': 'uint64', 'U32': 'uint32', 'U16': 'uint16', 'U8': 'uint8',
                      'BOOL': 'bool', 'C64': 'complex64', 'F8_E4M3': 'float8_e4m3fn',
                      'F8_E5M2': 'float8_e5m2'}
_ITEMSIZE = {'F64': 8, 'F32': 4, 'F16': 2, 'BF16': 2, 'I64': 8, 'I32': 4, 'I16': 2, 'I8': 1,
             'U64': 8, 'U32': 4, 'U16': 2, 'U8': 1, 'BOOL': 1, 'C64': 8, 'F8_E4M3': 1,
             'F8_E5M2': 1}


class HeaderError(ValueError):
  """A header that cannot be read or that claims too much; the message completes '<path> ...'."""


@dataclasses.dataclass(frozen=True)
class Entry:
  """One array as its header describes it."""
  shape: Tuple[int, ...]
  dtype: str  # numpy's name ('float32', '<U1', 'object', 'bfloat16', 'float8_e4m3fn', ...)
  kind: str  # numpy's kind: 'f' float, 'i' / 'u' integer, 'b' bool, 'c' complex, 'O', 'U', 'V'
  nbytes: int  # in memory once read
  stored: int  # on disk (compressed, for an .npz member)


def _gb(n: int) -> str:
  if n < 2 ** 20:
    return f'{n} bytes'
  return f'{n / 2 ** 30:.3g} GB' if n >= 2 ** 30 else f'{n / 2 ** 20:.3g} MB'


def what_is(path: str) -> Optional[str]:
  """Why `path` is not a readable regular file ('does not exist', 'is a directory', ...), or
  None when it is one."""
  if os.path.islink(path) and not os.path.exists(path):
    return 'is a dangling symbolic link'
  try:
    mode = os.stat(path).st_mode
  except FileNotFoundError:
    return 'does not exist'
  except OSError as e:
    return f'cannot be read ({e.strerror})'
  if stat.S_ISDIR(mode):
    return 'is a directory'
  if not stat.S_ISREG(mode):
    return 'is not a regular file (a pipe, socket or device)'
  if not os.access(path, os.R_OK):
    return 'cannot be read (permission denied)'
  return None


def sniff(path: str) -> str:
  """The file's kind from its first bytes: 'npy', 'npz' (a zip), 'safetensors', 'pickle',
  'msgpack' or 'unknown'."""
  with open(path, 'rb') as f:
    head = f.read(16)
  if head.startswith(npy_format.MAGIC_PREFIX):
    return 'npy'
  if head.startswith(b'PK\x03\x04') or head.startswith(b'PK\x05\x06'):
    return 'npz'
  if len(head) >= 9 and head[8:9] == b'{' and struct.unpack('<Q', head[:8])[0] < 2 ** 32:
    return 'safetensors'
  if head[:1] == b'\x80' and head[1:2] in (b'\x02', b'\x03', b'\x04', b'\x05'):
    return 'pickle'
  if head[:1] and (0x80 <= head[0] <= 0x8f or head[0] in (0xde, 0xdf)):
    return 'msgpack'
  return 'unknown'


def _npy_header(fp, name: str) -> Tuple[Tuple[int, ...], np.dtype]:
  try:
    version = npy_format.read_magic(fp)
    if version == (1, 0):
      shape, _, dtype = npy_format.read_array_header_1_0(fp)
    elif version == (2, 0):
      shape, _, dtype = npy_format.read_array_header_2_0(fp)
    else:
      raise ValueError(f'.npy format version {version}')
  except (ValueError, EOFError, OSError, SyntaxError, TypeError) as e:
    first = (str(e).splitlines() or [''])[0][:120]
    raise HeaderError(f'has a damaged .npy header in {name!r} ({type(e).__name__}: {first})'
                      ) from None
  return tuple(int(s) for s in shape), dtype


def _entry(shape: Tuple[int, ...], dtype: np.dtype, stored: int) -> Entry:
  name = 'object' if dtype.hasobject else str(dtype)
  kind = 'O' if dtype.hasobject else dtype.kind
  return Entry(shape, name, kind, math.prod(shape) * dtype.itemsize, stored)


def npy_entries(path: str) -> Dict[str, Entry]:
  """{'': Entry} of an .npy file."""
  with open(path, 'rb') as f:
    shape, dtype = _npy_header(f, os.path.basename(path))
  return {'': _entry(shape, dtype, os.path.getsize(path))}


def npz_entries(path: str) -> Dict[str, Entry]:
  """{name: Entry} of an .npz's members (name without '.npy'); only their headers inflated."""
  out = {}
  try:
    with zipfile.ZipFile(path) as z:
      for info in z.infolist():
        if info.is_dir():
          continue
        name = info.filename[:-4] if info.filename.endswith('.npy') else info.filename
        with z.open(info) as member:
          shape, dtype = _npy_header(member, info.filename)
        out[name] = _entry(shape, dtype, info.compress_size)
  except (zipfile.BadZipFile, zipfile.LargeZipFile, NotImplementedError, EOFError, OSError,
          RuntimeError) as e:  # RuntimeError: an encrypted member
    raise HeaderError(f'is not a NumPy .npz file ({type(e).__name__}: '
                      f'{(str(e).splitlines() or [""])[0][:120]})') from None
  return out


def safetensors_entries(path: str) -> Dict[str, Entry]:
  """{name: Entry} of a safetensors file, from its JSON header; offsets checked against the
  file's size, the '__metadata__' entry left out."""
  size = os.path.getsize(path)
  with open(path, 'rb') as f:
    raw = f.read(8)
    length = struct.unpack('<Q', raw)[0] if len(raw) == 8 else None
    if length is None or length > min(SAFETENSORS_MAX_HEADER, size - 8):
      raise HeaderError('is not a safetensors file (no header length in its first 8 bytes)')
    try:
      header = json.loads(f.read(length))
    except (ValueError, UnicodeDecodeError) as e:
      raise HeaderError(f'is not a safetensors file (its header is not JSON: '
                        f'{type(e).__name__})') from None
  if not isinstance(header, dict):
    raise HeaderError('is not a safetensors file (its header is not a JSON object)')
  body = size - 8 - length
  out = {}
  for name, info in header.items():
    if name == '__metadata__':
      continue
    out[name] = _safetensors_entry(name, info, body)
  return out


def _safetensors_entry(name: str, info, body: int) -> Entry:
  ok = (isinstance(info, dict) and isinstance(info.get('shape'), list)
        and all(isinstance(s, int) and s >= 0 for s in info['shape'])
        and isinstance(info.get('data_offsets'), list) and len(info['data_offsets']) == 2
        and all(isinstance(o, int) for o in info['data_offsets']))
  if not ok:
    raise HeaderError(f'is not a safetensors file (entry {name!r} lacks a shape or data_offsets)')
  dtype = info.get('dtype')
  if dtype not in SAFETENSORS_DTYPES:
    raise HeaderError(f'has tensor {name!r} of unknown dtype {dtype!r}')
  shape = tuple(info['shape'])
  nbytes = math.prod(shape) * _ITEMSIZE[dtype]
  start, end = info['data_offsets']
  if not 0 <= start <= end <= body or end - start != nbytes:
    raise HeaderError(f'has tensor {name!r} of shape {shape} ({_gb(nbytes)} of {dtype}) at '
                      f'bytes {start}..{end}, but the file holds {_gb(body)} of data: a damaged '
                      'or truncated safetensors file')
  kind = {'F': 'f', 'B': 'f', 'I': 'i', 'U': 'u', 'C': 'c'}[dtype[0]] if dtype != 'BOOL' else 'b'
  return Entry(shape, SAFETENSORS_DTYPES[dtype], kind, nbytes, nbytes)


def check_sizes(found: Dict[str, Entry], available: Optional[int] = None) -> None:
  """HeaderError when the arrays' bytes exceed the host's available memory, or an .npz member
  over INFLATION_FLOOR inflates more than MAX_INFLATION times its bytes on disk."""
  total = sum(e.nbytes for e in found.values())
  available = host_available_bytes() if available is None else available
  if available is not None and total > available:
    shapes = ', '.join(f'{n!r} {e.shape} {e.dtype}' for n, e in list(found.items())[:4])
    raise HeaderError(f'claims {_gb(total)} of arrays ({shapes}) but the host has '
                      f'{_gb(available)} of memory available (refused before reading them)')
  for name, e in found.items():
    if e.nbytes > INFLATION_FLOOR and e.nbytes > MAX_INFLATION * max(e.stored, 1):
      raise HeaderError(f'has {name!r} of shape {e.shape} ({e.dtype}) that inflates to '
                        f'{_gb(e.nbytes)} from {_gb(e.stored)} on disk (more than '
                        f'{MAX_INFLATION}x: refused before inflating it)')


def entries(path: str, kind: str) -> Dict[str, Entry]:
  """The arrays of the file at `path` as `kind` ('npy', 'npz', 'safetensors') describes them,
  sized (`check_sizes`); HeaderError for anything else."""
  readers = {'npy': npy_entries, 'npz': npz_entries, 'safetensors': safetensors_entries}
  found = readers[kind](path)
  check_sizes(found)
  return found
