"""One accelerator window (issue #34): step times at the paper's scale, then the paper's points.

    XLA_PYTHON_CLIENT_PREALLOCATE=false python scripts/gpu_check.py --budget_s=520   # 1 GPU
    python scripts/gpu_check.py --dry_run                                  # CPU, tiny sizes

1. step: the compiled reconstruction step (loss + gradient + Adam + sphere projection) at
   (n, d, p) = (100, 3072, 3072000), one row per --rows spec: 'dense:PRECISION' (V resident;
   skipped where V would take more than half the device's memory) or
   'leanCHUNK:PRECISION[:RESIDUAL]' (V regenerated from its key in chunks of CHUNK features,
   weight_rng hash_box_muller); --small_rows does the same at p = dn = 307200. PRECISION is
   run.matmul_precision ('highest': float32; 'high': TF32 on NVIDIA GPUs). Each row also
   records the projection loss at the true rows under that path and precision (the floor the
   attack can reach: the certificate needs it below attack.tol) and the seconds to build the
   problem (V and the fit). Every row is appended to results/gpu_check_<device>.json as soon
   as it is measured (a row that fails, e.g. out of memory, records its error), keyed by size,
   path, chunk, residual, precision and XLA_FLAGS, and results/gpu_check_<device>.md is
   re-rendered. The default rows are the lean ones: the dense step at 10 dn did not compile on
   an H200 with XLA's autotuning on, and was slow with it off (results/gpu_check_nvidia_h200.md).
2. paper: scripts/paper_scale.py's relu points in this process (--paper_points): p = dn with
   dense features (max_steps --cheap_steps), then p = 10 dn with what is left of the budget
   (max_steps = the time left after --overhead_s over the chosen row's step), by the fastest
   measured row whose loss at the truth is <= attack.tol / 10 (a shadow problem: random sphere
   data, not the photo patches; the rule and its inputs are recorded), its Jacobian test off
   (attack.certify_jacobian 'off': at this size the matrix-free test is minutes of float64
   passes; certification then needs the counting margin p >= 2 m d and says so) and
   escalation off (its proposal pass evaluates the whole loss for every weak row and
   proposal: minutes at this size; re-seeding stays on).
Stops starting new work once --budget_s is spent. Results: results/paper_scale_gpu.*.
"""
from __future__ import annotations

import argparse
import gc
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
from absl import logging  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from configs import rf_cifar  # noqa: E402
from recon.attack import driver  # noqa: E402
from recon.attack import optimiser as optimize
from recon.runtime import io, runs
from recon.models import min_norm as precision
from recon.pipelines import random_features as rf  # noqa: E402
from scripts import paper_scale  # noqa: E402

SIZES = ((100, 3072, 307200), (100, 3072, 3072000))
DRY_SIZES = ((4, 12, 480), (4, 12, 960))
ACT = 'relu'
RNG = 'hash_box_muller'


def device_memory_bytes():
  try:
    return jax.devices()[0].memory_stats()['bytes_limit']
  except Exception:  # pylint: disable=broad-except
    return None


def step_row(n, d, p, path, prec, steps, chunk=4096, residual=None):
  """Seconds per step of one (size, path, precision), with XLA's compiled memory."""
  precision.apply_matmul_precision(prec)
  keys = runs.split_keys(0)
  x = driver.init_candidates(keys['data'], n, d, jnp.float32)
  y = jnp.sign(jax.random.normal(keys['init'], (n,)))
  row = {'n': n, 'd': d, 'p': p, 'path': path, 'matmul_precision': prec, 'steps_timed': steps}
  if path == 'dense':
    limit = device_memory_bytes()
    if limit is not None and p * d * 4 > limit / 2:
      row['skipped'] = f'V is {p * d * 4 / 2 ** 30:.1f} GiB, over half of {limit / 2 ** 30:.0f} GiB'
      return row
    t_build = time.perf_counter()
    prob = jax.jit(lambda k, x, y: rf.make_rf_problem(k, x, y, p_total=p, activation=ACT,
                                                      rng=RNG))(keys, x, y)
    jax.block_until_ready(prob)
    row['build_s'] = time.perf_counter() - t_build
    loss_fn = lambda xh, pr: rf.rf_loss(xh, pr, activation=ACT, jitter=1e-6)  # noqa: E731
  else:
    chunk, n_chunks = rf.lean_layout(p, chunk)
    t_build = time.perf_counter()
    prob = jax.jit(lambda k, x, y: rf.make_rf_problem_lean(
        k, x, y, p=p, activation=ACT, chunk=chunk, n_chunks=n_chunks, rng=RNG))(keys, x, y)
    jax.block_until_ready(prob)
    row['build_s'] = time.perf_counter() - t_build
    residual = residual or ('stored' if n * p * 4 <= 2 ** 30 else 'two_pass')
    row.update(chunk=chunk, residual=residual)
    loss_fn = rf.rf_lean_loss(activation=ACT, chunk=chunk, jitter=1e-6, residual=residual,
                              rng=RNG)
  row['train_mse'] = float(prob.pop('train_mse'))
  # The loss at the true rows under this precision: the floor the attack can reach.
  row['loss_at_truth'] = float(jax.jit(loss_fn)(x, prob))
  x0 = driver.init_candidates(keys['init'], n, d, jnp.float32)
  opt = optimize.make_optimizer('adam', 0.02)
  constraint = optimize.sphere_constraint(float(np.sqrt(d)))
  state = optimize.init_state(x0, opt, loss_fn, prob, constraint)
  run = jax.jit(lambda s, pr: optimize.run_chunk(
      s, pr, s.step + steps, loss_fn=loss_fn, optimizer=opt, constraint=constraint, tol=0.0,
      max_steps=10 ** 9))
  t0 = time.perf_counter()
  compiled = run.lower(state, prob).compile()
  row['compile_s'] = time.perf_counter() - t0
  try:
    m = compiled.memory_analysis()
    row['memory_gib'] = (m.argument_size_in_bytes + m.temp_size_in_bytes +
                         m.output_size_in_bytes) / 2 ** 30
  except Exception:  # pylint: disable=broad-except
    pass
  jax.block_until_ready(compiled(state, prob))  # warm-up
  best = float('inf')
  for _ in range(3):
    t0 = time.perf_counter()
    jax.block_until_ready(compiled(state, prob))
    best = min(best, time.perf_counter() - t0)
  row['step_s'] = best / steps
  # The step's unavoidable matmul work: X V^T, the Gram, dZ V (2 n p d + n^2 p + 2 n p d).
  flops = 4 * n * p * d + 2 * n * n * p
  row['tflops_per_s'] = flops / row['step_s'] / 1e12
  return row


def row_key(r):
  """A row is replaced only by a row of the same size, path (chunk, residual), precision and
  XLA flags."""
  return (r['n'], r['d'], r['p'], r['path'], r.get('chunk'), r.get('residual'),
          r['matmul_precision'], r.get('xla_flags', ''))


def render(path_stem, doc):
  lines = [f'# GPU check on {doc["device_kind"]} ({doc["device"]}, jax {doc["jax"]})', '',
           'Generated by `scripts/gpu_check.py`. Step = loss + gradient + Adam + sphere projection, '
           f'relu, weight_rng {RNG}; min of 3 timed calls of 10 steps. TFLOP/s counts only X·Vᵀ, '
           'the Gram and dZ·V (lean paths also regenerate V). loss@truth = the projection loss at '
           'the true rows under that precision (the floor the attack can reach); build s = V and '
           'the fit.', '',
           '| n | d | p | path | precision | XLA_FLAGS | step ms | TFLOP/s | loss@truth | memory GiB '
           '| build s | compile s | note |',
           '|---|---|---|---|---|---|---|---|---|---|---|---|---|']
  for r in doc['rows']:
    def f(k, spec):
      return format(r[k], spec) if isinstance(r.get(k), (int, float)) else '—'
    note = r.get('skipped') or r.get('error', '') or ' '.join(
        f'{k} {r[k]}' for k in ('chunk', 'residual') if r.get(k))
    lines.append(f'| {r["n"]} | {r["d"]} | {r["p"]} | {r["path"]} | {r["matmul_precision"]} | '
                 f'{r.get("xla_flags") or "—"} | '
                 f'{format(r["step_s"] * 1e3, ".3g") if "step_s" in r else "—"} | '
                 f'{f("tflops_per_s", ".1f")} | {f("loss_at_truth", ".1e")} | '
                 f'{f("memory_gib", ".1f")} | {f("build_s", ".0f")} | {f("compile_s", ".0f")} | '
                 f'{note[:120]} |')
  for note in doc.get('notes', []):
    lines += ['', note]
  if doc.get('paper_precision'):  # the first windows' rule (dense only)
    pp = doc['paper_precision']
    lines += ['', f'Paper point precision (window 2): **{pp["chosen"]}** ({pp["why"]}).']
  if doc.get('paper_path'):
    pp = doc['paper_path']
    lines += ['', f'Paper point path: **{pp["path"]}{pp.get("chunk") or ""} '
              f'{pp["matmul_precision"]}** ({pp["why"]}).']
  io.write_text(path_stem + '.md', '\n'.join(lines) + '\n')


def parse_rows(text: str):
  """'dense:highest,lean65536:high:stored' -> [(path, chunk, precision, residual)]."""
  out = []
  for spec in [t.strip() for t in text.split(',') if t.strip()]:
    parts = spec.split(':')
    m = re.fullmatch(r'(dense|lean)(\d*)', parts[0])
    ok = (m and len(parts) in (2, 3) and parts[1] in precision.MATMUL_PRECISIONS
          and (len(parts) == 2 or parts[2] in ('stored', 'two_pass', 'gram')))
    if not ok:
      raise SystemExit(f'error: --rows: bad spec {spec!r}; accepted: dense:PRECISION or '
                       f'leanCHUNK:PRECISION[:stored|two_pass|gram], PRECISION in '
                       f'{", ".join(precision.MATMUL_PRECISIONS)}')
    path, chunk = m.group(1), int(m.group(2) or 4096)
    out.append((path, chunk if path == 'lean' else None, parts[1],
                parts[2] if len(parts) == 3 else None))
  return out


def step_plan(dry_run: bool, rows: str, small_rows: str):
  """(n, d, p, path, chunk, precision, residual) in the order they are measured."""
  big, small = DRY_SIZES[::-1] if dry_run else SIZES[::-1]
  plan = [(big, spec) for spec in parse_rows(rows)] + [(small, s) for s in parse_rows(small_rows)]
  return [size + (path, min(chunk, size[2]) if chunk else None, prec, res)
          for size, (path, chunk, prec, res) in plan]


def choose_path(rows, big, tol: float):
  """The fastest measured step at the paper's size whose loss at the truth is <= tol / 10
  (a shadow problem: random sphere data); (row or None, why)."""
  ok = [r for r in rows if (r['n'], r['d'], r['p']) == big and r.get('step_s')
        and r.get('loss_at_truth', 1.0) <= tol / 10]
  if not ok:
    return None, f'no step row at this size with a loss at the truth <= tol/10 = {tol / 10:.0e}'
  best = min(ok, key=lambda r: r['step_s'])
  return best, (f"fastest of {len(ok)} rows with a loss at the truth <= tol/10 = {tol / 10:.0e}: "
                f"{best['path']}{best.get('chunk') or ''} {best['matmul_precision']} "
                f"{best.get('residual') or ''} ({best['step_s'] * 1e3:.3g} ms, loss at the truth "
                f"{best['loss_at_truth']:.1e})")


def parse_points(text: str):
  points = [t.strip() for t in text.split(',') if t.strip()]
  bad = [t for t in points if t not in ('dn', '10dn')]
  if bad:
    raise SystemExit(f'error: --paper_points: unknown {bad}; accepted: dn, 10dn')
  return points


def main(argv=None):
  ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
  ap.add_argument('--dry_run', action='store_true', help='tiny sizes (CPU syntax check)')
  ap.add_argument('--budget_s', type=float, default=None,
                  help='seconds before no new work starts (default 520; unlimited with --dry_run)')
  ap.add_argument('--step_share', type=float, default=0.3,
                  help='share of the budget the step rows may use')
  ap.add_argument('--cheap_steps', type=int, default=3000,
                  help='max_steps of the p = n and p = dn points')
  ap.add_argument('--overhead_s', type=float, default=150.0,
                  help='seconds the 10 dn point needs beside its steps (data, V, fit, '
                  'compilation, scoring)')
  ap.add_argument('--rows', default=('lean4096:highest:two_pass,lean65536:high:stored,'
                                     'lean307200:high:stored,lean307200:highest:stored'),
                  help='step rows at the paper\'s p: dense:PRECISION or '
                  'leanCHUNK:PRECISION[:RESIDUAL] (dense at 10 dn needs XLA autotuning off: '
                  'results/gpu_check_nvidia_h200.md)')
  ap.add_argument('--small_rows', default='',
                  help='step rows at p = dn, same syntax (e.g. dense:highest,dense:high)')
  ap.add_argument('--paper_points', default='dn,10dn', help='subset of dn,10dn')
  ap.add_argument('--assume_step_s', type=float, default=0.1,
                  help='step time for sizing the 10 dn point when no dense row was measured')
  ap.add_argument('--parts', default='step,paper')
  ap.add_argument('--out', default='results')
  args = ap.parse_args(argv)
  if args.budget_s is None:
    args.budget_s = 1e9 if args.dry_run else 520.0
  t_start = time.time()
  dev = jax.devices()[0]
  kind = re.sub(r'[^A-Za-z0-9]+', '_', dev.device_kind).strip('_').lower()
  stem = os.path.join(args.out, f'gpu_check_{kind}' + ('_dry_run' if args.dry_run else ''))
  doc = io.read_json(stem + '.json') if os.path.exists(stem + '.json') else {'rows': []}
  doc.update(device=dev.platform, device_kind=dev.device_kind, jax=jax.__version__,
             date=time.strftime('%Y-%m-%dT%H:%M:%S'), budget_s=args.budget_s,
             xla_flags=os.environ.get('XLA_FLAGS', ''))
  logging.set_verbosity(logging.INFO)  # the pipeline's progress lines (absl) on stderr
  parts = args.parts.split(',')
  big = (DRY_SIZES if args.dry_run else SIZES)[1]
  if 'step' in parts:
    for n, d, p, path, chunk, prec, residual in step_plan(args.dry_run, args.rows,
                                                          args.small_rows):
      if time.time() - t_start > args.budget_s * args.step_share:
        print(f'budget: skipping step row {n}x{d}x{p} {path}{chunk or ""} {prec}', flush=True)
        continue
      try:
        row = step_row(n, d, p, path, prec, steps=5 if args.dry_run else 10,
                       chunk=chunk or 4096, residual=residual)
      except Exception as e:  # pylint: disable=broad-except
        row = {'n': n, 'd': d, 'p': p, 'path': path, 'matmul_precision': prec,
               'chunk': chunk, 'residual': residual,
               'error': f'{type(e).__name__}: {(str(e).splitlines() or [""])[0][:300]}'}
      row.update(device_kind=dev.device_kind, date=time.strftime('%Y-%m-%dT%H:%M:%S'),
                 xla_flags=os.environ.get('XLA_FLAGS', ''))
      print(row, flush=True)
      doc['rows'] = [r for r in doc['rows'] if row_key(r) != row_key(row)] + [row]
      io.write_json(stem + '.json', doc)  # after every row: a cut-off window keeps it
      render(stem, doc)
      gc.collect()
    precision.apply_matmul_precision('highest')
  if 'paper' in parts:
    tol = rf_cifar.get_config().attack.tol
    best, why = choose_path(doc['rows'], big, tol)
    if best is None:  # the lean default, full float32
      best = {'path': 'lean', 'chunk': 4096, 'residual': 'two_pass', 'matmul_precision': 'highest'}
    doc['paper_path'] = {'path': best['path'], 'chunk': best.get('chunk'),
                         'residual': best.get('residual'),
                         'matmul_precision': best['matmul_precision'], 'why': why}
    io.write_json(stem + '.json', doc)
    render(stem, doc)
    print(f'paper points: 10 dn by {doc["paper_path"]}', flush=True)
    path_flags = ['--set', f'victim.feature_mode={best["path"]}',
                  f'--matmul_precision={best["matmul_precision"]}']
    if best['path'] == 'lean':
      path_flags += ['--set', f'victim.feature_chunk={best["chunk"]}',
                     '--set', f'victim.feature_residual={best["residual"]}']
    size = ['--image_size=2', '--n=4'] if args.dry_run else []
    out = os.path.join(args.out, 'paper_scale_gpu' + ('_dry_run' if args.dry_run else ''))
    dense = ['--set', 'victim.feature_mode=dense']
    wanted = parse_points(args.paper_points)
    for point, steps, extra in (('dn', args.cheap_steps, []),
                                ('10dn', None, ['--set', 'attack.certify_jacobian=off',
                                                '--set', 'attack.rescue=reseed,polish']
                                 + path_flags)):
      if point not in wanted:
        continue
      left = args.budget_s - (time.time() - t_start)
      if steps is None:
        steps = 50 if args.dry_run else (
            int((left - args.overhead_s) / best.get('step_s', args.assume_step_s)))
      if steps < 100 and not args.dry_run:
        print(f'budget: skipping point {point} ({left:.0f} s left, {steps} steps would fit)',
              flush=True)
        continue
      cmd = ([f'--points={point}', '--activations=relu', f'--max_steps={steps}', f'--out={out}']
             + size + (extra if point == '10dn' else dense))
      print(f'paper point {point}: paper_scale.py {" ".join(cmd)} ({left:.0f} s left)',
            flush=True)
      t0 = time.time()
      try:
        paper_scale.main(cmd)
      except Exception as e:  # pylint: disable=broad-except
        print(f'paper point {point}: {type(e).__name__}: {e}', flush=True)
      print(f'paper point {point}: {time.time() - t0:.0f} s', flush=True)
      gc.collect()
  print(f'gpu_check: {time.time() - t_start:.0f} s; wrote {stem}.json/.md')
  print('The other points (each up to 30,000 steps; several windows, it appends):\n'
        '  XLA_PYTHON_CLIENT_PREALLOCATE=false python scripts/paper_scale.py --points=10dn '
        '--activations=relu --set victim.feature_mode=dense --set attack.certify_jacobian=off\n'
        '  python scripts/paper_scale.py --render_only lists what is missing.')


if __name__ == '__main__':
  import recon  # pylint: disable=wrong-import-position
  recon.setup_process()
  main()
