"""The row re-search of the precision rung (recon/certify/row_search.py): the held basis, the vmapped
search equals the one-row search, and the rung that uses it ends where the sequential one did."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from recon import metrics
from recon.models import features
from recon.certify import float64_loss, row_search
from recon.certify import rung as polish
from tests.test_polish import D, N, TINY, _planted, _stuck


def test_held_basis_absorbs_first_order_moves_of_the_held_rows():
  p = 8 * N * D
  x, theta, ff = _planted(p)
  with jax.enable_x64(True):
    q = row_search.held_basis(ff, jnp.asarray(x[1:], jnp.float64))
    assert q.shape[1] <= (N - 1) * (D + 1)
    moved = x[1:] + 1e-6 * np.random.default_rng(0).standard_normal(x[1:].shape)
    delta = np.asarray(ff(jnp.asarray(moved)) - ff(jnp.asarray(x[1:], jnp.float64)))
    rest = delta.T - np.asarray(q) @ (np.asarray(q).T @ delta.T)
    assert np.linalg.norm(rest) < 1e-3 * np.linalg.norm(delta)  # second order only




@pytest.mark.parametrize('activation', ['relu_tanh', 'relu'])
def test_the_shared_basis_gives_every_rows_held_projection(activation):
  """One SVD (`shared_basis`) gives, for every row i, the projection onto the held span that
  `held_basis` of the other rows gives by its own SVD -- also for relu, whose features lie in
  the span of their own Jacobians (phi(x) = J(x) x: C is rank deficient)."""
  p = 8 * N * D
  kx, kv = jax.random.split(jax.random.PRNGKey(11))
  x = jax.random.normal(kx, (N, D))
  v = features.random_weights(kv, p, D)
  ff = lambda z: features.rf_features(v, z, activation)  # noqa: E731
  f = np.random.default_rng(2).standard_normal((p, 3))
  with jax.enable_x64(True):
    f64 = float64_loss.Features64(ff)
    x64 = jnp.asarray(x, jnp.float64)
    feats = f64(x64)
    jac = jax.vmap(jax.jacfwd(lambda z: f64(z[None])[0]))(x64)
    u, w, _ = row_search.shared_basis(feats, jac)
    u, w = np.asarray(u), np.asarray(w)
    assert u.shape[1] == (N * D if activation == 'relu' else N * (D + 1))
    for i in range(N):
      q = np.asarray(row_search.held_basis(f64, jnp.concatenate([x64[:i], x64[i + 1:]])))
      held = np.sum((q.T @ f) ** 2, axis=0)
      a = u.T @ f
      shared = np.sum(a ** 2, axis=0) - np.sum((w[i].T @ a) ** 2, axis=0)
      np.testing.assert_allclose(shared, held, rtol=1e-8)
      assert int(np.sum(np.linalg.norm(w[i], axis=0) > 0.5)) == u.shape[1] - q.shape[1]


def _planted_two(p, weak=(1, 4), seed=3):
  """As `_planted`, with two samples carrying TINY of theta each (two free rows)."""
  kx, kv, ka = jax.random.split(jax.random.PRNGKey(seed), 3)
  x = jax.random.normal(kx, (N, D))
  x = x / jnp.linalg.norm(x, axis=1, keepdims=True) * jnp.sqrt(D)
  v = features.random_weights(kv, p, D)
  ff = lambda z: features.rf_features(v, z, 'relu_tanh')  # noqa: E731
  alpha = jax.random.normal(ka, (N,))
  phi = ff(x)
  scale = jnp.linalg.norm(alpha @ phi)
  for w in weak:
    alpha = alpha.at[w].set(TINY * scale / jnp.linalg.norm(phi[w]))
  return np.asarray(x), np.asarray(alpha @ phi), ff


def test_the_vmapped_row_search_finds_what_the_one_row_search_finds():
  p, weak = 8 * N * D, (1, 4)
  x, theta, ff = _planted_two(p, weak)
  x_hat = _stuck(x, weak[0])
  x_hat[weak[1]] = -x_hat[weak[0]]
  key = jax.random.PRNGKey(3)
  with jax.enable_x64(True):
    f64 = float64_loss.Features64(ff)
    rows, values = row_search.row_search_batch(f64, theta, x_hat, list(weak), key, starts=6,
                                           steps=200, lr=0.05, radius=float(np.sqrt(D)),
                                           row_batch=1, prune=(), basis_dtype=jnp.float64)
    for n, i in enumerate(weak):
      one, value = row_search.row_search(f64, theta, x_hat, i, jax.random.fold_in(key, n),
                                     starts=6, steps=200, lr=0.05, radius=float(np.sqrt(D)))
      np.testing.assert_allclose(rows[n], one, atol=1e-6)
      assert values[n] == pytest.approx(value, rel=1e-6, abs=1e-12)


def test_a_long_pass_reports_progress_and_its_chunks_are_one_descent(monkeypatch):
  """The batched search runs its Adam steps SEARCH_CHUNK per compiled call and says where it
  is inside a pass; chunked (37 steps a call, a remainder of 14) it ends where one 200-step call
  does."""
  p, weak = 8 * N * D, (1, 4)
  x, theta, ff = _planted_two(p, weak)
  x_hat = _stuck(x, weak[0])
  key = jax.random.PRNGKey(5)
  opts = dict(starts=4, steps=200, lr=0.05, radius=float(np.sqrt(D)), row_batch=2, prune=())
  with jax.enable_x64(True):
    f64 = float64_loss.Features64(ff)
    whole = row_search.row_search_batch(f64, theta, x_hat, list(weak), key, **opts)
    lines = []
    monkeypatch.setattr(row_search, 'SEARCH_CHUNK', 37)
    monkeypatch.setattr(row_search, 'LOG_SECONDS', 0.0)
    monkeypatch.setattr(row_search.logging, 'info', lambda msg, *a: lines.append(msg % a))
    chunked = row_search.row_search_batch(f64, theta, x_hat, list(weak), key, **opts)
  np.testing.assert_allclose(chunked[0], whole[0], atol=1e-9)
  np.testing.assert_allclose(chunked[1], whole[1], rtol=1e-9, atol=1e-15)
  inside = [s for s in lines if s.startswith('precision rung: rows 1-2 of 2, Adam step ')]
  assert [s.split('Adam step ')[1].split(' of')[0] for s in inside] == [
      '37', '74', '111', '148', '185'], lines
  assert lines[-1].startswith('precision rung: rows re-searched 2 of 2'), lines


def test_pruned_starts_and_a_float32_product_find_the_rows_the_full_search_finds(monkeypatch):
  """Successive halving (16 starts, 4 kept at 20 % of the steps, 1 at 50 %) with U^T phi in
  float32 finds the same rows as all 16 starts run to the end in float64, and its pruned starts
  are the best by l_i: chunks end at the stage boundaries."""
  p, weak = 8 * N * D, (1, 4)
  x, theta, ff = _planted_two(p, weak)
  x_hat = _stuck(x, weak[0])
  x_hat[weak[1]] = -x_hat[weak[0]]
  key = jax.random.PRNGKey(3)
  opts = dict(starts=16, steps=200, lr=0.05, radius=float(np.sqrt(D)))
  with jax.enable_x64(True):
    f64 = float64_loss.Features64(ff)
    full, full_values = row_search.row_search_batch(f64, theta, x_hat, list(weak), key, **opts,
                                                    prune=(), basis_dtype=jnp.float64)
    shapes = []
    real = row_search._BatchSearch.advance
    monkeypatch.setattr(row_search._BatchSearch, 'advance', lambda self, u, w, r0, z, st, n: (
        shapes.append((z.shape[1], n)) or real(self, u, w, r0, z, st, n)))
    pruned, values = row_search.row_search_batch(f64, theta, x_hat, list(weak), key, **opts,
                                                 prune=((0.2, 4), (0.5, 1)))
  assert shapes == [(16, 40), (4, 60), (1, 100)]
  # Adam with a float32 U^T phi ends within float32's reach of the same rows (both slots find
  # row 1's sample, the larger share): the rung's Gauss-Newton (float64) takes them the rest.
  np.testing.assert_allclose(pruned, full, atol=1e-2)
  np.testing.assert_allclose(values, full_values, rtol=1e-2)


@pytest.mark.slow  # ~15 CPU-s
def test_the_parallel_rung_ends_where_the_sequential_one_does():
  """Two free rows: the rung (rows searched together, in rounds) and the former
  sequential rung (search a row, Gauss-Newton, judge; the next row from there) both recover
  every row to 1e-2 and reach the same float64 loss floor."""
  p, weak = 8 * N * D, (1, 4)
  x, theta, ff = _planted_two(p, weak)
  rng = np.random.default_rng(7)
  x_hat = _stuck(x, weak[0])
  x_hat[weak[1]] = rng.standard_normal(D)
  x_hat = x_hat / np.linalg.norm(x_hat, axis=1, keepdims=True) * np.sqrt(D)
  key, radius = jax.random.PRNGKey(0), float(np.sqrt(D))
  out, info = polish.polish(ff, theta, x_hat, free_rows=list(weak), key=key, radius=radius,
                            tol=1e-12, starts=16, row_steps=600)
  with jax.enable_x64(True):  # the sequential reference
    f64 = float64_loss.Features64(ff)
    seq = np.asarray(x_hat, np.float64)
    loss = float64_loss.loss64(f64, seq, theta)
    for n, i in enumerate(weak):
      row, _ = row_search.row_search(f64, theta, seq, i, jax.random.fold_in(key, n), starts=16,
                                 steps=600, lr=0.05, radius=radius)
      trial = seq.copy()
      trial[i] = row
      trial, new, _ = polish.gauss_newton(f64, theta, trial, iters=20, radius=radius, tol=1e-12)
      if new < loss:
        seq, loss = trial, new
    seq, loss, _ = polish.gauss_newton(f64, theta, seq, iters=20, radius=radius, tol=1e-12)
  assert info['rows_replaced'] and set(info['rows_replaced']) <= set(weak)
  assert info['loss_after'] < 1e-12 and loss < 1e-12
  # Rows carrying 2e-4 of theta are pinned to ~1e-3 at this floor; the threshold is 0.1.
  assert metrics.per_sample_errors(x, out).max() < 1e-2
  assert metrics.per_sample_errors(x, seq).max() < 1e-2
  assert metrics.per_sample_errors(seq, out).max() < 1e-2
