"""Every config field the docs and the README name exists: `--config.SECTION.FIELD=...` in a
command, and a backticked `section.field` in prose (a renamed or moved field fails here)."""
import glob
import os
import re

import pytest

from recon.config import validate as config_lib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = sorted(glob.glob(os.path.join(ROOT, 'docs', '*.md'))) + [os.path.join(ROOT, 'README.md')]
SECTIONS = ('attack', 'data', 'leak_width', 'run', 'victim', 'sweep')
# Keys a page names that are not config fields: a saved model's metadata, a data file's members,
# the unknown field docs/reliability.md shows being refused.
NOT_FIELDS = {'data.config', 'data.input_shape', 'data.indices', 'data.names', 'nn'}
FILES = ('.json', '.png', '.py', '.csv', '.npz', '.md', '.html')


def named_fields(text):
  """Config paths a page names: flags in commands and backticked section.field spans."""
  out = set(re.findall(r'--config\.([a-z_][\w.]*)=', text))
  for span in re.findall(r'`([^`\n]+)`', text):
    for m in re.finditer(r'(?<![\w./-])((?:%s)\.[a-z_]\w*(?:\.[a-z_]\w*)*)(?![\w./-])'
                         % '|'.join(SECTIONS), span):
      out.add(m.group(1))
  return out


def known(name):
  if name.endswith(FILES):  # a file (sweep.json, leak_width.png), not a field
    return True
  fields = set(config_lib.FIELDS)
  if any(name.startswith(f + '.') for f in config_lib.DICT_FIELDS):  # a key of a dict field
    return True
  if name in fields or any(f.startswith(name + '.') for f in fields):
    return True
  if name.startswith('sweep.'):  # a swept axis names a field (victim.p_over_dn is sweep-only)
    axis = name[len('sweep.'):]
    return axis in fields or axis in config_lib.SWEEP_ONLY or axis == ''
  return name in config_lib.SWEEP_ONLY or name in NOT_FIELDS


def test_the_check_finds_a_missing_field():
  assert named_fields('run `--config.attack.lr=0.1` and set `victim.nope`') == {
      'attack.lr', 'victim.nope'}
  assert known('attack.lr') and not known('victim.nope')


@pytest.mark.parametrize('page', PAGES, ids=lambda p: os.path.relpath(p, ROOT))
def test_every_named_field_exists(page):
  with open(page) as f:
    names = named_fields(f.read())
  missing = sorted(n for n in names if not known(n))
  assert not missing, f'{os.path.relpath(page, ROOT)} names fields that do not exist: {missing}'
