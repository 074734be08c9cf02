"""The per-record audit (recon/report/records.py) and its page (recon/report/page.py); an end-to-end
run on the auditor's own file through recon.main writes records.json and report.html."""
import html.parser
import json

import jax.numpy as jnp
import numpy as np
import pytest

from configs import rf_synthetic
from recon import main
from recon.report import records
from recon.report import page as report_page
from recon.runtime import runs
from recon.models import saved as model_ckpt
from recon.pipelines import random_features

RNG = np.random.default_rng(0)


def _cert(pinned, within, certified=True):
  ev = {'row_pinned': list(pinned), 'row_within': list(within)}
  return {'certified': certified, 'candidates_certified': certified, 'evidence': ev,
          'certified_up_to': 'the order of the rows', 'reasons': []}


# --- records ---------------------------------------------------------------------------------


def test_every_record_once_with_its_matched_candidate_and_verdict():
  x = RNG.normal(size=(5, 6))
  perm = np.array([3, 0, 4, 1, 2])  # candidate j is record perm[j]
  noise = np.array([0.0, 0.01, 0.5, 0.02, 0.3])[:, None] * RNG.normal(size=(5, 6))
  x_hat = x[perm] + noise
  x_hat[2] *= -1  # a mirror image: matched with sign -1 when sign-invariant
  cert = _cert(pinned=[1, 1, 0, 1, 0], within=[1, 1, 1, 1, 0])
  recs = records.build(x, x_hat, threshold=0.1, sign_invariant=True, cert=cert)
  assert sorted(r['index'] for r in recs) == list(range(5))
  assert [r['distance'] for r in recs] == sorted(r['distance'] for r in recs)  # most exposed first
  by_index = {r['index']: r for r in recs}
  for j, i in enumerate(perm):
    r = by_index[i]
    assert r['matched_candidate'] == j and r['matched']
    assert r['verdict'] == ['pinned', 'pinned', 'within', 'pinned', 'free'][j]
    want = np.linalg.norm(x[i] - r['sign'] * x_hat[j]) / np.linalg.norm(x[i])
    assert r['distance'] == pytest.approx(want)
  assert by_index[perm[2]]['sign'] == -1
  assert {i for i, r in by_index.items() if r['recovered']} == {perm[0], perm[1], perm[3]}
  c = records.counts(recs)
  assert (c['n'], c['recovered'], c['pinned'], c['within'], c['free']) == (5, 3, 3, 1, 1)
  signed = records.build(x, x_hat, threshold=0.1, sign_invariant=False)
  assert all(r['sign'] == 1 and r['verdict'] == 'uncertified' for r in signed)


def test_fewer_candidates_than_records_leaves_some_unmatched_and_free():
  x = RNG.normal(size=(4, 5))
  recs = records.build(x, x[:2], threshold=0.1, sign_invariant=False, cert=_cert([1, 1], [1, 1]))
  unmatched = [r for r in recs if not r['matched']]
  assert len(unmatched) == 2 and all(not r['recovered'] and r['verdict'] == 'free'
                                     for r in unmatched)
  assert [r['index'] for r in recs[:2]] == [0, 1] and recs[0]['verdict'] == 'pinned'


def test_verdicts_without_per_row_evidence_follow_the_set():
  no_rows = {'certified': False, 'candidates_certified': True, 'evidence': {}}
  assert records.candidate_verdicts(no_rows, 3) == ['pinned'] * 3
  assert records.candidate_verdicts(dict(no_rows, candidates_certified=False), 2) == ['free'] * 2
  assert records.candidate_verdicts(None, 2) == ['uncertified'] * 2


def test_image_records_carry_ssim():
  x = RNG.uniform(size=(3, 36))
  recs = records.build(x, x + 0.3 * RNG.normal(size=x.shape) * [[0], [1], [0]], threshold=0.1,
                       sign_invariant=False, image_shape=(6, 6, 1))
  ssim = {r['index']: r['ssim'] for r in recs}
  assert ssim[0] == pytest.approx(1.0, abs=1e-5) and ssim[1] < 0.9


# --- the page --------------------------------------------------------------------------------


class _Parser(html.parser.HTMLParser):
  def __init__(self):
    super().__init__()
    self.tags, self.srcs = [], []

  def handle_starttag(self, tag, attrs):
    self.tags.append(tag)
    self.srcs += [v for k, v in attrs if k in ('src', 'href')]


def check_self_contained(page: str) -> _Parser:
  """The page parses, loads nothing (no script, link, remote or file reference)."""
  assert 'http://' not in page and 'https://' not in page
  parser = _Parser()
  parser.feed(page)
  parser.close()
  assert 'html' in parser.tags and 'table' in parser.tags
  assert not {'script', 'link', 'iframe', 'object', 'embed'} & set(parser.tags)
  assert all(s.startswith('data:image/png;base64,') for s in parser.srcs), parser.srcs[:3]
  return parser


def _summary(n, **metrics):
  cfg = rf_synthetic.get_config().to_dict()
  return {'config': cfg, 'metrics': {'status': 'converged', 'steps': 10, 'final_loss': 1e-10,
                                     'wall_seconds': 1.0, 'n_candidates': n, **metrics},
          'threat_model': {'known': ['theta* (trained)'], 'unknown': ['X <training inputs>']},
          'device': 'cpu'}


def test_page_images_inline_and_capped(monkeypatch):
  monkeypatch.setattr(report_page, 'MAX_PICTURES', 3)
  x = RNG.uniform(size=(5, 16))
  recs = records.build(x, x, threshold=0.1, sign_invariant=False, image_shape=(4, 4, 1))
  page = report_page.render(_summary(5, certified=False, candidates_certified=False,
                                     certificate={'reasons': ['loss 1e-3 > tol']}),
                            recs, truth=x, candidates=x, image_shape=(4, 4, 1))
  parser = check_self_contained(page)
  assert len(parser.srcs) == 2 * 3  # truth and candidate for the first 3 records only
  assert 'pictures for the first 3' in page and '5 of 5 training records came back' in page
  assert 'not certified: loss 1e-3 &gt; tol' in page and '&lt;training inputs&gt;' in page


def test_page_vectors_as_inline_svg_and_blind_page():
  x = RNG.normal(size=(3, 200))
  recs = records.build(x, x, threshold=0.1, sign_invariant=True, cert=_cert([1, 1, 1], [1] * 3))
  page = report_page.render(_summary(3, certified=True, certified_up_to='the order of the rows'),
                            recs, truth=x, candidates=x)
  check_self_contained(page)
  assert page.count('<svg') == 3 and 'first 128 of 200 coordinates' in page
  assert 'certified</span>: the whole training set' in page
  blind = report_page.render(_summary(3), [], candidates=x, verdicts=['free'] * 3)
  check_self_contained(blind)
  assert 'No ground truth' in blind and blind.count('<td class="free">free') == 3
  assert 'Candidate verdicts: <span class="free">free</span> 3' in blind


# --- end to end: the auditor's file through recon.main ---------------------------------------


def _sphere_rows(n, d, seed):
  x = np.random.default_rng(seed).normal(size=(n, d))
  return x * np.sqrt(d) / np.linalg.norm(x, axis=1, keepdims=True)


def _file_config(path, **overrides):
  c = rf_synthetic.get_config()
  c.data.name, c.data.path, c.data.n, c.data.d = 'file', str(path), None, None
  c.victim.p, c.attack.max_steps = 320, 4000
  c.update_from_flattened_dict(overrides)
  return c


@pytest.mark.slow
def test_run_on_the_auditors_file_writes_records_and_page(tmp_path):
  """recon trains the victim on the file (its training set: data.n, data.d None = the file's)."""
  x, y = _sphere_rows(4, 8, 0), np.random.default_rng(1).normal(size=4)
  np.savez(tmp_path / 'train.npz', x=x, y=y)
  out = tmp_path / 'run'
  assert main.execute(_file_config(tmp_path / 'train.npz', **{'data.preprocess': 'none'}),
                      str(out)) == 0
  summary = json.loads((out / 'summary.json').read_text())
  assert summary['config']['data']['n'] == 4 and summary['config']['data']['d'] == 8
  assert summary['data']['name'] == 'file'
  recs = json.loads((out / 'records.json').read_text())
  assert sorted(r['index'] for r in recs) == [0, 1, 2, 3]
  assert all(r['verdict'] in records.VERDICTS and r['verdict'] != 'uncertified' for r in recs)
  assert sum(r['recovered'] for r in recs) == summary['metrics']['n_recovered'] == 4
  page = (out / 'report.html').read_text()
  check_self_contained(page)
  assert '4 of 4 training records came back' in page and page.count('<svg') == 4


@pytest.mark.slow
def test_saved_model_is_scored_against_the_file_only(tmp_path):
  """victim.checkpoint: the file (rows permuted, no labels) is the truth the records follow;
  the model's own stored training set is not used."""
  x = _sphere_rows(4, 8, 0)
  cfg = _file_config(tmp_path / 'unused.npz', **{'data.name': 'synthetic_sphere', 'data.n': 4,
                                                  'data.d': 8})
  keys = runs.split_keys(0)
  model, _ = random_features.train_random_features(cfg.data, cfg.victim, cfg.seed, keys,
                                                   jnp.float32)
  model.truth = {'x': jnp.asarray(x), 'y': model.truth['y']}
  model_ckpt.save(str(tmp_path / 'model'), model)
  perm = np.array([2, 0, 3, 1])
  np.savez(tmp_path / 'truth.npz', x=x[perm])  # no 'y': only the truth to score against
  out = tmp_path / 'attack'
  c = _file_config(tmp_path / 'truth.npz', **{'data.preprocess': 'none', 'attack.max_steps': 200,
                                              'victim.checkpoint': str(tmp_path / 'model')})
  assert main.execute(c, str(out)) == 0
  recs = json.loads((out / 'records.json').read_text())
  assert sorted(r['index'] for r in recs) == [0, 1, 2, 3]
  cands = np.load(out / 'reconstruction.npz')['x_candidates']
  for r in recs:
    truth = x[perm][r['index']]
    want = np.linalg.norm(truth - r['sign'] * cands[r['matched_candidate']]) / np.linalg.norm(truth)
    assert r['distance'] == pytest.approx(want, rel=1e-5)
  page = (out / 'report.html').read_text()
  check_self_contained(page)
  assert 'a saved model' in page


def _bad_files(tmp_path):
  ok = _sphere_rows(4, 8, 0)
  cases = {
      'no_x.npz': (dict(z=ok), "has no array 'x'"),
      'ndim.npz': (dict(x=ok[:, :, None, None, None]), "'x' of shape [4, 8, 1, 1, 1]"),
      'channels.npz': (dict(x=np.zeros((4, 2, 2, 5))), 'C 1 or 3'),
      'nan.npz': (dict(x=np.where(ok > 1, np.nan, ok), y=np.zeros(4)), "non-finite value(s) in 'x'"),
      'object.npz': (dict(x=np.array([ok[0], 'a'], dtype=object)), 'object array'),
      'text.npz': (dict(x=np.array([['a', 'b']])), "dtype <U1"),
      'y_shape.npz': (dict(x=ok, y=np.zeros((4, 2))), "'y' of shape [4, 2] (expected (4,)"),
      'no_y.npz': (dict(x=ok), "has no 'y'"),
  }
  out = {}
  for name, (arrays, part) in cases.items():
    np.savez(tmp_path / name, **arrays)
    out[name] = part
  (tmp_path / 'pickle.npz').write_bytes(__import__('pickle').dumps({'x': ok}))
  out['pickle.npz'] = 'pickled data'
  (tmp_path / 'garbage.npz').write_bytes(b'PK\x03\x04 not a zip')
  out['garbage.npz'] = 'is not a NumPy'
  return out


def test_bad_files_are_one_line_and_exit_2(tmp_path, capsys):
  for name, part in _bad_files(tmp_path).items():
    out = tmp_path / f'run-{name}'
    assert main.execute(_file_config(tmp_path / name), str(out)) == 2, name
    err = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
    assert len(err) == 1 and err[0].startswith('error: config.data.path: '), (name, err)
    assert part in err[0], (name, err[0])
    assert not out.exists()


def test_sizes_and_settings_that_disagree_with_the_file(tmp_path, capsys):
  np.savez(tmp_path / 'x.npz', x=_sphere_rows(4, 8, 0), y=np.zeros(4))
  path = tmp_path / 'x.npz'
  for overrides, part in [
      ({'data.n': 10}, 'config.data.n: 10 but data.path'),
      ({'data.d': 7}, 'config.data.d: 7 but data.path'),
      ({'data.path': None}, "config.data.path: required for data.name 'file'"),
      ({'data.path': str(tmp_path / 'missing.npz')}, 'does not exist'),
      ({'victim.checkpoint': str(tmp_path)}, "config.data.preprocess: 'sphere' with "
                                             'victim.checkpoint'),
      ({'data.name': 'synthetic_sphere'}, "config.data.n: None is accepted only with data.name "
                                          "'file'")]:
    assert main.execute(_file_config(path, **overrides), str(tmp_path / 'r')) == 2, overrides
    err = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
    assert len(err) == 1 and part in err[0], (overrides, err)


def test_a_saved_models_truth_gives_way_to_the_auditors_file(tmp_path):
  """Every pipeline that loads a saved model (networks, subspace) scores against the file."""
  from types import SimpleNamespace  # pylint: disable=import-outside-toplevel
  from recon.pipelines import victims  # pylint: disable=import-outside-toplevel
  np.savez(tmp_path / 'x.npz', x=_sphere_rows(3, 4, 0))
  cfg = _file_config(tmp_path / 'x.npz')
  model = SimpleNamespace(data={'config': {}}, truth={'x': np.zeros((3, 4)), 'y': None})
  sentinel = (np.ones((3, 4)), None, {'name': 'file'})
  assert victims.model_training_data(cfg.data, cfg.run.dtype, {}, model,
                                     lambda: sentinel) is sentinel


def test_the_kkt_attack_refuses_a_file_in_one_line(tmp_path, capsys):
  np.savez(tmp_path / 'x.npz', x=_sphere_rows(4, 8, 0), y=np.ones(4))
  c = _file_config(tmp_path / 'x.npz', **{'victim.name': 'homogeneous_mlp',
                                          'attack.objective': 'kkt_binary', 'data.num_classes': 2})
  assert main.execute(c, str(tmp_path / 'r')) == 2
  err = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
  assert len(err) == 1 and "data.name: 'file' with model homogeneous_mlp" in err[0], err
  assert not (tmp_path / 'r').exists()


def test_records_up_to_norm_score_directions_and_give_the_norm_ratio():
  x = RNG.normal(size=(3, 6))
  x_hat = x[[1, 2, 0]] * np.array([[2.0], [0.5], [1.0]])
  recs = records.build(x, x_hat, threshold=0.1, sign_invariant=False, scale_invariant=True)
  assert all(r['recovered'] and r['distance'] < 1e-7 for r in recs)
  ratio = {r['index']: r['norm_ratio'] for r in recs}
  assert ratio == pytest.approx({1: 2.0, 2: 0.5, 0: 1.0})
  raw = records.build(x, x_hat, threshold=0.1, sign_invariant=False)
  assert sum(r['recovered'] for r in raw) == 1 and 'norm_ratio' not in raw[0]


def test_a_float32_file_is_scored_in_float64():
  """An auditor's float32 rows: the norm ratio of a candidate at exactly twice the row is 2
  (float32 norms would leave ~1e-7)."""
  x = (0.1 * np.arange(1, 13, dtype=np.float32) ** 0.5).reshape(3, 4)
  x_hat = 2.0 * x.astype(np.float64)
  recs = records.build(x, x_hat, threshold=0.1, sign_invariant=False, scale_invariant=True)
  assert [r['norm_ratio'] for r in recs] == [2.0, 2.0, 2.0]
  assert all(r['distance'] == 0.0 and r['recovered'] for r in recs)


def test_the_page_says_the_norm_is_not_identifiable_and_how_off_sphere_rows_were_scored():
  from recon.report import scoring as report
  x = RNG.normal(size=(3, 6))
  recs = records.build(x, x, threshold=0.1, sign_invariant=False, scale_invariant=True)
  summary = _summary(3, certified=True,
                     certified_up_to='the order of the rows and the norm of each row')
  summary['metrics'].update(report.norm_statement(True), scale_invariant=True,
                            rows_off_sphere=report.off_sphere(x, True))
  page = report_page.render(summary, recs, truth=x, candidates=x)
  assert 'Norm not identifiable from this model' in page and 'up to norm' in page
  assert '3 of 3 training records are off the &radic;d sphere' in page
  plain = dict(_summary(3, certified=True, certified_up_to='the order of the rows'))
  plain['metrics'].update(report.norm_statement(False))
  page2 = report_page.render(plain, records.build(x, x, threshold=0.1, sign_invariant=False),
                             truth=x, candidates=x)
  assert 'not identifiable' not in page2 and '&radic;d sphere' not in page2
  on_sphere = x / np.linalg.norm(x, axis=1, keepdims=True) * np.sqrt(6)
  assert report.off_sphere(on_sphere, True) is None


def test_page_says_what_the_numbers_mean_and_where_they_came_from(tmp_path):
  """#69 item 4: the result sentence, the distance scale, what a negative result does not
  show, each verdict's reason, the provenance, the width against the law, the defences."""
  from recon.report import provenance  # pylint: disable=import-outside-toplevel
  x = RNG.normal(size=(4, 8))
  far = x.copy()
  far[0] = 1.5 * x[0]  # one record not recovered (relative distance 0.5), matched to itself
  model = tmp_path / 'model.npz'
  model.write_bytes(b'weights')
  cfg = rf_synthetic.get_config()
  cfg.victim.checkpoint = str(model)
  summary = _summary(4, certified=False, candidates_certified=False, p_over_dn=2.5,
                     certificate={'reasons': ['loss 1e-3 > tol']})
  summary['provenance'] = provenance.record(cfg.to_dict())
  recs = records.build(x, far, threshold=0.1, sign_invariant=False)
  page = report_page.render(summary, recs, truth=x, candidates=far)
  check_self_contained(page)
  assert '3 of 4 training records came back' in page                      # the result
  assert 'a random candidate of the same norm scores about 1.4' in page    # the scale
  assert 'it is not evidence that the record is safe' in page              # a negative result
  assert 'not certified: loss 1e-3 &gt; tol' in page                       # the verdict's reason
  assert 'p = 2.5&middot;d&middot;n' in page and 'configs/leak_width.py' in page  # the width
  assert 'docs/defences.md' in page                                        # the defences
  assert '<h2>Provenance</h2>' in page and 'victim.checkpoint' in page     # the provenance
  assert summary['provenance']['inputs']['victim.checkpoint']['sha256'][:16] in page
  everything = records.build(x, x, threshold=0.1, sign_invariant=False)
  assert 'not evidence' not in report_page.render(summary, everything, truth=x, candidates=x)


def test_provenance_names_the_commit_and_a_cli_command():
  from recon.report import provenance  # pylint: disable=import-outside-toplevel
  git = provenance.git_commit()
  if git is not None:  # a git checkout (a wheel install has none)
    assert len(git['commit']) == 40 and isinstance(git['dirty'], bool)
  line = provenance.command_line(['/x/recon/main.py', '--config=configs/a.py',
                                  '--config.data.path=my file.npz'])
  assert line == "python -m recon.main --config=configs/a.py '--config.data.path=my file.npz'"
  assert provenance.command_line(['/x/scripts/bench.py']) is None
