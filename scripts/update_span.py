"""What the last-layer attack assumes, measured per optimiser: how much of the head's update
W_L(T) - W_L(0) lies outside the span of the head's Jacobian rows at the training data.

The projection attack with W(0) known (`attack.knows_init`) explains theta = W_L(T) - W_L(0) by
the rows [h(x_i), 1] of the head's Jacobian at candidate inputs (h: the hidden layer). Under
full-batch gradient descent every step adds a combination of those rows at the current
parameters, so the update lies in the span of the rows along the trajectory; an optimiser that
rescales coordinates (Adam, AdamW) or decays the weights need not. For the MLP of
docs/audit.md (d = 16 -> hidden -> 1, relu, n = 8 rows on the sqrt(d) sphere, a regression
target, 2 000 steps) trained under each optimiser, the share of ||W_L(T) - W_L(0)|| outside:

  at W(T)     the span of the rows at the trained parameters (what `configs/audit.py` attacks)
  at W(0)     the span at the initial parameters
  stacked     the span of the rows at W(0), at the checkpoints and at W(T) (the trajectory)
  Adam's D    Adam only: the span of D^-1 [h(x_i), 1] at W(T), D = sqrt(v_T) + eps the final
              per-coordinate scale (an oracle diagnostic: the released weights do not carry v)
  D stacked   Adam only: the span of D_t^-1 [h(x_i; t), 1] at the checkpoints t (the scale
              and the rows of each time together; the same oracle)

and the first layer's relative movement. Regenerate: `python -m scripts.update_span`
(-> results/update_span.{json,md}); `--tiny` for a seconds-long check.
"""
import argparse
import os
import sys

import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import optax

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from recon.runtime import machine  # noqa: E402  pylint: disable=wrong-import-position
from scripts import common  # noqa: E402  pylint: disable=wrong-import-position

OUT = os.path.join(common.ROOT, 'results', 'update_span')
# name: (optimiser, learning rate, batch size (None: full batch))
REGIMES = {
    'GD': ('sgd', 1e-3, None),
    'GD + momentum 0.9': ('momentum', 1e-3, None),
    'minibatch SGD, B = 2': ('sgd', 1e-3, 2),
    'Adam': ('adam', 1e-3, None),
    'AdamW, decay 1e-2': ('adamw', 1e-3, None),
}


class MLP(nn.Module):
  hidden: int

  @nn.compact
  def __call__(self, x, with_hidden=False):
    h = jax.nn.relu(nn.Dense(self.hidden)(x))
    out = nn.Dense(1)(h)[..., 0]
    return (out, h) if with_hidden else out


def optimiser(kind, lr):
  return {'sgd': lambda: optax.sgd(lr), 'momentum': lambda: optax.sgd(lr, momentum=0.9),
          'adam': lambda: optax.adam(lr), 'adamw': lambda: optax.adamw(lr, weight_decay=1e-2)
          }[kind]()


def head(params):
  """The head's parameters as one vector: kernel (hidden,) then bias."""
  d1 = params['params']['Dense_1']
  return np.concatenate([np.asarray(d1['kernel'])[:, 0], np.asarray(d1['bias'])])


def rows(model, params, x):
  """The head's Jacobian rows at x: [h(x_i), 1], shape (n, hidden + 1)."""
  _, h = model.apply(params, x, with_hidden=True)
  return np.concatenate([np.asarray(h), np.ones((x.shape[0], 1))], axis=1).astype(np.float64)


def share_outside(basis_rows, vec):
  """||P_perp vec|| / ||vec||, P the projector on the row span of `basis_rows` (float64 QR)."""
  q, r = np.linalg.qr(np.asarray(basis_rows, np.float64).T)
  keep = np.abs(np.diag(r)) > 1e-10 * np.abs(np.diag(r)).max()
  q = q[:, keep]
  vec = np.asarray(vec, np.float64)
  return float(np.linalg.norm(vec - q @ (q.T @ vec)) / np.linalg.norm(vec))


def adam_scale(opt_state):
  """Adam's final per-coordinate scale sqrt(v_hat) + eps of the head, from optax's state."""
  (adam, *_) = [s for s in jax.tree.leaves(opt_state, is_leaf=lambda s: isinstance(
      s, optax.ScaleByAdamState)) if isinstance(s, optax.ScaleByAdamState)]
  nu = adam.nu['params']['Dense_1']
  count = int(adam.count)
  v_hat = np.concatenate([np.asarray(nu['kernel'])[:, 0], np.asarray(nu['bias'])]) / (
      1 - 0.999 ** count)
  return np.sqrt(v_hat) + 1e-8


def one(name, seed, *, n, d, hidden, steps, checkpoints):
  kind, lr, batch = REGIMES[name]
  kx, ky, kp, kb = jax.random.split(jax.random.PRNGKey(seed), 4)
  x = jax.random.normal(kx, (n, d))
  x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * jnp.sqrt(d)
  y = jax.random.normal(ky, (n,))
  model = MLP(hidden)
  params0 = model.init(kp, x)
  tx = optimiser(kind, lr)

  @jax.jit
  def step(params, state, idx):
    loss, g = jax.value_and_grad(lambda p: jnp.mean((model.apply(p, x[idx]) - y[idx]) ** 2))(
        params)
    updates, state = tx.update(g, state, params)
    return optax.apply_updates(params, updates), state, loss

  params, state = params0, tx.init(params0)
  full = jnp.arange(n)
  adam = kind in ('adam', 'adamw')
  stacked = [rows(model, params0, x)]
  scaled = []
  for t in range(1, steps + 1):
    idx = full if batch is None else jax.random.permutation(jax.random.fold_in(kb, t), n)[:batch]
    params, state, _ = step(params, state, idx)
    if t in checkpoints or t in (1, 2, 5):
      stacked.append(rows(model, params, x))
      if adam:
        scaled.append(stacked[-1] / adam_scale(state))
  delta = head(params) - head(params0)
  w1 = lambda p: np.asarray(p['params']['Dense_0']['kernel'])  # noqa: E731
  rec = {'regime': name, 'seed': seed,
         'loss': float(jnp.mean((model.apply(params, x) - y) ** 2)),
         'first_layer_moved': float(np.linalg.norm(w1(params) - w1(params0)) /
                                    np.linalg.norm(w1(params0))),
         'at_trained': share_outside(rows(model, params, x), delta),
         'at_init': share_outside(stacked[0], delta),
         'stacked': share_outside(np.concatenate(stacked), delta)}
  if adam:
    rec['adam_scaled'] = share_outside(rows(model, params, x) / adam_scale(state), delta)
    scaled.append(rows(model, params, x) / adam_scale(state))
    rec['adam_scaled_stacked'] = share_outside(np.concatenate(scaled), delta)
  return rec


def render(doc):
  cols = ('at_trained', 'at_init', 'stacked', 'adam_scaled', 'adam_scaled_stacked')
  body = []
  for name in REGIMES:
    recs = [r for r in doc['records'] if r['regime'] == name]
    if not recs:
      continue
    cell = lambda k: ('–' if k not in recs[0] else  # noqa: E731
                      f"{np.median([r[k] for r in recs]):.2g} "
                      f"({min(r[k] for r in recs):.2g}–{max(r[k] for r in recs):.2g})")
    body.append([name, *[cell(k) for k in cols], cell('first_layer_moved'), cell('loss')])
  header = ('optimiser', 'outside the span at W(T)', 'at W(0)', 'stacked along the trajectory',
            "Adam's D at W(T) (oracle)", "Adam's D stacked (oracle)", 'first layer moved',
            'training loss')
  intro = (f"Share of the head's update W_L(T) - W_L(0) outside the span of the head's Jacobian "
           f"rows at the {doc['n']} training rows: median (min–max) over seeds "
           f"{', '.join(map(str, doc['seeds']))}; MLP {doc['d']} -> {doc['hidden']} -> 1, relu, "
           f"{doc['steps']} steps, learning rate 1e-3. Regenerate: `{doc['command']}`. "
           f"Machine: {doc['machine']}.")
  return common.page('The head update against the span the attack assumes', intro,
                     common.table(header, body))


def main(argv=None):
  parser = argparse.ArgumentParser(description=__doc__.split('\n')[0])
  parser.add_argument('--seeds', default='100,101,102,103,104')
  parser.add_argument('--tiny', action='store_true', help='n 4, hidden 64, 50 steps')
  parser.add_argument('--out', default=OUT)
  args = parser.parse_args(argv)
  n, d, hidden, steps = (4, 16, 64, 50) if args.tiny else (8, 16, 1280, 2000)
  checkpoints = {t for t in (10, 20, 50, 100, 200, 500, 1000, steps // 2) if t < steps}
  seeds = common.ints(args.seeds)
  doc = {'machine': machine.describe(), 'command': common.command(), 'tiny': args.tiny, 'n': n,
         'd': d, 'hidden': hidden, 'steps': steps, 'seeds': seeds, 'checkpoints': sorted(checkpoints),
         'records': []}
  for name in REGIMES:
    for seed in seeds:
      rec = one(name, seed, n=n, d=d, hidden=hidden, steps=steps, checkpoints=checkpoints)
      doc['records'].append(rec)
      print(f"{name}, seed {seed}: outside the span at W(T) {rec['at_trained']:.3g}, stacked "
            f"{rec['stacked']:.3g}" + (f", Adam's D {rec['adam_scaled']:.3g}"
                                       if 'adam_scaled' in rec else ''), flush=True)
  common.save(args.out, doc, render(doc))


if __name__ == '__main__':
  main()
