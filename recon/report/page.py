"""WORKDIR/report.html: the audit as one self-contained page (opens in a browser, no server).

Everything is inline: images are base64 PNG `data:` URIs, vector records small inline SVG
line plots, the style a <style> block; the page loads nothing (no script, no link, no
remote or local file). At the top, the summary: how many training records came back,
whether the run is certified (and why not), the per-record verdicts, what the numbers mean (the
distance scale, the width against the law, what a record that did not come back does not
show, where the defences are), the threat model (what the attacker was given: parameters,
whether n and the initial parameters were known) and the provenance (version, commit, time,
input hashes, command). Below, the records (`recon.report.records`), most exposed first: the truth next to its
matched candidate. To keep the file small, pictures are drawn for the first `MAX_PICTURES`
records and the table lists the first `MAX_ROWS` (records.json has every record); the page
says when it cut.
"""
from __future__ import annotations

import base64
import html
import io as _io
from typing import Any, Dict, List, Optional, Sequence

import numpy as np

from recon import registry

MAX_PICTURES = 200
MAX_ROWS = 2000
MAX_PLOT_POINTS = 128  # vectors: the first coordinates drawn
THUMB_PX = 64  # displayed size of the longer image side (pixels stay crisp)

_STYLE = """
body{font-family:system-ui,sans-serif;margin:2em;color:#222;max-width:1100px}
h1{font-size:1.4em}h2{font-size:1.15em;margin-top:1.6em}
table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;
vertical-align:middle}th{background:#f3f3f3}.num{text-align:right;font-variant-numeric:tabular-nums}
.pinned{color:#a00;font-weight:bold}.within{color:#b60}.free{color:#357}.uncertified{color:#777}
.yes{color:#a00;font-weight:bold}.box{background:#f8f8f8;border:1px solid #ddd;padding:.8em 1.2em}
img.px{image-rendering:pixelated;image-rendering:crisp-edges}.note{color:#666;font-size:.9em}
"""


def _e(value: Any) -> str:
  return html.escape(str(value), quote=True)


def png_data_uri(image: np.ndarray) -> str:
  """An (H, W[, C]) image with values in [0, 1] as a base64 PNG data URI (8-bit)."""
  from PIL import Image  # pylint: disable=import-outside-toplevel  (matplotlib's dependency)
  a = np.clip(np.nan_to_num(np.asarray(image, np.float64)), 0.0, 1.0)
  if a.ndim == 3 and a.shape[2] == 1:
    a = a[..., 0]
  buf = _io.BytesIO()
  Image.fromarray(np.round(a * 255).astype(np.uint8)).save(buf, format='PNG', optimize=True)
  return 'data:image/png;base64,' + base64.b64encode(buf.getvalue()).decode('ascii')


def _img(image: np.ndarray, alt: str) -> str:
  h, w = image.shape[:2]
  scale = THUMB_PX / max(h, w)
  return (f'<img class="px" alt="{_e(alt)}" width="{round(w * scale)}" '
          f'height="{round(h * scale)}" src="{png_data_uri(image)}">')


def svg_plot(truth: np.ndarray, candidate: np.ndarray, width: int = 220,
             height: int = 60) -> str:
  """Inline SVG: the record (dark line) and its candidate (orange dashes), coordinate by
  coordinate (the first MAX_PLOT_POINTS), on a shared vertical scale."""
  t = np.asarray(truth, np.float64)[:MAX_PLOT_POINTS]
  c = np.asarray(candidate, np.float64)[:MAX_PLOT_POINTS]
  lo = float(min(t.min(), c.min()))
  hi = float(max(t.max(), c.max()))
  span = hi - lo if hi > lo else 1.0
  xs = np.linspace(2, width - 2, len(t)) if len(t) > 1 else np.array([width / 2])

  def line(v, style):
    ys = height - 2 - (v - lo) / span * (height - 4)
    pts = ' '.join(f'{x:.1f},{y:.1f}' for x, y in zip(xs, ys))
    return f'<polyline fill="none" {style} points="{pts}"/>'

  return (f'<svg width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
          f'role="img"><rect width="{width}" height="{height}" fill="#fff" stroke="#ddd"/>'
          + line(t, 'stroke="#222" stroke-width="1.2"')
          + line(c, 'stroke="#e67e00" stroke-width="1.2" stroke-dasharray="3,2"') + '</svg>')


def _certificate_line(metrics: Dict[str, Any]) -> str:
  if 'certified' not in metrics:
    return 'no certificate (this attack has none): every record is <i>uncertified</i>'
  up_to = _e(metrics.get('certified_up_to', ''))
  if metrics['certified']:
    return (f'<span class="yes">certified</span>: the whole training set was found, up to '
            f'{up_to} (blind evidence: an isolated zero of the loss)')
  reasons = '; '.join(_e(r) for r in (metrics.get('certificate') or {}).get('reasons', []))
  if metrics.get('candidates_certified'):
    return f'the candidates are certified (up to {up_to}), not the whole set: {reasons}'
  return f'not certified: {reasons}'


def _norm_lines(metrics: Dict[str, Any]) -> List[str]:
  """What the page says of row norms: not identifiable (a norm-blind feature map), and rows of
  the training set off the sqrt(d) sphere with how they were scored."""
  out = []
  if 'norm_note' in metrics:
    extra = (f' (median norm error of the matched candidates '
             f'{metrics["norm_error_median"]:.0%}: not part of the claim)'
             if 'norm_error_median' in metrics else '')
    out.append(f'<p><b>Norm not identifiable from this model</b>: {_e(metrics["norm_note"])}'
               f'{_e(extra)}.</p>')
  off = metrics.get('rows_off_sphere')
  if off:
    out.append(f'<p>{off["count"]} of {off["n"]} training records are off the &radic;d sphere '
               f'(norms {off["norm_over_sqrt_d_min"]:.2f}&ndash;{off["norm_over_sqrt_d_max"]:.2f}'
               f' &radic;d); scored {_e(off["scored"])}.</p>')
  return out


def _meaning_lines(m: Dict[str, Any], n_recovered: Optional[int], n: Optional[int],
                   threshold: Any) -> List[str]:
  """What the numbers mean: the distance scale, the width against the law, what a negative
  result does not show, and where the defences are."""
  out = [f'<p><b>Distance</b> is the relative error &#8214;x&#770; &minus; x&#8214; / &#8214;x&#8214; '
         f'of a record\'s matched candidate: 0 is exact, a record counts as recovered below '
         f'{_e(threshold)}, and a random candidate of the same norm scores about 1.4 '
         '(&radic;2).</p>']
  ratio = m.get('p_over_dn', m.get('p_L_over_dn'))
  if ratio is not None:
    out.append(f'<p><b>Width</b>: the attacked parameters number p = {ratio:.3g}&middot;d&middot;n. '
               'The law of reconstruction puts the threshold at p* = c&middot;d&middot;n with c '
               'of order 2 for random features (measured per family in results/leak_width.md); '
               'below it expect few records back, above it all. configs/leak_width.py '
               'predicts p* for your family and n before you train.</p>')
  if n is not None and n_recovered is not None and n_recovered < n:
    out.append('<p><b>What a record that did not come back shows</b>: only that this attack, '
               'with this budget, did not find it; it is not evidence that the record is safe. '
               'The attack is known to miss networks trained with Adam and any network whose '
               'initial parameters it was not given (docs/audit.md, "Which training regimes it '
               'covers"); a longer run or a stronger attack may still find it.</p>')
  out.append('<p class="note">What stops it: differential privacy in training, with its '
             'accountant, and the other defences measured in docs/defences.md.</p>')
  return out


def _provenance_rows(prov: Dict[str, Any]) -> List[tuple]:
  """Version, commit, time, input hashes and command (summary.json's `provenance`)."""
  commit = prov.get('commit') or 'not a git checkout'
  if prov.get('local_changes'):
    commit += ' (with local changes)'
  rows = [('recon', f'{prov.get("recon_version")}, commit {commit}'),
          ('created', prov.get('created', ''))]
  for field, entry in sorted((prov.get('inputs') or {}).items()):
    rows.append((field, f'{entry["path"]} (sha256 {entry["sha256"][:16]}..., '
                        f'{entry["bytes"]} bytes)'))
  rows.append(('command', prov.get('command') or
               'the Python API (summary.json holds the whole config)'))
  return rows


def _threat_rows(job: Dict[str, Any], threat: Dict[str, Any]) -> List[tuple]:
  """The threat model's rows from summary.json's config (`job`) and the pipeline's lists."""
  victim, attack, data = job['victim'], job['attack'], job['data']
  source = (f'a saved model, {victim["checkpoint"]}' if victim['checkpoint'] else
            'trained by recon on the training set below')
  if (victim['name'] in registry.names('victim')  # a toy registered for a test may be gone
      and registry.lookup('victim', victim['name']).features == 'random'):
    init = 'not used (random features: the features V are fixed and given)'
  else:
    init = {True: 'known (W(0) given)', False: 'not known (not given, or attack.knows_init=False)',
            None: 'known when given (attack.knows_init unset)'}[attack['knows_init']]
  rows = [('victim', f'{victim["name"]} ({victim["activation"]}), {source}'),
          ('the attacker was given', ', '.join(threat.get('known', [])) or 'not recorded'),
          ('the attacker was not given', ', '.join(threat.get('unknown', [])) or 'not recorded'),
          ('n (training set size)', 'known' if attack['knows_n'] else
           'not known (the attack guesses its number of candidates)'),
          ('initial parameters', init),
          ('training data (scoring only)', f'{data["name"]}'
           + (f', {data["path"]}' if data['path'] else '')
           + f', n = {data["n"]}, d = {data["d"]}')]
  return rows


def _table(rows: Sequence[tuple]) -> str:
  return '<table>' + ''.join(f'<tr><th>{_e(k)}</th><td>{_e(v)}</td></tr>' for k, v in rows) + \
      '</table>'


def render(summary: Dict[str, Any], records: List[Dict[str, Any]], *,
           truth: Optional[np.ndarray] = None, candidates: Optional[np.ndarray] = None,
           image_shape: Optional[Sequence[int]] = None,
           value_range: Optional[Sequence[float]] = None, workdir: str = '',
           verdicts: Optional[Sequence[str]] = None) -> str:
  """The page. `truth` (n, d) and `candidates` (n, d) are for display: row i of `candidates`
  is record i's sign-aligned matched candidate, both in pixel units for images (drawn on
  `value_range`). With `truth` None (no ground truth), `candidates` (m, d) are listed alone
  with their `verdicts` (`recon.report.records.candidate_verdicts`)."""
  m = summary.get('metrics', {})
  job = summary['config']  # the run's whole config (configs/base.py's fields)
  threshold = job['run']['recovered_threshold']
  lo, hi = (value_range or (0.0, 1.0))
  scale = (hi - lo) if hi > lo else 1.0
  to_unit = lambda v: (np.asarray(v, np.float64) - lo) / scale  # noqa: E731
  head = [f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8"><title>recon audit: '
          f'{_e(job["name"])}</title><style>{_STYLE}</style></head><body>',
          f'<h1>Reconstruction audit: {_e(job["name"])}</h1>',
          f'<p class="note">{_e(workdir)}</p><div class="box">']
  n_cand = m.get('n_candidates')
  from recon.report.records import counts  # pylint: disable=import-outside-toplevel
  if records:
    c = counts(records)
    head.append(f'<p><b>{c["recovered"]} of {c["n"]} training records came back</b> (matched '
                f'candidate within relative distance {_e(threshold)}'
                + (', up to sign' if m.get('sign_invariant') else '')
                + (', up to norm' if m.get('scale_invariant') else '') + ').')
    if 'nothing_recovered' in m:
      head.append(f' <b>{_e(m["nothing_recovered"])}</b>')
    if 'n_recovered_ssim' in m:
      head.append(f' Images with SSIM &gt; {_e(m.get("ssim_threshold"))}: '
                  f'{m["n_recovered_ssim"]} of {c["n"]}.')
    head.append('</p>')
    verdicts = ', '.join(f'<span class="{v}">{v}</span> {c[v]}' for v in
                         ('pinned', 'within', 'free', 'uncertified') if c[v])
    head.append(f'<p>Per-record verdicts: {verdicts}.</p>')
  else:
    why = m.get('no_ground_truth_reason')
    head.append('<p><b>No ground truth</b>: '
                + (_e(why) + '. ' if why else
                   "the run was given no training set to score against (data.name 'file' "
                   'with data.path gives it), so no record can be named; ')
                + f'the attack returned {_e(n_cand)} candidates.</p>')
    if verdicts:
      head.append('<p>Candidate verdicts: ' + ', '.join(
          f'<span class="{v}">{v}</span> {list(verdicts).count(v)}'
          for v in ('pinned', 'within', 'free', 'uncertified') if v in verdicts) + '.</p>')
  head.extend(_norm_lines(m))
  head.append(f'<p>Certificate: {_certificate_line(m)}.</p>')
  tally = counts(records) if records else None
  head.extend(_meaning_lines(m, tally['recovered'] if tally else None,
                             tally['n'] if tally else None, threshold))
  head.append(f'<p class="note">optimizer: {_e(m.get("status"))} after {_e(m.get("steps"))} '
              f'steps, loss {m.get("final_loss", float("nan")):.3g}, '
              f'{m.get("wall_seconds", float("nan")):.1f} s on {_e(summary.get("device"))}</p>')
  head.append('</div><h2>Threat model</h2>')
  head.append(_table(_threat_rows(job, summary.get('threat_model') or {})))
  if summary.get('provenance'):
    head.append('<h2>Provenance</h2>' + _table(_provenance_rows(summary['provenance'])))
  body = _records_table(records, truth, candidates, image_shape, to_unit) if records else \
      _candidates_table(candidates, image_shape, verdicts)
  legend = ('<p class="note">Verdicts are blind (the certificate never sees the data): '
            '<span class="pinned">pinned</span> the loss at tol pins the candidate within the '
            'threshold; <span class="within">within</span> the same test above tol (evidence '
            'only); <span class="free">free</span> not pinned; <span class="uncertified">'
            'uncertified</span> no certificate ran. Distances and SSIM are ground truth. '
            'Every record is in records.json beside this page.</p>')
  return ''.join(head) + body + legend + '</body></html>\n'


def _picture(vec, image_shape, to_unit, alt):
  if image_shape is not None:
    return _img(to_unit(vec).reshape(tuple(image_shape)), alt)
  return None


def _records_table(records, truth, candidates, image_shape, to_unit) -> str:
  is_image = image_shape is not None
  out = ['<h2>Training records, most exposed first</h2>']
  cut = []
  if len(records) > MAX_ROWS:
    cut.append(f'the table lists the first {MAX_ROWS} of {len(records)} records')
  if truth is not None and len(records) > MAX_PICTURES:
    cut.append(f'pictures for the first {MAX_PICTURES}')
  if not is_image and truth is not None and truth.shape[1] > MAX_PLOT_POINTS:
    cut.append(f'plots show the first {MAX_PLOT_POINTS} of {truth.shape[1]} coordinates')
  if cut:
    out.append(f'<p class="note">To keep this file small: {"; ".join(cut)} (records.json has '
               'every record).</p>')
  if not is_image and truth is not None:
    out.append('<p class="note">Plots: the record (dark line) and its matched candidate '
               '(orange dashes), coordinate by coordinate.</p>')
  cols = ['#', 'record', 'distance', 'recovered', 'verdict'] + (['SSIM'] if is_image else []) + \
      ['candidate'] + (['truth', 'reconstruction'] if is_image else ['truth vs reconstruction'])
  out.append('<table><tr>' + ''.join(f'<th>{c}</th>' for c in cols) + '</tr>')
  for rank, r in enumerate(records[:MAX_ROWS]):
    i = r['index']
    cells = [f'<td class="num">{rank + 1}</td>', f'<td class="num">{i}</td>',
             f'<td class="num">{r["distance"]:.4f}</td>',
             f'<td class="{"yes" if r["recovered"] else ""}">'
             f'{"yes" if r["recovered"] else "no"}</td>',
             f'<td class="{r["verdict"]}">{r["verdict"]}</td>']
    if is_image:
      cells.append(f'<td class="num">{r["ssim"]:.3f}</td>')
    cand = f'{r["matched_candidate"]}' + ('' if r['matched'] else ' (nearest; unmatched)') + \
        (' (mirror)' if r.get('sign', 1) < 0 else '')
    cells.append(f'<td>{_e(cand)}</td>')
    if truth is not None and rank < MAX_PICTURES:
      if is_image:
        cells.append(f'<td>{_picture(truth[i], image_shape, to_unit, f"record {i}")}</td>')
        cells.append(f'<td>{_picture(candidates[i], image_shape, to_unit, f"candidate for {i}")}'
                     '</td>')
      else:
        cells.append(f'<td>{svg_plot(truth[i], candidates[i])}</td>')
    else:
      cells.extend(['<td></td>'] * (2 if is_image else 1))
    out.append('<tr>' + ''.join(cells) + '</tr>')
  out.append('</table>')
  return ''.join(out)


def _candidates_table(candidates, image_shape, verdicts) -> str:
  if candidates is None or not len(candidates):
    return ''
  verdicts = list(verdicts or ['uncertified'] * len(candidates))
  out = ['<h2>Candidates (no training set to match them to)</h2><table><tr><th>candidate</th>'
         '<th>verdict</th><th>picture</th></tr>']
  for j, vec in enumerate(np.asarray(candidates)[:MAX_PICTURES]):
    if image_shape is not None:
      v = np.asarray(vec, np.float64)
      unit = (v - v.min()) / max(float(v.max() - v.min()), 1e-12)
      pic = _img(unit.reshape(tuple(image_shape)), f'candidate {j}')
    else:
      pic = svg_plot(vec, vec)
    out.append(f'<tr><td class="num">{j}</td><td class="{verdicts[j]}">{verdicts[j]}</td>'
               f'<td>{pic}</td></tr>')
  out.append('</table>')
  if len(candidates) > MAX_PICTURES:
    out.append(f'<p class="note">The first {MAX_PICTURES} of {len(candidates)} candidates.</p>')
  return ''.join(out)
