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


# --- Inputs that tell the formulas apart (mutation testing by mutmut, scripts/mutations.py). ---

def test_two_mirror_pairs_and_a_plain_pair_are_each_judged_on_their_own_gap():
  """Sign-blind, three near-duplicate pairs at once: each pair's sign-matched gap is its own
  (a gap summed over all pairs would call the mirror pairs apart)."""
  a, b, c = np.eye(3) * 2.0
  x = np.stack([a, -a * 1.02, b, -b * 1.02, c, c * 1.02])  # gaps 0.04 | 0.04 | 0.04
  radii = np.full(6, 0.006)  # reach 0.012 + 0.0122 > 0.5 * 0.04: none apart
  assert candidate_pairs.unresolved_pairs(x, 0.1, True, radii).tolist() == [[0, 1], [2, 3],
                                                                             [4, 5]]
  tight = np.full(6, 0.004)  # 0.008 + 0.00816 <= 0.02: all apart
  assert candidate_pairs.unresolved_pairs(x, 0.1, True, tight).tolist() == []


def test_pin_balls_that_exactly_touch_half_the_gap_are_apart():
  x = np.array([[4.0, 0.0], [4.0, 0.25], [0.0, 4.0]])  # gap 0.25, ||x_0|| = 4
  at = np.array([candidate_pairs.SEPARATION / 16, 0.0, 0.0])  # 4 r_0 = 0.5 * 0.25 exactly
  assert candidate_pairs.unresolved_pairs(x, 0.1, False, at).tolist() == []
  above = at * (1 + 1e-12)
  assert candidate_pairs.unresolved_pairs(x, 0.1, False, above).tolist() == [[0, 1]]


def test_rows_at_two_norms_are_one_sample_only_for_scale_blind_features():
  x = np.array([[1.0, 0.0, 0.0], [2.5, 0.0, 0.0], [0.0, 1.0, 0.0]])
  assert candidate_pairs.candidate_duplicates(x, 0.1, False) == 0  # the default: norms seen
  assert candidate_pairs.candidate_duplicates(x, 0.1, False, scale_invariant=True) == 1
  assert candidate_pairs.pair_distances(x, False, True)[0, 1] < 1e-12
  assert candidate_pairs.pair_distances(x, False)[0, 1] > 0.5
  rescaled = x * np.array([[3.0], [0.5], [2.0]])
  assert candidate_pairs.restarts_agree([x, rescaled], 0.1, False, scale_invariant=True)
  assert not candidate_pairs.restarts_agree([x, rescaled], 0.1, False)
