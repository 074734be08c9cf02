"""The mutation-testing driver (scripts/mutations.py): its shards and triage are current, its
config scopes mutmut to one module, its sample is fixed, its score counts what it says."""
import configparser
import os
import re

import pytest

from scripts import mutations

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_every_shard_names_existing_modules_and_tests():
  names = [s.name for s in mutations.SHARDS]
  assert len(names) == len(set(names))
  for s in mutations.SHARDS:
    assert s.modules and all(os.path.isfile(os.path.join(ROOT, m)) for m in s.modules), s.name
    assert any(os.path.isfile(os.path.join(ROOT, t)) for t in s.tests), s.name


def _module_of(name):
  """'recon.certify.pairs.x_f__mutmut_3' -> 'recon/certify/pairs.py'."""
  return name.split('.x')[0].replace('.', '/') + '.py'


def test_every_triaged_mutant_belongs_to_a_shard_and_names_a_test_that_exists():
  """A stale entry (its test renamed, its module moved) fails here, not in the report."""
  mutated = {m for s in mutations.SHARDS for m in s.modules}
  for name, (kind, why) in mutations.TRIAGE.items():
    assert kind in ('test', 'equivalent', 'open') and why, name
    assert re.search(r'__mutmut_\d+$', name) and _module_of(name) in mutated, name
    if kind == 'test':
      path, test = why.split('::')
      with open(os.path.join(ROOT, path), encoding='utf-8') as f:
        assert re.search(rf'^def {test}\(', f.read(), re.M), why


def test_the_config_mutates_one_module_and_selects_its_tests():
  shard = mutations.by_name(['pairs'])[0]
  cfg = configparser.ConfigParser()
  cfg.read_string(mutations.config_section(shard, shard.tests))
  m = cfg['mutmut']
  assert m['only_mutate'].split() == ['recon/certify/pairs.py']
  assert m['pytest_add_cli_args_test_selection'].split() == ['tests/test_candidate_pairs.py']
  assert m['pytest_add_cli_args'].split('\n')[1:] == ['-n', '0', '-m', 'not slow', '-p',
                                                     'no:cacheprovider']
  assert m['source_paths'] == 'recon' and m['process_isolation'] == 'forkserver'
  assert m['do_not_mutate_patterns'].split() == list(mutations.DO_NOT_MUTATE)


def test_an_unknown_shard_is_one_error_line():
  with pytest.raises(ValueError, match=r'^error: --shards: unknown nope; accepted: certificate'):
    mutations.by_name(['certificate', 'nope'])


def test_the_sample_is_fixed_a_subset_and_all_at_zero():
  names = [f'recon.metrics.x_f__mutmut_{i}' for i in range(1, 200)]
  a, b = mutations.sample(names, 30), mutations.sample(list(reversed(names)), 30)
  assert a == b and len(a) == 30 and set(a) <= set(names) and a == sorted(a)
  assert mutations.sample(names, 0) == sorted(names) == mutations.sample(names, 500)
  assert mutations.sample(names, 31)[:0] == [] and set(a) <= set(mutations.sample(names, 31))


def test_the_score_counts_killed_and_timeouts_over_the_non_equivalent_run(monkeypatch):
  monkeypatch.setattr(mutations, 'TRIAGE', {'m.x_f__mutmut_3': ('equivalent', 'why'),
                                            'm.x_f__mutmut_4': ('test', 't.py::t')})
  codes = {'m.x_f__mutmut_1': 1, 'm.x_f__mutmut_2': 36, 'm.x_f__mutmut_3': 0,
           'm.x_f__mutmut_4': 0, 'm.x_f__mutmut_5': 33, 'm.x_f__mutmut_6': None}
  records = [{'name': k, 'outcome': mutations.outcome(k, c)} for k, c in codes.items()]
  assert [r['outcome'] for r in records] == ['killed', 'timeout', 'equivalent', 'survived',
                                             'no tests', 'not run']
  t = mutations.tally(records)
  assert t['run'] == 5 and t['equivalent'] == 1 and t['score'] == 0.5  # (1 + 1) / (5 - 1)
  assert mutations.tally([])['score'] is None
