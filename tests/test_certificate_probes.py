"""scripts/certificate.py probes: the judge that decides a false certificate, the split of the
probes into (a) attack-produced m = n sets and (b) structural refusals, the data they run on,
and one probe end to end at tiny size."""
import json

import numpy as np
import pytest

from scripts import certificate as probes

ORDER = 'the order of the rows'
SIGN = 'the order of the rows and the sign of each row'
NORM = 'the order of the rows, the sign of each row and the norm of each row'


def _rows(n=4, d=6, seed=0):
  x = np.random.default_rng(seed).normal(size=(n, d))
  return x / np.linalg.norm(x, axis=1, keepdims=True) * np.sqrt(d)


def test_a_planted_wrong_candidate_set_is_a_false_certificate_in_every_metric():
  x = _rows()
  wrong = x[[1, 0, 2, 3]].copy()
  wrong[2] = _rows(1, 6, seed=7)[0]  # row 2 replaced: not any sample, whatever the symmetry
  for claim in (ORDER, SIGN, NORM):
    j = probes.judge(x, wrong, True, claim)
    assert j['false'] and j['missed_rows'] == [2] and j['frac_recovered'] == 0.75
    assert j['distances'][2] > 0.1 and max(j['distances'][:2] + j['distances'][3:]) < 1e-6
    # The same set, not certified, is a refusal, never false.
    assert not probes.judge(x, wrong, False, claim)['false']


def test_the_metric_is_the_one_the_claim_names():
  x = _rows()
  flipped = x * np.array([1, -1, 1, -1])[:, None]
  scaled = x * np.array([0.5, 1.3, 1.0, 0.7])[:, None]
  # A sign claim frees the sign, not the norm; a norm claim frees both; no claim frees neither.
  assert probes.judge(x, flipped, True, ORDER)['false']
  assert not probes.judge(x, flipped, True, SIGN)['false']
  assert probes.judge(x, scaled, True, SIGN)['false']
  j = probes.judge(x, -scaled, True, NORM)
  assert not j['false'] and j['frac_recovered'] == 1.0
  assert j['frac_recovered_with_norm'] == 0.25 and j['norm_error_median'] == pytest.approx(0.3)
  # m < n: the uncovered sample is never recovered.
  j = probes.judge(x, x[:3], True, ORDER)
  assert j['false'] and j['missed_rows'] == [3] and np.isfinite(j['max_distance'])


def test_a_claim_wider_than_the_activation_is_flagged():
  assert probes.claimed_symmetry(NORM) == (True, True)
  assert probes.claimed_symmetry(SIGN) == (True, False)
  assert probes.claimed_symmetry(ORDER) == (False, False)
  assert not probes.claim_wider('relu', NORM) and not probes.claim_wider('quadratic', NORM)
  assert probes.claim_wider('relu_tanh', SIGN) and probes.claim_wider('tanh', NORM)
  assert not probes.claim_wider('tanh', SIGN) and not probes.claim_wider('gelu', ORDER)


def _record(probe_class, data, activation, homogeneous, frac, certified):
  per_seed = [dict(seed=300 + i, certified=c, candidates_certified=c, frac_recovered=f,
                   false=c and f < 1.0) for i, (f, c) in enumerate(zip(frac, certified))]
  return probes._summarise(  # pylint: disable=protected-access
      dict(level='attack', probe_class=probe_class, kind=data, data=data, activation=activation,
           homogeneous=homogeneous, n=3, d=4, p=None, p_over_dn=[10.0],
           n_candidates=3 if probe_class == 'a' else 2, certified_up_to=NORM,
           row_norm_over_sqrt_d=[0.5, 1.5]), per_seed)


def test_the_report_splits_the_kinds_and_counts_false_certificates(tmp_path):
  recs = [_record('a', 'off_sphere', 'relu', True, [1.0, 0.5, 1.0], [True, True, False]),
          _record('a', 'sphere', 'tanh', False, [1.0, 1.0], [True, True]),
          _record('a', 'digits', 'quadratic', True, [0.0], [False]),
          _record('b', 'fewer', 'relu_tanh', False, [0.0, 0.0], [False, False])]
  doc = probes.document(recs, 'test', 1.0)
  assert doc['kind_a'] == dict(runs=6, certified=4, recovered=4, false_certified=1,
                               claims_wider=0, crashed=0)
  assert doc['kind_b']['runs'] == 2 and doc['kind_b']['false_certified'] == 0
  hard = doc['kind_a_homogeneous_off_sphere_or_images']
  assert (hard['runs'], hard['false_certified']) == (4, 1)
  assert (doc['runs'], doc['false_certified'], doc['attack_runs']) == (8, 1, 8)
  assert [r['data'] for r in doc['by_setting']] == ['off_sphere', 'sphere', 'digits']
  out = str(tmp_path / 'p')
  probes.render_probes(doc, out)
  text = open(out + '.md').read()
  assert '1 false in 6' in text and '## False certificates' in text
  assert '| off_sphere | relu | 4 | 1 | 3 | 2 | 2 | 1 | 0.50-1.50 |' in text
  json.dumps(doc)


def test_the_data_the_probes_run_on():
  rng = np.random.default_rng(0)
  x = probes.off_sphere_rows(rng, 200, 9)
  r = np.linalg.norm(x, axis=1) / 3.0
  assert probes.NORMS[0] <= r.min() < 0.6 and 1.4 < r.max() <= probes.NORMS[1]
  c = probes.clustered_rows(rng, 6, 12, 0.1)
  assert np.allclose(np.linalg.norm(c, axis=1), np.sqrt(12))
  dist = np.linalg.norm(c[:, None] - c[None], axis=-1) / np.sqrt(12)
  same = np.arange(6)[:, None] % 2 == np.arange(6)[None] % 2
  off = ~np.eye(6, dtype=bool)
  assert dist[same & off].max() < 0.2 and dist[same & off].min() > 0.05  # close, not duplicates
  assert dist[~same].min() > 0.3


def test_every_kind_a_probe_has_m_equal_to_n_and_the_hard_share_is_met(tmp_path):
  jobs = probes.attack_jobs(probes.PRESETS['default'], probes.FIRST_SEED, str(tmp_path))
  assert all(j['m'] == j['n'] for j in jobs)
  runs = lambda js: sum(len(j['seeds']) * len(j['ratios']) for j in js)  # noqa: E731
  hard = [j for j in jobs if j['activation'] in ('relu', 'quadratic')
          and j['data_kind'] in ('off_sphere', 'digits', 'faces')]
  assert runs(jobs) >= 300 and runs(hard) >= 100
  assert {j['activation'] for j in jobs} >= set(probes.ACTIVATIONS)
  assert {j['data_kind'] for j in jobs} == set(probes.DATA_KINDS)
  assert min(min(j['seeds']) for j in jobs) >= 300


@pytest.mark.slow
def test_certificate_level_probes_refuse_every_whole_set_claim_they_cannot_make():
  n, d, p = 4, 5, 200
  seeds = [300, 301]
  for kind in ('invisible', 'duplicate_m_n_minus_1', 'duplicate_m_n'):
    r = probes.certificate_probe(kind, 'relu_tanh', n, d, p, seeds)
    assert r['runs'] == 2 and r['certified'] == 0 and r['false_certified'] == 0
    assert r['probe_class'] == 'b'
    if kind != 'duplicate_m_n':
      assert r['n_candidates'] == n - 1 and r['recovered'] == 0
      # The missing sample is invisible to theta, yet the candidates' claim stands.
      assert r['candidates_certified'] == 2
  twice = probes.certificate_probe('collapsed', 'relu_tanh', n, d, p, seeds)
  assert twice['n_candidates'] == n and twice['certified'] == 0 and twice['recovered'] == 0
  close = probes.certificate_probe('near_duplicate', 'relu_tanh', n, d, p, seeds)
  assert close['recovered'] == 2 and close['false_certified'] == 0


@pytest.mark.slow
def test_an_off_sphere_relu_probe_end_to_end_is_judged_up_to_norm(tmp_path):
  rng = np.random.default_rng([0, 1])
  path = str(tmp_path / 'off.npz')
  probes.write_file(path, probes.off_sphere_rows(rng, 3, 4), rng)
  rec = probes.attack_probe('off_sphere', 'relu', 3, 4, 120, 3, [0], ratios=(10.0,),
                            data={'data.name': 'file', 'data.path': path,
                                  'data.preprocess': 'none'}, data_kind='off_sphere')
  assert rec['probe_class'] == 'a' and rec['runs'] == 1 and rec['homogeneous']
  assert rec['certified_up_to'].endswith('the norm of each row')
  s = rec['per_seed'][0]
  assert s['metric'] == dict(sign_invariant=True, scale_invariant=True)
  assert rec['false_certified'] == int(s['certified'] and s['frac_recovered'] < 1.0)
  assert rec['row_norm_over_sqrt_d'][0] < 0.95 or rec['row_norm_over_sqrt_d'][1] > 1.05
