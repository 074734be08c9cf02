"""What the result scripts share: the result files they resume from and write (OUT.json and the
markdown OUT.md beside it), the command line that made them, comma lists, markdown tables."""
import ast
import csv
import io as io_text
import os
import sys
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
  sys.path.insert(0, ROOT)

from recon.runtime import io  # noqa: E402  pylint: disable=wrong-import-position


def load(path: str, default: Any = None) -> Any:
  """The JSON at `path`, or `default` where there is none (a first run)."""
  return io.read_json(path) if os.path.exists(path) else default


def save(out: str, doc: Any, md: Optional[str] = None) -> None:
  """OUT.json (atomic) and, if given, OUT.md; `out` is the path without a suffix."""
  os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
  io.write_json(out + '.json', doc)
  if md is not None:
    io.write_text(out + '.md', md)


def save_csv(path: str, rows: Sequence[Dict[str, Any]]) -> None:
  """The rows (dicts with the first one's keys) as a CSV file, atomically."""
  buf = io_text.StringIO()
  writer = csv.DictWriter(buf, fieldnames=list(rows[0]))
  writer.writeheader()
  writer.writerows(rows)
  io.write_text(path, buf.getvalue())


def upsert(rows: List[Dict[str, Any]], row: Dict[str, Any], key: Callable[[Dict], Any]) -> None:
  """Puts `row` in `rows` in place of the one with the same key (a point run again), else last."""
  for i, r in enumerate(rows):
    if key(r) == key(row):
      rows[i] = row
      return
  rows.append(row)


def command() -> str:
  """This script's command line as a user types it."""
  name = os.path.splitext(os.path.basename(sys.argv[0]))[0]
  return ' '.join(['python -m scripts.' + name, *sys.argv[1:]])


def ints(text: str) -> List[int]:
  """'1,2,5' or '100-103' pieces -> [1, 2, 5] / [100, 101, 102, 103]."""
  out = []
  for piece in str(text).split(','):
    lo, _, hi = piece.strip().partition('-')
    out += list(range(int(lo), int(hi) + 1)) if hi else [int(lo)]
  return out


def floats(text: str) -> List[float]:
  return [float(v) for v in str(text).split(',') if v.strip()]


def overrides(pairs: Optional[Sequence[str]]) -> Dict[str, Any]:
  """--set PATH=VALUE flags as {PATH: VALUE}: a python literal where VALUE is one, else text."""
  out = {}
  for pair in pairs or ():
    key, _, text = pair.partition('=')
    try:
      out[key] = ast.literal_eval(text)
    except (ValueError, SyntaxError):
      out[key] = text
  return out


def fmt(x: Any, spec: str = '.3g') -> str:
  """A cell: '-' for None, 'yes' / 'no' for a bool, `spec` for a float."""
  if x is None:
    return '-'
  if isinstance(x, bool):
    return 'yes' if x else 'no'
  if isinstance(x, float):
    return format(x, spec)
  return str(x)


def table(header: Sequence[str], rows: Iterable[Sequence[Any]]) -> str:
  """A markdown table; each cell through fmt unless it is already a string."""
  out = ['| ' + ' | '.join(header) + ' |', '|' + '---|' * len(header)]
  out += ['| ' + ' | '.join(c if isinstance(c, str) else fmt(c) for c in r) + ' |' for r in rows]
  return '\n'.join(out)


def page(title: str, intro: str, *blocks: str) -> str:
  """A results/NAME.md: a title, a paragraph, then tables or paragraphs (empty ones left out),
  blank-line separated."""
  return '\n\n'.join([f'# {title}', intro, *[b for b in blocks if b]]) + '\n'


def pyplot():
  """matplotlib's pyplot on the Agg backend (files only, no display)."""
  import matplotlib  # pylint: disable=import-outside-toplevel
  matplotlib.use('Agg')
  import matplotlib.pyplot as plt  # pylint: disable=import-outside-toplevel
  return plt


def savefig(fig, path: str, dpi: int = 110) -> None:
  """The figure laid out tightly, written to `path` and closed."""
  fig.tight_layout()
  fig.savefig(path, dpi=dpi)
  pyplot().close(fig)
