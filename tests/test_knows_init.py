"""attack.knows_init: None uses the initial parameters whenever they are given (issue 66 item 2);
an explicit False ignores them and says so; what a run that recovers nothing says."""
import re

import pytest
from absl import logging

from configs import audit, base, two_layer
from recon.config import validate as config_lib
from recon.report import scoring as report
from recon.pipelines import networks


@pytest.mark.parametrize('setting,given,used', [
    (None, True, True), (None, False, False), (True, True, True), (True, False, True),
    (False, True, False), (False, False, False)])
def test_knows_init_is_the_setting_or_whether_the_init_was_given(setting, given, used):
  assert config_lib.knows_init(setting, given) is used


def test_the_default_is_unset_so_a_given_init_is_used():
  assert base.get_config().attack.knows_init is None
  c = two_layer.get_config()
  c.victim.init_checkpoint = 'init.msgpack'
  assert networks.initial_params_used(c.attack, c.victim, initial_given=True)


def test_an_explicit_false_ignores_a_given_init_in_one_log_line(monkeypatch):
  lines = []
  monkeypatch.setattr(logging, 'warning', lambda fmt, *a: lines.append(fmt % a))
  c = two_layer.get_config()
  c.victim.init_checkpoint, c.attack.knows_init = 'init.msgpack', False
  assert not networks.initial_params_used(c.attack, c.victim, initial_given=True)
  assert len(lines) == 1 and 'init.msgpack are ignored' in lines[0]
  assert 'knows_init=False' in lines[0]


def test_the_audit_config_leaves_knows_init_to_the_given_init():
  """configs/audit.py with victim.init_checkpoint and nothing else about the init uses it."""
  c = audit.get_config()
  c.victim.init_checkpoint = 'init.msgpack'
  assert networks.initial_params_used(c.attack, c.victim, initial_given=True)


def test_a_run_that_recovers_nothing_says_what_it_tried_and_never_that_data_is_safe():
  result = {'n': 5, 'status': 'converged', 'steps': 100, 'final_loss': 0.2}
  text = report.nothing_recovered(result, {'target': 'theta = vec(W_head(T))',
                                           'attacker_knows_init': False})
  assert text.startswith('0 of 5 records came back')
  assert 'theta = vec(W_head(T))' in text and 'W(0) were not used' in text
  assert 'Adam' in text and 'does not show the training data is safe' in text
  assert not re.search(r'\b(is|are) safe\b', text.replace('does not show the training data is '
                                                          'safe', ''))
  with_init = report.nothing_recovered(result, {'target': 't', 'attacker_knows_init': True})
  assert 'W(0) were not used' not in with_init and 'Adam' in with_init
  no_network = report.nothing_recovered(result, {'target': 't'})  # random features: no W(0)
  assert 'Adam' not in no_network and 'W(0)' not in no_network and 'other attacks' in no_network
