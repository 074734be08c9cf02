"""Flax variables read from a user's file (recon/models/foreign.py): the params apart from the
other collections, the field a refusal names by default, non-finite weights refused by name.
The loaders' end-to-end tests are in tests/test_foreign.py."""
import flax.linen as nn
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import serialization

from recon.models import foreign


class _BatchNormMLP(nn.Module):
  @nn.compact
  def __call__(self, x):
    x = nn.Dense(4)(x)
    x = nn.BatchNorm(use_running_average=True)(x)
    return nn.Dense(2)(nn.relu(x))


def test_flax_variables_split_into_params_and_the_other_collections(tmp_path):
  variables = _BatchNormMLP().init(jax.random.PRNGKey(0), jnp.zeros((1, 3)))
  assert set(variables) == {'params', 'batch_stats'}
  path = tmp_path / 'v.msgpack'
  path.write_bytes(serialization.to_bytes(variables))
  params, others = foreign.read_variables(str(path), 'msgpack')
  assert set(params) == {'Dense_0', 'BatchNorm_0', 'Dense_1'}
  assert set(others) == {'batch_stats'}  # the params are not repeated among the others
  np.testing.assert_array_equal(others['batch_stats']['BatchNorm_0']['var'], np.ones(4))
  # A bare params tree: no other collections.
  path.write_bytes(serialization.to_bytes(variables['params']))
  params, others = foreign.read_variables(str(path), 'msgpack')
  assert set(params) == {'Dense_0', 'BatchNorm_0', 'Dense_1'} and others == {}


def test_a_refusal_names_victim_checkpoint_unless_told_another_field(tmp_path):
  path = tmp_path / 'empty.msgpack'
  path.write_bytes(b'')
  with pytest.raises(foreign.ForeignModelError, match=r'^victim\.checkpoint: '):
    foreign.read_variables(str(path), 'msgpack')
  with pytest.raises(foreign.ForeignModelError, match=r'^victim\.init_checkpoint: '):
    foreign.read_variables(str(path), 'msgpack', 'victim.init_checkpoint')


def test_params_of_the_right_shapes_with_a_non_finite_weight_are_refused_by_name():
  module = _BatchNormMLP()
  sample = jnp.zeros((1, 3))
  params = jax.tree.map(np.asarray, module.init(jax.random.PRNGKey(0), sample)['params'])
  foreign.check_params_fit(module, params, sample, 'victim.checkpoint')
  params['Dense_1']['bias'] = np.array([0.0, np.nan], np.float32)
  with pytest.raises(foreign.ForeignModelError,
                     match=r"^victim.checkpoint: parameter 'Dense_1/bias' holds non-finite "
                           r'values; accepted: finite weights$'):
    foreign.check_params_fit(module, params, sample, 'victim.checkpoint')
