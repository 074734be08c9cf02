"""What stops the attack: recovery against each defence's strength, with the victim's utility.

Victims: rf_gd (random features trained by GD on the MSE, attacked through W_L(T) - W_L(0);
defences dp (DP-GD, clip 1, the noise the RDP accountant calibrates to each epsilon at delta
1e-5), weight_decay, release_noise), rf (closed-form random features; release_noise), and the
two-layer nets of scripts/network_law.py (`NETS`, attacked with its calibrated settings:
`NET_SETTINGS`; dp as DP-SGD, release_noise, weight_decay). The adaptive attack against weight
decay (`ADAPTIVE`) adds W_L(0) to the features' span (attack.init_in_span). Sizes fit a shared
2-core CPU: n = 8, d = 8, p_L in {4, 10} dn, seeds 100-104 (nothing was tuned on them; the
nets' seeds are the first disjoint from network_law's shadows). Strength 0 is the undefended
victim. One `recon.run` per (victim, defence, strength, ratio, seed) records frac_recovered,
recon_error, certified, the loss at the truth and the victim's utility; records append to
results/defences.json (present points are skipped), .md and .png are re-rendered from it
(--render_only), the DP panel with Hayes et al. (2023)'s ReRo bound (recon.audit.rero).

    python -m scripts.defences               # the grid (about an hour on 2 CPU cores)
    python -m scripts.defences --nets=mse_digits --net_ratios=4       # one net at p_L = 4 dn
    python -m scripts.defences --tiny --out=/tmp/defences
"""
from __future__ import annotations

import json
import math
import os
import sys
import tempfile
import time
from typing import Any, Dict, List, Optional

from absl import app, flags, logging
import numpy as np

from configs import rf_synthetic
import recon
from recon.runtime import io, machine
from recon.audit import rero
from scripts import common, network_law
plt = common.pyplot()

FLAGS = flags.FLAGS
# Defence strengths per (victim, defence), weakest first; 0 / inf is the undefended victim.
# The epsilons {64, 16, 8, 4, 1} stop the attack already at 64 (n = 8: the noise of
# 1000 DP-GD steps accumulates in the null space of the features, which no step corrects), so
# the grid adds 1e7, 1e6, 1e5 to bracket the crossover.
GRID = {
    ('rf_gd', 'dp'): (1e7, 1e6, 1e5, 64.0, 16.0, 8.0, 4.0, 1.0),
    ('rf', 'release_noise'): (1e-3, 1e-2, 3e-2, 1e-1),
    ('rf_gd', 'weight_decay'): (1e-2, 1e-1),
    ('rf_gd', 'release_noise'): (1e-2, 1e-1),
}
# The order runs go in (all seeds and widths of a chunk together): the bracket first.
ORDER = ((('rf_gd', 'dp'), (1e7, 1e6, 1e5, 64.0)), (('rf', 'release_noise'), None),
         (('rf_gd', 'weight_decay'), None), (('rf_gd', 'dp'), (16.0, 8.0, 4.0, 1.0)),
         (('rf_gd', 'release_noise'), None))
TINY_GRID = {('rf_gd', 'dp'): (8.0,), ('rf', 'release_noise'): (1e-2,),
             ('rf_gd', 'weight_decay'): (1e-1,), ('rf_gd', 'release_noise'): (1e-1,)}
SIZES = dict(n=8, d=8, ratios=(4, 10), seeds=tuple(range(100, 105)), attack_steps=5000,
             train_steps=1000)
TINY_SIZES = dict(n=3, d=4, ratios=(4,), seeds=(100,), attack_steps=100, train_steps=20)
# Two-layer nets trained by GD (scripts/network_law.py's victims: n = 4 images, digits 4x4 or
# lfw_faces 5x5 on the sqrt(d)-sphere, p_L in {10, 4} dn), attacked as network_law attacks them: the
# Jacobian point and the attack's learning rate chosen there on shadow victims
# (results/network_law.json 'calibration'; nothing is chosen here), Adam with escalation, a
# 4000-step budget (network_law's for RF and the ResNet; its 12000-40000 for the nets do not
# fit the 2-core budget of this grid, and a defended run never reaches tol). DP-SGD: exactly
# NET_SIZES['dp_steps'] full-batch steps (the undefended nets reach their tol in 7-235).
NETS = {  # name: (network_law victim kind, data set), in the order they run
    'mse_digits': ('two_layer_mse', 'digits'), 'ce_digits': ('two_layer_ce', 'digits'),
    'mse_lfw': ('two_layer_mse', 'lfw_faces'), 'logistic_digits': ('two_layer_logistic', 'digits'),
    'ce_lfw': ('two_layer_ce', 'lfw_faces'), 'logistic_lfw': ('two_layer_logistic', 'lfw_faces')}
# results/network_law.json calibration['<kind>/<data set>/n4']['chosen'] (shadow seeds >= 1000).
NET_SETTINGS = {
    'mse_digits': {'lr': 0.05, 'jacobian_at': 'init_and_trained'},
    'ce_digits': {'lr': 0.02, 'jacobian_at': 'init_and_trained'},
    'mse_lfw': {'lr': 0.05, 'jacobian_at': 'midpoint'},
    'logistic_digits': {'lr': 0.02, 'jacobian_at': 'init_and_trained'},
    'ce_lfw': {'lr': 0.05, 'jacobian_at': 'init_and_trained'},
    'logistic_lfw': {'lr': 0.05, 'jacobian_at': 'init_and_trained'}}
# 1e5 and 1e4 narrow the nets' crossover between 1e6 and 1e3 (and tell the widths apart).
NET_DP = (1e6, 1e5, 1e4, 1e3, 64.0, 16.0, 8.0, 4.0, 1.0)
NET_GRID = {'dp': NET_DP, 'release_noise': (1e-2, 1e-1), 'weight_decay': (1e-2, 1e-1)}
# The adaptive attack against weight decay (attack.init_in_span): its victims and strengths
# (0: the undefended victim, attacked adaptively).
ADAPTIVE = {'rf_gd': (0.0, 1e-2, 1e-1), 'mse_digits': (0.0, 1e-2, 1e-1)}
ADAPTIVE_RF_RATIOS = (4,)  # rf_gd's adaptive runs: p_L = 4 dn only (the CPU budget)
ADAPTIVE_NET_RATIOS = (10.0,)  # the nets' adaptive runs: p_L = 10 dn only
# The nets' widths p_L / dn (--net_ratios picks them), widest first: the attack settings are
# network_law's, which uses the calibration's choice (made at 10 dn) at every width.
NET_SIZES = dict(n=4, ratios=(10.0, 4.0), seeds=5, attack_steps=4000, dp_steps=200,
                 train_max_steps=None)
TINY_NET_SIZES = dict(n=4, ratios=(10.0,), seeds=1, attack_steps=100, dp_steps=20,
                      train_max_steps=20)
TINY_NET_GRID = {'mse_digits': {'dp': (8.0,), 'weight_decay': (1e-1,)}}
TINY_ADAPTIVE = {'mse_digits': (1e-1,)}
DELTA = 1e-5
THRESHOLD = 0.1  # run.recovered_threshold


def point_key(r: Dict[str, Any]) -> tuple:
  return (r['victim'], r['defence'], float(r['strength']), int(r['n']), int(r['d']),
          float(r['ratio']), int(r['seed']), r.get('attack', 'default'))


def net_config(pt: Dict[str, Any], net_sizes: Dict[str, Any]):
  """A two-layer net's config: scripts/network_law.py's victim and attack at the point."""
  kind, dataset = NETS[pt['victim']]
  c, _ = network_law.make_config(kind, dataset, pt['ratio'], pt['seed'], pt['n'],
                                 net_sizes['attack_steps'], NET_SETTINGS[pt['victim']])
  c.update_from_flattened_dict({'run.log_every_seconds': 1e9, 'run.checkpoint_every_seconds': 0.0,
                                'run.recovered_threshold': THRESHOLD})
  if net_sizes['train_max_steps']:
    c.victim.train.max_steps = net_sizes['train_max_steps']
  if pt['defence'] == 'dp':
    c.victim.train.max_steps = net_sizes['dp_steps']
  return c


def net_seeds(victim: str, count: int) -> List[int]:
  """The first `count` seeds >= 0 whose images are disjoint from network_law's shadow victims
  (the calibration's seeds >= 1000): the attack was chosen on images these never show."""
  kind, dataset = NETS[victim]
  cfg, _ = network_law.make_config(kind, dataset, 10.0, 0, NET_SIZES['n'], 1, {})

  def indices(seed):
    _, _, meta = recon.load_data(cfg, seed)
    return set(int(i) for i in np.asarray(meta['indices']))

  shadows = network_law.shadow_seeds(kind, dataset, NET_SIZES['n'], (0, 1, 2),
                                     network_law.shadow_count(kind))['seeds']
  taken = set().union(*(indices(s) for s in shadows))
  return [s for s in range(200) if not indices(s) & taken][:count]


def config_for(pt: Dict[str, Any], sizes: Dict[str, Any],
               net_sizes: Optional[Dict[str, Any]] = None):
  """The run's config: configs/rf_synthetic.py at the point's size, victim and defence (a
  two-layer net: `net_config`); attack 'adaptive': attack.init_in_span."""
  c = (net_config(pt, net_sizes or NET_SIZES) if pt['victim'] in NETS else
       rf_config(pt, sizes))
  s = pt['strength']
  if pt['defence'] == 'dp':
    c.update_from_flattened_dict({'victim.train.dp.mode': 'on', 'victim.train.dp.delta': DELTA,
                                  'victim.train.dp.target_epsilon': float(s)})
  elif pt['defence'] == 'weight_decay':
    c.victim.train.weight_decay = float(s)
  elif pt['defence'] == 'release_noise':
    c.victim.release_noise = float(s)
  c.attack.init_in_span = pt.get('attack', 'default') == 'adaptive'
  return c


def rf_config(pt: Dict[str, Any], sizes: Dict[str, Any]):
  """configs/rf_synthetic.py at the point's size and victim (rf or rf_gd)."""
  c = rf_synthetic.get_config()
  n, d = pt['n'], pt['d']
  width = int(pt['ratio'] * d * n)
  c.update_from_flattened_dict({
      'data.n': n, 'data.d': d, 'seed': pt['seed'], 'victim.p': width,
      'attack.max_steps': sizes['attack_steps'], 'attack.decay_steps': sizes['attack_steps'],
      'run.log_every_seconds': 1e9, 'run.checkpoint_every_seconds': 0.0,
      'run.recovered_threshold': THRESHOLD})
  if pt['victim'] == 'rf_gd':
    c.update_from_flattened_dict({'victim.name': 'random_features_gd', 'victim.width': width,
                                  'victim.train.max_steps': sizes['train_steps']})
  return c


def run_point(pt: Dict[str, Any], sizes: Dict[str, Any],
              net_sizes: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
  """One run; the record: the point, recovery, certificate and the victim's utility."""
  with tempfile.TemporaryDirectory() as workdir:
    t = time.time()
    try:
      summary = recon.run(config_for(pt, sizes, net_sizes), os.path.join(workdir, 'run')).summary
    except recon.RunError as e:
      raise RuntimeError(f'run {pt} exited with status {e.exit_code}: {e}') from e
    seconds = time.time() - t
  m = summary['metrics']
  util = m.get('utility') or {}
  dp = (m.get('defences') or {}).get('dp')
  rec = dict(pt, frac_recovered=m['frac_recovered'], recon_error=m['recon_error'],
             final_loss=m['final_loss'], certified=m.get('certified'),
             loss_at_truth=m.get('projection_loss_at_truth'), seconds=seconds,
             steps=m['steps'], device=summary.get('device'),
             train_steps=m.get('train_steps'), jacobian_at=m.get('jacobian_at'),
             init_in_span=m.get('init_in_span'))
  if pt['victim'] != 'rf':
    rec['train_loss'] = util.get('train', {}).get('loss', m.get('train_final_loss'))
    rec['train_accuracy'] = util.get('train', {}).get('accuracy')
    rec['held_out_loss'] = util.get('held_out', {}).get('loss')
    rec['held_out_accuracy'] = util.get('held_out', {}).get('accuracy')
  else:
    rec['train_mse'] = util.get('train', {}).get('mse', m.get('train_mse'))
    rec['held_out_mse'] = util.get('held_out', {}).get('mse')
    rec['held_out_sign_accuracy'] = util.get('held_out', {}).get('sign_accuracy')
  if dp is not None:
    rec.update(epsilon=dp['epsilon'], delta=dp['delta'], noise_multiplier=dp['noise_multiplier'],
               clip=dp['clip'], dp_steps=dp['steps'], accountant=dp['accountant'])
  return rec


def points(grid, sizes) -> List[Dict[str, Any]]:
  """Every run, the undefended victims first, then each defence weakest first."""
  out = []
  base = dict(n=sizes['n'], d=sizes['d'])
  victims = sorted({v for v, _ in grid}, key=lambda v: v != 'rf_gd')
  for ratio in sizes['ratios']:
    for victim in victims:
      for seed in sizes['seeds']:
        out.append(dict(base, victim=victim, defence='none', strength=0.0, ratio=ratio, seed=seed))
  chunks = [(key, grid[key] if only is None else only) for key, only in ORDER if key in grid]
  chunks += [(key, grid[key]) for key in grid if key not in dict(ORDER)]
  for (victim, defence), strengths in chunks:
    for s in (x for x in strengths if x in grid[(victim, defence)]):
      for ratio in sizes['ratios']:
        for seed in sizes['seeds']:
          out.append(dict(base, victim=victim, defence=defence, strength=s, ratio=ratio,
                          seed=seed))
  return out


def net_points(net_grid: Dict[str, Dict[str, tuple]], adaptive: Dict[str, tuple],
               net_sizes: Dict[str, Any], seeds_of) -> List[Dict[str, Any]]:
  """The two-layer nets' runs, per width (net_sizes['ratios'], in that order) most informative
  first: per net its undefended victim, the DP points down to epsilon 64, release noise,
  weight decay (and the adaptive attack, at ADAPTIVE_NET_RATIOS), then every net's epsilon
  below 64. seeds_of(victim) -> the reported seeds."""
  out = []
  for ratio in net_sizes['ratios']:
    first, later = [], []
    for victim, grid in net_grid.items():
      _, dataset = NETS[victim]
      side = network_law.image_side(dataset)
      base = dict(victim=victim, n=net_sizes['n'], d=side * side, ratio=float(ratio))
      seeds = seeds_of(victim)
      add = lambda to, **kw: to.extend(dict(base, seed=s, **kw) for s in seeds)  # noqa: E731,B023
      add(first, defence='none', strength=0.0)
      for s in grid.get('dp', ()):
        add(first if s >= 64 else later, defence='dp', strength=float(s))
      for defence in ('release_noise', 'weight_decay'):
        for s in grid.get(defence, ()):
          add(first, defence=defence, strength=float(s))
      if float(ratio) in ADAPTIVE_NET_RATIOS:
        for s in adaptive.get(victim, ()):
          add(first, defence='weight_decay', strength=float(s), attack='adaptive')
    out += first + later
  return out


def adaptive_rf_points(adaptive: Dict[str, tuple], sizes: Dict[str, Any]) -> List[Dict[str, Any]]:
  """rf_gd under weight decay, attacked adaptively (attack.init_in_span)."""
  return [dict(n=sizes['n'], d=sizes['d'], victim='rf_gd', defence='weight_decay',
               strength=float(s), ratio=ratio, seed=seed, attack='adaptive')
          for s in adaptive.get('rf_gd', ()) for ratio in sizes['ratios']
          if ratio in ADAPTIVE_RF_RATIOS for seed in sizes['seeds']]


def write_records(path: str, records: List[Dict[str, Any]], meta: Dict[str, Any]) -> None:
  io.write_text(path, '{"meta": ' + json.dumps(io.normalized(meta)) + ',\n"records": [\n'
                + ',\n'.join(json.dumps(io.normalized(r)) for r in records) + '\n]}\n')


def kappa(n: int, d: int) -> float:
  """The prior's success: n guesses (either sign) uniform on the sphere, one within 0.1."""
  return min(1.0, 2 * n * rero.cap_probability(d, THRESHOLD))


def _mean(rows, name) -> Optional[float]:
  vals = [r[name] for r in rows if r.get(name) is not None]
  return float(np.mean(vals)) if vals else None


def curves(records: List[Dict[str, Any]]) -> Dict[tuple, List[Dict[str, Any]]]:
  """{(victim, defence, n, d, ratio): [aggregate per strength, undefended first]}; each
  aggregate: strength, seeds, mean frac_recovered / recon_error / utility, certified count,
  false certificates (certified with a row not recovered)."""
  groups: Dict[tuple, Dict[float, list]] = {}
  for r in records:
    groups.setdefault((r['victim'], defence_of(r), r['n'], r['d'], r['ratio']), {}).setdefault(
        float(r['strength']), []).append(r)
  out = {}
  for (victim, defence, n, d, ratio), by_s in groups.items():
    if defence == 'none':
      continue
    base = groups.get((victim, 'none', n, d, ratio), {}).get(0.0, [])
    rows = []
    shared = [] if 0.0 in by_s else [(0.0, base)]  # the adaptive attack has its own
    for s, rs in shared + sorted(by_s.items(), key=lambda kv: kv[0] *
                                 (-1 if defence == 'dp' else 1)):
      if not rs:
        continue
      agg = {'strength': s, 'seeds': len(rs),
             'epsilon': math.inf if s == 0.0 and defence == 'dp' else _mean(rs, 'epsilon'),
             'noise_multiplier': _mean(rs, 'noise_multiplier'),
             'certified': sum(bool(r.get('certified')) for r in rs),
             'false_certified': sum(bool(r.get('certified')) and r['frac_recovered'] < 1.0
                                    for r in rs)}
      for name in ('frac_recovered', 'recon_error', 'train_loss', 'train_accuracy',
                   'held_out_loss', 'held_out_accuracy', 'train_mse', 'held_out_mse',
                   'held_out_sign_accuracy', 'seconds', 'final_loss', 'dp_steps',
                   'loss_at_truth'):
        agg[name] = _mean(rs, name)
      agg['half_back_seeds'] = sum(r['frac_recovered'] >= 0.5 for r in rs)
      rows.append(agg)
    out[(victim, defence, n, d, ratio)] = rows
  return out


def certificates(records: List[Dict[str, Any]]) -> Dict[str, Dict[str, Any]]:
  """Per victim: its defended runs (strength > 0), how many were certified, how many of those
  falsely (a row not recovered), and whether its pipeline computes a certificate at all."""
  out = {}
  for victim in VICTIM_ORDER:
    rs = [r for r in records if r['victim'] == victim]
    if not rs:
      continue
    defended = [r for r in rs if r['defence'] != 'none' and r['strength'] > 0]
    out[victim] = {
        'runs': len(rs), 'defended_runs': len(defended),
        'certificate_computed': any(r.get('certified') is not None for r in rs),
        'certified': sum(bool(r.get('certified')) for r in defended),
        'false_certified': sum(bool(r.get('certified')) and r['frac_recovered'] < 1.0
                               for r in defended)}
  return out


def defence_of(r: Dict[str, Any]) -> str:
  """The curve a record belongs to: its defence, '+adaptive' under the adaptive attack."""
  return r['defence'] + ('+adaptive' if r.get('attack', 'default') == 'adaptive' else '')


VICTIM_ORDER = ('rf_gd', 'rf') + tuple(NETS)


def crossover(rows: List[Dict[str, Any]]) -> Dict[str, Any]:
  """The strongest measured defence at which >= half the rows still come back (mean over
  seeds) and the next stronger measured one at which they do not; rows weakest first."""
  last_ok = first_fail = None
  for r in rows:
    if r['frac_recovered'] >= 0.5:
      if first_fail is None:
        last_ok = r
    elif first_fail is None:
      first_fail = r
  return {'still_recovered_at': None if last_ok is None else last_ok['strength'],
          'stopped_at': None if first_fail is None else first_fail['strength']}


def _fmt(v, digits=3):
  return 'inf' if isinstance(v, float) and math.isinf(v) else common.fmt(v, f'.{digits}g')


def strength_label(defence: str, s: float) -> str:
  if defence == 'dp':
    return 'eps = inf' if s == 0.0 else f'eps = {s:g}'
  return f'{defence} = {s:g}'


def render(records: List[Dict[str, Any]], meta: Dict[str, Any], out: str) -> Dict[str, Any]:
  """Writes OUT.md and OUT.png; returns the crossovers."""
  cur = curves(records)
  rows, crossovers = [], {}
  for key in sorted(cur, key=lambda k: (VICTIM_ORDER.index(k[0]), k[1] != 'dp', k[1], k[4])):
    victim, defence, n, d, ratio = key
    for r in cur[key]:
      bound = None
      if defence == 'dp':
        mu = (0.0 if not r['noise_multiplier'] else
              math.sqrt(r['dp_steps'] or meta['train_steps']) / r['noise_multiplier'])
        bound = 1.0 if r['strength'] == 0.0 else rero.rero_bound_gdp(mu, kappa(n, d))
      rf = victim == 'rf'
      rows.append([victim, defence, f'{ratio:g}', strength_label(defence.split('+')[0],
                                                                 r['strength']),
                   _fmt(r['noise_multiplier']), r['seeds'], _fmt(r['frac_recovered'], 2),
                   _fmt(r['recon_error']), _fmt(r['loss_at_truth'], 2),
                   f"{r['certified']} ({r['false_certified']})", _fmt(bound),
                   _fmt(r['train_mse' if rf else 'train_loss']),
                   _fmt(r['held_out_mse' if rf else 'held_out_loss']),
                   _fmt(r['held_out_sign_accuracy' if rf else 'held_out_accuracy'], 2),
                   _fmt(r['seconds'], 2)])
    crossovers[f'{victim}/{defence}/{ratio:g}'] = crossover(cur[key])
  show = lambda name, s: '-' if s is None else strength_label(  # noqa: E731
      name.split('/')[1].split('+')[0], s)
  false = sum(bool(r.get('certified')) and r['frac_recovered'] < 1.0 for r in records)
  io.write_text(out + '.md', common.page(
      'Defences against the reconstruction attack',
      'Per point, means over seeds: frac_recovered (rows within 0.1), recon_error, the '
      'projection loss at the true rows (a diagnostic), runs certified (false: with a row not '
      'recovered), the released victim\'s utility; the ReRo bound (Hayes et al. 2023, GDP form, '
      f'prior success kappa = {_fmt(kappa(meta["n"], meta["d"]))}). n = {meta["n"]}, d = '
      f'{meta["d"]}, seeds {meta["seeds"]}, attack {meta["attack_steps"]} steps, GD victims '
      f'{meta["train_steps"]} steps. Runs: {len(records)}, certified '
      f'{sum(bool(r.get("certified")) for r in records)}, false certificates {false}. '
      f'Machine: {meta["machine"]}.',
      common.table(['victim', 'defence', 'p_L/dn', 'strength', 'sigma', 'seeds', 'frac rec.',
                    'recon_error', 'loss at truth', 'certified (false)', 'ReRo bound',
                    'train loss / mse', 'held-out loss / mse', 'held-out acc.', 's / run'], rows),
      '## Crossover\n\nThe strongest measured defence at which half the rows still come back, '
      'and the next stronger one, at which they do not:',
      common.table(['victim / defence / p_L/dn', 'still recovered at', 'stopped at'],
                   [[k, show(k, c['still_recovered_at']), show(k, c['stopped_at'])]
                    for k, c in crossovers.items()])))
  _plot(cur, meta, out + '.png')
  return crossovers


def _plot(cur, meta, path) -> None:
  """One panel per (victim, defence): recovery (solid; the adaptive attack dashed) and the
  held-out accuracy (dotted, right axis) against the strength; DP panels draw the bound."""
  panels = [(v, dfn) for v in VICTIM_ORDER for dfn in ('dp', 'release_noise', 'weight_decay')
            if any(k[0] == v and k[1] == dfn for k in cur)]
  cols = 4
  rows_n = max(1, math.ceil(len(panels) / cols))
  fig, axes = plt.subplots(rows_n, cols, figsize=(3.6 * cols, 3.2 * rows_n), squeeze=False)
  axes = axes.reshape(-1)
  for ax in axes[len(panels):]:
    ax.axis('off')
  colors = plt.rcParams['axes.prop_cycle'].by_key()['color']
  every_ratio = sorted({k[4] for k in cur})  # one colour per width on every panel
  for ax, (victim, defence) in zip(axes, panels):
    keys = sorted((k for k in cur if k[0] == victim and k[1].split('+')[0] == defence),
                  key=lambda k: (k[4], k[1]))
    twin = ax.twinx()
    for i, key in enumerate(keys):
      rows = cur[key]
      color = colors[every_ratio.index(key[4]) % len(colors)]
      adaptive = key[1].endswith('+adaptive')
      if defence == 'dp':
        top = max([r['strength'] for r in rows] + [1.0]) * 4
        xs = [top if r['strength'] == 0.0 else r['strength'] for r in rows]
      else:
        low = min([r['strength'] for r in rows if r['strength'] > 0] + [1e-3]) / 4
        xs = [low if r['strength'] == 0.0 else r['strength'] for r in rows]
      ax.plot(xs, [r['frac_recovered'] for r in rows], '--^' if adaptive else '-o', color=color,
              label=f'recovered{" (adaptive attack)" if adaptive else ""}, p_L = {key[4]:g} dn')
      if not adaptive:
        util = [r['held_out_accuracy'] if victim != 'rf' else r['held_out_sign_accuracy']
                for r in rows]
        twin.plot(xs, util, ':s', ms=3, color=color, alpha=0.7,
                  label=f'held-out accuracy, {key[4]:g} dn')
      if defence == 'dp':
        ks = kappa(key[2], key[3])
        eps = np.geomspace(0.5, top / 4, 60)
        ax.plot(eps, [rero.rero_bound_dp(e, DELTA, ks) for e in eps], 'k--', lw=0.9,
                label='Hayes et al. 2023 bound, (eps, 1e-5)-DP' if i == 0 else None)
        bx = [x for x, r in zip(xs, rows) if r['strength'] > 0]
        by = [rero.rero_bound_gdp(math.sqrt(r['dp_steps'] or meta['train_steps'])
                                     / r['noise_multiplier'], ks)
              for r in rows if r['strength'] > 0]
        ax.plot(bx, by, 'kx', label='bound, GDP of the mechanism' if i == 0 else None)
    ax.set_xscale('log')
    ax.set_ylim(-0.05, 1.05)
    twin.set_ylim(-0.05, 1.05)
    ax.axhline(0.5, color='gray', ls=':', lw=0.8)
    ax.set_xlabel('epsilon (rightmost: no DP)' if defence == 'dp' else
                  f'{defence} (leftmost: none)')
    ax.set_ylabel('frac rows recovered (mean)')
    twin.set_ylabel('held-out accuracy', fontsize=8)
    ax.set_title(f'{victim}: {defence}', fontsize=9)
    handles = ax.get_legend_handles_labels()
    extra = twin.get_legend_handles_labels()
    if handles[0]:
      ax.legend(handles[0] + extra[0], handles[1] + extra[1], fontsize=5, loc='best')
  nets = meta.get('nets')
  fig.suptitle(f'random features: n = {meta["n"]}, d = {meta["d"]}, seeds {meta["seeds"]}'
               + (f'; two-layer nets: n = {nets["n"]}, p_L in '
                  f'{{{", ".join(f"{r:g}" for r in nets["ratios_measured"])}}} dn, seeds '
                  f'{sorted({s for v in nets["seeds"].values() for s in v})}' if nets else ''),
               fontsize=9)
  common.savefig(fig, path, dpi=110)


def define_flags() -> None:
  flags.DEFINE_bool('tiny', False, 'A smoke-test grid (n = 3, d = 4, one seed, 100 steps).')
  # --out and --render_only are scripts/network_law's flags (imported for its victims) with
  # the same meaning; this script's default output:
  FLAGS.set_default('out', 'results/defences')
  flags.DEFINE_list('nets', list(NETS), 'Two-layer nets to run (default all, in this order; '
                    'none: --nets=).')
  flags.DEFINE_list('only', None, 'victim/defence pairs to run (e.g. rf_gd/dp, mse_lfw/dp); '
                    'default all.')
  flags.DEFINE_list('net_ratios', None, 'Widths p_L/dn of the two-layer nets (default '
                    f'{",".join(f"{r:g}" for r in NET_SIZES["ratios"])}).')


def main(argv):
  del argv
  logging.set_verbosity(logging.WARNING)
  recon.setup_process()  # the CLI's process setup: CPU buffers, compile cache
  sizes = dict(TINY_SIZES if FLAGS.tiny else SIZES)
  grid = dict(TINY_GRID if FLAGS.tiny else GRID)
  if FLAGS.only:
    known = ['/'.join(k) for k in GRID] + [f'{v}/{k}' for v in NETS for k in NET_GRID]
    unknown = [o for o in FLAGS.only if o not in known]
    if unknown:
      print(f'error: --only: {",".join(unknown)} not among {", ".join(known)}', file=sys.stderr)
      sys.exit(2)
    grid = {k: v for k, v in grid.items() if '/'.join(k) in FLAGS.only}
  net_sizes = dict(TINY_NET_SIZES if FLAGS.tiny else NET_SIZES)
  if FLAGS.net_ratios:
    try:
      net_sizes['ratios'] = tuple(float(r) for r in FLAGS.net_ratios)
    except ValueError:
      print(f'error: --net_ratios: {",".join(FLAGS.net_ratios)} is not a list of numbers '
            '(p_L/dn, e.g. 10,4)', file=sys.stderr)
      sys.exit(2)
    if any(not r > 0 for r in net_sizes['ratios']):
      print(f'error: --net_ratios: {",".join(FLAGS.net_ratios)}: each p_L/dn must be > 0',
            file=sys.stderr)
      sys.exit(2)
  net_grid = (TINY_NET_GRID if FLAGS.tiny else
              {v: NET_GRID for v in NETS if v in (FLAGS.nets or ())})
  adaptive = TINY_ADAPTIVE if FLAGS.tiny else ADAPTIVE
  if FLAGS.only:
    net_grid = {v: {k: s for k, s in g.items() if f'{v}/{k}' in FLAGS.only}
                for v, g in net_grid.items()}
    adaptive = {v: s for v, s in adaptive.items() if f'{v}/weight_decay' in FLAGS.only}
  path = FLAGS.out + '.json'
  saved = io.read_json(path) if os.path.exists(path) else {}
  records = saved.get('records', [])
  net_seeds_of = {}  # the reported seeds of every net run now or in the JSON
  for r in records:
    if r['victim'] in NETS:
      net_seeds_of.setdefault(r['victim'], set()).add(int(r['seed']))
  if not FLAGS.render_only:
    net_seeds_of.update({v: net_seeds(v, net_sizes['seeds']) for v in net_grid})
  net_seeds_of = {v: sorted(net_seeds_of[v]) for v in NETS if v in net_seeds_of}
  meta = dict(n=sizes['n'], d=sizes['d'], seeds=list(sizes['seeds']),
              attack_steps=sizes['attack_steps'], train_steps=sizes['train_steps'],
              delta=DELTA, threshold=THRESHOLD, kappa=kappa(sizes['n'], sizes['d']),
              machine=machine.describe(), tuning_seeds='none (the attack is '
              "configs/rf_synthetic.py's); seed 0 timed a run, seed 7 located the range of the "
              'DP grid (sigma 0.02 and 0.1)',
              nets=dict(NET_SIZES if not FLAGS.tiny else net_sizes, seeds=net_seeds_of,
                        settings={v: NET_SETTINGS[v] for v in net_seeds_of},
                        tuning_seeds='none here: the attack settings are network_law\'s, chosen '
                        'on its shadow victims (seeds >= 1000, results/network_law.json '
                        "'calibration'); the reported seeds' images are disjoint from the "
                        "shadows'; seed 1000 (a shadow) timed a run"))
  if not FLAGS.render_only:
    done = {point_key(r) for r in records}
    todo = [pt for pt in (points(grid, sizes) + adaptive_rf_points(adaptive if (
        'rf_gd', 'weight_decay') in grid else {}, sizes) + net_points(
            net_grid, adaptive, net_sizes, lambda v: net_seeds_of[v]))
            if point_key(pt) not in done]
    for i, pt in enumerate(todo):
      rec = run_point(pt, sizes, net_sizes)
      records.append(rec)
      os.makedirs(os.path.dirname(path) or '.', exist_ok=True)
      write_records(path, records, meta)  # after every run: resumable
      print(f'[{i + 1}/{len(todo)}] {pt["victim"]} {pt["defence"]} '
            f'{pt["strength"]:g} {pt.get("attack", "default")} p/dn={pt["ratio"]:g} seed '
            f'{pt["seed"]}: frac {rec["frac_recovered"]:.2f} err {rec["recon_error"]:.3g} cert '
            f'{rec["certified"]} ({rec["seconds"]:.1f} s)', flush=True)
  for r in records:  # certified with a row not recovered (the networks compute none: False)
    r['false_certified'] = bool(r.get('certified')) and r['frac_recovered'] < 1.0
  meta['certificates'] = certificates(records)
  meta['nets']['ratios_measured'] = sorted({float(r['ratio']) for r in records
                                           if r['victim'] in NETS}, reverse=True)
  meta['crossovers'] = render(records, meta, FLAGS.out)
  write_records(path, records, meta)


if __name__ == '__main__':
  define_flags()
  app.run(main)
