"""Vectorised sweeps: a grid of runs as one jit(vmap(...)) program per group (random features
here; the networks pipeline's victims, trained and attacked, in `recon.sweep.networks`; the
KKT pipeline's max-margin MLPs in `recon.sweep.kkt`).

The grid is the product of the axes in `config.sweep` (a tuple of values per swept
field, by its section path: `sweep.victim.p`, `sweep.seed`, `sweep.attack.lr`; records
name an axis by its last name). Points that differ only in vectorised axes (`victim.p` or
`victim.p_over_dn`, `seed`, `attack.lr`, `attack.momentum`) form one group and run as ONE
compiled call, batched along a leading grid axis:

  * width: every model is padded to the group's largest width P with a 0/1 feature
    mask m (phi(x) = sigma(V x) * m). Row i of V is drawn from fold_in(key, i), so
    the first p rows are the unpadded model's V; the masked columns are zero, so
    Phi^+ y, the Gram of the candidates and the loss equal the unpadded ones;
  * seed: a batch of key trees (`runs.split_keys(seed)` per point);
  * lr, momentum: hyperparameters of `optax.inject_hyperparams`, held in the
    optimiser state, so they batch like any other state.

Static axes (`victim.activation`, `victim.width` of a network, `attack.n_candidates`, `run.dtype`, `data.n`, ...) change
shapes or code: one compiled group per combination, run one after another. With several
devices the grid axis is sharded over a 1-D mesh (`NamedSharding`, the grid padded
to a multiple of the device count). Outputs: DIR/sweep.json (one record per grid
point: coordinates + the single run's metrics), DIR/sweep.csv (the same, flat) and
DIR/sweep.npz (true rows and candidates of every point). A killed sweep resumes
(`run.resume`) from its finished groups and the running group's last saved chunk
(`recon.sweep.store`).
"""
from __future__ import annotations

import dataclasses
import functools
import itertools
import os
import time
from typing import Any, Dict, List, Sequence, Tuple

import jax
import jax.numpy as jnp
import ml_collections
import numpy as np
from absl import logging

from recon.config import routes, sections
from recon.config import validate as config_lib
from recon import data, metrics, registry
from recon.attack import driver, sign_quotient
from recon.attack import optimiser as optimize
from recon.models import features
from recon.runtime import io, machine, runs
from recon.attack import memory
from recon.certify import symmetry
from recon.certify import rung as polish
from recon.pipelines import reconstruct, victims
from recon.pipelines import random_features as rf_pipeline
from recon.pipelines import subspace as subspace_pipeline
from recon.report import scoring as report
from recon.attack.rescue import chain as rescue
from recon.sweep import axis as sweep_axis
# The networks and KKT sweeps register themselves (`family`).
from recon.sweep import kkt, networks  # noqa: F401  pylint: disable=unused-import
from recon.sweep import store as sweep_store


@dataclasses.dataclass
class Point:
  """One grid point: its coordinates (swept axes) and its resolved single run's spec."""
  index: int
  coords: Dict[str, Any]
  cfg: sections.RunSpec


@dataclasses.dataclass
class Group:
  """Points that share every static axis: one compiled program."""
  static: Dict[str, Any]
  points: List[Point]

  @property
  def p_total(self) -> int:
    return max(pt.cfg.victim.p for pt in self.points)


def axis_name(path: str) -> str:
  """The name of a sweep axis in records and sweep.json: its field's last name ('p', 'lr')."""
  return path.rsplit('.', 1)[-1]


def _width(d: int, n: int, p_over_dn: float) -> int:
  return max(1, int(round(p_over_dn * d * n)))


def expand(config: ml_collections.ConfigDict) -> List[Group]:
  """The grid of `config.sweep` as groups of resolved single runs' specs (validates all)."""
  return _grid(config)[1]


def _grid(config: ml_collections.ConfigDict) -> Tuple[Dict[str, tuple], List[Group]]:
  """(the swept axes, `expand`'s groups): the sweep's one read of its config."""
  axes = {path: tuple(v) for path, v in config_lib.validate(config).items()}
  names = {path: axis_name(path) for path in axes}
  base = config.to_dict()
  base.pop('sweep')
  static_names = [names[a] for a in axes if a in config_lib.SWEEP_STATIC]
  groups: Dict[Tuple, Group] = {}
  for index, values in enumerate(itertools.product(*axes.values())):
    coords = {names[path]: v for path, v in zip(axes, values)}
    cfg = ml_collections.ConfigDict(base)
    for path, value in zip(axes, values):
      if path != 'victim.p_over_dn':
        *parents, leaf = path.split('.')
        setattr(functools.reduce(getattr, parents, cfg), leaf, value)
    if 'p_over_dn' in coords:
      cfg.victim.p = _width(cfg.data.d, cfg.data.n, coords['p_over_dn'])
    spec = sections.RunSpec.from_config(victims.resolve(cfg))
    subspace_pipeline.check(spec.data, spec.victim, spec.attack)
    family(spec.victim).check(spec.data, spec.victim, spec.attack, tuple(axes))
    _check_batched(spec.attack)
    static = {k: coords[k] for k in static_names}
    key = tuple(repr(coords[k]) for k in static_names)
    groups.setdefault(key, Group(static, [])).points.append(Point(index, coords, spec))
  return axes, list(groups.values())


def _check_random_features(data_cfg: sections.Data, victim: sections.Victim,
                           attack: sections.Attack, swept: Tuple[str, ...]) -> None:
  """One-line ConfigError for what a random-features sweep cannot vectorise (the data section
  is the networks' and KKT sweeps' concern)."""
  del data_cfg
  if 'victim.width' in swept:
    raise config_lib.ConfigError(
        "config.sweep.victim.width: the width of a network victim; accepted for random features: "
        'sweep.victim.p or sweep.victim.p_over_dn')
  if (registry.lookup('victim', victim.name).features != 'random'
      or attack.subspace.mode not in ('none', 'known')
      or attack.subspace.alpha_mode != 'closed_form'):
    raise config_lib.ConfigError(
        f'config.victim.name: sweeps run random features, the networks and KKT pipelines '
        f'(got model {victim.name!r}, attack.subspace.mode {attack.subspace.mode!r}, '
        f'alpha_mode {attack.subspace.alpha_mode!r}); accepted: model \'random_features\' '
        "with attack.subspace.mode 'none' or 'known' and alpha_mode 'closed_form'")
  _check_fields('victim', victim, (('feature_mode', ('auto', 'dense')), ('feature_shards', 1)))


def _check_fields(name: str, section: sections.Section, fields) -> None:
  """The section `name`'s `fields` ((field, allowed value or tuple of them)) hold."""
  for field, allowed in fields:
    value = functools.reduce(getattr, field.split('.'), section)
    ok = value in allowed if isinstance(allowed, tuple) else value == allowed
    if not ok:
      raise config_lib.ConfigError(
          f'config.{name}.{field}: {value!r} is not supported in sweeps (one compiled program '
          f'with dense, padded features); accepted: {allowed!r}')


def _check_batched(attack: sections.Attack) -> None:
  """What no sweep vectorises (the attack section): L-BFGS, sample splitting, restarts,
  unbatched rescue steps."""
  _check_fields('attack', attack, (('optimizer', ('sgd', 'adam')), ('split.mode', ('none',)),
                                   ('restarts', 1)))
  if rescue.unbatched(attack.rescue):
    raise config_lib.ConfigError(
        f'config.attack.rescue: {rescue.unbatched(attack.rescue)} not supported in sweeps '
        f'(one compiled program over the grid); accepted: steps of {rescue.batched_names()}')


def check_memory(budget_gb: float, groups: Sequence[Group], n_devices: int) -> None:
  """One-line ConfigError if any padded group would exceed the memory budget
  (run.sweep_memory_budget_gb)."""
  for g in groups:
    cfg = g.points[0].cfg
    batch = sweep_axis.padded_size(len(g.points), n_devices)
    trained = family(cfg.victim).trains
    need = (memory.estimate_bytes(cfg.data, cfg.victim, cfg.attack, cfg.run.dtype) * batch
            if trained else
            memory.group_bytes(cfg.data, cfg.victim, cfg.attack, cfg.run.dtype,
                               p_total=g.p_total, batch=batch))
    size_name = f'width {cfg.victim.width}' if trained else f'p={g.p_total}'
    if need > budget_gb * 2 ** 30:
      raise config_lib.ConfigError(
          f'config.run.sweep_memory_budget_gb: the padded sweep group {g.static or "(all)"} '
          f'({batch} points x {size_name}, n={cfg.data.n}, d={cfg.data.d}) needs about '
          f'{need / 2 ** 30:.3g} GB > budget {budget_gb:g} GB; accepted: a smaller grid '
          'or a larger config.run.sweep_memory_budget_gb')


def _setup_point(keys, x, y, mask, lr, momentum, basis, *, data_cfg, victim, attack_cfg, p_total,
                 dtype):
  """One point (pure; vmapped): fit the padded model, initialise candidates and optimiser.

  With a `basis` U (d, k) (subspace 'known') the candidates are coordinates z in R^k,
  x = U z: phi(V U z) is a random-features model with weights V U, so the attack is the
  same loss with problem['v'] := V U (the fit used V on the true x).
  """
  problem = rf_pipeline.make_rf_problem(keys, x, y, p_total=p_total,
                                        activation=victim.activation, mask=mask,
                                        rng=victim.weight_rng)
  train_mse = problem.pop('train_mse')
  dim = data_cfg.d
  if basis is not None:
    problem['v_data'] = problem['v']
    problem['v'] = problem['v'] @ basis
    dim = basis.shape[1]
  rf_pipeline.add_sign_quotient(problem, attack_cfg, victim.activation, dim, mask)
  x0 = driver.init_candidates(keys['init'], attack_cfg.n_candidates, dim, dtype)
  optimizer = driver.make_optimizer(attack_cfg, lr, momentum)
  state = optimize.init_state(x0, optimizer, rf_pipeline.rf_loss_fn(victim, attack_cfg), problem,
                              optimize.sphere_constraint(float(np.sqrt(data_cfg.d))))
  return problem, state, train_mse


@dataclasses.dataclass
class Program:
  """A compiled-on-first-call group: batched initial state and problems, the jitted
  vmapped chunk `chunk(state, stop_step)` and final loss `final_loss(x)`; `size` real
  points (the rest pads the batch to a multiple of the device count)."""
  state: optimize.ReconState
  problems: Dict[str, Any]
  train_mse: Any
  x_true: Any
  chunk: Any
  final_loss: Any
  size: int
  batch: int
  p_total: int
  rescue: Any = None  # recon.attack.rescue.chain.Chain (batched) of attack.rescue's descent steps
  basis: Any = None  # (batch, d, k) known subspaces, or None


def prepare_group(group: Group, devices=None) -> Program:
  """Stacks the group's inputs on the grid axis (sharded over `devices`), fits every
  padded model and initialises every run in one jit(vmap(...)) call."""
  cfg = group.points[0].cfg  # static fields are shared by the group
  dtype = runs.set_dtype(cfg.run.dtype)
  devices = list(devices if devices is not None else jax.devices())
  size = len(group.points)
  points = sweep_axis.padded(group.points, len(devices))
  p_total = group.p_total

  keys = [runs.split_keys(pt.cfg.seed) for pt in points]
  loaded = [data.load(pt.cfg.data, k['data'], dtype) for pt, k in zip(points, keys)]
  known = cfg.attack.subspace.mode == 'known'
  inputs = (sweep_axis.stack(keys), jnp.stack([a for a, _, _ in loaded]),
            jnp.stack([b for _, b, _ in loaded]),
            jnp.stack([features.feature_mask(pt.cfg.victim.p, p_total, dtype) for pt in points]),
            *sweep_axis.attack_hyper(points, dtype),
            jnp.stack([jnp.asarray(m['basis'], dtype) for _, _, m in loaded]) if known else None)
  batched = sweep_axis.sharding(devices)
  inputs = jax.device_put(inputs, batched)

  loss_fn = rf_pipeline.rf_loss_fn(cfg.victim, cfg.attack)
  constraint = optimize.sphere_constraint(float(np.sqrt(cfg.data.d)))
  # lr and momentum are read from the (batched) optimiser state; these are placeholders.
  optimizer = driver.make_optimizer(cfg.attack)
  setup = jax.jit(jax.vmap(functools.partial(
      _setup_point, data_cfg=cfg.data, victim=cfg.victim, attack_cfg=cfg.attack, p_total=p_total,
      dtype=dtype)), out_shardings=batched)
  step_chunk = driver.chunk_fn(cfg.attack, loss_fn, optimizer, constraint)
  chunk_vmapped = jax.jit(jax.vmap(step_chunk, in_axes=(0, 0, None)), out_shardings=batched)
  problems, state, train_mse = setup(*inputs)
  # Per point: the single run's key (PRNGKey(seed)), so a point is rescued like the run it
  # stands for.
  rescues = rescue.build(cfg.attack.rescue, cfg.attack, rescue.Context(
      key=jnp.stack([jax.random.PRNGKey(pt.cfg.seed) for pt in points]), loss_fn=loss_fn,
      problem=problems, constraint=constraint, optimizer=optimizer, tol=cfg.attack.tol,
      max_steps=cfg.attack.max_steps, batched=True, rows_fn=rf_pipeline.rf_rows_fn(cfg.victim),
      jitter=cfg.attack.jitter))
  return Program(state=state, problems=problems, train_mse=train_mse, x_true=inputs[1],
                 chunk=lambda s, stop: chunk_vmapped(s, problems, stop),
                 final_loss=_bind(jax.jit(jax.vmap(loss_fn), out_shardings=batched),
                                  problems),
                 size=size, batch=len(points), p_total=p_total, rescue=rescues,
                 basis=inputs[6])


def run_group(group: Group, *, devices=None, log_every_seconds: float = 5.0,
              label: str = '', partial=None) -> Dict[str, Any]:
  """Runs one group as one jit(vmap(...)) program; returns per-point arrays and timings.

  Returns {'x_true', 'x_hat', 'v', 'train_mse', 'final_loss', 'steps', 'status'} as
  NumPy arrays with a leading axis over the group's points, plus timings. `partial`
  (a `sweep_store.Partial`) saves the running descent and resumes a saved one.
  """
  t0 = time.time()
  cfg = group.points[0].cfg
  prog = prepare_group(group, devices)
  jax.block_until_ready(prog.state.x)
  t_setup = time.time() - t0
  size = prog.size

  progress = optimize.batch_progress(size, label, t0, log_every_seconds)
  chunk = prog.chunk if prog.rescue is None else prog.rescue.wrap(prog.chunk)
  state = prog.state if partial is None else partial.restore(prog.state, prog.rescue)
  on_chunk = progress if partial is None else (
      lambda s: progress(s) or partial.after_chunk(s, prog.rescue))
  state = optimize.drive(state, chunk, max_steps=cfg.attack.max_steps,
                         chunk_steps=cfg.run.chunk_steps, on_chunk=on_chunk)
  if partial is not None:  # the descent's end: a stop in the certificate / rung resumes here
    partial.after_chunk(state, prog.rescue, force=True)
  progress(state, force=True)
  out = {'x_true': prog.x_true, 'x_hat': state.x,
         'v': prog.problems.get('v_data', prog.problems['v']), 'v_search': prog.problems['v'],
         'theta': prog.problems['theta'], 'train_mse': prog.train_mse,
         'final_loss': prog.final_loss(state.x), 'steps': state.step, 'status': state.status}
  if prog.basis is not None:
    out['basis'] = prog.basis
  out = {k: np.asarray(v)[:size] for k, v in jax.device_get(out).items()}
  out['rescue_per_run'] = rescue.per_run(prog.rescue, size) if prog.rescue is not None else {}
  out.update(setup_seconds=t_setup, batch=prog.batch,
             seconds=time.time() - t0 if partial is None else partial.seconds(),
             p_total=prog.p_total, n_shards=len(state.x.sharding.device_set))
  return out


def _bind(fn, problems):
  """x -> fn(x, problems): the problems stay an argument of the compiled `fn`, never a
  constant captured into its program."""
  return lambda x: fn(x, problems)


def _record(pt: Point, out: Dict[str, Any], i: int) -> Tuple[Dict[str, Any], np.ndarray]:
  """The single run's metrics for point `i` of a finished group, with its coordinates and
  its blind certificate (`recon.certify.certificate`, as a single run's summary.json carries), and
  its input-space candidates (polished by the precision rung where it applied)."""
  cfg = pt.cfg
  v = out['v'][i][:cfg.victim.p]  # the unpadded model's V
  v_search = out['v_search'][i][:cfg.victim.p]  # V, or V U in a known subspace's coordinates
  x_true, z_hat = out['x_true'][i], out['x_hat'][i]
  final_loss = float(out['final_loss'][i])
  # The certificate; when it fails, the precision rung may polish the candidates.
  feature_fn = features.rf_feature_map(jnp.asarray(v_search),
                                       features.exact_forward(cfg.victim.activation))
  theta, k = out['theta'][i][:cfg.victim.p], 0
  if sign_quotient.active(cfg.attack.sign_quotient, cfg.victim.activation,
                          cfg.attack.n_candidates, v_search.shape[1]):
    q = sign_quotient.basis(jnp.asarray(v_search), cfg.victim.activation)
    feature_fn = sign_quotient.feature_fn(jnp.asarray(v_search), cfg.victim.activation, q)
    theta, k = np.asarray(sign_quotient.target(jnp.asarray(theta), q)), int(q.shape[1])
  z_hat, cert, polished = polish.certify_or_polish(
      **sign_quotient.certify_settings(reconstruct.certify_settings(
          cfg.data, cfg.victim, cfg.attack, cfg.run, cfg.seed), k),
      final_loss=final_loss, x_hat=z_hat, feature_fn=feature_fn, theta=theta)
  x_hat = z_hat @ out['basis'][i].T if 'basis' in out else z_hat
  scale_invariant = bool(cert['evidence']['scale_invariant'])  # measured on the feature map
  result = report.score(
      x_true, x_hat, threshold=cfg.run.recovered_threshold, final_loss=final_loss,
      steps=int(out['steps'][i]), status=int(out['status'][i]),
      phi_true=features.rf_features(v, x_true, cfg.victim.activation),
      phi_hat=features.rf_features(v, x_hat, cfg.victim.activation),
      theta=out['theta'][i][:cfg.victim.p],
      sign_invariant=symmetry.sign_invariant(cfg.victim.activation),
      scale_invariant=scale_invariant)
  result.update(report.norm_statement(scale_invariant))
  result.update(rf_pipeline.rf_extra_metrics(cfg.data, cfg.victim, float(out['train_mse'][i])))
  result['certified'] = cert['certified']
  result['candidates_certified'] = cert['candidates_certified']
  result['certified_up_to'] = cert['certified_up_to']
  result['polish'] = polished
  result['sign_quotient_dims'] = k
  result['certificate'] = {'reasons': cert['reasons'], **cert['evidence']}
  if 'row_pinned' in cert['evidence']:
    for name in ('pinned', 'within'):
      result[f'rows_{name}_wrong'] = metrics.pinned_but_wrong(
          x_true, x_hat, cert['evidence'][f'row_{name}'], cfg.run.recovered_threshold,
          symmetry.sign_invariant(cfg.victim.activation), scale_invariant)
  result.update({k: int(v[i]) for k, v in out.get('rescue_per_run', {}).items()})
  record = {'index': pt.index, **{k: v for k, v in pt.coords.items()}}
  record.update({'seed': cfg.seed, 'activation': cfg.victim.activation, 'lr': cfg.attack.lr,
                 'momentum': cfg.attack.momentum, 'optimizer': cfg.attack.optimizer,
                 'dtype': cfg.run.dtype, 'subspace': cfg.attack.subspace.mode})
  record.update(result)
  return record, x_hat


def family(victim: sections.Victim) -> registry.Sweep:
  """The sweep that vectorises the victim section's victims: the one registered under its
  pipeline (this module's for random features, recon/sweep/networks.py, recon/sweep/kkt.py)."""
  return registry.lookup('sweep', routes.victim_pipeline(victim.name))


registry.register('sweep', routes.RANDOM_FEATURES, registry.Sweep(
    check=_check_random_features, run_group=run_group, record=_record, trains=False,
    resumable=True))


def run(config: ml_collections.ConfigDict, workdir: str, devices=None) -> Dict[str, Any]:
  """Runs the grid of `config.sweep`; writes sweep.json/.csv/.npz; returns the sweep dict.

  All bad input (unknown or empty axis, invalid value, memory budget) is a one-line
  ConfigError raised before anything is compiled.
  """
  t0 = time.time()
  axes, groups = _grid(config)
  devices = list(devices if devices is not None else jax.devices())
  check_memory(config.run.sweep_memory_budget_gb, groups, len(devices))
  runs.prepare_workdir(workdir, config.run.overwrite, marker='sweep.json')
  n_points = sum(len(g.points) for g in groups)
  logging.info('sweep: %d points in %d compiled group(s) on %d %s device(s)', n_points,
               len(groups), len(devices), devices[0].platform)
  records: List[Dict[str, Any]] = []
  group_info = []
  arrays = {}
  record = config.to_dict()  # what sweep.json and the saved groups record
  sweep_store.prepare(workdir, config.run)  # a killed sweep's groups (recon/sweep/store.py)
  done = [sweep_store.load(workdir, gi, record) if config.run.resume else None
          for gi in range(len(groups))]
  if config.run.resume:
    sweep_store.say_resume(workdir, sum(d is not None for d in done), len(groups))
  for gi, g in enumerate(groups):
    if done[gi] is not None:  # finished before the sweep was stopped
      records += done[gi]['records']
      group_info.append(done[gi]['info'])
      arrays.update(done[gi]['arrays'])
      continue
    label = f'group {gi + 1}/{len(groups)} {g.static}' if g.static else ''
    swept = family(g.points[0].cfg.victim)
    partial = sweep_store.Partial(workdir, gi, record, config.run)  # the running descent (rf)
    out = swept.run_group(g, devices=devices, log_every_seconds=config.run.log_every_seconds,
                          label=label, **({'partial': partial} if swept.resumable else {}))
    mine, own_arrays = [], {}
    for i, pt in enumerate(g.points):
      rec, x_hat = swept.record(pt, out, i)
      rec['group'] = gi
      mine.append(rec)
      own_arrays[f'x_true_{pt.index}'] = out['x_true'][i]
      own_arrays[f'x_hat_{pt.index}'] = x_hat
    info = {'static': g.static, 'n_points': len(g.points), 'batch': out['batch'],
            'p_total': out['p_total'], 'n_shards': out['n_shards'],
            'setup_seconds': out['setup_seconds'], 'seconds': out['seconds'],
            'resumed_seconds': partial.prior_seconds,  # earlier segments' share of seconds
            'cpu_seconds': partial.cpu_seconds()}  # incl. the records (certificate, rung)
    sweep_store.save(workdir, gi, record, mine, info, own_arrays)
    partial.done()
    records += mine
    group_info.append(info)
    arrays.update(own_arrays)
    ran = sum(len(h.points) for h, d in zip(groups[:gi + 1], done) if d is None)  # this process
    median = float(np.median([r['recon_error'] for r in mine]))
    logging.info('sweep group %d/%d done in %.1fs: median recon_error %.4f; %d of %d points done, '
                 'about %.0f s left', gi + 1, len(groups), out['seconds'], median, len(records),
                 n_points, (n_points - len(records)) * (time.time() - t0) / ran)
  records.sort(key=lambda r: r['index'])
  result = {
      'config': record,
      'axes': {axis_name(k): list(v) for k, v in axes.items()},
      'records': records,
      'groups': group_info,
      'device': f'{len(devices)} x {devices[0].platform}',
      'machine': machine.describe(),
      'wall_seconds': time.time() - t0,
      'counting': report.COUNTING_NOTE,
  }
  io.write_npz(os.path.join(workdir, 'sweep.npz'), **arrays)
  io.write_text(os.path.join(workdir, 'sweep.csv'), sweep_store.csv_text(records))
  io.write_json(os.path.join(workdir, 'sweep.json'), result)
  logging.info('sweep: %d points in %.1fs -> %s', n_points, result['wall_seconds'], workdir)
  return result
