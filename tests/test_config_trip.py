"""scripts/config_trip.py: the trip's counts, what counts as the whole config, and issue #29's
targets (at most 10 climbs back up, no module entered more than 3 times) on the real jobs."""
import json

import ml_collections
import pytest

import recon
from scripts import config_trip


def test_counts_of_a_known_trip():
  upper = config_trip.upper_of({'top': {'mid'}, 'mid': {'low'}, 'low': set(), 'side': set()})
  assert upper['low'] == {'mid', 'top'} and upper['top'] == set()
  calls = ['top:a', 'mid:b', 'mid:c', 'low:d', 'mid:e', 'side:f', 'top:g', 'low:h']
  t = config_trip.trip(calls, upper)
  assert t['path'] == ['top', 'mid', 'low', 'mid', 'side', 'top', 'low']
  assert (t['calls'], t['rooms'], t['moves']) == (8, 4, 6)
  # low -> mid and side -> top? side is imported by nobody: only low -> mid climbs.
  assert t['climb_moves'] == ['low -> mid'] and t['climbs'] == 1
  assert t['entries'] == {'top': 2, 'mid': 2, 'low': 2, 'side': 1} and t['max_entries'] == 2
  assert t['functions']['mid'] == ['b', 'c', 'e']


def test_only_the_whole_config_counts_not_a_section_or_the_sweep():
  config = recon.get_config('rf_synthetic')
  assert config_trip.is_whole_config(config)
  assert not config_trip.is_whole_config(config.attack)
  assert not config_trip.is_whole_config(config.sweep)  # it mirrors data/victim/attack/run
  assert not config_trip.is_whole_config(ml_collections.ConfigDict({'data': 1}))
  assert not config_trip.is_whole_config(config.to_dict())


@pytest.mark.slow
def test_every_job_is_within_the_target(tmp_path):
  config_trip.main([f'--out={tmp_path}/trip'])
  out = json.load(open(tmp_path / 'trip.json'))
  assert {r['job'] for r in out['records']} == {j[0] for j in config_trip.JOBS}
  for r in out['records']:
    assert r['climbs'] <= config_trip.MAX_CLIMBS, (r['job'], r['climb_moves'])
    assert r['max_entries'] <= config_trip.MAX_ENTRIES, (r['job'], r['entries'])
    assert r['path'][0] == 'recon.api' and r['calls'] > 0
