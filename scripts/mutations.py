"""One-line mutations of `recon/`: does the fast test tier fail when a check is loosened?

Each entry of `MUTATIONS` is a plausible one-line bug a referee would try (a comparison
loosened, a check skipped, an index flipped): the file, an exact fragment of one line
(it must occur exactly once in the file), its mutated text, and the test files that
should catch it (the module's mirror tests). For each entry the harness

  1. replaces the fragment in the working tree,
  2. runs `pytest -x -q -m "not slow"` on the listed test files under a timeout,
  3. restores the file (always: try/finally, also on Ctrl-C or SIGTERM) and checks
     `git diff --quiet` on it,

and records `caught` (with the first failing test) or `survived`. A survivor whose entry
names `slow` tests is re-run against them with `--slow` (`caught_slow`). `note` gives
the reason a survivor is accepted (an equivalent mutation, or one only a slow test
reaches); docs/testing.md discusses the score. The harness refuses to start when a file
it mutates has uncommitted changes.

Results: results/mutations.{json,md}, with the machine (`recon.runtime.machine.describe()`).

    python -m scripts.mutations                  # every entry (~15 min on 2 CPU cores)
    python -m scripts.mutations --slow           # and survivors against their slow tests (+3 min)
    python -m scripts.mutations --only=cert_pin_100x,esc_argmax --out=/tmp/mut
    python -m scripts.mutations --list
"""
from __future__ import annotations

import contextlib
import dataclasses
import datetime
import json
import os
import re
import signal
import subprocess
import sys
import time
from typing import Dict, Iterator, List, Optional, Sequence, Tuple

from absl import app, flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class Mutation:
  """One one-line mutation: `original` (an exact fragment of one line of `file`, unique in
  it) becomes `mutated`; `tests` (fast tier) should fail; `slow` (node ids) are the slow
  tests that reach it when the fast tier cannot; `note` says why a survivor is accepted."""
  id: str
  file: str
  original: str
  mutated: str
  tests: Tuple[str, ...]
  what: str
  slow: Tuple[str, ...] = ()
  note: str = ''


CERT = ('tests/test_certificate.py',)
MUTATIONS: Tuple[Mutation, ...] = (
    # --- recon/certify/certificate.py: every check the certificate makes ---
    Mutation('cert_loss_at_tol', 'recon/certify/certificate.py',
             "'loss_at_tol': bool(final_loss <= tol)",
             "'loss_at_tol': bool(final_loss <= 10 * tol)", CERT,
             'the loss check loosened 10x'),
    Mutation('cert_counting', 'recon/certify/certificate.py',
             "'counting': bool(p >= m * (d + 1))", "'counting': bool(p >= m * d)", CERT,
             'the counting margin p >= m (d + 1) relaxed to the square system p >= m d'),
    Mutation('cert_duplicates_skipped', 'recon/certify/certificate.py',
             'if unresolved:', 'if False and unresolved:',
             CERT, 'the near-duplicate check never refuses'),
    Mutation('cert_pairs_always_apart', 'recon/certify/pairs.py',
             'apart = np.isfinite(reach[i] + reach[j]) & (reach[i] + reach[j] <= SEPARATION',
             'apart = np.isfinite(reach[i] + reach[j]) & (0.0 <= SEPARATION',
             ('tests/test_candidate_pairs.py',) + CERT,
             'a near-duplicate pair counts as two samples whatever its pin radii'),
    Mutation('cert_pin_100x', 'recon/certify/certificate.py',
             'if not pin < duplicate_threshold:', 'if not pin < 100 * duplicate_threshold:',
             CERT, 'the pin-radius test loosened 100x'),
    Mutation('cert_row_radii_100x', 'recon/certify/certificate.py',
             'within = (radii < duplicate_threshold) & ~in_pair',
             'within = (radii < 100 * duplicate_threshold) & ~in_pair', CERT,
             'the per-row radius test loosened 100x (row_pinned / rows_pinned)',
             slow=('tests/test_certificate.py::'
                   'test_a_sample_theta_does_not_carry_is_the_one_row_left_unpinned',)),
    Mutation('cert_pinned_above_tol', 'recon/certify/certificate.py',
             "pinned = within & evidence['loss_at_tol']", 'pinned = within', CERT,
             'rows counted as pinned although the loss is above tol'),
    Mutation('cert_restarts_ignored', 'recon/certify/certificate.py',
             "if not evidence['restarts_agree']:",
             "if False and not evidence['restarts_agree']:", CERT,
             'restarts that disagree do not refuse'),
    Mutation('cert_restarts_any_row', 'recon/certify/pairs.py',
             'if not np.all(err < threshold):', 'if not np.any(err < threshold):',
             ('tests/test_candidate_pairs.py',) + CERT,
             'restarts agree when one row matches (any instead of all)'),
    Mutation('cert_duplicates_signed', 'recon/certify/certificate.py',
             'candidate_duplicates(x_hat, duplicate_threshold, sign_invariant)',
             'candidate_duplicates(x_hat, duplicate_threshold, False)', CERT,
             'duplicates judged with the signed distance whatever the symmetry'),
    Mutation('cert_whole_set', 'recon/certify/certificate.py',
             'elif n_known != m:', 'elif n_known < m:', CERT,
             'm < n_known candidates certified as the whole set'),
    Mutation('cert_unseen_share_max', 'recon/certify/certificate.py',
             'np.sqrt(max(float(kappa2.min()), 1e-300))',
             'np.sqrt(max(float(kappa2.max()), 1e-300))', CERT,
             'unseen_share from the least entangled candidate (kappa max, not min)'),
    Mutation('cert_fallback_margin', 'recon/certify/certificate.py',
             "if evidence['counting'] and p < FALLBACK_COUNTING_MARGIN * m * d:",
             "if evidence['counting'] and p < m * d:", CERT,
             'without the Jacobian test, the 2 m d margin dropped'),
    # --- recon/certify/residual_jacobian.py: the certificate's Jacobian without forming it ---
    Mutation('rj_projection_dropped', 'recon/certify/residual_jacobian.py',
             'return dc * alpha[None, :, None] - (phi.T @ c).reshape(count, m, -1)',
             'return dc * alpha[None, :, None]', ('tests/test_residual_jacobian.py',),
             "the blocked Jacobian not projected off the candidates' span"),
    Mutation('rj_row_blocks_transposed', 'recon/certify/residual_jacobian.py',
             'l_inv[:, i * k:(i + 1) * k].T @ l_inv[:, i * k:(i + 1) * k]',
             'l_inv[i * k:(i + 1) * k] @ l_inv[i * k:(i + 1) * k].T',
             ('tests/test_residual_jacobian.py',),
             "the rows' radii from rows, not columns, of L^-1 (the Cholesky spectrum)"),
    # --- recon/certify/symmetry.py: which activations are sign-blind ---
    Mutation('sym_min_to_max', 'recon/certify/symmetry.py',
             "if min(mass['odd_nonlinear'], mass['even_nonlinear']) >= NONLINEAR_RTOL:",
             "if max(mass['odd_nonlinear'], mass['even_nonlinear']) >= NONLINEAR_RTOL:",
             ('tests/test_symmetry.py',), 'one nonlinear part (not both) enough to see the sign'),
    Mutation('sym_exact_threshold', 'recon/certify/symmetry.py',
             "elif min(mass['odd'], mass['even']) < NONLINEAR_RTOL ** 2:",
             "elif min(mass['odd'], mass['even']) < NONLINEAR_RTOL:",
             ('tests/test_symmetry.py',), 'the exact-parity threshold loosened 1e-8 -> 1e-4'),
    Mutation('sym_compensated_sees_sign', 'recon/certify/symmetry.py',
             'return self.kind != NONE', 'return self.kind == SIGN',
             ('tests/test_symmetry.py',),
             'relu-like (sign with linear compensation) scored with the signed distance'),
    # --- recon/metrics.py: the matching metric ---
    Mutation('metrics_match_sign', 'recon/metrics.py',
             'sign = np.where(dots >= 0, 1.0, -1.0) if sign_invariant else np.ones(len(rows))',
             'sign = np.where(dots >= 0, -1.0, 1.0) if sign_invariant else np.ones(len(rows))',
             ('tests/test_metrics.py', 'tests/test_image_metrics.py'),
             'the matched sign flipped (aligned candidates, image metrics)'),
    Mutation('metrics_threshold_le', 'recon/metrics.py',
             "'frac_recovered': float(np.mean(matched_err < threshold)),",
             "'frac_recovered': float(np.mean(matched_err <= threshold)),",
             ('tests/test_metrics.py',), 'recovered at error <= threshold instead of <'),
    Mutation('metrics_dist_abs_no_abs', 'recon/metrics.py',
             'b = np.abs(np.asarray(x_hat, np.float64).reshape(len(x_hat), -1))',
             'b = np.asarray(x_hat, np.float64).reshape(len(x_hat), -1)',
             ('tests/test_metrics.py',), 'dist_abs without |x_hat|'),
    Mutation('metrics_pinned_but_wrong', 'recon/metrics.py',
             'return int(np.sum(np.asarray(pinned, bool) & ~(err < threshold)))',
             'return int(np.sum(~(err < threshold)))',
             ('tests/test_metrics.py',), 'pinned_but_wrong counts unpinned rows too'),
    # --- recon/models/min_norm.py: the min-norm fit ---
    Mutation('prec_no_refine', 'recon/models/min_norm.py',
             'for _ in range(refine_steps):', 'for _ in range(0):', ('tests/test_width.py',),
             "the Gram fit's refinement steps dropped"),
    Mutation('prec_no_kahan', 'recon/models/min_norm.py',
             't = _dot(block, block, ((1,), (1,))) - c', 't = _dot(block, block, ((1,), (1,)))',
             ('tests/test_width.py',), "the Gram's Kahan compensation dropped (plain summation)"),
    Mutation('prec_kahan_final_term', 'recon/models/min_norm.py',
             'return g - comp', 'return g', ('tests/test_width.py',),
             "the Kahan sum's final correction dropped",
             slow=('tests/test_width.py::test_dense_fit_and_loss_floor_at_3e6_float32',
                   'tests/test_width.py::test_lean_fit_and_streamed_loss_floor_at_3e6_float32'),
             note='equivalent: the running sum is already compensated; the residual `comp` is '
                  'below half an ulp of G, so `g - comp` rounds to `g` (measured: identical '
                  'errors, 2.5e-8 to 3.8e-8 of G, with and without it, 3 seeds, 4096 chunks); '
                  'the slow 3e6-wide fits pass too'),
    Mutation('prec_cutoff_by_p', 'recon/models/min_norm.py',
             'eigen_cutoff(phi.shape[0], phi.dtype, solve_dtype))',
             'eigen_cutoff(phi.shape[1], phi.dtype, solve_dtype))', ('tests/test_width.py',),
             'the eigenvalue cut-off scaled by p (the issue-17 bug)'),
    # --- recon/attack/rescue/escalate.py ---
    Mutation('esc_argmax', 'recon/attack/rescue/escalate.py',
             'rank = jnp.argsort(jnp.argsort(gain, axis=-1), axis=-1)',
             'rank = jnp.argsort(jnp.argsort(-gain, axis=-1), axis=-1)', ('tests/test_escalate.py',),
             'escalation replaces the strongest candidates'),
    Mutation('esc_accept_any', 'recon/attack/rescue/escalate.py',
             'if new < self._accept_ratio * float(losses[b]):', 'if new < float(losses[b]):',
             ('tests/test_escalate.py',),
             'a trial accepted on any decrease (accept_ratio ignored)'),
    Mutation('esc_plateau_ratio', 'recon/attack/rescue/escalate.py',
             'if loss > self._plateau_ratio * past[-1]:', 'if loss > past[-1]:',
             ('tests/test_escalate.py',),
             'plateau only when the loss rose (plateau_ratio ignored)'),
    Mutation('esc_restart_always_kept', 'recon/attack/rescue/escalate.py',
             'if float(new_loss[b]) < float(losses[b]):', 'if True:', ('tests/test_escalate.py',),
             'a restart kept even when its loss is worse',
             slow=('tests/test_escalate.py::test_after_rejected_replacements_a_new_candidate_set_'
                   'is_tried_and_kept_if_better',)),
    # --- recon/objectives/projection.py: the loss ---
    Mutation('loss_norm_not_squared', 'recon/objectives/projection.py',
             'norm2 = jnp.sum(target ** 2)', 'norm2 = jnp.sqrt(jnp.sum(target ** 2))',
             ('tests/test_projection.py',), 'the loss normalised by ||theta|| not ||theta||^2'),
    Mutation('loss_jitter_not_per_row', 'recon/objectives/projection.py',
             'eps = jitter * jnp.trace(gram) / m + jnp.finfo(gram.dtype).tiny',
             'eps = jitter * jnp.trace(gram) + jnp.finfo(gram.dtype).tiny',
             ('tests/test_projection.py',),
             'the ridge jitter tr(G) instead of tr(G)/m (its closed-form gradient disagrees)',
             slow=('tests/test_projection.py::test_closed_form_gradients_equal_autodiff',)),
    # --- recon/certify/rung.py: the float64 precision rung ---
    Mutation('polish_always_kept', 'recon/certify/rung.py',
             'improved = loss < before', 'improved = True', ('tests/test_polish.py',),
             'the polished set kept even when its loss did not fall'),
    Mutation('polish_tol_loosened', 'recon/certify/rung.py',
             'tol_eff = max(polish_tol, FLOOR_MARGIN * floor)',
             'tol_eff = max(1e3 * polish_tol, FLOOR_MARGIN * floor)', ('tests/test_polish.py',),
             "the polished certificate's tol loosened 1000x"),
    # --- resume: recon/runtime/checkpoint.py, recon/attack/driver.py, recon/attack/rescue/escalate.py, recon/attack/rescue/reseed.py, recon/runtime/runs.py ---
    Mutation('resume_oldest_checkpoint', 'recon/runtime/checkpoint.py',
             'steps = sorted(self._manager.all_steps(), reverse=True)',
             'steps = sorted(self._manager.all_steps())', ('tests/test_checkpoint.py',),
             'resume from the oldest checkpoint, not the newest'),
    Mutation('resume_budget_not_grown', 'recon/attack/driver.py',
             'grew = int(now.status) == optimize.MAX_STEPS and int(now.step) < '
             'section.max_steps',
             'grew = False', ('tests/test_checkpoint.py',),
             'a run resumed with a larger max_steps stays stopped',
             slow=('tests/test_checkpoint.py::test_resume_with_more_steps_is_bit_for_bit',)),
    Mutation('resume_escalator_state_dropped', 'recon/attack/rescue/escalate.py',
             "raw = jnp.asarray(np.asarray(saved['key'], np.uint32))", 'return',
             ('tests/test_checkpoint.py',), "the escalator's state not restored on resume",
             slow=('tests/test_checkpoint.py::'
                   'test_resume_with_escalation_after_crash_is_bit_for_bit',)),
    Mutation('resume_reseeder_state_dropped', 'recon/attack/rescue/reseed.py',
             "raw = jnp.asarray(np.asarray(saved['key'], np.uint32))", 'return',
             ('tests/test_checkpoint.py',),
             "the re-seeder's key and counters not restored on resume",
             slow=('tests/test_checkpoint.py::'
                   'test_resume_with_reseeding_after_crash_is_bit_for_bit',)),
    Mutation('pursue_keeps_any_loss', 'recon/attack/rescue/pursuit.py', '    if not new < current:',
             '    if False:', ('tests/test_pursuit.py',),
             "the rescue step 'pursue' keeps a re-placement that does not lower the loss"),
    Mutation('pursuit_dead_rows_median_ignored', 'recon/attack/rescue/pursuit.py',
             'return order[gains[order] <= ratio * med]', 'return order[gains[order] <= ratio]',
             ('tests/test_pursuit.py',), 'dead rows by an absolute gain, not against the median'),
    Mutation('keys_split_swapped', 'recon/runtime/runs.py',
             'k_data, k_model, k_init = jax.random.split(key, 3)',
             'k_data, k_init, k_model = jax.random.split(key, 3)',
             ('tests/test_checkpoint.py',), 'the model and init keys of the key tree swapped'),
)


def by_id(ids: Optional[Sequence[str]] = None) -> List[Mutation]:
  if not ids:
    return list(MUTATIONS)
  known = {m.id: m for m in MUTATIONS}
  unknown = [i for i in ids if i not in known]
  if unknown:
    raise ValueError(f'mutations: unknown id(s) {", ".join(unknown)}; known: '
                     f'{", ".join(known)}')
  return [known[i] for i in ids]


def locate(root: str, mutation: Mutation) -> int:
  """The 1-based line of `mutation.original` in its file; ValueError unless it occurs exactly
  once (a stale entry after an edit of the file)."""
  with open(os.path.join(root, mutation.file), encoding='utf-8') as f:
    text = f.read()
  count = text.count(mutation.original)
  if count != 1:
    raise ValueError(f'{mutation.id}: the fragment occurs {count} times in {mutation.file} '
                     f'(must be once): {mutation.original!r}')
  if '\n' in mutation.original or '\n' in mutation.mutated:
    raise ValueError(f'{mutation.id}: a mutation is one line')
  if mutation.original == mutation.mutated:
    raise ValueError(f'{mutation.id}: the mutated text equals the original')
  return text[:text.index(mutation.original)].count('\n') + 1


def _git_clean(root: str, path: str) -> bool:
  tracked = subprocess.run(['git', '-C', root, 'ls-files', '--error-unmatch', path],
                           capture_output=True).returncode == 0
  unchanged = subprocess.run(['git', '-C', root, 'diff', '--quiet', 'HEAD', '--', path],
                             capture_output=True).returncode == 0
  return tracked and unchanged


def refuse_dirty(root: str, mutations: Sequence[Mutation]) -> None:
  dirty = sorted({m.file for m in mutations if not _git_clean(root, m.file)})
  if dirty:
    raise RuntimeError(f'mutations: uncommitted changes in {", ".join(dirty)}; commit or '
                       'stash them first (the harness restores files to HEAD)')


@contextlib.contextmanager
def applied(root: str, mutation: Mutation) -> Iterator[int]:
  """The mutation applied to the working tree for the body (yields its line); the file is
  restored byte for byte, with its mtime (so cached bytecode stays valid), whatever happens,
  and `git diff --quiet` must agree."""
  path = os.path.join(root, mutation.file)
  line = locate(root, mutation)
  with open(path, 'rb') as f:
    original = f.read()
  stat = os.stat(path)
  previous = signal.getsignal(signal.SIGTERM)

  def on_term(signum, frame):  # pylint: disable=unused-argument
    raise KeyboardInterrupt('SIGTERM')

  try:
    signal.signal(signal.SIGTERM, on_term)
  except ValueError:  # not the main thread: Ctrl-C and errors are still covered
    previous = None
  try:
    text = original.decode('utf-8').replace(mutation.original, mutation.mutated, 1)
    with open(path, 'wb') as f:
      f.write(text.encode('utf-8'))
    yield line
  finally:
    with open(path, 'wb') as f:
      f.write(original)
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    if previous is not None:
      signal.signal(signal.SIGTERM, previous)
    if os.path.isdir(os.path.join(root, '.git')) or os.path.isfile(os.path.join(root, '.git')):
      if subprocess.run(['git', '-C', root, 'diff', '--quiet', '--', mutation.file],
                        capture_output=True).returncode != 0:
        raise RuntimeError(f'mutations: {mutation.file} differs from the index after restoring')


_FAILED = re.compile(r'^(FAILED|ERROR) (\S+)', re.M)


def run_tests(root: str, tests: Sequence[str], timeout: float,
              marker: Optional[str] = 'not slow') -> Dict[str, object]:
  """pytest -x -q on `tests`: {'status': 'passed' | 'failed' | 'timeout', 'failed_test',
  'seconds', 'tail'}."""
  cmd = [sys.executable, '-m', 'pytest', '-x', '-q', '-n', '0', '-p', 'no:cacheprovider', '-rfE']
  cmd += (['-m', marker] if marker else []) + list(tests)
  env = dict(os.environ, PYTHONPATH=root, PYTHONDONTWRITEBYTECODE='1')
  t0 = time.time()
  try:
    proc = subprocess.run(cmd, cwd=root, env=env, capture_output=True, text=True,
                          timeout=timeout)
  except subprocess.TimeoutExpired as e:
    out = (e.stdout or b'')
    out = out.decode('utf-8', 'replace') if isinstance(out, bytes) else out
    return {'status': 'timeout', 'failed_test': None, 'seconds': time.time() - t0,
            'tail': out[-2000:]}
  out = proc.stdout + proc.stderr
  hit = _FAILED.search(out)
  status = 'passed' if proc.returncode == 0 else 'failed'
  if proc.returncode == 5:  # nothing collected: a stale node id is an error, not a pass
    status = 'error'
  return {'status': status, 'failed_test': hit.group(2) if hit else None,
          'seconds': time.time() - t0, 'tail': out[-2000:]}


def run_one(root: str, mutation: Mutation, timeout: float, slow: bool) -> Dict[str, object]:
  with applied(root, mutation) as line:
    fast = run_tests(root, mutation.tests, timeout)
    slow_run = (run_tests(root, mutation.slow, timeout, marker=None)
                if slow and fast['status'] == 'passed' and mutation.slow else None)
  if fast['status'] in ('failed', 'timeout'):
    outcome = 'caught'
  elif fast['status'] == 'error':
    outcome = 'error'
  elif slow_run is not None and slow_run['status'] in ('failed', 'timeout'):
    outcome = 'caught_slow'
  else:
    outcome = 'survived'
  record = {'id': mutation.id, 'file': mutation.file, 'line': line, 'what': mutation.what,
            'original': mutation.original, 'mutated': mutation.mutated,
            'tests': list(mutation.tests), 'outcome': outcome,
            'killed_by': fast['failed_test'] if outcome == 'caught' else (
                slow_run['failed_test'] if outcome == 'caught_slow' else None),
            'fast_status': fast['status'], 'seconds': round(float(fast['seconds']), 1),
            'slow_tests': list(mutation.slow), 'note': mutation.note}
  if slow_run is not None:
    record.update(slow_status=slow_run['status'],
                  slow_seconds=round(float(slow_run['seconds']), 1))
  if outcome == 'error':
    record['tail'] = fast['tail']
  return record


def score(records: Sequence[Dict[str, object]]) -> Dict[str, int]:
  count = lambda *names: sum(r['outcome'] in names for r in records)  # noqa: E731
  return {'total': len(records), 'caught_fast': count('caught'),
          'caught_slow_only': count('caught_slow'), 'survived': count('survived'),
          'errors': count('error')}


def render_md(out: Dict[str, object]) -> str:
  from scripts import common  # pylint: disable=import-outside-toplevel
  s = out['score']
  why = lambda r: (f"`{r['killed_by']}`" if r['outcome'] == 'caught' else  # noqa: E731
                   f"slow: `{r['killed_by']}`" + (f"; {r['note']}" if r['note'] else '')
                   if r['outcome'] == 'caught_slow' else r['killed_by'] or r['note'] or '')
  return common.page(
      'One-line mutations of recon/',
      f"{out['date']}, commit {out['commit']}, {out['machine']}. Regenerate: "
      f"`{out['command']}`. **Score: {s['caught_fast']} of {s['total']} caught by the fast "
      f"tier** (`pytest -m \"not slow\"` on the listed files); {s['caught_slow_only']} more only "
      f"by a slow test; {s['survived']} survived; {s['errors']} errors.",
      common.table(['id', 'file:line', 'mutation', 'outcome', 'killed by / why it survives'],
                   [[r['id'], f"{r['file']}:{r['line']}", r['what'], r['outcome'], why(r)]
                    for r in out['mutations']]))


def define_flags() -> None:
  """The command line's flags (defined when run as a script only, so that tests can import
  this module next to other scripts that define flags of the same names)."""
  flags.DEFINE_list('only', [], 'run these ids only')
  flags.DEFINE_string('out', os.path.join(ROOT, 'results', 'mutations'),
                      'output prefix (.json and .md are appended)')
  flags.DEFINE_float('timeout', 170.0, 'seconds per pytest call')
  flags.DEFINE_bool('slow', False, "also run each fast-tier survivor's slow tests")
  flags.DEFINE_bool('list', False, 'print the entries and exit')


def main(argv):
  del argv
  mutations = by_id(FLAGS.only)
  for m in mutations:
    locate(ROOT, m)
  if FLAGS.list:
    for m in mutations:
      print(f'{m.id:32s} {m.file}:{locate(ROOT, m)}  {m.what}')
    return
  refuse_dirty(ROOT, mutations)
  from recon.runtime import machine  # pylint: disable=import-outside-toplevel
  commit = subprocess.run(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD'],
                          capture_output=True, text=True).stdout.strip()
  records = []
  for k, m in enumerate(mutations):
    rec = run_one(ROOT, m, FLAGS.timeout, FLAGS.slow)
    records.append(rec)
    print(f'[{k + 1}/{len(mutations)}] {m.id}: {rec["outcome"]} '
          f'({rec["killed_by"] or "-"}, {rec["seconds"]} s)', flush=True)
  command = 'python -m scripts.mutations' + (' --slow' if FLAGS.slow else '') + (
      f' --only={",".join(FLAGS.only)}' if FLAGS.only else '')
  out = {'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
         'commit': commit, 'machine': machine.describe(), 'command': command,
         'pytest': '-x -q -m "not slow"', 'score': score(records), 'mutations': records}
  from scripts import common  # pylint: disable=import-outside-toplevel
  common.save(FLAGS.out, out, render_md(out))
  print(json.dumps(out['score']))


if __name__ == '__main__':
  define_flags()
  app.run(main)
