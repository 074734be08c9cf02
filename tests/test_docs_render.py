"""The docs' tables come from results/*.json (scripts/render_docs.py, issue #68).

Three checks, all fast (json reading and regular expressions, no run):
1. render, then nothing changed: every `<!-- render: NAME -->` block of README.md and docs/
   equals what `python -m scripts.render_docs` writes from the committed JSON;
2. prose carries no measured number: outside rendered blocks, code blocks, inline code, HTML
   comments and link targets, no text matches MEASURED (below);
3. every relative link of a page points at a file that exists (results/*.json included), and every
   `page.md#anchor` of a page, or of recon/, configs/ and notebooks/, names a heading of that page.

The rule for a measured number (MEASURED), applied to prose only:
- a number with a unit of time, memory or speed: `13 s`, `2.5 ms`, `21 min`, `3.6 hours`,
  `1 400 MB`, `19 GB`, `8 GiB`, `10 TFLOP/s`;
- a percentage or a factor: `39%`, `2.2×`, `27x` (a size such as `8×8` is not a factor);
- a decimal number or one in scientific notation: `0.72`, `1e-9`, `10⁻⁴`, `2.3·10⁸`;
- a count out of a total: `480 of 480`, `7 of 10`.
Settings are written as code (`attack.lr` = `0.05`, `--config.attack.tol=1e-9`), sizes as integers
(n = 100, d = 3072, p = 10·dn). ALLOWED lists the few decimals that are names, not measurements
(versions of Python and JAX).
"""
import os
import re
import shutil

import pytest

from scripts import render_docs

ROOT = render_docs.ROOT

_UNIT = r'(?:s|ms|µs|min|minutes?|seconds?|hours?|h|MB|GB|GiB|MiB|KB|kB|TB|TFLOP/s|GFLOP/s)'
MEASURED = re.compile('|'.join([
    rf'(?<![\w.])\d[\d  ]*(?:\.\d+)?[  ]{_UNIT}(?![\w/])',                # 13 s, 1 400 MB
    r'\d(?:\.\d+)?\s?%',                                                 # 39%
    r'\d(?:\.\d+)?\s?×(?!\s?\d)', r'(?<![\w.])\d+(?:\.\d+)?x\b',        # 2.2×, 27x (not 8×8)
    r'(?<![\w.])\d+\.\d+(?![\w.]*\d\.\d)',                               # 0.72
    r'\d(?:\.\d+)?e[-+]?\d+\b', r'10[⁻⁰¹²³⁴⁵⁶⁷⁸⁹]+', r'·10\^?-?\d',      # 1e-9, 10⁻⁴, ·10⁸
    r'(?<![\w.])\d+ (?:of|out of) \d+\b',                                # 480 of 480
]))
ALLOWED = re.compile(
    r'(?:Python|JAX|jax|jaxlib|flax|orbax)\s?[≥≤<>=]*\s?\d+\.\d+(?:\.\d+)?(?: to \d+\.\d+)?'
    r'|\b\d+\.\d+\.\d+(?: to \d+\.\d+)?'
    r'|\b\d+(?:\.\d+)?\s?·\s?(?:dn|kn|d·n|k·n|D·n)\b')                  # a width: p = 1.5·dn
_STRIP = [
    re.compile(r'<!-- render: (\w+) -->\n.*?<!-- /render -->', re.S),    # rendered blocks
    re.compile(r'^```.*?^```', re.S | re.M),                             # code blocks
    re.compile(r'<!--.*?-->', re.S),                                     # comments
    re.compile(r'`[^`]+`'),                                              # inline code
    re.compile(r'\]\([^)\s]*\)'),                                        # link targets
    re.compile(r'arXiv:? ?\d+\.\d+'),                                    # a paper's number
]


def prose(text):
  for pattern in _STRIP:
    text = pattern.sub(' ', text)
  return text


def measured_numbers(text):
  """[(line number, the match, the line)] of measured numbers in text's prose."""
  out = []
  for i, line in enumerate(prose(text).splitlines(), 1):
    clean = ALLOWED.sub(' ', line)
    out += [(i, m.group(0), line.strip()) for m in MEASURED.finditer(clean)]
  return out


def _pages():
  return render_docs.pages(ROOT)


def _rel(path):
  return os.path.relpath(path, ROOT)


# -- 1. render, then nothing changed -----------------------------------------------------

def test_every_rendered_block_is_fresh():
  assert render_docs.render(ROOT, check=True) == []


def test_the_pages_have_rendered_blocks_and_every_block_is_used():
  used = set()
  for path in _pages():
    used |= set(re.findall(r'<!-- render: (\w+) -->', open(path, encoding='utf-8').read()))
  assert used == set(render_docs.BLOCKS), set(render_docs.BLOCKS) ^ used


def _copy(tmp_path):
  """README.md, docs/ and the JSON of results/ (its folders too, not runs/) under tmp_path."""
  shutil.copy(os.path.join(ROOT, 'README.md'), tmp_path / 'README.md')
  shutil.copytree(os.path.join(ROOT, 'docs'), tmp_path / 'docs')
  results = os.path.join(ROOT, 'results')
  shutil.copytree(results, tmp_path / 'results', ignore=lambda folder, names: [
      n for n in names if n == 'runs' or not (n.endswith('.json') or
                                             os.path.isdir(os.path.join(folder, n)))])
  return tmp_path


def test_a_stale_block_is_named_and_rendering_fixes_it(tmp_path, capsys):
  root = _copy(tmp_path)
  readme = root / 'README.md'
  text = readme.read_text(encoding='utf-8')
  start = text.index('<!-- render: jobs -->')
  edited = text[:start] + text[start:].replace('| 13 s |', '| 12 s |', 1).replace(
      '`rf_synthetic.py` |', '`rf_synthetic.py` | (edited by hand)', 1)
  assert edited != text
  readme.write_text(edited, encoding='utf-8')
  assert render_docs.main(['--check', f'--root={root}']) == 1
  assert 'stale: README.md: jobs' in capsys.readouterr().err
  assert readme.read_text(encoding='utf-8') == edited         # --check changes nothing
  assert render_docs.main([f'--root={root}']) == 0
  assert readme.read_text(encoding='utf-8') == text
  assert render_docs.main(['--check', f'--root={root}']) == 0


def test_a_re_measured_result_makes_its_block_stale(tmp_path):
  import json
  root = _copy(tmp_path)
  path = root / 'results' / 'job_times.json'
  data = json.loads(path.read_text())
  data['records'][0]['seconds'] += 100
  path.write_text(json.dumps(data))
  assert render_docs.render(str(root), check=True) == ['README.md: jobs']


def test_an_unknown_block_is_one_line_and_exit_2(tmp_path, capsys):
  root = _copy(tmp_path)
  page = root / 'docs' / 'api.md'
  page.write_text(page.read_text() + '\n<!-- render: no_such_block -->\n<!-- /render -->\n')
  assert render_docs.main(['--check', f'--root={root}']) == 2
  assert "unknown render block 'no_such_block'" in capsys.readouterr().err


# -- 2. no measured number in prose ------------------------------------------------------

def test_the_rule_flags_measured_numbers_and_passes_settings():
  flagged = ['took 13 s on 2 cores', 'a step of 2.63 ms', '21 min for 10 seeds', '39% of them',
             'at least 2.2× faster', '27x faster', 'recon_error 0.72 at p = dn', 'loss 1e-9',
             'a loss of 10⁻⁴', '2.3·10⁸ entries', '480 of 480 runs', 'peaks at 1 400 MB',
             'within 19 GB', 'the mean 0.039']
  for text in flagged:
    assert measured_numbers(text), text
  settings = ['n = 100, d = 3072, p = 10·dn, 1.5·dn', 'five 0s and five 1s', 'arXiv:2302.07225', '8×8 digits and 5×5 faces', 'seeds 100–119',
              'Python ≥ 3.10 and JAX 0.4.30 to 0.12', '`attack.lr` = `0.05`', 'see [x](../results/a.json)',
              '```\nstep 12 loss 1.2e-3 in 3.1 s\n```', 'issue #68, 2-core CPU',
              '<!-- render: jobs -->\n| 13 s |\n<!-- /render -->', 'p ≥ m·(d + 1)']
  for text in settings:
    assert not measured_numbers(text), (text, measured_numbers(text))


@pytest.mark.parametrize('page', [_rel(p) for p in render_docs.pages(ROOT)])
def test_prose_carries_no_measured_number(page):
  found = measured_numbers(open(os.path.join(ROOT, page), encoding='utf-8').read())
  assert not found, '\n'.join(f'{page}:{i}: {m!r} in: {line[:120]}' for i, m, line in found)


# -- 3. links ----------------------------------------------------------------------------

def slug(heading):
  """GitHub's anchor of a heading."""
  text = re.sub(r'[`*_]', '', heading.strip().lower())
  text = re.sub(r'\[([^\]]*)\]\([^)]*\)', r'\1', text)
  text = re.sub(r'[^\w\- ]', '', text)
  return text.replace(' ', '-')


def anchors(path):
  text = re.sub(r'^```.*?^```', '', open(path, encoding='utf-8').read(), flags=re.S | re.M)
  return {slug(h) for h in re.findall(r'^#{1,6} (.+)$', text, re.M)}


def _links(path):
  text = re.sub(r'^```.*?^```', '', open(path, encoding='utf-8').read(), flags=re.S | re.M)
  return re.findall(r'\]\(([^)\s]+)\)', text)


def test_every_relative_link_points_at_a_file_that_exists():
  missing = []
  for page in _pages():
    for target in _links(page):
      if re.match(r'[a-z]+:', target) or target.startswith('#'):
        continue
      path = os.path.normpath(os.path.join(os.path.dirname(page), target.split('#')[0]))
      if not os.path.exists(path):
        missing.append(f'{_rel(page)} -> {target}')
  assert not missing, missing


def test_every_results_json_a_page_links_to_exists():
  linked = [t for p in _pages() for t in _links(p) if re.search(r'results/.*\.json$', t)]
  assert linked
  assert all(os.path.exists(os.path.normpath(os.path.join(ROOT, 'docs', t))) or
             os.path.exists(os.path.join(ROOT, t)) for t in linked)


def test_every_anchor_names_a_heading():
  bad = []
  for page in _pages():
    for target in _links(page):
      if re.match(r'[a-z]+:', target) or '#' not in target or not target.split('#')[0].endswith(
          '.md') and not target.startswith('#'):
        continue
      file, _, anchor = target.partition('#')
      path = page if not file else os.path.normpath(os.path.join(os.path.dirname(page), file))
      if os.path.exists(path) and anchor not in anchors(path):
        bad.append(f'{_rel(page)} -> {target}')
  code = []
  for folder in ('recon', 'configs', 'notebooks', 'scripts'):
    for dirpath, _, files in os.walk(os.path.join(ROOT, folder)):
      code += [os.path.join(dirpath, f) for f in files if f.endswith(('.py', '.ipynb'))]
  for path in code:
    for file, anchor in re.findall(r'docs/(\w+\.md)#([\w-]+)', open(path, encoding='utf-8').read()):
      if anchor not in anchors(os.path.join(ROOT, 'docs', file)):
        bad.append(f'{_rel(path)} -> docs/{file}#{anchor}')
  assert not bad, bad


def test_every_page_is_short_enough_to_read():
  """The manual's size limits (issue #68): each docs page at most 400 lines, the README (the
  front door) at most 150."""
  limits = {os.path.join(ROOT, 'README.md'): 150}
  docs = os.path.join(ROOT, 'docs')
  limits.update({os.path.join(docs, f): 400 for f in os.listdir(docs) if f.endswith('.md')})
  assert len(limits) > 5
  with_lines = {path: sum(1 for _ in open(path, encoding='utf-8')) for path in limits}
  too_long = {os.path.relpath(p, ROOT): n for p, n in with_lines.items() if n > limits[p]}
  assert not too_long, f'pages over their limit (lines): {too_long}'
