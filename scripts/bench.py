"""Roofline, memory and time-to-reconstruct benchmark of the random-features attack.

    python scripts/bench.py                   # -> results/bench.json, results/bench.md
    python scripts/bench.py --quick           # smaller sizes and budgets (smoke test)
    python scripts/bench.py --parts=step,memscale --keep_other_parts --sizes=100x3072x300000
                                              # e.g. on a GPU: larger step sizes, ttr kept

Runs unchanged on CPU or GPU (the device is recorded). Five parts:
  1. step:   per-step time of the compiled reconstruction step (loss + gradient + Adam
             update + sphere projection) at several (n, d, p), dense (V stored) and
             memory-lean (V regenerated per chunk from its key), against the roofline: the
             same sizes' matmuls measured in the same process (X V^T, the Gram Phi Phi^T
             and the backward dZ V, which every step needs at least once).
  2. memory: XLA's compiled memory analysis (arguments + temporaries) of the step.
  3. ttr:    time-to-reconstruct at p = 10 dn on synthetic sphere data: wall time until
             every true sample is within 0.05 relative error (ground truth is used only
             to stop the clock, never by the optimiser), per optimiser/scheme and seed; and
             methods 'default' / 'paper': the pipeline as a user runs it, one
             `python -m recon.main --config=configs/rf_synthetic.py` process per (size, seed)
             (the current default: escalation, the precision rung, the certificate; or the
             paper's optimiser ported faithfully at its blind lr, 10x the steps), timed whole,
             recovered / certified read from its summary.json (--pipeline_sizes, _seeds);
             saved after every run and resumed with --keep_other_parts.
  4. headline: the default problem (10, 10, 1000) on fresh seeds (--headline_seeds, default
             300-302; refused if any was used to choose the default, the port's lr or the
             rescue: HEADLINE_TUNING), per seed back to back: the default scheme
             (adam_lr0.05+cosine20k) and the paper's port as optimisers alone (compile excluded,
             as in ttr), then each as a whole CLI run (as in ttr's default / paper); two ratios
             side by side, optimiser-only and whole-process, each a lower bound ("at least")
             where the port reconstructs no seed.
  5. fit:    the victim fit of configs/rf_cifar.py (bundled photo patches, relu, float32,
             memory-lean features; default its shipped size n = 100, 32 x 32 x 3, p = 3 072 000):
             seconds, memory, train_mse / var(y) and theta*'s distance to a float64 solve, for
             the default (float64 n x n solve) and for a float32 Gram solve (before issue #30).
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import sys
import time
from typing import Optional

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

from configs import rf_cifar, rf_synthetic  # noqa: E402
from recon import data, metrics
from recon.runtime import compile_cache, host, io, machine, runs
from recon.attack import driver, restarts
from recon.attack import optimiser as optimize
from recon.models import features, random_features  # noqa: E402
from recon.models import min_norm as precision
from recon.attack.rescue import reseed as refine
from recon.pipelines import random_features as rf_pipeline  # noqa: E402
from scripts import paper_baseline  # noqa: E402

ACT = 'relu_tanh'


def _best_time(fn, *args, reps=5, min_time=0.2):
  """Min over `reps` of the mean time of fn(*args) (blocked), each rep >= min_time s."""
  out = fn(*args)
  jax.block_until_ready(out)
  t0 = time.perf_counter()
  jax.block_until_ready(fn(*args))
  once = max(time.perf_counter() - t0, 1e-6)
  inner = max(1, int(min_time / once))
  best = float('inf')
  for _ in range(reps):
    t0 = time.perf_counter()
    for _ in range(inner):
      out = fn(*args)
    jax.block_until_ready(out)
    best = min(best, (time.perf_counter() - t0) / inner)
  return best


def _memory(compiled):
  try:
    m = compiled.memory_analysis()
    return {'argument_mb': m.argument_size_in_bytes / 2 ** 20,
            'temp_mb': m.temp_size_in_bytes / 2 ** 20,
            'output_mb': m.output_size_in_bytes / 2 ** 20,
            'total_mb': (m.argument_size_in_bytes + m.temp_size_in_bytes +
                         m.output_size_in_bytes) / 2 ** 20}
  except Exception as e:  # pylint: disable=broad-except
    return {'error': str(e)}


def bench_step(n, d, p, chunk, steps, rounds=5):
  """Per-step times (dense, lean) and the matmul roofline at one size."""
  keys = runs.split_keys(0)
  x, y = data.synthetic_sphere(keys['data'], n, d)
  dense = jax.jit(lambda k, x, y: rf_pipeline.make_rf_problem(
      k, x, y, p_total=p, activation=ACT))(keys, x, y)
  dense.pop('train_mse')
  chunk, n_chunks = rf_pipeline.lean_layout(p, chunk)
  lean = jax.jit(lambda k, x, y: rf_pipeline.make_rf_problem_lean(
      k, x, y, p=p, activation=ACT, chunk=chunk, n_chunks=n_chunks))(keys, x, y)
  lean.pop('train_mse')
  lean_hash = jax.jit(lambda k, x, y: rf_pipeline.make_rf_problem_lean(
      k, x, y, p=p, activation=ACT, chunk=chunk, n_chunks=n_chunks, rng='hash'))(keys, x, y)
  lean_hash.pop('train_mse')
  lean_bm = jax.jit(lambda k, x, y: rf_pipeline.make_rf_problem_lean(
      k, x, y, p=p, activation=ACT, chunk=chunk, n_chunks=n_chunks, rng='hash_box_muller'))(
          keys, x, y)
  lean_bm.pop('train_mse')
  x0 = driver.init_candidates(keys['init'], n, d, jnp.float32)
  constraint = optimize.sphere_constraint(float(np.sqrt(d)))
  opt = optimize.make_optimizer('adam', 0.02)
  out = {'n': n, 'd': d, 'p': p, 'chunk': chunk, 'steps_timed': steps}
  losses = {
      'dense': lambda xh, prob: rf_pipeline.rf_loss(xh, prob, activation=ACT, jitter=1e-6),
      'lean': rf_pipeline.rf_lean_loss(activation=ACT, chunk=chunk, jitter=1e-6),
      'lean_gram': rf_pipeline.rf_lean_loss(activation=ACT, chunk=chunk, jitter=1e-6,
                                           residual='gram'),
      'lean_stored': rf_pipeline.rf_lean_loss(activation=ACT, chunk=chunk, jitter=1e-6,
                                             residual='stored'),
      'lean_stored_hash': rf_pipeline.rf_lean_loss(activation=ACT, chunk=chunk, jitter=1e-6,
                                                  residual='stored', rng='hash'),
      'lean_stored_bm': rf_pipeline.rf_lean_loss(activation=ACT, chunk=chunk, jitter=1e-6,
                                                residual='stored', rng='hash_box_muller'),
  }
  calls = {}
  for name, loss_fn in losses.items():
    prob = {'dense': dense, 'lean_stored_hash': lean_hash, 'lean_stored_bm': lean_bm}.get(
        name, lean)
    state = optimize.init_state(x0, opt, loss_fn, prob, constraint)
    run = jax.jit(lambda s, prob, loss_fn=loss_fn: optimize.run_chunk(
        s, prob, s.step + steps, loss_fn=loss_fn, optimizer=opt, constraint=constraint,
        tol=0.0, max_steps=10 ** 9))
    compiled = run.lower(state, prob).compile()
    out[f'{name}_memory'] = _memory(compiled)
    calls[name] = (compiled, state, prob)
  # Round-robin over the variants (min over rounds), so that a change in the machine's
  # load during the measurement biases no variant against another.
  best = {name: float('inf') for name in calls}
  for _ in range(rounds):
    for name, (compiled, state, prob) in calls.items():
      best[name] = min(best[name], _best_time(compiled, state, prob, reps=1, min_time=0.1))
  for name, t in best.items():
    out[f'{name}_step_s'] = t / steps
  # Roofline: the matmuls a step cannot avoid, timed alone at the same shapes.
  v = dense['v']
  z = x0 @ v.T
  fwd = jax.jit(lambda a, b: a @ b.T)
  gram = jax.jit(lambda f: f @ f.T)
  bwd = jax.jit(lambda g, b: g @ b)
  t_fwd = _best_time(fwd, x0, v)
  t_gram = _best_time(gram, z)
  t_bwd = _best_time(bwd, z, v)
  out.update({'matmul_xvt_s': t_fwd, 'matmul_gram_s': t_gram, 'matmul_bwd_s': t_bwd,
              'roofline_s': t_fwd + t_gram + t_bwd,
              # Regenerating all of V once, as the lean path does (in column blocks; 3x per
              # step with two_pass, 2x with gram or stored).
              **{f'regenerate_v{suffix}_s': _best_time(
                  jax.jit(lambda k, rng=rng: features.random_weight_blocks(k, 0, p, d, rng=rng)),
                  keys['model'])
                 for suffix, rng in (('', 'threefry'), ('_hash', 'hash'),
                                     ('_bm', 'hash_box_muller'))}})
  out['dense_over_roofline'] = out['dense_step_s'] / out['roofline_s']
  for name in losses:
    if name != 'dense':
      out[f'{name}_over_dense'] = out[f'{name}_step_s'] / out['dense_step_s']
  return out


def memory_at_scale(n, d, p, chunk):
  """Compile-only memory analysis of one step at a size too large to run (nothing allocated)."""
  sds = jax.ShapeDtypeStruct
  f32 = jnp.float32
  key = jax.random.PRNGKey(0)
  chunk, n_chunks = rf_pipeline.lean_layout(p, chunk)
  probs = {
      'dense': {'v': sds((p, d), f32), 'mask': sds((p,), f32), 'theta': sds((p,), f32)},
      'lean': {'key': sds(key.shape, key.dtype), 'p': sds((), jnp.int32),
               'theta': sds((n_chunks, chunk), f32)},
  }
  probs['lean_stored'] = probs['lean']
  losses = {
      'dense': lambda xh, prob: rf_pipeline.rf_loss(xh, prob, activation=ACT, jitter=1e-6),
      'lean': rf_pipeline.rf_lean_loss(activation=ACT, chunk=chunk, jitter=1e-6),
      'lean_stored': rf_pipeline.rf_lean_loss(activation=ACT, chunk=chunk, jitter=1e-6,
                                             residual='stored', rng='hash'),
  }
  constraint = optimize.sphere_constraint(float(np.sqrt(d)))
  opt = optimize.make_optimizer('adam', 0.02)
  out = {'n': n, 'd': d, 'p': p, 'chunk': chunk, 'v_mb': p * d * 4 / 2 ** 20}
  for name, loss_fn in losses.items():
    state = jax.eval_shape(lambda x, pr, loss_fn=loss_fn: optimize.init_state(
        x, opt, loss_fn, pr, constraint), sds((n, d), f32), probs[name])
    run = jax.jit(lambda s, prob, loss_fn=loss_fn: optimize.run_chunk(
        s, prob, s.step + 1, loss_fn=loss_fn, optimizer=opt, constraint=constraint,
        tol=0.0, max_steps=10 ** 9))
    out[f'{name}_memory'] = _memory(run.lower(state, probs[name]).compile())
  return out


def victim_fit(n, image_size, p):
  """The victim fit of configs/rf_cifar.py at (data.n, data.image_size, victim.p), as `run_lean`
  computes it (Phi chunk by chunk from V's key, then the fit), with the default float64 n x n
  solve and with a float32 Gram solve (`precision.min_norm_gram(solve_dtype='float32')`, the
  route before issue #30). The features' time includes their compilation, the fits' do not."""
  cfg = rf_cifar.get_config()
  cfg.data.n, cfg.data.image_size, cfg.victim.p = n, image_size, p
  d, act, rng = cfg.data.d, cfg.victim.activation, cfg.victim.weight_rng
  keys = runs.split_keys(cfg.seed)
  x, y, _ = data.load(cfg.data, keys['data'], jnp.float32)
  chunk, n_chunks = rf_pipeline.lean_layout(p, cfg.victim.feature_chunk)
  out = {'config': 'configs/rf_cifar.py', 'dataset': cfg.data.name, 'n': n, 'd': d, 'p': p,
         'activation': act, 'weight_rng': rng, 'dtype': 'float32', 'seed': cfg.seed,
         'lean_problem_memory': _memory(jax.jit(
             lambda k, x, y: rf_pipeline.make_rf_problem_lean(
                 k, x, y, p=p, activation=act, chunk=chunk, n_chunks=n_chunks, rng=rng)).lower(
                     keys, x, y).compile())}
  t0 = time.perf_counter()
  phi = jax.block_until_ready(jax.jit(lambda k, x: features.rf_features_chunked(
      k, x, act, p, chunk, n_chunks, rng)[:, :p])(keys['model'], x))
  out['features_s'] = time.perf_counter() - t0
  p64, y64 = np.asarray(phi, np.float64), np.asarray(y, np.float64)
  g64 = p64 @ p64.T
  lam, q = np.linalg.eigh(g64)
  reference = p64.T @ (q @ ((q.T @ y64) / lam))  # float64 solve of the float32 Phi
  out['gram_lambda_min_over_max'] = float(lam[0] / lam[-1])
  out['eigenvalues_below_float32_cutoff'] = int(np.sum(lam < n * np.finfo(np.float32).eps * lam[-1]))
  var = float(np.var(y64))
  for name, solve in (('float64_solve', 'float64'), ('float32_solve', 'float32')):
    fit = jax.jit(lambda f, t, solve=solve: precision.min_norm_gram(f, t, solve_dtype=solve))
    out[f'{name}_memory'] = _memory(fit.lower(phi, y).compile())
    jax.block_until_ready(fit(phi, y))  # compiled
    t0 = time.perf_counter()
    theta = jax.block_until_ready(fit(phi, y))
    out[f'{name}_s'] = time.perf_counter() - t0
    t = np.asarray(theta, np.float64)
    out[f'{name}_train_mse_over_var_y'] = float(np.mean((p64 @ t - y64) ** 2) / var)
    out[f'{name}_theta_rel_err'] = float(np.linalg.norm(t - reference) / np.linalg.norm(reference))
  out['peak_rss_mb'] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
  return out


METHODS = {
    # name: (optimizer, lr, momentum, reseed_every, lr_schedule, lr_decay_steps)
    # The reference code's optimiser ported step for step (scripts/paper_baseline.py): its lr
    # (None here) is the blind choice recorded in results/paper_baseline.json for the problem.
    'paper_port (blind lr)': ('sgd', None, 0.9, 0, 'constant', None),
    'sgd_lr2': ('sgd', 2.0, 0.9, 0, 'constant', None),
    'adam_lr0.02': ('adam', 0.02, 0.9, 0, 'constant', None),
    'adam_lr0.05': ('adam', 0.05, 0.9, 0, 'constant', None),
    'adam_lr0.05+cosine5k': ('adam', 0.05, 0.9, 0, 'cosine', 5000),
    'adam_lr0.05+cosine5k+reseed': ('adam', 0.05, 0.9, 500, 'cosine', 5000),
    'adam_lr0.05+cosine20k': ('adam', 0.05, 0.9, 0, 'cosine', 20000),
    'adam_lr0.05+cosine20k+reseed': ('adam', 0.05, 0.9, 500, 'cosine', 20000),
    'adam_lr0.02+cosine20k+reseed': ('adam', 0.02, 0.9, 500, 'cosine', 20000),
    # L-BFGS (zoom line search; lr scales the direction, schedule ignored).
    'lbfgs': ('lbfgs', 1.0, 0.9, 0, 'constant', None),
    # K restarts optimised at once, the clock stops when the block of lowest blind loss
    # reconstructs (recon/attack/restarts.py).
    'adam_lr0.05+cosine5k+restarts4': ('adam', 0.05, 0.9, 0, 'cosine', 5000),
    'adam_lr0.05+cosine20k+restarts4': ('adam', 0.05, 0.9, 0, 'cosine', 20000),
}
N_RESTARTS = {'adam_lr0.05+cosine5k+restarts4': 4, 'adam_lr0.05+cosine20k+restarts4': 4}


PAPER = 'paper_port (blind lr)'
PAPER_BUDGET_FACTOR = 10  # the paper's scheme gets this many times the others' step budget
PAPER_CALIBRATION = 'results/paper_baseline.json'


def method_settings(method: str, n: int, d: int):
  """(optimizer, lr, momentum, reseed_every, schedule, decay_steps, activation, stop tol) of
  `method` at (n, d): the paper's port differentiates relu's part leakily, stops at its tol
  1e-7 and takes its blind lr; every other method stops at 1e-10 (the clock decides)."""
  name, lr, momentum, reseed_every, schedule, decay_steps = METHODS[method]
  if method != PAPER:
    return name, lr, momentum, reseed_every, schedule, decay_steps, ACT, 1e-10
  lr = paper_baseline.calibrated_lr(PAPER_CALIBRATION, ACT, n, d)
  if lr is None:
    raise ValueError(f'{PAPER}: no blind lr for {ACT} n={n} d={d} in {PAPER_CALIBRATION}; run '
                     'python -m scripts.paper_baseline first')
  return (name, lr, momentum, reseed_every, schedule, decay_steps,
          paper_baseline.LEAKY[ACT], paper_baseline.TOL)


def time_to_reconstruct(n, d, seed, method, max_steps, chunk_steps=100, threshold=0.05):
  """Wall seconds (compile excluded) until every true sample is within `threshold`.

  The blind stop is loss <= 1e-10 (below the configs' 1e-7, so that the clock, not the
  tolerance, decides; the paper's port stops at its own 1e-7); the budget is `max_steps`.
  """
  name, lr, momentum, reseed_every, schedule, decay_steps, act, stop_tol = method_settings(
      method, n, d)
  p = 10 * d * n
  keys = runs.split_keys(seed)
  x_true, y = data.synthetic_sphere(keys['data'], n, d)
  prob = jax.jit(lambda k, x, y: rf_pipeline.make_rf_problem(
      k, x, y, p_total=p, activation=ACT))(keys, x_true, y)
  prob.pop('train_mse')
  loss_fn = lambda xh, pr: rf_pipeline.rf_loss(xh, pr, activation=act, jitter=1e-6)  # noqa
  constraint = optimize.sphere_constraint(float(np.sqrt(d)))
  opt = optimize.make_optimizer(name, lr, momentum, schedule, decay_steps)
  x0 = driver.init_candidates(keys['init'], n, d, jnp.float32)
  choose = lambda xs: xs  # noqa: E731
  n_restarts = N_RESTARTS.get(method, 1)
  if n_restarts > 1:
    chooser = restarts.BestRestart(loss_fn, prob)
    choose = lambda xs: chooser(xs)  # noqa: E731  (blind: lowest projection loss)
    x0 = restarts.init_restarts(
        keys['init'], n_restarts, lambda k: driver.init_candidates(k, n, d, jnp.float32))
    loss_fn = restarts.stacked_loss(loss_fn)
    choose(x0)  # compile outside the clock
  state = optimize.init_state(x0, opt, loss_fn, prob, constraint)
  chunk = jax.jit(lambda s, stop: optimize.run_chunk(
      s, prob, stop, loss_fn=loss_fn, optimizer=opt, constraint=constraint, tol=stop_tol,
      max_steps=max_steps)).lower(state, jnp.int32(0)).compile()
  reseeder = None
  if reseed_every:
    reseeder = refine.Reseeder(jax.random.PRNGKey(seed + 1000), loss_fn, prob, constraint, opt,
                               every=reseed_every)
    reseeder._replace(jax.random.PRNGKey(0), x0, jnp.asarray(0), prob)  # compile outside clock
    reseeder._collapsed(x0)
    reseeder._loss(x0, prob)
  x_np = np.asarray(x_true)
  t_total, hit, step = 0.0, None, 0
  while step < max_steps:
    t0 = time.perf_counter()
    state = chunk(state, jnp.int32(min(step + chunk_steps, max_steps)))
    if reseeder is not None:
      state = reseeder(state)
    jax.block_until_ready(state.x)
    t_total += time.perf_counter() - t0
    step = int(state.step)
    err = metrics.per_sample_errors(x_np, np.asarray(choose(state.x)))  # the clock's stop only
    if err.max() < threshold:
      hit = t_total
      break
    if int(state.status) != optimize.RUNNING:
      break
  return {'method': method, 'n': n, 'd': d, 'p': p, 'seed': seed, 'reached': hit is not None,
          'seconds': t_total, 'steps': step, 'max_err': float(err.max()),
          'n_within': int(np.sum(err < threshold)), 'loss': float(state.loss),
          'reseeded': reseeder.stats.reseeded if reseeder else 0, 'n_restarts': n_restarts}


# --- Time-to-reconstruct of the pipeline: the current default vs the paper's port ---------------
# Methods run as a user runs them: `python -m recon.main --config=configs/rf_synthetic.py` (a
# child process per run: imports, the victim fit, compilation, the descent with escalation, the
# precision rung and the certificate all inside the wall clock), the blind stop its own; the
# ground truth is read only afterwards, from summary.json.
PIPELINE_METHODS = ('default', 'paper')
PIPELINE_SIZES = '10x10x1000,20x20x4000,20x100x20000,100x16x6400'
PIPELINE_SEEDS = '300,301,302'  # reported; no tuning or shadow run used them (PIPELINE_TUNING)
# Seeds that chose something (never reported here): the paper port's blind lr, and the rescue
# machinery's development runs at n = 100.
PIPELINE_TUNING = {'paper_lr_shadow_seeds (results/paper_baseline.json)': [1000, 1001, 1002],
                   'rescue_scale_tuning_seeds (results/rescue_scale.json, n = 100)':
                       list(range(20))}
LAUNCH = (20, 100, 20000)  # the reference code's launch problem, relu (issue #30)
DEFAULT_MAX_STEPS = rf_synthetic.get_config().attack.max_steps  # the default's step budget
# A run is stopped, and counts as failed, once its process has used PIPELINE_CPU_LIMIT_S of CPU
# (user + system: 600 s is 5 min on both cores, issue #30's target at n = 100, and unlike wall
# time it does not grow with the other jobs on a shared machine) or PIPELINE_TIMEOUT_S of wall.
PIPELINE_CPU_LIMIT_S = 600.0
PIPELINE_TIMEOUT_S = 1800.0
# The paper's port where it is not run, and why (its cost on this 2-core CPU, or no blind lr).
PAPER_NOT_RUN = {
    LAUNCH: 'launch',  # the reason is read from results/paper_baseline.json (_launch_reason)
    (100, 16, 6400): 'not run: no blind lr at this size (its calibration, 6 lrs x 3 shadow '
                     'seeds x 20 000 steps, and 3 x 200 000-step runs are hours on this CPU)',
}


def _launch_reason(path: str = PAPER_CALIBRATION) -> str:
  """Why the port is not re-run at the launch problem: what it cost and found there already."""
  launch = io.read_json(path).get('launch') if os.path.exists(path) else None
  if not launch:
    return f'not run: 3 x 40 000-step runs, about 18 min here (no launch part in {path})'
  rows = ', '.join(str(s['n_recovered']) for s in launch['per_seed'])
  certified = sum(bool(s['certified']) for s in launch['per_seed'])
  return (f"not re-run: {len(launch['per_seed'])} seeds x {launch['max_steps']} steps took "
          f"{launch['seconds']:.0f} s in {path} (seeds {launch['seeds']} at lr {launch['lr']:g}: "
          f"{rows} of {launch['n']} rows, {certified}/{len(launch['per_seed'])} certified)")


def pipeline_activation(n: int, d: int, p: int) -> str:
  """relu at the launch problem (as the reference runs it), else configs/rf_synthetic.py's."""
  return 'relu' if (n, d, p) == LAUNCH else ACT


def pipeline_overrides(method: str, n: int, d: int, p: int, seed: int,
                       max_steps: Optional[int] = None):
  """The --config.* fields of one run: the size and seed (and attack.max_steps if given; None:
  the config's own); for 'paper' the port's fields (scripts/paper_baseline.py), its blind lr
  and PAPER_BUDGET_FACTOR x the default's budget."""
  act = pipeline_activation(n, d, p)
  out = {'data.n': n, 'data.d': d, 'victim.p': p, 'seed': seed, 'victim.activation': act}
  budget = DEFAULT_MAX_STEPS if max_steps is None else max_steps
  if method == 'default':
    return out if max_steps is None else {**out, 'attack.max_steps': budget}
  lr = 20.0 if (n, d, p) == LAUNCH else paper_baseline.calibrated_lr(PAPER_CALIBRATION, act, n, d)
  if lr is None:
    raise ValueError(f'paper: no blind lr for {act} n={n} d={d} in {PAPER_CALIBRATION}')
  out.update(paper_baseline.paper_overrides(act))
  out.update({'attack.lr': lr, 'attack.max_steps': budget * PAPER_BUDGET_FACTOR})
  return out


def _process_cpu_s(pid: int) -> float:
  """User + system CPU seconds of a running process (all its threads), from /proc."""
  try:
    with open(f'/proc/{pid}/stat') as f:
      fields = f.read().rsplit(')', 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf('SC_CLK_TCK')
  except (OSError, IndexError, ValueError):
    return 0.0


def _commit(root: str) -> Optional[str]:
  """The checkout's short commit (None outside git)."""
  import subprocess  # pylint: disable=import-outside-toplevel
  out = subprocess.run(['git', '-C', root, 'rev-parse', '--short', 'HEAD'], capture_output=True,
                       text=True, check=False)
  return out.stdout.strip() or None


def pipeline_run(method: str, n: int, d: int, p: int, seed: int, max_steps: Optional[int],
                 timeout_s: float = PIPELINE_TIMEOUT_S, cpu_limit_s: float = PIPELINE_CPU_LIMIT_S):
  """One run of the CLI in a child process: wall and CPU seconds, and what summary.json says."""
  import shutil  # pylint: disable=import-outside-toplevel
  import signal  # pylint: disable=import-outside-toplevel
  import subprocess  # pylint: disable=import-outside-toplevel
  import tempfile  # pylint: disable=import-outside-toplevel
  overrides = pipeline_overrides(method, n, d, p, seed, max_steps)
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  tmp = tempfile.mkdtemp(prefix='bench_ttr_')
  workdir = os.path.join(tmp, 'run')
  cmd = [sys.executable, '-m', 'recon.main', '--config=configs/rf_synthetic.py',
         f'--workdir={workdir}', *[f'--config.{k}={v}' for k, v in overrides.items()]]
  env = dict(os.environ)
  env['PYTHONPATH'] = root + (os.pathsep + env['PYTHONPATH'] if env.get('PYTHONPATH') else '')
  before = resource.getrusage(resource.RUSAGE_CHILDREN)
  load = [round(x, 1) for x in os.getloadavg()]
  t0 = time.perf_counter()
  with open(os.path.join(tmp, 'log.txt'), 'w') as log:
    proc = subprocess.Popen(cmd, cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    stopped = None
    while True:
      try:
        code = proc.wait(timeout=1.0)
        break
      except subprocess.TimeoutExpired:
        if _process_cpu_s(proc.pid) > cpu_limit_s:
          stopped = 'cpu'
        elif time.perf_counter() - t0 > timeout_s:
          stopped = 'wall'
        if stopped:
          os.killpg(proc.pid, signal.SIGKILL)  # the child's own process group, started above
          code = proc.wait()
          break
  wall = time.perf_counter() - t0
  after = resource.getrusage(resource.RUSAGE_CHILDREN)
  cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
  with open(os.path.join(tmp, 'log.txt')) as f:
    log_text = f.read()
  tail = log_text[-1500:]
  row = {'method': method, 'n': n, 'd': d, 'p': p, 'activation': pipeline_activation(n, d, p),
         'victim_activation': overrides['victim.activation'], 'seed': seed,
         'lr': overrides.get('attack.lr'),
         'max_steps': overrides.get('attack.max_steps', DEFAULT_MAX_STEPS), 'wall_s': wall,
         'cpu_s': cpu, 'loadavg': load, 'exit_code': code, 'stopped': bool(stopped),
         'stopped_by': stopped,
         'command': 'python ' + ' '.join(cmd[1:]).replace(workdir, 'WORKDIR'),
         'commit': _commit(root), 'recorded': time.strftime('%Y-%m-%d', time.gmtime())}
  summary_path = os.path.join(workdir, 'summary.json')
  if not stopped and code == 0 and os.path.exists(summary_path):
    with open(summary_path) as f:
      m = json.load(f)['metrics']
    cert = m.get('certificate') or {}
    row.update({
        'frac_recovered': m['frac_recovered'], 'n_recovered': m['n_recovered'],
        'all_recovered': m['n_recovered'] == n, 'recon_error': m['recon_error'],
        'certified': bool(m['certified']), 'steps': m['steps'], 'status': m['status'],
        'final_loss': m['final_loss'], 'run_wall_seconds': m.get('wall_seconds'),
        'escalations_tried': m.get('escalations_tried'),
        'escalations_accepted': m.get('escalations_accepted'),
        'polish_applied': bool((m.get('polish') or {}).get('applied')),
        'certificate_jacobian': cert.get('jacobian'),
        'false_certified': bool(m['certified']) and m['n_recovered'] < n})
  else:
    import re  # pylint: disable=import-outside-toplevel
    progress = re.findall(r'step\s+(\d+)\s+loss\s+([0-9.eE+-]+)', log_text)
    row.update({'frac_recovered': None, 'n_recovered': None, 'all_recovered': False,
                'recon_error': None, 'certified': False, 'steps': None,
                # How far the log says it got: the last descent step and loss, and whether
                # the precision rung had started.
                'last_logged_step': int(progress[-1][0]) if progress else None,
                'last_logged_loss': float(progress[-1][1]) if progress else None,
                'in_rung': 'precision rung' in log_text,
                'status': f'stopped ({stopped} limit)' if stopped else f'exit {code}',
                'log_tail': tail})
  shutil.rmtree(tmp, ignore_errors=True)
  return row


def pipeline_part(results, sizes, seeds, methods, max_steps, timeout_s, save,
                  cpu_limit_s=PIPELINE_CPU_LIMIT_S):
  """Runs (method, size, seed) rows not already in results['ttr_pipeline'], saving after each."""
  part = results.setdefault('ttr_pipeline', {'rows': []})
  not_run = {}
  for n, d, p in sizes:
    if (n, d, p) in PAPER_NOT_RUN:
      reason = PAPER_NOT_RUN[(n, d, p)]
      not_run[(n, d, p)] = _launch_reason() if reason == 'launch' else reason
    elif paper_baseline.calibrated_lr(PAPER_CALIBRATION, pipeline_activation(n, d, p), n,
                                      d) is None:
      not_run[(n, d, p)] = (f'not run: no blind lr for this size in {PAPER_CALIBRATION} '
                            '(python -m scripts.paper_baseline --parts=calibrate)')
  part.update({'seeds': list(seeds), 'tuning_seeds': PIPELINE_TUNING,
               'max_steps': DEFAULT_MAX_STEPS if max_steps is None else max_steps,
               'paper_budget_factor': PAPER_BUDGET_FACTOR, 'timeout_s': timeout_s,
               'cpu_limit_s': cpu_limit_s,
               'sizes': [list(s) for s in sizes], 'machine': results.get('machine'),
               'paper_not_run': [{'n': s[0], 'd': s[1], 'p': s[2], 'reason': r}
                                 for s, r in not_run.items()]})
  part.setdefault('loadavg_start', [round(x, 1) for x in os.getloadavg()])
  done = {(r['method'], r['n'], r['d'], r['p'], r['seed']) for r in part['rows']}
  for n, d, p in sizes:
    for method in methods:
      if method == 'paper' and (n, d, p) in not_run:
        continue
      for seed in seeds:
        if (method, n, d, p, seed) in done:
          continue
        row = pipeline_run(method, n, d, p, seed, max_steps, timeout_s, cpu_limit_s)
        print(json.dumps(row), flush=True)
        part['rows'].append(row)
        part['loadavg_end'] = [round(x, 1) for x in os.getloadavg()]
        save()


def logged_within(row):
  """A stopped run: 'k/n', the rows its log says were within the threshold when the descent
  ended (the certificate's line before the rung), or None."""
  import re  # pylint: disable=import-outside-toplevel
  found = re.findall(r'(\d+) of (\d+) candidates within the threshold', row.get('log_tail') or '')
  return f'{found[-1][0]}/{found[-1][1]}' if found else None


def pipeline_summary(rows):
  """Per (method, size): seeds, all rows recovered, certified, median wall / CPU, steps."""
  groups = {}
  for r in rows:
    groups.setdefault((r['method'], r['n'], r['d'], r['p']), []).append(r)
  out = []
  for (method, n, d, p), rs in groups.items():
    steps = [r['steps'] for r in rs if r.get('steps') is not None]
    out.append({'method': method, 'n': n, 'd': d, 'p': p, 'activation': rs[0]['activation'],
                'seeds': len(rs), 'recovered': sum(bool(r['all_recovered']) for r in rs),
                'certified': sum(bool(r['certified']) for r in rs),
                'false_certified': sum(bool(r.get('false_certified')) for r in rs),
                'stopped': sum(bool(r['stopped']) for r in rs),
                'median_wall_s': float(np.median([r['wall_s'] for r in rs])),
                'median_cpu_s': float(np.median([r['cpu_s'] for r in rs])),
                'mean_steps': float(np.mean(steps)) if steps else None,
                'max_steps': rs[0]['max_steps'], 'lr': rs[0]['lr']})
  return out


def pipeline_compare_lines(summ, not_run):
  """Per size: the default against the paper's port (or why the port is not there)."""
  out = []
  by = {(s['method'], s['n'], s['d'], s['p']): s for s in summ}
  for size in sorted({(s['n'], s['d'], s['p']) for s in summ}):
    dflt, paper = by.get(('default', *size)), by.get(('paper', *size))
    if dflt is None:
      continue
    text = (f"* ({size[0]}, {size[1]}, {size[2]}): the default recovers every row on "
            f"{dflt['recovered']}/{dflt['seeds']} seeds and certifies {dflt['certified']}/"
            f"{dflt['seeds']}, median wall {dflt['median_wall_s']:.1f} s")
    if paper is not None:
      text += (f"; the paper's port {paper['recovered']}/{paper['seeds']} and "
               f"{paper['certified']}/{paper['seeds']}, median wall {paper['median_wall_s']:.1f} s "
               f"({paper['max_steps']} steps budget, mean {paper['mean_steps']:.0f} taken)")
      if dflt['recovered'] == dflt['seeds']:
        ratio = paper['median_wall_s'] / dflt['median_wall_s']
        text += (f": {ratio:.1f}x" if paper['recovered'] == paper['seeds'] else
                 f": {ratio:.1f}x, a lower bound (the port recovered every row on "
                 f"{paper['recovered']}/{paper['seeds']} seeds)")
    elif size in not_run:
      text += f"; the paper's port {not_run[size]}"
    out.append(text + '.')
  return out


def pipeline_lines(part):
  """The md of the pipeline's time-to-reconstruct (summary per size, then per seed)."""
  rows = part['rows']
  lines = ['', 'Time-to-reconstruct of the pipeline: the current default (`python -m recon.main '
           '--config=configs/rf_synthetic.py` with data.n, data.d, victim.p, seed set: Adam + '
           'cosine, escalation, the precision rung, the certificate) against the paper\'s '
           'optimiser ported faithfully (`scripts/paper_baseline.py`: momentum SGD 0.9 at its '
           'blind lr, chosen on shadow seeds 1000-1002; constant lr, tol 1e-7, no rescue; '
           f"budget {part['paper_budget_factor']}x the default's {part['max_steps']} steps). "
           'Wall = the whole CLI process (start-up, victim fit, compilation, attack, '
           'certificate, outputs), one run at a time, compiled programs from the persistent '
           'compilation cache (on by default) once a size has run; CPU = its user + system '
           'seconds; '
           f"a run is stopped, and counts as failed, after {part.get('cpu_limit_s', 0):.0f} CPU s "
           f"(5 min on both cores) or {part['timeout_s']:.0f} s wall. "
           '"recovered" = every row within 0.1 (metrics.n_recovered = n); "certified" = '
           f"metrics.certified. Reported seeds {part['seeds']}; activation relu_tanh "
           '(configs/rf_synthetic.py), relu at the launch problem (20, 100, 20000). '
           f"Load (1/5/15 min, 2 cores, shared) {part.get('loadavg_start')} at the start, "
           f"{part.get('loadavg_end')} at the end.", '',
           '| method | n, d, p | activation | lr | step budget | seeds recovered | seeds '
           'certified | median wall s | median CPU s | mean steps |',
           '|---|---|---|---|---|---|---|---|---|---|']
  order = {m: i for i, m in enumerate(PIPELINE_METHODS)}
  summ = sorted(pipeline_summary(rows),
                key=lambda s: ((s['n'], s['d'], s['p']), order.get(s['method'], 9)))
  sizes = [tuple(s) for s in part.get('sizes', [])] or sorted({(s['n'], s['d'], s['p'])
                                                               for s in summ})
  not_run = {(r['n'], r['d'], r['p']): r['reason'] for r in part.get('paper_not_run', [])}
  for size in sizes:
    for s in [s for s in summ if (s['n'], s['d'], s['p']) == size]:
      stopped = f" ({s['stopped']} stopped)" if s['stopped'] else ''
      steps = f"{s['mean_steps']:.0f}" if s['mean_steps'] is not None else '-'
      lines.append(f"| {s['method']} | {s['n']}, {s['d']}, {s['p']} | {s['activation']} | "
                   f"{'Adam 0.05 cosine' if s['lr'] is None else format(s['lr'], 'g')} | "
                   f"{s['max_steps']} | {s['recovered']}/{s['seeds']}{stopped} | "
                   f"{s['certified']}/{s['seeds']} | {s['median_wall_s']:.1f} | "
                   f"{s['median_cpu_s']:.1f} | {steps} |")
    if size in not_run and not any((s['method'], s['n'], s['d'], s['p']) == ('paper', *size)
                                   for s in summ):
      lines.append(f"| paper | {size[0]}, {size[1]}, {size[2]} | "
                   f"{pipeline_activation(*size)} | - | - | {not_run[size]} | - | - | - | - |")
  lines += ['', *pipeline_compare_lines(summ, not_run)]
  false_cert = sum(bool(r.get('false_certified')) for r in rows)
  lines += ['', f'False certificates (certified with a row not recovered): {false_cert} of '
            f'{sum(bool(r["certified"]) for r in rows)} certified runs.', '',
            'Code measured: ' + '; '.join(
                f'{n}, {d}, {p}: ' + ', '.join(sorted(
                    {f"{r['commit']} ({r['recorded']})" if r.get('commit') else
                     'a commit before they were recorded (results of 697aeb1, 2026-11-27)'
                     for r in rows if (r['n'], r['d'], r['p']) == (n, d, p)}))
                for n, d, p in sorted({(r['n'], r['d'], r['p']) for r in rows})) + '.', '',
            'Per seed:', '',
            '| method | n, d, p | seed | rows recovered | recon_error | certified | residual '
            'Jacobian | steps | status | escalations (kept) | rung | wall s | CPU s | load (1 min) |',
            '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
  for r in sorted(rows, key=lambda r: ((r['n'], r['d'], r['p']), order.get(r['method'], 9),
                                       r['seed'])):
    rec = f"{r['n_recovered']}/{r['n']}" if r['n_recovered'] is not None else (
        f'- ({logged_within(r)} within 0.1 when the descent ended)' if logged_within(r) else '-')
    err = '-' if r['recon_error'] is None else f"{r['recon_error']:.2g}"
    esc = ('-' if r.get('escalations_tried') is None else
           f"{r['escalations_tried']} ({r['escalations_accepted']})")
    rung = ('yes' if r.get('polish_applied') else 'no') if r['n_recovered'] is not None else (
        'started' if r.get('in_rung') else '-')
    steps = r['steps'] if r['steps'] is not None else (
        f"{r['last_logged_step']} logged (loss {r['last_logged_loss']:.1e})"
        if r.get('last_logged_step') is not None else '-')
    lines.append(f"| {r['method']} | {r['n']}, {r['d']}, {r['p']} | {r['seed']} | {rec} | {err} | "
                 f"{r['certified']} | {r.get('certificate_jacobian') or '-'} | "
                 f"{steps} | "
                 f"{r['status']} | {esc} | {rung} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} | "
                 f"{r['loadavg'][0]} |")
  return lines


# --- The headline: the default against the paper's port on fresh seeds, on two clocks --------
# The fixed schemes' table runs seeds 0..--seeds-1: the default scheme was chosen on seeds 0-2
# there, so its ratio is an in-sample figure. The headline re-measures that comparison on seeds
# nothing was chosen on, and beside it the whole process (the CLI run end to end), per seed back
# to back so that both clocks see the same load.
HEADLINE_PROBLEM = (10, 10)  # p = 10 dn = 1000: configs/rf_synthetic.py's default problem
HEADLINE_DEFAULT = 'adam_lr0.05+cosine20k'  # configs/rf_synthetic.py's optimiser and schedule
HEADLINE_SEEDS = '300,301,302'
HEADLINE_TUNING = {
    "default_scheme_chosen_on (the fixed schemes' table, configs/rf_synthetic.py)": [0, 1, 2],
    **PIPELINE_TUNING}


def headline_tuning_seeds():
  """Every seed a choice was made on (the headline's seeds must avoid them all)."""
  return sorted({s for seeds in HEADLINE_TUNING.values() for s in seeds})


def _ratio_side(rows, names, reached_key, time_key):
  """One clock's default-vs-port summary: seeds reached, medians (all runs), the ratio."""
  dflt = [r for r in rows if r['method'] == names[0]]
  port = [r for r in rows if r['method'] == names[1]]
  if not dflt or not port:
    return None
  out = {'default_method': names[0], 'paper_method': names[1], 'seeds': len(dflt),
         'default_reached': sum(bool(r[reached_key]) for r in dflt),
         'paper_reached': sum(bool(r[reached_key]) for r in port),
         'default_median_s': float(np.median([r[time_key] for r in dflt])),
         'paper_median_s': float(np.median([r[time_key] for r in port])),
         'paper_mean_steps': float(np.mean([r['steps'] or 0 for r in port]))}
  out['ratio'] = out['paper_median_s'] / out['default_median_s']
  # The port's time is budget-capped where it never reconstructs: the ratio is then a floor.
  out['lower_bound'] = out['paper_reached'] < len(port)
  out['default_all_reached'] = out['default_reached'] == len(dflt)
  # Per seed (the same problem on both sides): where the default reconstructs, the port's time
  # over the default's is a floor on that seed's ratio (exact where the port reconstructs too).
  by_seed = {r['seed']: r for r in port}
  out['per_seed'] = [{'seed': r['seed'], 'default_s': r[time_key],
                      'paper_s': by_seed[r['seed']][time_key],
                      'default_reached': bool(r[reached_key]),
                      'paper_reached': bool(by_seed[r['seed']][reached_key]),
                      'ratio': by_seed[r['seed']][time_key] / r[time_key]}
                     for r in sorted(dflt, key=lambda r: r['seed']) if r['seed'] in by_seed]
  reached = [s['ratio'] for s in out['per_seed'] if s['default_reached']]
  out['min_ratio_where_default_reached'] = min(reached) if reached else None
  if 'certified' in dflt[0]:
    out['default_certified'] = sum(bool(r['certified']) for r in dflt)
    out['paper_certified'] = sum(bool(r['certified']) for r in port)
    out['default_median_cpu_s'] = float(np.median([r['cpu_s'] for r in dflt]))
    out['paper_median_cpu_s'] = float(np.median([r['cpu_s'] for r in port]))
  return out


def headline_summary(part):
  """The two ratios of the headline part, from its rows."""
  return {'optimizer_only_ratio': _ratio_side(part['optimizer_only']['rows'],
                                              (HEADLINE_DEFAULT, PAPER), 'reached', 'seconds'),
          'whole_process_ratio': _ratio_side(part['whole_process']['rows'], PIPELINE_METHODS,
                                             'all_recovered', 'wall_s')}


def headline_part(results, seeds, max_steps, timeout_s, cpu_limit_s, save):
  """Per fresh seed: both optimisers alone, then both CLI runs whole; saved after each run."""
  n, d = HEADLINE_PROBLEM
  p = 10 * d * n
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  part = results['headline'] = {
      'problem': [n, d, p], 'activation': ACT, 'seeds': list(seeds),
      'tuning_seeds': HEADLINE_TUNING, 'default_scheme': HEADLINE_DEFAULT, 'paper_scheme': PAPER,
      'max_steps': max_steps, 'paper_budget_factor': PAPER_BUDGET_FACTOR,
      'timeout_s': timeout_s, 'cpu_limit_s': cpu_limit_s, 'machine': machine.describe(),
      'commit': _commit(root), 'recorded': time.strftime('%Y-%m-%d', time.gmtime()),
      'jax': jax.__version__, 'cpu_count': os.cpu_count(),
      'loadavg_start': [round(x, 1) for x in os.getloadavg()],
      'optimizer_only': {'rows': []}, 'whole_process': {'rows': []}}
  cli_steps = None if max_steps == DEFAULT_MAX_STEPS else max_steps
  for seed in seeds:
    for method in (HEADLINE_DEFAULT, PAPER):
      load = [round(x, 1) for x in os.getloadavg()]
      r = time_to_reconstruct(n, d, seed, method,
                              max_steps * (PAPER_BUDGET_FACTOR if method == PAPER else 1))
      r['loadavg'] = load
      print(json.dumps(r), flush=True)
      part['optimizer_only']['rows'].append(r)
      save()
    for method in PIPELINE_METHODS:
      row = pipeline_run(method, n, d, p, seed, cli_steps, timeout_s, cpu_limit_s)
      print(json.dumps(row), flush=True)
      part['whole_process']['rows'].append(row)
      part['loadavg_end'] = [round(x, 1) for x in os.getloadavg()]
      part.update(headline_summary(part))
      save()


def _ratio_text(side):
  if side is None:
    return '-'
  if not side['default_all_reached']:
    if side.get('min_ratio_where_default_reached') is None:
      return f"none: the default reached 0/{side['seeds']} seeds"
    hit = [s for s in side['per_seed'] if s['default_reached']]
    missed = [s['seed'] for s in side['per_seed'] if not s['default_reached']]
    port_missed = all(not s['paper_reached'] for s in side['per_seed'] if not s['default_reached'])
    return (f"at least {side['min_ratio_where_default_reached']:.0f}x on the "
            f"{len(hit)} seed(s) the default reached ({', '.join(str(s['seed']) for s in hit)}:"
            f" {', '.join(format(s['ratio'], '.0f') + 'x' for s in hit)}); seed(s) "
            f"{', '.join(map(str, missed))}: "
            + ('neither reached' if port_missed else 'the port reached, the default not')
            + f" (ratio of medians over all seeds {side['ratio']:.1f}x)")
  return (f"at least {side['ratio']:.1f}x (the port reached {side['paper_reached']}/"
          f"{side['seeds']} seeds; its time is its budget's)" if side['lower_bound']
          else f"{side['ratio']:.1f}x")


def headline_lines(part):
  """The md of the headline: the two ratios side by side, then the runs per seed."""
  n, d, p = part['problem']
  tuning = '; '.join(f'{k}: {v[0]}-{v[-1]}' for k, v in part['tuning_seeds'].items())
  opt, whole = part.get('optimizer_only_ratio'), part.get('whole_process_ratio')
  lines = ['', f"Headline, the default problem ({n}, {d}, {p}), {part['activation']}, on fresh "
           f"seeds {part['seeds']} (no choice was made on them; tuning seeds: {tuning}). The "
           f"default ({part['default_scheme']}; whole: the CLI as configs/rf_synthetic.py ships "
           f"it) against the paper's optimiser ported faithfully at its blind lr, "
           f"{part['paper_budget_factor']}x the default's {part['max_steps']} steps. Per seed "
           'the four runs back to back: optimiser only (in-process, compile excluded, the ground '
           'truth stops the clock once every sample is within 0.05), then whole (one `python -m '
           'recon.main --config=configs/rf_synthetic.py` process, wall clock: start-up, victim '
           'fit, compilation, attack with escalation and the precision rung, certificate; '
           'recovered = every row within 0.1, read from summary.json afterwards). Measured at '
           f"{part['commit']} ({part['recorded']}) on {part['machine']}; load (1/5/15 min, shared) "
           f"{part['loadavg_start']} at the start, {part.get('loadavg_end')} at the end.", '',
           '| clock | default: reached, median s | paper\'s port: reached, median s | ratio |',
           '|---|---|---|---|']
  if opt:
    lines.append(f"| optimiser only | {opt['default_reached']}/{opt['seeds']}, "
                 f"{opt['default_median_s']:.2f} | {opt['paper_reached']}/{opt['seeds']}, "
                 f"{opt['paper_median_s']:.2f} | {_ratio_text(opt)} |")
  if whole:
    lines.append(f"| whole process | {whole['default_reached']}/{whole['seeds']} "
                 f"({whole['default_certified']} certified), {whole['default_median_s']:.1f} | "
                 f"{whole['paper_reached']}/{whole['seeds']} ({whole['paper_certified']} "
                 f"certified), {whole['paper_median_s']:.1f} | {_ratio_text(whole)} |")
  lines += ['', '| seed | clock | method | reached | steps | s | load (1 min) |',
            '|---|---|---|---|---|---|---|']
  runs = ([('optimiser only', r, r['reached'], r['seconds']) for r in
           part['optimizer_only']['rows']] +
          [('whole process', r, r['all_recovered'], r['wall_s']) for r in
           part['whole_process']['rows']])
  for clock, r, ok, secs in sorted(runs, key=lambda c: (c[1]['seed'], c[0] != 'optimiser only')):
    within = (f"{r['n_within']}/{r['n']}" if 'n_within' in r else
              f"{r['n_recovered']}/{r['n']}" if r.get('n_recovered') is not None else '-')
    lines.append(f"| {r['seed']} | {clock} | {r['method']} | {ok} ({within}) | "
                 f"{r['steps'] if r['steps'] is not None else '-'} | {secs:.2f} | "
                 f"{r['loadavg'][0]} |")
  return lines


def _table(results):
  loads = '; '.join(f"{part}: {results[f'loadavg_{part}']}" for part in ('step', 'ttr', 'fit')
                    if f'loadavg_{part}' in results)
  malloc = results.get('host_malloc', 'system')
  cores = results.get('cpu_count', 2)  # runs before cpu_count was recorded: this 2-core machine
  lines = [f"Device: {results['device']} ({results['platform']}). 1/5/15-min load averages "
           f"({cores} cores) when each part started: {loads}. "
           'Timings are noisy when other jobs share the machine. Host heap: '
           f"{malloc} ({'recon.runtime.host.keep_buffers_mapped' if malloc == 'tuned' else 'glibc defaults'}"
           ').', '',
           'Lean step time over the dense step, per residual mode and generator of V '
           '(two_pass: 3 regenerations of V per step, gram and stored: 2; threefry, hash or '
           'hash_box_muller (bm)):', '',
           '| n | d | p | dense step (ms) | roofline (ms) | step/roofline | '
           'two_pass/dense | gram/dense | stored/dense | stored+hash/dense | stored+bm/dense | '
           'V regen threefry / hash / bm (ms) | dense mem (MB) | lean two_pass / stored (MB) |',
           '|---|---|---|---|---|---|---|---|---|---|---|---|---|---|']
  for r in results['step']:
    lines.append(
        f"| {r['n']} | {r['d']} | {r['p']} | {1e3 * r['dense_step_s']:.3f} | "
        f"{1e3 * r['roofline_s']:.3f} | {r['dense_over_roofline']:.2f} | "
        f"{r['lean_over_dense']:.2f} | {r['lean_gram_over_dense']:.2f} | "
        f"{r['lean_stored_over_dense']:.2f} | {r['lean_stored_hash_over_dense']:.2f} | "
        f"{r['lean_stored_bm_over_dense']:.2f} | "
        f"{1e3 * r['regenerate_v_s']:.2f} / {1e3 * r['regenerate_v_hash_s']:.2f} / "
        f"{1e3 * r['regenerate_v_bm_s']:.2f} | "
        f"{r['dense_memory'].get('total_mb', float('nan')):.2f} | "
        f"{r['lean_memory'].get('total_mb', float('nan')):.2f} / "
        f"{r['lean_stored_memory'].get('total_mb', float('nan')):.2f} |")
  if 'memory_at_scale' in results:
    r = results['memory_at_scale']
    where = ("the paper's CIFAR-10 scale " if (r['n'], r['d'], r['p']) == CIFAR_SCALE else '')
    lines += ['', f"Peak memory of one compiled step at {where}(n={r['n']}, "
              f"d={r['d']}, p={r['p']}, V alone {r['v_mb']:.0f} MB; XLA memory analysis, "
              'compiled only, nothing allocated):', '',
              '| path | arguments (MB) | temporaries (MB) | total (MB) |', '|---|---|---|---|']
    for name in ('dense', 'lean', 'lean_stored'):
      m = r[f'{name}_memory']
      lines.append(f"| {name} | {m.get('argument_mb', float('nan')):.1f} | "
                   f"{m.get('temp_mb', float('nan')):.1f} | {m.get('total_mb', float('nan')):.1f} |")
  if 'victim_fit' in results:
    r = results['victim_fit']
    lines += ['', f"Victim fit of {r['config']} ({r['dataset']}, n={r['n']}, d={r['d']}, "
              f"p={r['p']}, {r['activation']}, {r['dtype']} features; G = Phi Phi^T has "
              f"lambda_min / lambda_max {r['gram_lambda_min_over_max']:.2g}, "
              f"{r['eigenvalues_below_float32_cutoff']} eigenvalues below the float32 cut-off "
              f"n eps32 lambda_max). Features {r['features_s']:.1f} s; process peak RSS "
              f"{r['peak_rss_mb']:.0f} MB (float64 reference solve included); the lean "
              f"problem (features + fit) compiled: "
              f"{r['lean_problem_memory'].get('total_mb', float('nan')):.0f} MB:", '',
              '| n x n solve | train_mse / var(y) | theta* vs float64 solve (rel.) | fit s | '
              'fit memory (MB, compiled) |', '|---|---|---|---|---|']
    for name, label in (('float64_solve', 'float64 (default)'),
                        ('float32_solve', 'float32 Gram (before issue #30)')):
      lines.append(f"| {label} | {r[f'{name}_train_mse_over_var_y']:.2g} | "
                   f"{r[f'{name}_theta_rel_err']:.2g} | {r[f'{name}_s']:.2f} | "
                   f"{r[f'{name}_memory'].get('total_mb', float('nan')):.0f} |")
  merged = results.get('ttr_merged')
  merged_note = '' if not merged else (
      f" Rows of {', '.join(merged['methods'])} come from a later run (--merge_ttr, load "
      f"{results.get('loadavg_ttr')}); the others from the run with load {merged['kept_loadavg']}.")
  table_seeds = sorted({r['seed'] for r in results['ttr']})
  lines += ['', 'Time-to-reconstruct (all true samples < 0.05 relative error; compile excluded; '
            f"budget {results['ttr_max_steps']} steps, {PAPER_BUDGET_FACTOR}x that for the "
            "paper's scheme" + (
                f"; seeds {table_seeds}, the seeds the default scheme was chosen on: an "
                'in-sample comparison of optimisers, the headline below is on fresh seeds'
                if table_seeds else '') + f"):{merged_note}", '',
            '| method | n, d, p | reached | median s (reached runs) | median s (all runs) | '
            'mean steps | mean samples within 0.05 |', '|---|---|---|---|---|---|---|']
  groups = {}
  for r in results['ttr']:
    groups.setdefault((r['method'], r['n'], r['d'], r['p']), []).append(r)
  order = list(METHODS)
  rank = lambda key: ((key[1], key[2], key[3]),  # noqa: E731
                      order.index(key[0]) if key[0] in order else len(order))
  for (method, n, d, p), rs in sorted(groups.items(), key=lambda kv: rank(kv[0])):
    ok = [r['seconds'] for r in rs if r['reached']]
    med = f'{np.median(ok):.2f}' if ok else '-'
    lines.append(f"| {method} | {n}, {d}, {p} | {len(ok)}/{len(rs)} | {med} | "
                 f"{np.median([r['seconds'] for r in rs]):.2f} | "
                 f"{np.mean([r['steps'] for r in rs]):.0f} | "
                 f"{np.mean([r['n_within'] for r in rs]):.1f}/{n} |")
  lines += ['', *speedup_lines(results)]
  if results.get('headline'):
    lines += headline_lines(results['headline'])
  if results.get('ttr_pipeline', {}).get('rows'):
    lines += pipeline_lines(results['ttr_pipeline'])
  return '\n'.join(lines) + '\n'


def speedup_lines(results):
  """Per problem: the paper's scheme vs the fastest scheme that reached every seed."""
  out = []
  problems = sorted({(r['n'], r['d'], r['p']) for r in results['ttr']})
  for n, d, p in problems:
    rs = [r for r in results['ttr'] if (r['n'], r['d'], r['p']) == (n, d, p)]
    by = {}
    for r in rs:
      by.setdefault(r['method'], []).append(r)
    paper = by.get(PAPER)
    full = {m: float(np.median([r['seconds'] for r in v])) for m, v in by.items()
            if m != PAPER and all(r['reached'] for r in v)}
    if paper and not full:
      # Nobody reached every seed: compare what each covers within its budget instead.
      cover = {m: (float(np.mean([r['n_within'] for r in v])),
                   float(np.median([r['seconds'] for r in v]))) for m, v in by.items()}
      best = max((m for m in cover if m != PAPER), key=lambda m: (cover[m][0], -cover[m][1]))
      out.append(f'* ({n}, {d}, {p}): no scheme reconstructed every seed. Within its budget the '
                 f'paper\'s scheme covers {cover[PAPER][0]:.1f}/{n} samples on average in a median '
                 f'{cover[PAPER][1]:.1f} s; {best} covers {cover[best][0]:.1f}/{n} in '
                 f'{cover[best][1]:.1f} s.')
      continue
    if not paper:
      continue
    best = min(full, key=full.get)
    t_paper = float(np.median([r['seconds'] for r in paper]))
    reached = sum(r['reached'] for r in paper)
    bound = '' if reached == len(paper) else ' (a lower bound: the paper\'s scheme reached ' \
        f'{reached}/{len(paper)} seeds within its budget)'
    out.append(f'* ({n}, {d}, {p}): {best} reconstructs every seed in a median {full[best]:.2f} s; '
               f'the paper\'s scheme takes a median {t_paper:.2f} s: '
               f'{t_paper / full[best]:.1f}x{bound}.')
  return out


DEFAULT_SIZES = '10x10x1000x4096,20x50x10000x4096,20x100x20000x4096,100x30x30000x4096'
QUICK_SIZES = '10x10x1000x256,20x20x10000x2048'
CIFAR_SCALE = (100, 3072, 3072000)  # the paper's CIFAR-10 scale: n = 100, d = 3072, p = 10 dn
PARTS = ('step', 'memscale', 'ttr', 'headline', 'fit')
FIT_SIZE = '100x32x3072000'  # configs/rf_cifar.py as shipped: n x image side x p


def parse_sizes(text, n_fields, flag, default_chunk=4096, form_example=None):
  """'NxDxP[xCHUNK],...' (n_fields = 4), 'NxSIDExP' (3) or 'NxD,...' (2) -> list of int tuples.

  Raises ValueError naming the flag and the accepted form on anything else.
  """
  form, example = {4: ('NxDxP[xCHUNK]', '20x50x10000x4096'), 3: ('NxSIDExP', '100x32x3072000'),
                   2: ('NxD', '10x10')}[n_fields] if form_example is None else form_example
  out = []
  for item in text.split(','):
    try:
      vals = tuple(int(v) for v in item.strip().split('x'))
    except ValueError:
      vals = ()
    if n_fields == 4 and len(vals) == 3:
      vals = vals + (default_chunk,)
    if len(vals) != n_fields or min(vals) < 1:
      raise ValueError(f'{flag}: {item!r} is not {form} with positive integers; accepted: a '
                       f'comma-separated list such as {example}')
    out.append(vals)
  return out


def parse_args(argv=None):
  """The command line, validated: a bad value exits with status 2 and one line naming it."""
  ap = argparse.ArgumentParser()
  ap.add_argument('--quick', action='store_true',
                  help='smaller sizes and budgets (a smoke run)')
  ap.add_argument('--out', default='results')
  ap.add_argument('--parts', default=','.join(PARTS))
  ap.add_argument('--sizes', default=None,
                  help=f'step part: NxDxP[xCHUNK],... (default {DEFAULT_SIZES}); on a GPU, '
                       'larger sizes measure the regime that matters there')
  ap.add_argument('--memscale_size', default=None,
                  help='memscale part: NxDxP[xCHUNK], compiled only (default: the paper\'s '
                       'CIFAR-10 scale, %dx%dx%d)' % CIFAR_SCALE)
  ap.add_argument('--fit_size', default=FIT_SIZE,
                  help='fit part: NxSIDExP, configs/rf_cifar.py\'s data.n, data.image_size '
                       f'(d = SIDE^2 * 3) and victim.p (default {FIT_SIZE}, as shipped)')
  ap.add_argument('--seeds', type=int, default=3)
  ap.add_argument('--methods', default=','.join((*METHODS, *PIPELINE_METHODS)),
                  help='ttr methods: the fixed schemes (compile excluded, ground truth stops '
                       f'the clock) and {", ".join(PIPELINE_METHODS)} (the CLI run whole)')
  ap.add_argument('--pipeline_sizes', default=PIPELINE_SIZES,
                  help=f'ttr sizes of {"/".join(PIPELINE_METHODS)}: NxDxP,... '
                       f'(default {PIPELINE_SIZES})')
  ap.add_argument('--pipeline_seeds', default=PIPELINE_SEEDS,
                  help=f'their reported seeds (default {PIPELINE_SEEDS})')
  ap.add_argument('--headline_seeds', default=HEADLINE_SEEDS,
                  help=f'headline part: fresh seeds (default {HEADLINE_SEEDS}); refused if any '
                       'is a tuning seed (HEADLINE_TUNING)')
  ap.add_argument('--pipeline_max_steps', type=int, default=None,
                  help='their attack.max_steps (default: the config\'s own, '
                       f'{DEFAULT_MAX_STEPS}); the paper\'s port gets {PAPER_BUDGET_FACTOR}x')
  ap.add_argument('--pipeline_timeout_s', type=float, default=PIPELINE_TIMEOUT_S,
                  help='a pipeline run still going after this many seconds is stopped (failed)')
  ap.add_argument('--pipeline_cpu_limit_s', type=float, default=PIPELINE_CPU_LIMIT_S,
                  help='a pipeline run is stopped (failed) once it used this many CPU seconds')
  ap.add_argument('--problems', default='10x10,20x20')
  ap.add_argument('--max_steps', type=int, default=None,
                  help='ttr step budget (default 20000; 4000 with --quick); the paper\'s scheme '
                       f'gets {PAPER_BUDGET_FACTOR}x')
  ap.add_argument('--keep_other_parts', action='store_true',
                  help='keep the parts not re-run from OUT/bench.json')
  ap.add_argument('--merge_ttr', action='store_true',
                  help='with --keep_other_parts: re-run only --methods and keep the other '
                       'methods\' time-to-reconstruct entries')
  ap.add_argument('--render_only', action='store_true',
                  help='rewrite OUT/bench.md from OUT/bench.json; run nothing')
  args = ap.parse_args(argv)
  parts = args.parts.split(',')
  bad = [q for q in parts if q not in PARTS]
  if bad:
    ap.error(f'--parts: unknown part {bad[0]!r}; accepted: {", ".join(PARTS)}')
  bad = [m for m in args.methods.split(',') if m not in METHODS and m not in PIPELINE_METHODS]
  if bad:
    ap.error(f'--methods: unknown method {bad[0]!r}; accepted: '
             f'{", ".join((*METHODS, *PIPELINE_METHODS))}')
  if args.pipeline_max_steps is not None and args.pipeline_max_steps < 1:
    ap.error(f'--pipeline_max_steps: {args.pipeline_max_steps}; accepted: an integer >= 1')
  if args.pipeline_timeout_s <= 0:
    ap.error(f'--pipeline_timeout_s: {args.pipeline_timeout_s}; accepted: a number > 0')
  if args.pipeline_cpu_limit_s <= 0:
    ap.error(f'--pipeline_cpu_limit_s: {args.pipeline_cpu_limit_s}; accepted: a number > 0')
  if args.seeds < 1:
    ap.error(f'--seeds: {args.seeds}; accepted: an integer >= 1')
  if args.max_steps is not None and args.max_steps < 1:
    ap.error(f'--max_steps: {args.max_steps}; accepted: an integer >= 1')
  try:
    args.sizes = parse_sizes(args.sizes or (QUICK_SIZES if args.quick else DEFAULT_SIZES), 4,
                             '--sizes')
    memscale = parse_sizes(args.memscale_size or ('20x100x20000x4096' if args.quick else
                                                  'x'.join(map(str, CIFAR_SCALE + (4096,)))),
                           4, '--memscale_size')
    if len(memscale) != 1:
      raise ValueError(f'--memscale_size: {args.memscale_size!r} lists {len(memscale)} sizes; '
                       'accepted: one NxDxP[xCHUNK]')
    args.memscale_size = memscale[0]
    args.problems = parse_sizes(args.problems, 2, '--problems')
    args.pipeline_sizes = [tuple(s) for s in parse_sizes(
        args.pipeline_sizes, 3, '--pipeline_sizes', form_example=('NxDxP', '20x20x4000'))]
    try:
      seeds = [int(v) for v in args.pipeline_seeds.split(',')]
    except ValueError:
      seeds = []
    if not seeds or min(seeds) < 0:
      raise ValueError(f'--pipeline_seeds: {args.pipeline_seeds!r}; accepted: comma-separated '
                       'integers >= 0, e.g. 300,301,302')
    args.pipeline_seeds = seeds
    try:
      fresh = [int(v) for v in args.headline_seeds.split(',')]
    except ValueError:
      fresh = []
    if not fresh or min(fresh) < 0:
      raise ValueError(f'--headline_seeds: {args.headline_seeds!r}; accepted: comma-separated '
                       'integers >= 0, e.g. 300,301,302')
    used = sorted(set(fresh) & set(headline_tuning_seeds()))
    if used:
      raise ValueError(f'--headline_seeds: {used} chose something (HEADLINE_TUNING); accepted: '
                       'fresh seeds, e.g. 300,301,302')
    args.headline_seeds = fresh
    fit_size = parse_sizes(args.fit_size, 3, '--fit_size')
    if len(fit_size) != 1 or 32 % fit_size[0][1]:
      raise ValueError(f'--fit_size: {args.fit_size!r}; accepted: one NxSIDExP with SIDE a '
                       'divisor of 32')
    args.fit_size = fit_size[0]
  except ValueError as e:
    ap.error(str(e))
  args.parts = parts
  if args.max_steps is None:
    args.max_steps = 4000 if args.quick else 20000
  return args


def main(argv=None):
  args = parse_args(argv)
  if args.render_only:
    if not os.path.exists(os.path.join(args.out, 'bench.json')):
      print(f'bench: --render_only: no {os.path.join(args.out, "bench.json")} to render; '
            'accepted: an --out folder holding a bench.json', file=sys.stderr)
      sys.exit(2)
    with open(os.path.join(args.out, 'bench.json')) as f:
      table = _table(json.load(f))
    with open(os.path.join(args.out, 'bench.md'), 'w') as f:
      f.write(table)
    print(table)
    return
  parts = args.parts
  results = {'device': str(jax.devices()[0]), 'platform': jax.devices()[0].platform,
             'jax': jax.__version__, 'host': platform.node(), 'cpu_count': os.cpu_count(),
             'host_malloc': 'tuned' if host.is_tuned() else 'system',
             'loadavg_start': [round(x, 1) for x in os.getloadavg()], 'step': [], 'ttr': []}
  previous = os.path.join(args.out, 'bench.json')
  if args.keep_other_parts and os.path.exists(previous):
    # Re-run only `--parts`; the other parts' results (and their load averages) are kept.
    with open(previous) as f:
      old = json.load(f)
    if 'ttr_pipeline' in old:  # resumed: rows already measured are not run again
      results['ttr_pipeline'] = old['ttr_pipeline']
    if 'machine' in old:
      results['machine'] = old['machine']
    fixed_rerun = [m for m in args.methods.split(',') if m in METHODS] if 'ttr' in parts else []
    for part, key in (('step', 'step'), ('memscale', 'memory_at_scale'), ('ttr', 'ttr'),
                      ('headline', 'headline'), ('fit', 'victim_fit')):
      if part == 'ttr' and part in parts and not fixed_rerun and key in old:
        # Only the pipeline's methods re-run: the fixed schemes' rows stay as they were.
        results[key] = old[key]
        for extra in ('ttr_max_steps', 'ttr_merged', 'loadavg_ttr'):
          if extra in old:
            results[extra] = old[extra]
        continue
      if part not in parts and key in old:
        results[key] = old[key]
        if part == 'ttr':
          for extra in ('ttr_max_steps', 'ttr_merged'):
            if extra in old:
              results[extra] = old[extra]
        results[f'loadavg_{part}'] = old.get(f'loadavg_{part}', old.get('loadavg_start'))
    if args.merge_ttr and 'ttr' in parts and fixed_rerun:
      if old.get('ttr_max_steps', args.max_steps) != args.max_steps:
        print(f"bench: --merge_ttr: --max_steps {args.max_steps} differs from the kept entries' "
              f"{old['ttr_max_steps']}; accepted: --max_steps={old['ttr_max_steps']}",
              file=sys.stderr)
        sys.exit(2)
      rerun = set(fixed_rerun)
      # Rows of methods no longer in METHODS (e.g. the earlier, unfaithful paper port) go.
      results['ttr'] = [r for r in old.get('ttr', [])
                        if r['method'] not in rerun and r['method'] in METHODS]
      results['ttr_merged'] = {'methods': sorted(rerun),
                               'kept_loadavg': old.get('loadavg_ttr')}
  def stamp(part):
    results[f'loadavg_{part}'] = [round(x, 1) for x in os.getloadavg()]

  if 'step' in parts:
    stamp('step')
    for n, d, p, chunk in args.sizes:
      r = bench_step(n, d, p, chunk, steps=20 if p >= 10000 else 100)
      print(json.dumps(r), flush=True)
      results['step'].append(r)
  if 'memscale' in parts:
    results['memory_at_scale'] = memory_at_scale(*args.memscale_size)
    print(json.dumps(results['memory_at_scale']), flush=True)
  max_steps = args.max_steps
  fixed = [m for m in args.methods.split(',') if m in METHODS]
  if ('ttr' in parts and fixed) or 'ttr_max_steps' not in results:
    results['ttr_max_steps'] = max_steps
  pipeline = [m for m in args.methods.split(',') if m in PIPELINE_METHODS]
  os.makedirs(args.out, exist_ok=True)

  def save():
    if results.get('headline'):
      results['headline'].update(headline_summary(results['headline']))
    io.write_json(os.path.join(args.out, 'bench.json'), results)
    with open(os.path.join(args.out, 'bench.md'), 'w') as f:
      f.write(_table(results))

  if 'ttr' in parts and pipeline:
    results['machine'] = machine.describe()
    pipeline_part(results, args.pipeline_sizes, args.pipeline_seeds, pipeline,
                  args.pipeline_max_steps, args.pipeline_timeout_s, save,
                  args.pipeline_cpu_limit_s)
  if 'ttr' in parts and fixed:
    stamp('ttr')
    problems = args.problems[:1] if args.quick else args.problems
    for n, d in problems:
      for method in fixed:
        for seed in range(args.seeds):
          budget = max_steps * (PAPER_BUDGET_FACTOR if method == PAPER else 1)
          r = time_to_reconstruct(n, d, seed, method, budget)
          print(json.dumps(r), flush=True)
          results['ttr'].append(r)
  if 'headline' in parts:
    headline_part(results, args.headline_seeds, max_steps, args.pipeline_timeout_s,
                  args.pipeline_cpu_limit_s, save)
  if 'fit' in parts:
    stamp('fit')
    results['victim_fit'] = victim_fit(*args.fit_size)
    print(json.dumps(results['victim_fit']), flush=True)
  results['loadavg_end'] = [round(x, 1) for x in os.getloadavg()]
  os.makedirs(args.out, exist_ok=True)
  if results.get('headline'):
    results['headline'].update(headline_summary(results['headline']))
  io.write_json(os.path.join(args.out, 'bench.json'), results)
  table = _table(results)
  with open(os.path.join(args.out, 'bench.md'), 'w') as f:
    f.write(table)
  print(table)


if __name__ == '__main__':
  host.keep_buffers_mapped()  # recon/runtime/host.py: reuse large CPU buffers
  compile_cache.enable()  # recon/runtime/compile_cache.py: reuse compiled programs
  main()
