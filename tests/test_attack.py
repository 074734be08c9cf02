"""recon/attack/plan.py: the attack bundle checks its fields at construction and stays immutable."""
import dataclasses

import jax.numpy as jnp
import pytest

from recon.attack.plan import Attack


def _loss(x, problem):
  return jnp.sum((x - problem) ** 2)


def _attack(**kw):
  fields = dict(problem=jnp.ones((2, 3)), loss_fn=_loss, x0=jnp.zeros((2, 3)),
                constraint=lambda x: x)
  fields.update(kw)
  return Attack(**fields)


def test_optional_fields_default_to_none_and_the_loss_reads_the_problem():
  a = _attack()
  assert (a.feature_fn, a.gram_fn, a.decode, a.refiner, a.certify_theta) == (None,) * 5
  assert float(a.loss_fn(a.x0, a.problem)) == 6.0


@pytest.mark.parametrize('bad, word', [({'x0': None}, 'x0'), ({'loss_fn': 3.0}, 'loss_fn'),
                                       ({'constraint': 'sphere'}, 'constraint')])
def test_a_missing_or_uncallable_field_is_refused_naming_it(bad, word):
  with pytest.raises(ValueError, match=word):
    _attack(**bad)


def test_frozen_and_replace_keeps_the_other_fields():
  a = _attack(decode=lambda x: 2 * x)
  with pytest.raises(dataclasses.FrozenInstanceError):
    a.x0 = jnp.ones((2, 3))  # type: ignore[misc]
  b = dataclasses.replace(a, x0=jnp.ones((2, 3)))
  assert b.problem is a.problem and b.decode is a.decode and b.loss_fn is a.loss_fn
  assert float(b.loss_fn(b.x0, b.problem)) == 0.0
