"""model.json's fields checked before anything is read (recon.models.saved.check_metadata):
n must be null or >= 1 (0 is refused), and a file written before weight_rng was recorded
reads as 'threefry'. The saved models' round trips are in tests/test_model_checkpoint.py."""
import re

import pytest

from recon.config import choices
from recon.models import saved


def _meta(**hparams):
  return {'kind': 'random_features', 'parts': ['trained'], 'n': 8,
          'hparams': {'p': 64, 'd': 4, 'activation': 'relu', **hparams}}


def test_a_file_without_weight_rng_reads_as_threefry():
  saved.check_metadata(_meta(), 'model.json')  # no 'weight_rng': an older file, accepted
  saved.check_metadata(_meta(weight_rng='threefry'), 'model.json')
  with pytest.raises(saved.ModelCheckpointError,
                     match=r"^victim.checkpoint: model.json: hparams.weight_rng is 'mt'; "
                           rf'accepted: {re.escape(", ".join(choices.WEIGHT_RNGS))}$'):
    saved.check_metadata(_meta(weight_rng='mt'), 'model.json')


@pytest.mark.parametrize('n, ok', [(None, True), (1, True), (0, False), (-3, False),
                                   (True, False), (2.0, False)])
def test_n_is_null_or_a_count(n, ok):
  meta = dict(_meta(), n=n)
  if ok:
    saved.check_metadata(meta, 'model.json')
  else:
    with pytest.raises(saved.ModelCheckpointError,
                       match=rf'^victim.checkpoint: model.json: n is {n!r}; accepted: null or '):
      saved.check_metadata(meta, 'model.json')


def test_a_random_features_model_without_theta_is_refused_naming_what_it_has():
  import numpy as np  # pylint: disable=import-outside-toplevel
  model = saved.ModelCheckpoint(kind='random_features', hparams={'p': 5, 'd': 3},
                                trained={'w': np.zeros(5)}, extras={'v': np.zeros((5, 3))})
  with pytest.raises(saved.ModelCheckpointError,
                     match=r"^victim.checkpoint: m/: trained is missing theta \(keys \['w'\]\); "
                           r"accepted: trained\['theta'\] of shape \(5,\)$"):
    saved.check_arrays(model, 'm/')
  model.trained = {'theta': np.zeros(5)}
  saved.check_arrays(model, 'm/')


@pytest.mark.parametrize('change, line', [
    ({'trained': {'theta': 'ab'}}, r"trained\['theta'\] is of shape \(2,\); accepted: shape \(5,\) "
                                   r'\(hparams.p\)$'),
    ({'extras': {'v': (3, 5)}}, r"extras\['v'\] is of shape \(3, 5\); accepted: shape \(5, 3\) "
                                r'\(hparams p, d\)$'),
    ({'truth': {'x': (4, 2), 'y': (4,)}}, r"truth\['x'\] is of shape \(4, 2\); accepted: shape "
                                          r'\(4, 3\) \(n, hparams.d\)$'),
    ({'truth': {'x': (4, 3), 'y': (3,)}}, r"truth\['y'\] is of shape \(3,\); accepted: shape "
                                          r'\(4,\) \(n\)$')])
def test_a_random_features_models_arrays_of_the_wrong_shape_are_refused_by_name(change, line):
  import numpy as np  # pylint: disable=import-outside-toplevel
  arrays = {'trained': {'theta': (5,)}, 'extras': {'v': (5, 3)},
            'truth': {'x': (4, 3), 'y': (4,)}}
  for part, new in change.items():
    arrays[part] = new
  shaped = {part: {k: np.zeros(len(v) if isinstance(v, str) else v) for k, v in a.items()}
            for part, a in arrays.items()}
  model = saved.ModelCheckpoint(kind='random_features', hparams={'p': 5, 'd': 3}, **shaped)
  with pytest.raises(saved.ModelCheckpointError, match=r'^victim.checkpoint: m/: ' + line):
    saved.check_arrays(model, 'm/')


def test_a_random_features_model_with_its_training_set_is_accepted():
  import numpy as np  # pylint: disable=import-outside-toplevel
  model = saved.ModelCheckpoint(kind='random_features', hparams={'p': 5, 'd': 3}, n=4,
                                trained={'theta': np.zeros(5)}, extras={'v': np.zeros((5, 3))},
                                truth={'x': np.zeros((4, 3)), 'y': np.zeros(4)})
  saved.check_arrays(model, 'm/')


def test_integer_or_non_finite_parameters_are_refused_by_name():
  import numpy as np  # pylint: disable=import-outside-toplevel
  from recon.models import param_checks  # pylint: disable=import-outside-toplevel

  def model(theta, **extra):
    return saved.ModelCheckpoint(kind='random_features', hparams={'p': 3, 'd': 2},
                                 trained={'theta': theta}, extras={'v': np.zeros((3, 2))}, **extra)

  with pytest.raises(saved.ModelCheckpointError,
                     match=r"^victim.checkpoint: m/: trained is parameter 'theta' of dtype int32; "
                           rf'accepted: {re.escape(param_checks.ACCEPTED)}$'):
    saved.check_arrays(model(np.zeros(3, np.int32)), 'm/')
  with pytest.raises(saved.ModelCheckpointError,
                     match=r"^victim.checkpoint: m/: trained\['theta'\] is non-finite \(2 of 3 "
                           r'entries NaN/inf\); accepted: finite values$'):
    saved.check_arrays(model(np.array([1.0, np.nan, np.inf])), 'm/')
