"""Config fields of the perf branch (lean features, schedules, re-seeding) and the schedule."""
import jax.numpy as jnp
import numpy as np
import pytest

from configs import rf_synthetic
from recon.config import validate as config_lib
from recon.attack import optimiser as optimize


def test_default_config_validates():
  config_lib.validate(rf_synthetic.get_config())


@pytest.mark.parametrize('field,value', [
    ('victim.feature_mode', 'sparse'), ('victim.feature_memory_budget_mb', 0.0),
    ('victim.feature_chunk', 0), ('victim.feature_residual', 'three_pass'),
    ('victim.feature_shards', 0), ('attack.reseed.every', 0), ('attack.rescue', ('reseed', 'reseed')),
    ('attack.rescue', 'escalate'), ('attack.rescue', ('escalation',)), ('attack.reseed.threshold', 1.5),
    ('attack.schedule', 'linear'), ('attack.final_ratio', 2.0), ('victim.weight_rng', 'philox'),
    ('victim.feature_residual', 'stored_twice')])
def test_bad_values_raise_one_line_config_error(field, value):
  cfg = rf_synthetic.get_config()
  with cfg.ignore_type():
    config_lib.set_path(cfg, field, value)
  with pytest.raises(config_lib.ConfigError, match=f'^config.{field}: invalid value') as e:
    config_lib.validate(cfg)
  assert '\n' not in str(e.value)


def test_cosine_schedule_decays_to_final_ratio():
  # SGD without momentum: the update is -lr_t * grad, so it reads the scheduled lr off.
  opt = optimize.make_optimizer('sgd', 0.1, momentum=0.0, schedule='cosine', decay_steps=10,
                                final_ratio=0.05)
  state = opt.init(jnp.zeros(3))
  lrs = []
  for _ in range(12):
    update, state = opt.update(jnp.ones(3), state)
    lrs.append(-float(update[0]))
  np.testing.assert_allclose(lrs[0], 0.1, rtol=1e-6)
  np.testing.assert_allclose(lrs[-1], 0.005, rtol=1e-5)
  assert all(a >= b for a, b in zip(lrs, lrs[1:]))
  # The base lr stays a hyperparameter in the state (what sweeps batch).
  np.testing.assert_allclose(float(state.hyperparams['learning_rate']), 0.1, rtol=1e-6)
  with pytest.raises(ValueError, match='decay_steps'):
    optimize.make_optimizer('sgd', 1.0, schedule='cosine')
