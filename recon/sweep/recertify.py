"""A finished random-features sweep's records re-derived from its saved candidates.

What runs after the descent -- the blind certificate, the precision rung (`recon.certify.rung`), the
scores -- runs again, with this code and on this machine, on the candidates WORKDIR/sweep.npz
holds; the descent does not (its steps, statuses and rescue counters are copied from the saved
records). Those are the candidates after the sweep's own rung: where it kept a polish, the
polished set is judged as it stands (its loss, not the descent's; the record says
`input_polished`); elsewhere the re-derived record equals the sweep's own but for timings.
Uses: the descent ran on a lent accelerator whose window closed before the rung (the
certificate and rung then run on a CPU), or the post-processing changed (the rung's size cap)
and a finished sweep is to be judged by it without descending again.

The victims are rebuilt from the saved config (`recon.sweep.grid.prepare_group`: the same seeds,
hence the same V, data and labels; theta = Phi^+ y refitted here, equal up to rounding). The new
sweep.json carries `machine` (both machines), `device` (the descent's), the groups' `seconds`
(the descent's) and `recertify_seconds` (here), `recertified_from`; sweep.npz the (possibly
polished) candidates.
"""
from __future__ import annotations

import os
import time

from absl import logging
import jax
import jax.numpy as jnp
import ml_collections
import numpy as np

from recon.runtime import io, machine
from recon.attack import optimiser as optimize
from recon.attack.rescue import chain as rescue
from recon.sweep import grid as sweep
from recon.errors import ExperimentError

STATUS_CODES = {name: code for code, name in optimize.STATUS_NAMES.items()}


def saved_out(group, saved_records, arrays, prog) -> dict:
  """`recon.sweep.grid.run_group`'s output for `group`, the descent's part read from the saved
  sweep (candidates, steps, statuses, rescue counters) and the victims from `prog`."""
  size = len(group.points)
  old = [saved_records[pt.index] for pt in group.points]
  x_hat = np.stack([arrays[f'x_hat_{pt.index}'] for pt in group.points])
  x_hat_padded = jnp.asarray(np.concatenate(
      [x_hat, np.repeat(x_hat[-1:], prog.batch - size, axis=0)]), prog.state.x.dtype)
  problems = jax.device_get(prog.problems)
  counters = rescue.per_run(prog.rescue, size) if prog.rescue is not None else {}
  out = {'x_true': np.asarray(prog.x_true)[:size], 'x_hat': x_hat,
         'v': np.asarray(problems.get('v_data', problems['v']))[:size],
         'v_search': np.asarray(problems['v'])[:size],
         'theta': np.asarray(problems['theta'])[:size],
         'train_mse': np.asarray(prog.train_mse)[:size],
         'final_loss': np.asarray(prog.final_loss(x_hat_padded))[:size],
         'steps': np.asarray([r['steps'] for r in old]),
         'status': np.asarray([STATUS_CODES[r['status']] for r in old])}
  if prog.basis is not None:
    out['basis'] = np.asarray(prog.basis)[:size]
  out['rescue_per_run'] = {k: np.asarray([r.get(k, 0) for r in old]) for k in counters}
  return out


def recertify(from_dir: str, to_dir: str) -> dict:
  """The re-derived sweep dict (also written to `to_dir`) of the finished sweep in
  `from_dir`; ExperimentError (one line) when there is none or `to_dir` holds one."""
  t0 = time.time()
  path = os.path.join(from_dir, 'sweep.json')
  if not os.path.isfile(path):
    raise ExperimentError(f'recertify: no finished sweep (sweep.json) in {from_dir}')
  if os.path.exists(os.path.join(to_dir, 'sweep.json')):
    raise ExperimentError(f'recertify: {to_dir} already holds a sweep; accepted: a new '
                          'folder')
  old = io.read_json(path)
  config = ml_collections.ConfigDict(old['config'])
  groups = sweep.expand(config)
  if any(sweep.family(g.points[0].cfg.victim).trains for g in groups):
    raise ExperimentError(f'recertify: {from_dir} is not a random-features sweep; accepted: '
                          'a sweep of configs/rf_*.py')
  saved = {r['index']: r for r in old['records']}
  with np.load(os.path.join(from_dir, 'sweep.npz')) as f:
    arrays = {k: f[k] for k in f.files}
  records, new_arrays, infos = [], {}, []
  for gi, g in enumerate(groups):
    t_group = time.time()
    prog = sweep.prepare_group(g)
    out = saved_out(g, saved, arrays, prog)
    for i, pt in enumerate(g.points):
      rec, x_hat = sweep._record(pt, out, i)  # pylint: disable=protected-access
      rec['group'] = gi
      # sweep.npz holds the candidates after the rung: a polished set is judged as it stands.
      rec['input_polished'] = bool((saved[pt.index].get('polish') or {}).get('kept'))
      records.append(rec)
      new_arrays[f'x_true_{pt.index}'] = out['x_true'][i]
      new_arrays[f'x_hat_{pt.index}'] = x_hat
      logging.info('recertify: group %d point %d (seed %d): certified %s, polish %s (%.0fs)',
                   gi + 1, i + 1, rec['seed'], rec['certified'],
                   (rec['polish'] or {}).get('kept'), time.time() - t0)
    info = dict(old['groups'][gi], recertify_seconds=time.time() - t_group)
    infos.append(info)
  records.sort(key=lambda r: r['index'])
  result = dict(old, records=records, groups=infos,
                machine=f'descent: {old.get("machine", old["device"])}; certificate and '
                f'rung: {machine.describe()}',
                recertified_from=os.path.abspath(from_dir),
                recertify_seconds=time.time() - t0)
  io.write_npz(os.path.join(to_dir, 'sweep.npz'), **new_arrays)
  io.write_json(os.path.join(to_dir, 'sweep.json'), result)
  return result

