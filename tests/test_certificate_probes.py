"""scripts/certificate_probes.py at tiny size: every probe kind runs, counts and renders."""
import json

from scripts import certificate_probes as probes


def test_certificate_level_probes_refuse_every_whole_set_claim_they_cannot_make():
  n, d, p = 4, 5, 200
  seeds = [300, 301]
  for kind in ('invisible', 'duplicate_m_n_minus_1', 'duplicate_m_n'):
    r = probes.certificate_probe(kind, 'relu_tanh', n, d, p, seeds)
    assert r['runs'] == 2 and r['certified'] == 0 and r['false_certified'] == 0
    if kind != 'duplicate_m_n':
      assert r['n_candidates'] == n - 1 and r['recovered'] == 0
      # The missing sample is invisible to theta, yet the candidates' claim stands.
      assert r['candidates_certified'] == 2
  # One sample found twice (the sample it hides invisible): never certified; two close
  # training rows: the truth, so never a false certificate whatever the count.
  twice = probes.certificate_probe('collapsed', 'relu_tanh', n, d, p, seeds)
  assert twice['n_candidates'] == n and twice['certified'] == 0 and twice['recovered'] == 0
  close = probes.certificate_probe('near_duplicate', 'relu_tanh', n, d, p, seeds)
  assert close['recovered'] == 2 and close['false_certified'] == 0
  inv = probes.certificate_probe('invisible', 'relu_tanh', n, d, p, seeds)
  for s in inv['per_seed']:
    assert s['min_share'] < 1e-5 and s['final_loss'] <= 1e-9


def test_false_certified_counts_certified_runs_with_a_row_missed():
  per_seed = [dict(seed=0, certified=True, candidates_certified=True, frac_recovered=1.0),
              dict(seed=1, certified=True, candidates_certified=True, frac_recovered=0.5),
              dict(seed=2, certified=False, candidates_certified=True, frac_recovered=0.5)]
  r = probes._summarise({}, per_seed)  # pylint: disable=protected-access
  assert (r['certified'], r['recovered'], r['false_certified']) == (2, 1, 1)


def test_an_odd_activation_probe_end_to_end_renders(tmp_path):
  rec = probes.attack_probe('odd_even', 'tanh', 3, 4, 120, 3, [300])
  assert rec['certified_up_to'].endswith('the sign of each row')
  assert rec['false_certified'] == 0 and rec['runs'] == 1
  doc = probes.document([rec])
  out = str(tmp_path / 'p')
  probes.render(doc, out)
  text = open(out + '.md').read()
  assert '| attack | odd_even | tanh |' in text and 'false certificates in 1 probes' in text
  json.dumps(doc)
