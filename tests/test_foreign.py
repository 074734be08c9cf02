"""Models saved outside recon (recon/models/foreign.py): the auditor's Flax module from
orbax / msgpack params, a PyTorch MLP's state_dict from safetensors (no torch)."""
import json
import os
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import serialization
from safetensors.numpy import save_file

from configs import base, two_layer
import recon
from recon import main
from recon.pipelines import victims
from recon.models import foreign
from recon.models import saved as model_ckpt


def _state(rng, sizes, bias=True, gap=2):
  """An nn.Sequential(Linear, act, Linear, ...) state_dict: Linear i at index gap * i."""
  out = {}
  for i, (fan_in, fan_out) in enumerate(zip(sizes[:-1], sizes[1:])):
    out[f'{gap * i}.weight'] = rng.normal(size=(fan_out, fan_in)).astype(np.float32)
    if bias:
      out[f'{gap * i}.bias'] = rng.normal(size=(fan_out,)).astype(np.float32)
  return out


@pytest.mark.parametrize('activation', foreign.TORCH_ACTIVATIONS)
@pytest.mark.parametrize('bias', [True, False])
def test_torch_mlp_matches_pytorch_forward_in_numpy(activation, bias, tmp_path):
  rng = np.random.default_rng(0)
  state = _state(rng, (7, 16, 9, 3), bias=bias)
  path = str(tmp_path / 'mlp.safetensors')
  save_file(state, path)
  module, params, d = foreign.torch_mlp(foreign.read_state_dict(path), activation)
  assert d == 7 and list(params) == ['layer_0', 'layer_2', 'layer_4']
  x = rng.normal(size=(5, 7)).astype(np.float32)
  got = np.asarray(module.apply({'params': params}, jnp.asarray(x)))
  np.testing.assert_allclose(got, foreign.numpy_forward(state, activation, x), rtol=2e-5,
                             atol=2e-5)


@pytest.mark.parametrize('mutate,needle', [
    (lambda s: s.update({'0.weight': s['0.weight'][:10], '0.bias': s['0.bias'][:10]}),
     "'2.weight' has in_features 16 but the layer before outputs 10"),
    (lambda s: s.update({'classifier.weight': s['0.weight']}), "key 'classifier.weight' is not"),
    (lambda s: s.update({'0.bias': np.zeros(5, np.float32)}), r"'0.bias' has shape \(5,\)"),
    (lambda s: s['2.weight'].__setitem__((0, 0), np.nan), "'2.weight' holds non-finite"),
    (lambda s: s.pop('2.weight'), "'2.weight' missing"),
])
def test_torch_mlp_refusals_are_one_line(mutate, needle, tmp_path):
  state = _state(np.random.default_rng(1), (4, 16, 1))
  mutate(state)
  with pytest.raises(foreign.ForeignModelError, match=needle) as e:
    foreign.torch_mlp(state, 'relu')
  assert '\n' not in str(e.value)


def test_files_that_are_not_models_are_refused(tmp_path):
  junk = tmp_path / 'junk.bin'
  junk.write_bytes(b'\x00not a model' * 10)
  with pytest.raises(foreign.ForeignModelError, match='is not a safetensors file'):
    foreign.read_state_dict(str(junk))
  with pytest.raises(foreign.ForeignModelError, match='is not a flax msgpack file'):
    foreign.read_params(str(junk), 'msgpack')
  with pytest.raises(foreign.ForeignModelError, match='is a file, not a directory'):
    foreign.read_params(str(junk), 'orbax')
  with pytest.raises(foreign.ForeignModelError, match="activation: 'sigmoid' for torch_mlp"):
    foreign.torch_mlp(_state(np.random.default_rng(0), (3, 4, 1)), 'sigmoid')


USER_MODULE = '''
import flax.linen as nn
import jax

class UserMLP(nn.Module):
  hidden: int
  outputs: int = 1

  @nn.compact
  def __call__(self, x):
    x = jax.nn.relu(nn.Dense(self.hidden)(x))
    return nn.Dense(self.outputs)(x)

NOT_A_MODULE = 3
'''


@pytest.fixture
def user_module(tmp_path, monkeypatch):
  (tmp_path / 'user_models.py').write_text(textwrap.dedent(USER_MODULE))
  monkeypatch.syspath_prepend(str(tmp_path))
  return 'user_models:UserMLP'


def test_a_users_module_and_params_are_read_and_checked(user_module, tmp_path):
  cfg = base.get_config()
  cfg.victim.module, cfg.victim.module_kwargs = user_module, {'hidden': 12}
  module = foreign.build_flax_module(cfg.victim)
  params = module.init(jax.random.PRNGKey(0), jnp.zeros((1, 5)))['params']
  (tmp_path / 'p.msgpack').write_bytes(serialization.to_bytes({'params': params}))
  got = foreign.read_params(str(tmp_path / 'p.msgpack'), 'msgpack')
  assert list(got) == ['Dense_0', 'Dense_1']
  foreign.check_params_fit(module, got, jnp.zeros((1, 5)), 'victim.checkpoint')
  with pytest.raises(foreign.ForeignModelError,
                     match=r"^victim.checkpoint: parameter 'Dense_0/kernel' has shape \(5, 12\); "
                           r'accepted: \(6, 12\)'):
    foreign.check_params_fit(module, got, jnp.zeros((1, 6)), 'victim.checkpoint')
  cfg.victim.module_kwargs = {'hidden': 12, 'depth': 2}
  with pytest.raises(foreign.ForeignModelError, match="^victim.module_kwargs: .*'depth'"):
    foreign.build_flax_module(cfg.victim)
  for spec, needle in (('user_models', 'accepted: \'package.module:ClassName\''),
                       ('no_such_module:X', "cannot import 'no_such_module'"),
                       ('user_models:Nope', "has no 'Nope'"),
                       ('user_models:NOT_A_MODULE', 'is not a flax.linen.Module subclass')):
    with pytest.raises(foreign.ForeignModelError, match=needle):
      foreign.import_class(spec)


@pytest.mark.parametrize('overrides,needle', [
    ({'victim.name': 'flax_module', 'victim.format': 'safetensors'},
     "victim.format: 'safetensors' with victim.name 'flax_module'; accepted: 'orbax', 'msgpack'"),
    ({'victim.name': 'torch_mlp'}, "victim.format: 'recon' with victim.name 'torch_mlp'"),
    ({'victim.name': 'flax_module', 'victim.format': 'msgpack'},
     "victim.checkpoint: required for victim.name 'flax_module'"),
    ({'victim.name': 'flax_module', 'victim.format': 'msgpack', 'victim.checkpoint': '/x'},
     "victim.module: required for victim.name 'flax_module'"),
    ({'victim.init_checkpoint': '/x'}, 'victim.init_checkpoint: set without victim.checkpoint'),
])
def test_format_and_victim_must_agree(overrides, needle, tmp_path, capsys):
  cfg = two_layer.get_config()
  for path, value in overrides.items():
    section, field = path.split('.')
    cfg[section][field] = value
  assert main.execute(cfg, str(tmp_path / 'w')) == 2
  assert needle in capsys.readouterr().err
  assert not (tmp_path / 'w').exists()


def _recon_two_layer(tmp_path, activation):
  """A two-layer net trained by recon (the reference run) and its workdir."""
  cfg = two_layer.get_config()
  cfg.data.n, cfg.data.d, cfg.data.num_classes = 4, 8, 1
  cfg.victim.width, cfg.victim.activation = 320, activation
  cfg.attack.max_steps = 1500
  cfg.run.dtype = 'float64'
  work = tmp_path / 'recon'
  assert main.execute(cfg, str(work)) == 0
  return cfg, work


def _metrics(work):
  return json.loads((work / 'summary.json').read_text())['metrics']


@pytest.mark.slow
def test_a_model_saved_outside_recon_is_attacked_like_the_same_model_trained_by_recon(tmp_path):
  """The recon-trained TwoLayer exported as a user's Flax params (msgpack and orbax) and as a
  PyTorch state_dict (safetensors): each attack ends where the reference run ended."""
  cfg, work = _recon_two_layer(tmp_path, 'tanh')
  ref = _metrics(work)
  assert ref['frac_recovered'] >= 0.75
  saved = model_ckpt.load(str(work / 'model'))
  trained, initial = saved.trained, saved.initial
  (tmp_path / 'trained.msgpack').write_bytes(serialization.to_bytes(trained))
  (tmp_path / 'initial.msgpack').write_bytes(serialization.to_bytes({'params': initial}))
  import orbax.checkpoint as ocp  # pylint: disable=import-outside-toplevel
  ocp.PyTreeCheckpointer().save(str(tmp_path / 'trained_orbax'), trained)
  ocp.PyTreeCheckpointer().save(str(tmp_path / 'initial_orbax'), initial)
  torch = lambda p: {'0.weight': np.asarray(p['hidden']['kernel']).T.copy(),  # noqa: E731
                     '2.weight': np.asarray(p['head']['kernel']).T.copy()}
  save_file(torch(trained), str(tmp_path / 'trained.safetensors'))
  save_file(torch(initial), str(tmp_path / 'initial.safetensors'))
  # The auditor's file: the reference run's training rows, as the model saw them (a model saved
  # outside recon is scored only against data.name 'file', never data recon regenerates).
  np.savez(tmp_path / 'train.npz', x=np.load(work / 'reconstruction.npz')['x_true'])

  runs = {
      'msgpack': dict(name='flax_module', format='msgpack', checkpoint='trained.msgpack',
                      init_checkpoint='initial.msgpack'),
      'orbax': dict(name='flax_module', format='orbax', checkpoint='trained_orbax',
                    init_checkpoint='initial_orbax'),
      'safetensors': dict(name='torch_mlp', format='safetensors',
                          checkpoint='trained.safetensors',
                          init_checkpoint='initial.safetensors'),
  }
  for label, fields in runs.items():
    c = two_layer.get_config()
    c.data.n, c.data.d, c.data.num_classes = 4, 8, 1
    c.attack.max_steps, c.run.dtype = 1500, 'float64'
    c.victim.activation = 'tanh'
    c.data.name, c.data.path, c.data.preprocess = 'file', str(tmp_path / 'train.npz'), 'none'
    c.victim.name, c.victim.format = fields['name'], fields['format']
    c.victim.checkpoint = str(tmp_path / fields['checkpoint'])
    c.victim.init_checkpoint = str(tmp_path / fields['init_checkpoint'])
    if fields['name'] == 'flax_module':
      c.victim.module = 'recon.models.networks:TwoLayer'
      c.victim.module_kwargs = {'width': 320, 'out_dim': 1, 'activation': 'tanh'}
    out = tmp_path / label
    assert main.execute(c, str(out)) == 0, label
    got = _metrics(out)
    assert got['p_L'] == ref['p_L'] == 320, label  # the head, found by the call order
    assert got['frac_recovered'] == ref['frac_recovered'], label
    assert got['final_loss'] == pytest.approx(ref['final_loss'], rel=1e-3, abs=1e-12), label
    assert not (out / 'model').exists()  # the auditor's file is read again on resume


def test_a_foreign_model_without_its_init_is_refused_when_the_attack_needs_it(tmp_path, capsys):
  state = _state(np.random.default_rng(0), (8, 32, 1), bias=False)
  save_file(state, str(tmp_path / 'm.safetensors'))
  c = two_layer.get_config()
  c.data.n, c.data.num_classes = 4, 1
  c.victim.name, c.victim.format, c.victim.activation = 'torch_mlp', 'safetensors', 'relu'
  c.victim.checkpoint = str(tmp_path / 'm.safetensors')
  c.attack.knows_init = True  # required explicitly (None: known when given)
  assert main.execute(c, str(tmp_path / 'w')) == 2
  err = capsys.readouterr().err
  assert 'attack.knows_init: True attacks theta = W_L(T) - W_L(0), but victim.init_checkpoint ' \
         'is not set' in err
  resolved = victims.resolve(c)
  assert resolved.data.d == 8  # adopted from the state_dict


ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def api_audit_snippet():
  """docs/api.md's complete audit of a user-defined Flax MLP (the block that calls recon.run)."""
  import re  # pylint: disable=import-outside-toplevel
  with open(os.path.join(ROOT, 'docs', 'api.md')) as f:
    (block,) = [b for b in re.findall(r'```python\n(.*?)```', f.read(), re.S) if 'recon.run' in b]
  return block


def _doc_files():
  """{file name: code} of the blocks docs/audit.md marks `<!-- file: NAME -->`."""
  import re  # pylint: disable=import-outside-toplevel
  with open(os.path.join(ROOT, 'docs', 'audit.md')) as f:
    text = f.read()
  return dict(re.findall(r'<!-- file: (\S+) -->\n```python\n(.*?)```', text, re.S))


@pytest.mark.slow
def test_the_audit_pages_own_model_is_audited_as_the_page_says(tmp_path, monkeypatch):
  """docs/audit.md's module and training script, run as written, then configs/audit.py with
  the page's overrides (with W(0): docs/api.md's snippet, as written): every record back with
  W(0), none without."""
  import runpy  # pylint: disable=import-outside-toplevel
  from configs import audit  # pylint: disable=import-outside-toplevel
  files = _doc_files()
  assert set(files) == {'my_models.py', 'train_mlp.py'}
  for name, code in files.items():
    (tmp_path / name).write_text(code)
  monkeypatch.chdir(tmp_path)
  monkeypatch.syspath_prepend(str(tmp_path))
  runpy.run_path(str(tmp_path / 'train_mlp.py'), run_name='__main__')
  outcomes = {}
  for knows_init in (True, False):
    c = audit.get_config()
    c.victim.module, c.victim.checkpoint = 'my_models:MLP', 'mlp.msgpack'
    c.victim.init_checkpoint, c.attack.knows_init = 'mlp_init.msgpack', knows_init
    c.data.path, c.data.n, c.data.d = 'train.npz', 8, 16
    work = tmp_path / f'audit_{knows_init}'
    if knows_init:  # docs/api.md's snippet as written (the same config, through recon.run)
      namespace = {}
      snippet = compile(api_audit_snippet(), 'docs/api.md', 'exec')
      exec(snippet, namespace)  # pylint: disable=exec-used
      result, work = namespace['result'], tmp_path / 'audit_mlp'
      assert result.workdir == str(work) and recon.load(str(work)).records == result.records
      shown = namespace['cfg']  # recon.run leaves the caller's config as it was
      assert shown.attack.knows_init and shown.victim.module == c.victim.module and all(
          shown.victim[k] == c.victim[k] for k in ('checkpoint', 'init_checkpoint'))
      assert len(result.records) == 8 and result.candidates.shape == (8, 16)
    else:
      assert main.execute(c, str(work)) == 0
    outcomes[knows_init] = _metrics(work)
    records = json.loads((work / 'records.json').read_text())
    assert sorted(r['index'] for r in records) == list(range(8))
  assert outcomes[True]['frac_recovered'] == 1.0 and outcomes[True]['p_L'] == 1281
  assert outcomes[False]['frac_recovered'] == 0.0


# -- A random-features model as arrays (victim.format 'npz') ------------------------------

def _rf_export(tmp_path):
  """A recon-trained random-features run (n 4, d 8, p 320) and its model as an .npz of V and
  theta plus its training set as the auditor's data file."""
  from configs import rf_synthetic  # pylint: disable=import-outside-toplevel
  from recon.pipelines import random_features as rf  # pylint: disable=import-outside-toplevel
  c = rf_synthetic.get_config()
  c.data.n, c.data.d, c.victim.p, c.attack.max_steps = 4, 8, 320, 3000
  work = tmp_path / 'recon_rf'
  assert main.execute(c, str(work)) == 0
  saved = model_ckpt.load(str(work / 'model'))
  v = np.asarray(rf.rf_problem(saved, jnp.float32)['v'])
  np.savez(tmp_path / 'rf.npz', V=v, theta=np.asarray(saved.trained['theta']))
  np.savez(tmp_path / 'truth.npz', x=np.asarray(saved.truth['x']), y=np.asarray(saved.truth['y']))
  return c, work


def test_a_random_features_model_from_arrays_is_attacked_like_recons_own(tmp_path):
  """V and theta saved by the auditor (np.savez) are the model: p and d come from V, the
  attack ends where the same model's recon-format attack ends, and the workdir keeps a
  recon.model/1 copy (V as given) for a resume."""
  c, work = _rf_export(tmp_path)
  ref = _metrics(work)
  assert ref['frac_recovered'] == 1.0
  c2 = rf_synthetic_config()
  c2.victim.format, c2.victim.checkpoint = 'npz', str(tmp_path / 'rf.npz')
  c2.victim.p = 1000  # replaced by V's shape
  c2.data.name, c2.data.path, c2.data.preprocess = 'file', str(tmp_path / 'truth.npz'), 'none'
  c2.data.n, c2.data.d, c2.attack.max_steps = None, None, 3000
  out = tmp_path / 'npz'
  assert main.execute(c2, str(out)) == 0
  got = _metrics(out)
  assert got['p'] == 320 and got['frac_recovered'] == ref['frac_recovered']
  assert got['final_loss'] == pytest.approx(ref['final_loss'], rel=1e-4, abs=1e-12)
  assert got['certified'] == ref['certified']
  copy = model_ckpt.load(str(out / 'model'))
  np.testing.assert_array_equal(np.asarray(copy.extras['v']),
                                np.load(tmp_path / 'rf.npz')['V'])
  # Rows of another size than V's columns: one line, before compute.
  np.savez(tmp_path / 'wide.npz', x=np.ones((4, 16)))
  c2.data.path, c2.data.d = str(tmp_path / 'wide.npz'), None
  assert main.execute(c2, str(tmp_path / 'wide')) == 2


def rf_synthetic_config():
  from configs import rf_synthetic  # pylint: disable=import-outside-toplevel
  return rf_synthetic.get_config()


@pytest.mark.parametrize('arrays,needle', [
    (dict(V=np.ones((6, 3)), w=np.ones(6)), "has keys V, w"),
    (dict(V=np.ones((6, 3)), theta=np.ones(5)), r"'theta' of shape \(5,\) \(expected \(6,\)"),
    (dict(V=np.ones(6), theta=np.ones(6)), r"'V' of shape \(6,\) \(expected \(p, d\)\)"),
    (dict(v=np.full((6, 3), np.nan), theta=np.ones(6)), "non-finite values in 'v'"),
    (dict(V=np.array([['a']] * 6), theta=np.ones(6)), "'V' of dtype <U1"),
    (dict(V=np.array([[object()]] * 6, dtype=object), theta=np.ones(6)), 'holds an object array'),
])
def test_random_features_arrays_that_are_not_a_model_are_refused(arrays, needle, tmp_path):
  path = tmp_path / 'bad.npz'
  np.savez(path, **arrays)
  with pytest.raises(foreign.ForeignModelError, match=needle) as e:
    foreign.read_random_features(str(path))
  assert '\n' not in str(e.value) and 'np.savez(path, V=V, theta=theta)' in str(e.value)


def test_random_features_arrays_need_a_path_and_the_right_victim(tmp_path, capsys):
  c = rf_synthetic_config()
  c.victim.format = 'npz'
  assert main.execute(c, str(tmp_path / 'a')) == 2
  assert "victim.checkpoint: required for victim.name 'random_features' with victim.format " \
         "'npz'" in capsys.readouterr().err
  c = two_layer.get_config()
  c.victim.format, c.victim.checkpoint = 'npz', str(tmp_path / 'x.npz')
  assert main.execute(c, str(tmp_path / 'b')) == 2
  assert "victim.format: 'npz' with victim.name 'two_layer'; accepted: 'recon'" in \
      capsys.readouterr().err
  (tmp_path / 'theta.npy').write_bytes(b'')
  np.save(tmp_path / 'theta.npy', np.ones(3))
  with pytest.raises(foreign.ForeignModelError, match='is a single .npy array'):
    foreign.read_random_features(str(tmp_path / 'theta.npy'))


# -- Hostile model files: dtypes, names, widths, layouts (issue 74) --------------------------

def _raw_safetensors(path, tensors):
  from tests.test_data_headers import raw_safetensors  # pylint: disable=import-outside-toplevel
  raw_safetensors(path, tensors)


@pytest.mark.parametrize('dtype,raw_dtype', [
    ('complex64', None), ('int8', None), ('bool', None), ('float8_e4m3fn', 'F8_E4M3')])
def test_parameters_that_are_not_real_floats_are_refused(dtype, raw_dtype, tmp_path):
  state = _state(np.random.default_rng(0), (4, 8, 1))
  path = str(tmp_path / 'm.safetensors')
  if raw_dtype is None:
    save_file({k: v.astype(dtype) for k, v in state.items()}, path)
  else:
    _raw_safetensors(path, {k: (raw_dtype, v.shape, b'\0' * v.size) for k, v in state.items()})
  with pytest.raises(foreign.ForeignModelError, match=f"of dtype {dtype}; accepted with "
                                                      "victim.format 'safetensors'") as e:
    foreign.read_state_dict(path)
  assert '\n' not in str(e.value) and 'float16, bfloat16, float32, float64' in str(e.value)


def test_bfloat16_and_float16_weights_are_read(tmp_path):
  import ml_dtypes  # pylint: disable=import-outside-toplevel
  state = _state(np.random.default_rng(0), (4, 8, 1))
  for dtype in (ml_dtypes.bfloat16, np.float16):
    save_file({k: v.astype(dtype) for k, v in state.items()}, str(tmp_path / 'm.safetensors'))
    _, params, d = foreign.torch_mlp(foreign.read_state_dict(str(tmp_path / 'm.safetensors')),
                                     'relu')
    assert d == 4 and params['layer_0']['kernel'].dtype == dtype


@pytest.mark.parametrize('value', [np.ones((3, 2), np.complex64), np.ones((3, 2), np.int8),
                                   np.ones((3, 2), bool)])
def test_msgpack_and_orbax_params_that_are_not_real_floats_are_refused(value, tmp_path):
  import orbax.checkpoint as ocp  # pylint: disable=import-outside-toplevel
  tree = {'params': {'Dense_0': {'kernel': value, 'bias': np.zeros(2, np.float32)}}}
  (tmp_path / 'p.msgpack').write_bytes(serialization.to_bytes(tree))
  ocp.PyTreeCheckpointer().save(str(tmp_path / 'orbax'), tree)
  for path, fmt in ((tmp_path / 'p.msgpack', 'msgpack'), (tmp_path / 'orbax', 'orbax')):
    with pytest.raises(foreign.ForeignModelError,
                       match=f"has parameter 'Dense_0/kernel' of dtype {value.dtype}; "
                             'accepted: float16, bfloat16, float32, float64'):
      foreign.read_params(str(path), fmt)


@pytest.mark.parametrize('dtype', [np.int8, bool, np.complex128])
def test_random_features_arrays_of_other_dtypes_are_refused(dtype, tmp_path):
  np.savez(tmp_path / 'rf.npz', V=np.ones((6, 3), dtype), theta=np.ones(6))
  with pytest.raises(foreign.ForeignModelError, match=f"'V' of dtype {np.dtype(dtype)}"):
    foreign.random_features_shape(str(tmp_path / 'rf.npz'))


def test_a_zero_width_layer_and_two_names_for_one_layer_are_refused(tmp_path):
  state = {'0.weight': np.zeros((0, 8), np.float32), '2.weight': np.zeros((1, 0), np.float32)}
  with pytest.raises(foreign.ForeignModelError, match=r"'0.weight' has shape \(0, 8\), a layer "
                                                      'of width 0'):
    foreign.torch_mlp(state, 'relu')
  state = _state(np.random.default_rng(0), (4, 8, 1))
  state['00.weight'] = state['0.weight'] * 2
  save_file(state, str(tmp_path / 'm.safetensors'))
  for call in (lambda: foreign.torch_mlp(state, 'relu'),
               lambda: foreign.read_state_dict(str(tmp_path / 'm.safetensors'))):
    with pytest.raises(foreign.ForeignModelError,
                       match="both '0.weight' and '00.weight', which name the same parameter"):
      call()


@pytest.mark.parametrize('bias', [True, False])
def test_a_transposed_weight_is_named_not_its_bias(bias):
  """A 16 -> 800 layer saved (16, 800), i.e. (in, out): the message names the weight, its
  shape, PyTorch's (out, in) layout and d, whether the bias or the next layer tells."""
  rng = np.random.default_rng(0)
  state = {'0.weight': rng.normal(size=(16, 800)).astype(np.float32),
           '2.weight': rng.normal(size=(1, 800)).astype(np.float32)}
  if bias:
    state['0.bias'] = np.zeros(800, np.float32)
  with pytest.raises(foreign.ForeignModelError) as e:
    foreign.torch_mlp(state, 'relu')
  message = str(e.value)
  assert message.startswith("victim.checkpoint: key '0.weight' has shape (16, 800), which looks "
                            'transposed'), message
  assert '(out_features, in_features) = (800, 16)' in message and 'd = 16' in message
  assert 'bias' not in message.split('accepted')[0]


def test_foreign_files_get_their_true_cause(tmp_path):
  """A safetensors file given as an .npz is not 'pickled data'; a folder is a folder."""
  save_file(_state(np.random.default_rng(0), (4, 8, 1)), str(tmp_path / 'm.safetensors'))
  with pytest.raises(foreign.ForeignModelError, match='it looks like a safetensors file') as e:
    foreign.read_random_features(str(tmp_path / 'm.safetensors'))
  assert 'pickle' not in str(e.value)
  for call in (foreign.read_random_features, foreign.read_state_dict,
               lambda p: foreign.read_params(p, 'msgpack')):
    with pytest.raises(foreign.ForeignModelError, match=f'{tmp_path} is a directory'):
      call(str(tmp_path))
    with pytest.raises(foreign.ForeignModelError, match='does not exist'):
      call(str(tmp_path / 'nope'))


def test_an_f8_model_through_the_cli_is_one_line_exit_2(tmp_path, capsys):
  state = _state(np.random.default_rng(0), (8, 16, 1))
  _raw_safetensors(tmp_path / 'f8.safetensors',
                   {k: ('F8_E4M3', v.shape, b'\0' * v.size) for k, v in state.items()})
  c = two_layer.get_config()
  c.data.n, c.data.num_classes, c.attack.knows_init = 4, 1, False
  c.victim.name, c.victim.format, c.victim.activation = 'torch_mlp', 'safetensors', 'relu'
  c.victim.checkpoint = str(tmp_path / 'f8.safetensors')
  assert main.execute(c, str(tmp_path / 'w')) == 2
  err = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
  assert len(err) == 1 and 'of dtype float8_e4m3fn' in err[0], err
  assert not (tmp_path / 'w').exists()


# -- The auditor's module (victim.module) is trusted code that may fail ----------------------

FAILING_MODULES = {
    'raises': ("raise RuntimeError('boom at import')\n",
               "importing '{name}' raised RuntimeError: boom at import"),
    'syntax': ('def f(:\n  pass\n', "importing '{name}' raised SyntaxError: invalid syntax "
                                    '({name}.py, line 1)'),
    'exits': ('import sys\nsys.exit(0)\n', "importing '{name}' raised SystemExit (sys.exit(0))"),
    'forward': ('import flax.linen as nn\nclass MLP(nn.Module):\n  @nn.compact\n'
                "  def __call__(self, x):\n    raise ValueError('forward says no')\n",
                '{name}:MLP raised ValueError: forward says no in its init / forward pass on '
                'inputs of shape (8,)'),
    'no_params': ('import flax.linen as nn\nclass MLP(nn.Module):\n  @nn.compact\n'
                  '  def __call__(self, x):\n    return x.sum(-1, keepdims=True)\n',
                  '{name}:MLP creates no parameters on inputs of shape (8,)'),
}


@pytest.mark.parametrize('case', sorted(FAILING_MODULES))
def test_a_failing_user_module_is_one_line_exit_2_leaving_nothing(case, tmp_path, monkeypatch,
                                                                  capsys):
  """Raises on import, a syntax error, sys.exit(0) on import, raises in its forward pass, no
  parameters: one line naming victim.module and the cause, exit 2, no workdir left."""
  from configs import audit  # pylint: disable=import-outside-toplevel
  name = f'user_{case}_{os.getpid()}'  # a fresh module name: no import cache across tests
  code, needle = FAILING_MODULES[case]
  (tmp_path / f'{name}.py').write_text(code)
  monkeypatch.syspath_prepend(str(tmp_path))
  tree = {'Dense_0': {'kernel': np.ones((8, 4), np.float32), 'bias': np.zeros(4, np.float32)}}
  (tmp_path / 'm.msgpack').write_bytes(serialization.to_bytes(tree))
  np.savez(tmp_path / 'truth.npz', x=np.ones((4, 8)))
  c = audit.get_config()
  c.victim.module, c.victim.checkpoint = f'{name}:MLP', str(tmp_path / 'm.msgpack')
  c.data.path = str(tmp_path / 'truth.npz')
  assert main.execute(c, str(tmp_path / 'w')) == 2
  err = [l for l in capsys.readouterr().err.splitlines() if l.strip()]
  assert len(err) == 1 and err[0].startswith('error: victim.module: '), err
  assert needle.format(name=name) in err[0], err[0]
  assert not (tmp_path / 'w').exists()
