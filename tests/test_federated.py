"""Federated clients (recon/models/federated.py, recon/pipelines/federated.py): the local
update's structure, the `federated` section's refusals, and one client's update inverted."""
import json
import os

import jax
import jax.numpy as jnp
from jax.flatten_util import ravel_pytree
import numpy as np
import pytest

import recon
from configs import federated as federated_config
from recon import main
from recon.config import validate as config_lib
from recon.attack import gradient_matching
from recon.models import federated, networks, train
from recon.objectives import parameter_gradients


def _net(width=32, d=6, c=3, seed=0):
  model = networks.TwoLayer(width=width, out_dim=c, activation='relu')
  params = model.init(jax.random.PRNGKey(seed), jnp.zeros((1, d)))['params']
  return model, params


def _update(optimizer_name='sgd', epochs=1, batch=5, n=5, d=6, c=3):
  model, params0 = _net(d=d, c=c)
  apply = lambda p, x: model.apply({'params': p}, x)  # noqa: E731
  key = jax.random.PRNGKey(1)
  x = jax.random.normal(key, (n, d))
  y = jnp.arange(n) % c
  targets = train.make_targets('cross_entropy', y, c)
  params1, info = federated.local_update(
      apply, params0, x, targets, loss='cross_entropy', epochs=epochs, batch=batch, lr=0.5,
      optimizer_name=optimizer_name, key=key)
  return apply, params0, params1, x, info


def _residual(apply, params0, params1, x):
  """The share of W_L(1) - W_L(0) outside the span of the records' head rows at W(0)."""
  theta = parameter_gradients.head_target(
      parameter_gradients.layer_delta(params1, params0, 'head'), 3)
  rows = parameter_gradients.head_rows(apply, params0, x, layer='head')  # (n, q)
  q, _ = np.linalg.qr(np.asarray(rows, np.float64).T)
  t = np.asarray(theta, np.float64)
  return np.linalg.norm(t - q @ (q.T @ t)) / np.linalg.norm(t)


def test_one_full_batch_sgd_step_lies_in_the_span_of_the_features_at_init_and_more_do_not():
  apply, p0, p1, x, info = _update()
  assert info['steps'] == 1 and info['finite'] and info['loss_after'] < info['loss_before']
  assert _residual(apply, p0, p1, x) < 1e-5
  # Minibatches move the features between steps, Adam rescales coordinates: both leave it.
  assert _residual(*_update(epochs=3, batch=2)[:4]) > 1e-4
  assert _residual(*_update(optimizer_name='adam')[:4]) > 1e-3


def test_minibatches_cover_every_record_once_per_epoch():
  steps = federated.batches(jax.random.PRNGKey(0), 10, 4, 2)
  assert [len(s) for s in steps] == [4, 4, 2, 4, 4, 2]
  for epoch in (steps[:3], steps[3:]):
    assert sorted(np.concatenate(epoch).tolist()) == list(range(10))
  assert not np.array_equal(np.concatenate(steps[:3]), np.concatenate(steps[3:]))
  assert [s.tolist() for s in federated.batches(jax.random.PRNGKey(0), 3, 3, 2)] == [[0, 1, 2]] * 2


def test_head_view_takes_only_the_head_from_the_update():
  _, p0, p1, _, _ = _update()
  view = federated.head_view(p0, p1, 'head')
  assert view['head'] is p1['head'] and view['hidden'] is p0['hidden']


def test_gradient_matching_replays_the_client_at_its_records_and_not_elsewhere():
  apply, p0, p1, x, _ = _update()
  targets = train.make_targets('cross_entropy', jnp.arange(5) % 3, 3)
  client = gradient_matching.Client(loss='cross_entropy', epochs=1, batch=5, lr=0.5,
                                    optimizer='sgd')
  observed = ravel_pytree(p1)[0] - ravel_pytree(p0)[0]
  loss = gradient_matching.matching_loss(apply, p0, targets, observed, client, 0.0, None)
  assert float(loss(x)) < 1e-6
  assert float(loss(x[::-1])) > 1e-3  # the same rows with the labels permuted
  assert float(loss(jax.random.normal(jax.random.PRNGKey(5), x.shape))) > 1e-2
  img = jnp.zeros((2, 3, 3, 1)).at[:, 1, 1, 0].set(1.0).reshape(2, 9)
  assert float(gradient_matching.total_variation(img, (3, 3, 1))) > 0
  assert float(gradient_matching.total_variation(jnp.ones((2, 9)), (3, 3, 1))) == 0


@pytest.mark.parametrize('field, value, accepted', [
    ('federated.epochs', 0, 'int >= 1'),
    ('federated.batch', 0, 'int >= 1 (or None)'),
    ('federated.lr', 0.0, 'float > 0'),
    ('federated.optimizer', 'rmsprop', "one of 'sgd', 'adam'"),
    ('federated.loss', 'hinge', "'mse', 'logistic', 'cross_entropy'"),
    ('federated.features_at', 'trained', "one of 'init', 'init_and_update'"),
    ('federated.baseline', 'dlg', "one of 'none', 'gradient_matching'"),
    ('federated.baseline_steps', 0, 'int >= 1'),
    ('federated.baseline_tv', -1.0, 'float >= 0'),
])
def test_every_federated_field_is_validated(field, value, accepted):
  c = federated_config.get_config()
  config_lib.validate(c)
  with c.ignore_type():
    config_lib.set_path(c, field, value)
  with pytest.raises(config_lib.ConfigError, match=f'^config.{field}: invalid value') as e:
    config_lib.validate(c)
  assert accepted in str(e.value) and '\n' not in str(e.value)


@pytest.mark.parametrize('field, value, message', [
    ('federated.batch', 9, 'federated.batch: 9 > data.n=8; accepted: an int in 1..8'),
    ('attack.knows_init', False, 'attack.knows_init: False with pipeline federated'),
    ('victim.name', 'random_features', "victim.name: 'random_features' builds no network"),
])
def test_cross_field_refusals_are_one_error_line_before_any_compute(tmp_path, capsys, field,
                                                                    value, message):
  c = federated_config.get_config()
  with c.ignore_type():
    config_lib.set_path(c, field, value)
  out = tmp_path / 'run'
  assert main.execute(c, str(out)) == 2
  lines = [l for l in capsys.readouterr().err.splitlines() if l.startswith('error:')]
  assert len(lines) == 1 and message in lines[0], lines
  assert not (out / 'model').exists()


@pytest.mark.slow
def test_a_client_update_is_inverted_record_by_record_and_the_certificate_is_not_wrong(tmp_path):
  c = federated_config.get_config()
  c.data.n = 4
  c.victim.width = 400  # p_L = 4000 = 15.6 d n; width >= n (d + 1) for the certificate
  c.seed = 1000
  result = recon.run(c, str(tmp_path / 'fed'))
  m = result.metrics
  assert m['projection_loss_at_truth'] < 1e-8 and m['p_L_over_dn'] == pytest.approx(15.625)
  records = json.load(open(os.path.join(result.workdir, 'records.json')))
  assert len(records) == 4
  assert all(r['recovered'] for r in records), records
  assert not any(r['verdict'] == 'pinned' and not r['recovered'] for r in records)
  assert os.path.exists(os.path.join(result.workdir, 'report.html'))
  assert m['federated_epochs'] == 1 and m['federated_batch'] == 4
  # The certificate counts the head's fan-in (the rows it is given), not victim.p.
  assert m['certificate']['p_over_md'] == pytest.approx(400 / (4 * 64))


def test_the_baselines_replay_of_an_adam_client_is_exact_and_its_gradient_finite():
  model, p0 = _net()
  # a dead unit (zero fan-in): its coordinates' gradients are 0, where sqrt(v) alone
  # differentiates to nan
  p0 = {**p0, 'hidden': {'kernel': p0['hidden']['kernel'].at[:, 0].set(0.0)}}
  apply = lambda p, x: model.apply({'params': p}, x)  # noqa: E731
  x = jax.random.normal(jax.random.PRNGKey(1), (5, 6))
  targets = train.make_targets('cross_entropy', jnp.arange(5) % 3, 3)
  p1, _ = federated.local_update(apply, p0, x, targets, loss='cross_entropy', epochs=1, batch=5,
                                 lr=0.5, optimizer_name='adam', key=jax.random.PRNGKey(1))
  client = gradient_matching.Client(loss='cross_entropy', epochs=1, batch=5, lr=0.5,
                                    optimizer='adam')
  observed = ravel_pytree(p1)[0] - ravel_pytree(p0)[0]
  loss = gradient_matching.matching_loss(apply, p0, targets, observed, client, 0.0, None)
  assert float(loss(x)) < 1e-5
  assert np.all(np.isfinite(np.asarray(jax.grad(loss)(x))))


def test_the_baseline_reports_its_matching_loss_along_its_descent():
  apply, p0, p1, x, _ = _update()
  targets = train.make_targets('cross_entropy', jnp.arange(5) % 3, 3)
  client = gradient_matching.Client(loss='cross_entropy', epochs=1, batch=5, lr=0.5,
                                    optimizer='sgd')
  key = jax.random.PRNGKey(3)
  x_hat, info = gradient_matching.attack(apply, p0, p1, targets, client,
                                         gradient_matching.Setting(lr=0.05, steps=500, tv=0.0),
                                         key, 5, 6)
  assert x_hat.shape == (5, 6) and sorted(info['curve']) == [250, 500]
  assert info['curve'][500] == info['matching'] == pytest.approx(info['loss'], abs=1e-6)
  observed = ravel_pytree(p1)[0] - ravel_pytree(p0)[0]
  start = jax.random.normal(key, (5, 6))
  start = start * jnp.sqrt(6.0) / jnp.linalg.norm(start, axis=1, keepdims=True)
  distance = gradient_matching.cosine_distance(apply, p0, targets, observed, client)
  assert info['matching'] < 0.5 * float(distance(start))


def test_the_baselines_settings_are_chosen_by_its_matching_loss_alone():
  from scripts import federated as script  # pylint: disable=import-outside-toplevel
  curves = {(0.01, 0.0): (0.5, 0.3, 0.2), (0.1, 0.0): (0.2, 0.105, 0.1),
            (0.1, 0.01): (float('nan'),) * 3}
  t = {'grid': {'lr': [0.01, 0.1], 'tv': [0.0, 0.01], 'steps': [250, 500, 1000]},
       'shadow_seeds': [1000, 1001], 'cells': ['digits:8:1:8:sgd'],
       'runs': [{'cell': 'digits:8:1:8:sgd', 'seed': s, 'lr': lr, 'tv': tv, 'steps': 1000,
                 'matching_curve': dict(zip(('250', '500', '1000'), c))}
                for (lr, tv), c in curves.items() for s in (1000, 1001, 100)]}
  # a reported seed's run is never read: counted, it would make lr 0.01 the best
  t['runs'][2]['matching_curve'] = {'250': -9.0, '500': -9.0, '1000': -9.0}
  assert t['runs'][2]['seed'] == 100 and t['runs'][2]['lr'] == 0.01
  choice, scores = script.choose(t)
  # the lowest mean at 1000 steps; the fewest steps within TUNE_SLACK (1.1) of it: 500
  assert choice == {'lr': 0.1, 'tv': 0.0, 'steps': 500}
  assert len(scores) == 3
