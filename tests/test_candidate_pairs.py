"""Near-duplicate candidates (recon/certify/pairs.py): a close pair is two samples only when
its pin balls are well apart; relu's mirror images count only for sign-blind activations;
restarts agree when their sets match row by row."""
import numpy as np

from recon.certify import pairs as candidate_pairs


def test_a_close_pair_is_two_samples_only_when_the_pin_balls_are_well_apart():
  x = np.stack([np.array([2.0, 0.0, 0.0]), np.array([2.0, 0.1, 0.0]), np.array([0.0, 0.0, 2.0])])
  # relative distance 0.05: a near-duplicate pair (0, 1); absolute distance 0.1
  assert candidate_pairs.unresolved_pairs(x, 0.1, False).tolist() == [[0, 1]]
  tight = np.array([0.012, 0.012, 0.5])  # 0.024 + 0.024 <= 0.1 / 2: apart
  assert candidate_pairs.unresolved_pairs(x, 0.1, False, tight).tolist() == []
  loose = np.array([0.012, 0.014, 1e-9])  # 0.024 + 0.028 > 0.05
  assert candidate_pairs.unresolved_pairs(x, 0.1, False, loose).tolist() == [[0, 1]]
  free = np.array([np.inf, 1e-9, 1e-9])
  assert candidate_pairs.unresolved_pairs(x, 0.1, False, free).tolist() == [[0, 1]]
  # Sign-blind: -x_1 is as close to x_0 as x_1 is, and its distance is the sign-matched one.
  flipped = x * np.array([[1.0], [-1.0], [1.0]])
  assert candidate_pairs.unresolved_pairs(flipped, 0.1, False, tight).tolist() == []
  assert candidate_pairs.unresolved_pairs(flipped, 0.1, True, tight).tolist() == []
  assert candidate_pairs.unresolved_pairs(flipped, 0.1, True, loose).tolist() == [[0, 1]]


def test_relu_sign_flips_count_as_duplicates_only_for_sign_ambiguous_activations():
  x = np.eye(3) * 2.0
  x_hat = np.stack([x[0], -x[0] * 1.001, x[2]])
  assert candidate_pairs.candidate_duplicates(x_hat, 0.1, sign_invariant=True) == 1
  assert candidate_pairs.candidate_duplicates(x_hat, 0.1, sign_invariant=False) == 0


def test_restarts_agree_up_to_row_order_and_not_with_a_row_moved():
  x = np.random.default_rng(0).normal(size=(5, 4))
  assert candidate_pairs.restarts_agree([x, x[::-1] * 1.001], 0.1, sign_invariant=False)
  moved = x.copy()
  moved[2] = -moved[2]
  assert not candidate_pairs.restarts_agree([x, moved], 0.1, sign_invariant=False)
  assert candidate_pairs.restarts_agree([x, moved], 0.1, sign_invariant=True)
