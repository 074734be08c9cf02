"""Mutation testing, by mutmut, of the modules that decide verdicts, privacy and safety.

mutmut (3.8.1, `pip install mutmut==3.8.1`) writes every mutant of a module it can generate
(an operator swapped, a constant changed, an argument dropped, a call replaced by None, ...)
and runs, for each, the tests that reach the mutated function (`pytest -x -q`, here
`-n 0 -m "not slow"`) in a forked worker; a mutant whose tests all pass survived.

Each shard of `SHARDS` is one module (or one tight pair) with the fast tests that import it.
A shard runs in its own clone of HEAD under `--work` (the tool rewrites the copy of `recon/`
it tests, never this checkout), with a `[mutmut]` section written into that clone's setup.cfg:
only that module mutated, only those tests selected; `raise` statements (the error messages
of bad input) and logging lines are not mutated. Shards run one after the other (`--workers`
forked test processes each: 2 fit this 2-core machine); `--sample=N` runs a fixed,
seed-free sample of N mutants per shard (the first N by the SHA-256 of their names), so a
shard that has thousands of mutants still fits the time; the sample is recorded.

Each survivor is triaged in `TRIAGE`: the test that kills it (re-run: it must now be killed)
or a one-line argument why it is equivalent (no input can tell it from the original).
Results: results/mutations.{json,md}: per shard the mutants generated and run, killed /
survived / equivalent / timeout / no tests, the score (killed + timeout over the
non-equivalent mutants run), and every survivor with its diff and triage.

    python -m scripts.mutations --sample=40                 # every shard, 40 mutants each
    python -m scripts.mutations --shards=certificate,symmetry --sample=0   # all their mutants
    python -m scripts.mutations --shards=metrics --rerun      # the mutants of a finished run again
    python -m scripts.mutations --list
"""
from __future__ import annotations

import dataclasses
import datetime
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from typing import Dict, List, Optional, Sequence, Tuple

from absl import app, flags

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
FLAGS = flags.FLAGS
TOOL = 'mutmut==3.8.1'


@dataclasses.dataclass(frozen=True)
class Shard:
  """One module (`modules`, paths in the repository) and the fast tests that import it."""
  name: str
  modules: Tuple[str, ...]
  tests: Tuple[str, ...]


# Priority order: the certificate and its checks, the symmetry rule, the pairs, the metric,
# records and verdicts, privacy, the workdir's safety, the leak-width fit, the loaders.
SHARDS: Tuple[Shard, ...] = (
    Shard('certificate', ('recon/certify/certificate.py',), ('tests/test_certificate.py',)),
    Shard('symmetry', ('recon/certify/symmetry.py',), ('tests/test_symmetry.py',)),
    Shard('pairs', ('recon/certify/pairs.py',), ('tests/test_candidate_pairs.py',)),
    Shard('metrics', ('recon/metrics.py',), ('tests/test_metrics.py', 'tests/test_image_metrics.py')),
    Shard('records', ('recon/report/records.py',), ('tests/test_records.py',)),
    Shard('scoring', ('recon/report/scoring.py',), ('tests/test_records.py',)),
    Shard('privacy', ('recon/models/privacy.py',), ('tests/test_defences.py',)),
    Shard('defences', ('recon/models/defences.py',), ('tests/test_defences.py',)),
    Shard('workdir_lock', ('recon/runtime/workdir_lock.py',), ('tests/test_workdir_lock.py',)),
    Shard('io', ('recon/runtime/io.py',), ('tests/test_io.py',)),
    Shard('checkpoint', ('recon/runtime/checkpoint.py',), ('tests/test_checkpoint.py',)),
    Shard('leak_width', ('recon/audit/leak_width.py',),
          ('tests/test_leak_width.py', 'tests/test_leak_width_fit.py')),
    Shard('foreign', ('recon/models/foreign.py', 'recon/models/torch_state.py'),
          ('tests/test_foreign.py', 'tests/test_foreign_variables.py')),
    Shard('saved', ('recon/models/saved.py',),
          ('tests/test_model_checkpoint.py', 'tests/test_model_metadata.py')),
    Shard('residual_jacobian', ('recon/certify/residual_jacobian.py',),
          ('tests/test_residual_jacobian.py',)),
    Shard('ceiling', ('recon/certify/ceiling.py',), ('tests/test_certificate_ceiling.py',)),
    Shard('row_search', ('recon/certify/row_search.py',), ('tests/test_row_search.py',)),
    Shard('ownership', ('recon/runtime/ownership.py',), ('tests/test_ownership.py',)),
)

# Statements left unmutated (regexes on a line; mutmut skips the whole statement).
DO_NOT_MUTATE = (r'^\s*raise\b', r'^\s*logging\.', r'^\s*print\(', r'^\s*warnings\.warn\(')

# Every survivor of the recorded run: ('test', node id that now kills it) or
# ('equivalent', why no input tells it from the original). Keyed by mutmut's mutant name.
TRIAGE: Dict[str, Tuple[str, str]] = {
    # recon/certify/certificate.py
    'recon.certify.certificate.x__jacobian_spectrum__mutmut_68': ('test', 'tests/test_certificate.py::test_each_jacobian_method_reports_its_own_spectrum_and_row_radius_kind'),
    'recon.certify.certificate.x__jacobian_spectrum__mutmut_98': ('test', 'tests/test_certificate.py::test_each_jacobian_method_reports_its_own_spectrum_and_row_radius_kind'),
    'recon.certify.certificate.x__jacobian_spectrum__mutmut_112': ('test', 'tests/test_certificate.py::test_each_jacobian_method_reports_its_own_spectrum_and_row_radius_kind'),
    'recon.certify.certificate.x_certify__mutmut_132': ('test', 'tests/test_certificate.py::test_a_square_system_is_not_enough'),
    'recon.certify.certificate.x_certify__mutmut_175': ('test', 'tests/test_certificate.py::test_counting_failed_means_no_jacobian_even_with_a_feature_map'),
    'recon.certify.certificate.x_certify__mutmut_203': ('test', 'tests/test_certificate.py::test_the_certificate_records_the_spectrum_it_used'),
    'recon.certify.certificate.x_certify__mutmut_288': ('test', 'tests/test_certificate.py::test_the_certificate_records_the_spectrum_it_used'),
    'recon.certify.certificate.x_certify__mutmut_406': ('test', 'tests/test_certificate.py::test_an_unresolved_pair_at_tol_says_its_radii_do_not_keep_it_apart'),
    'recon.certify.certificate.x_certify__mutmut_407': ('test', 'tests/test_certificate.py::test_an_unresolved_pair_at_tol_says_its_radii_do_not_keep_it_apart'),
    'recon.certify.certificate.x_row_radii__mutmut_19': ('test', 'tests/test_certificate.py::test_row_radii_are_the_certificates_per_row_radii'),
    'recon.certify.certificate.x_row_radii__mutmut_26': ('test', 'tests/test_certificate.py::test_row_radii_are_the_certificates_per_row_radii'),
    'recon.certify.certificate.x_verdict__mutmut_29': ('test', 'tests/test_certificate.py::test_the_certified_verdict_names_no_duplicates_or_the_pairs_pinned_apart'),
    'recon.certify.certificate.x_tangent_jacobian__mutmut_28': ('equivalent', "rcond=None is lstsq's default since NumPy 2.0 (here 2.4.6); under 1.26 the default -1 differs only for singular values of Phi below machine epsilon"),
    'recon.certify.certificate.x_unseen_share_from_gram__mutmut_19': ('equivalent', 'G_ii (G^-1)_ii >= 1 for every positive definite G (Cauchy-Schwarz), so a clamp at 1 binds only on a rounding below 1 (kappa moves by ~1e-16); a singular or indefinite G returns 1.0 either way'),
    # recon/certify/symmetry.py
    'recon.certify.symmetry.x_homogeneity_degree__mutmut_3': ('test', 'tests/test_symmetry.py::test_an_activation_infinite_at_one_grid_point_has_no_degree'),
    'recon.certify.symmetry.x_homogeneity_degree__mutmut_23': ('test', 'tests/test_symmetry.py::test_an_activation_infinite_at_one_grid_point_has_no_degree'),
    'recon.certify.symmetry.xǁSymmetryǁwith_scale__mutmut_6': ('test', 'tests/test_symmetry.py::test_a_symmetry_measured_blind_to_the_norm_says_so'),
    'recon.certify.symmetry.x_homogeneity_degree__mutmut_7': ('equivalent', 'under enable_x64 an activation of a float64 input is float64: the cast is a no-op'),
    'recon.certify.symmetry.x_homogeneity_degree__mutmut_9': ('equivalent', 'under enable_x64 an activation of a float64 input is float64: the cast is a no-op'),
    'recon.certify.symmetry.x_parity_masses__mutmut_14': ('equivalent', 'z is a float64 NumPy array and x64 is on: jnp.asarray(z) is float64 with or without the dtype'),
    'recon.certify.symmetry.x_parity_masses__mutmut_19': ('equivalent', 'under enable_x64 an activation of a float64 input is float64: the cast is a no-op'),
    'recon.certify.symmetry.x_feature_map_scale_blind__mutmut_11': ('equivalent', 'float32 features: without the cast only the dot products run in float32, 1 - cos off by ~1e-7, an order below FEATURE_SCALE_ATOL = 1e-6 (not exact: a map of ~1e7 features could cross it)'),
    'recon.certify.symmetry.x_feature_map_scale_blind__mutmut_21': ('equivalent', 'as mutmut_11: float32 dot products, 1 - cos off by ~1e-7 against FEATURE_SCALE_ATOL = 1e-6'),
    # recon/certify/pairs.py
    'recon.certify.pairs.x_candidate_duplicates__mutmut_1': ('test', 'tests/test_candidate_pairs.py::test_rows_at_two_norms_are_one_sample_only_for_scale_blind_features'),
    'recon.certify.pairs.x_pair_distances__mutmut_17': ('test', 'tests/test_candidate_pairs.py::test_rows_at_two_norms_are_one_sample_only_for_scale_blind_features'),
    'recon.certify.pairs.x_restarts_agree__mutmut_10': ('test', 'tests/test_candidate_pairs.py::test_rows_at_two_norms_are_one_sample_only_for_scale_blind_features'),
    'recon.certify.pairs.x_restarts_agree__mutmut_14': ('test', 'tests/test_candidate_pairs.py::test_rows_at_two_norms_are_one_sample_only_for_scale_blind_features'),
    'recon.certify.pairs.x_unresolved_pairs__mutmut_50': ('test', 'tests/test_candidate_pairs.py::test_two_mirror_pairs_and_a_plain_pair_are_each_judged_on_their_own_gap'),
    'recon.certify.pairs.x_unresolved_pairs__mutmut_71': ('test', 'tests/test_candidate_pairs.py::test_pin_balls_that_exactly_touch_half_the_gap_are_apart'),
    'recon.certify.pairs.x_unresolved_pairs__mutmut_20': ('equivalent', 'pair_distances puts inf on the diagonal, so triu with k = 0 adds no pair'),
    'recon.certify.pairs.x_unresolved_pairs__mutmut_27': ('equivalent', 'radii None with pairs: np.asarray(None, float64) is nan, never finite, so every pair is returned, as the early return does'),
    'recon.certify.pairs.x_unresolved_pairs__mutmut_60': ('equivalent', "the callers' radii are float64 (certificate._radii) or Python floats, float64 with or without the cast"),
    'recon.certify.pairs.x_unresolved_pairs__mutmut_69': ('equivalent', 'radii >= 0: reach_i - reach_j is non-finite exactly when reach_i + reach_j is (inf - inf = nan, inf +- x = +-inf); a finite sum that overflows fails the second clause anyway'),
    # recon/report/records.py
    'recon.report.records.x_build__mutmut_8': ('test', 'tests/test_records.py::test_a_float32_file_is_scored_in_float64'),
    'recon.report.records.x_build__mutmut_49': ('equivalent', 'matched is read only through bool(matched[i]): 1.0 / 0.0 read as True / False'),
    # recon/models/privacy.py
    'recon.models.privacy.x_add_release_noise__mutmut_39': ('test', 'tests/test_defences.py::test_release_noise_is_drawn_in_the_arrays_dtype_and_recorded_with_its_rule'),
    'recon.models.privacy.x_describe_release__mutmut_8': ('test', 'tests/test_defences.py::test_release_noise_is_drawn_in_the_arrays_dtype_and_recorded_with_its_rule'),
    'recon.models.privacy.x_describe_release__mutmut_10': ('test', 'tests/test_defences.py::test_release_noise_is_drawn_in_the_arrays_dtype_and_recorded_with_its_rule'),
    'recon.models.privacy.x_dp_event__mutmut_4': ('test', 'tests/test_defences.py::test_the_accountants_event_is_sampled_only_below_rate_one'),
    'recon.models.privacy.x_resolve__mutmut_17': ('test', 'tests/test_defences.py::test_the_mechanism_record_names_its_noise_and_its_source'),
    'recon.models.privacy.x_resolve__mutmut_37': ('test', 'tests/test_defences.py::test_the_mechanism_record_names_its_noise_and_its_source'),
    'recon.models.privacy.x_dp_optimizer__mutmut_10': ('equivalent', 'at q = 1 the extra optax.scale(1.0) multiplies by exactly 1'),
    'recon.models.privacy.x_noise_multiplier_for__mutmut_19': ('equivalent', "the accountant's default is 'rdp': the PLD search's RDP guess is the same call"),
    'recon.models.privacy.x_resolve__mutmut_28': ('test', 'tests/test_defences.py::test_a_pld_target_epsilon_is_met_by_the_pld_accountants_own_noise'),
    # recon/models/defences.py
    'recon.models.defences.x_active__mutmut_3': ('test', 'tests/test_defences.py::test_any_one_defence_is_active'),
    'recon.models.defences.x_train_network_params__mutmut_3': ('test', 'tests/test_defences.py::test_a_dp_victim_moves_at_most_lr_times_the_clip_bound_per_step'),
    'recon.models.defences.x_train_network_params__mutmut_26': ('test', 'tests/test_defences.py::test_weight_decay_shrinks_a_victim_at_zero_residual'),
    'recon.models.defences.x_train_network_params__mutmut_29': ('test', 'tests/test_defences.py::test_a_dp_victim_moves_at_most_lr_times_the_clip_bound_per_step'),
    'recon.models.defences.x_train_network_params__mutmut_36': ('test', 'tests/test_defences.py::test_a_dp_victim_moves_at_most_lr_times_the_clip_bound_per_step'),
    'recon.models.defences.x_train_network_params__mutmut_44': ('test', 'tests/test_defences.py::test_a_dp_victim_moves_at_most_lr_times_the_clip_bound_per_step'),
    'recon.models.defences.x_train_network_params__mutmut_48': ('test', 'tests/test_defences.py::test_a_dp_victim_moves_at_most_lr_times_the_clip_bound_per_step'),
    'recon.models.defences.x_train_network_params__mutmut_63': ('test', 'tests/test_defences.py::test_a_dp_victim_moves_at_most_lr_times_the_clip_bound_per_step'),
    'recon.models.defences.x_train_network_params__mutmut_76': ('test', 'tests/test_defences.py::test_dp_runs_exactly_max_steps_whatever_the_loss'),
    'recon.models.defences.x_train_network_params__mutmut_81': ('test', 'tests/test_defences.py::test_a_dp_victim_moves_at_most_lr_times_the_clip_bound_per_step'),
    # recon/runtime/checkpoint.py
    'recon.runtime.checkpoint.x__read_meta__mutmut_18': ('equivalent', "no file 'METADATA': the orbax fallback restores the same JSON item (it only starts JAX to do so)"),
    'recon.runtime.checkpoint.x_read_inputs__mutmut_6': ('test', 'tests/test_checkpoint.py::test_read_inputs_is_the_input_record_of_the_newest_readable_checkpoint'),
    'recon.runtime.checkpoint.x__read_meta__mutmut_23': ('equivalent', "orbax writes the metadata with json's ASCII escapes (caf\\u00e9): the file is ASCII, read alike in every ASCII-compatible locale encoding (Latin-1: tests/test_checkpoint.py::test_metadata_is_read_as_utf8_whatever_the_locale)"),
    'recon.runtime.checkpoint.xǁRunCheckpointerǁ__call____mutmut_5': ('test', 'tests/test_checkpoint.py::test_the_time_trigger_saves_once_every_every_seconds'),
    'recon.runtime.checkpoint.xǁRunCheckpointerǁ__call____mutmut_27': ('equivalent', 'after an interrupt the checkpointer is closed and the run raises: the stored save time is never read again'),
    'recon.runtime.checkpoint.xǁRunCheckpointerǁ_restore_step__mutmut_4': ('test', 'tests/test_checkpoint.py::test_a_callable_template_is_given_the_aux_saved_with_the_checkpoint'),
    'recon.runtime.checkpoint.xǁRunCheckpointerǁ_restore_step__mutmut_12': ('test', 'tests/test_checkpoint.py::test_a_callable_template_is_given_the_aux_saved_with_the_checkpoint'),
    'recon.runtime.checkpoint.xǁRunCheckpointerǁ_restore_step__mutmut_14': ('test', 'tests/test_checkpoint.py::test_a_callable_template_is_given_the_aux_saved_with_the_checkpoint'),
    'recon.runtime.checkpoint.xǁRunCheckpointerǁrestore__mutmut_12': ('test', 'tests/test_checkpoint.py::test_an_unreadable_checkpoint_is_set_aside_under_a_free_name_with_its_reason'),
    'recon.runtime.checkpoint.x_on_sigint__mutmut_5': ('test', 'tests/test_checkpoint.py::test_the_first_signal_asks_an_active_checkpointer_to_save_the_second_stops'),
    'recon.runtime.checkpoint.x_unreadable_dir__mutmut_5': ('test', 'tests/test_checkpoint.py::test_an_unreadable_checkpoint_is_set_aside_under_a_free_name_with_its_reason'),
    'recon.runtime.checkpoint.xǁRunCheckpointerǁ_set_aside__mutmut_7': ('test', 'tests/test_checkpoint.py::test_an_unreadable_checkpoint_is_set_aside_under_a_free_name_with_its_reason'),
    'recon.runtime.checkpoint.xǁRunCheckpointerǁ_set_aside__mutmut_22': ('test', 'tests/test_checkpoint.py::test_an_unreadable_checkpoint_is_set_aside_under_a_free_name_with_its_reason'),
    'recon.runtime.checkpoint.xǁRunCheckpointerǁ_set_aside__mutmut_35': ('test', 'tests/test_checkpoint.py::test_an_unreadable_checkpoint_is_set_aside_under_a_free_name_with_its_reason'),
    'recon.runtime.checkpoint.xǁRunCheckpointerǁ_set_aside__mutmut_37': ('test', 'tests/test_checkpoint.py::test_an_unreadable_checkpoint_is_set_aside_under_a_free_name_with_its_reason'),
    # recon/metrics.py
    'recon.metrics.x_normalized_rows__mutmut_10': ('test', 'tests/test_metrics.py::test_normalized_rows_remove_each_rows_own_mean'),
    'recon.metrics.x_per_sample_ssim__mutmut_6': ('test', 'tests/test_metrics.py::test_per_sample_ssim_uses_the_filter_size_it_is_given'),
    # recon/certify/residual_jacobian.py
    'recon.certify.residual_jacobian.x_damped_solve__mutmut_7': ('test', 'tests/test_residual_jacobian.py::test_the_transpose_apply_and_the_damped_solve_equal_the_dense_jacobians'),
    'recon.certify.residual_jacobian.x_damped_solve__mutmut_64': ('test', 'tests/test_residual_jacobian.py::test_the_transpose_apply_and_the_damped_solve_equal_the_dense_jacobians'),
    'recon.certify.residual_jacobian.x_damped_solve__mutmut_74': ('test', 'tests/test_residual_jacobian.py::test_the_transpose_apply_and_the_damped_solve_equal_the_dense_jacobians'),
    'recon.certify.residual_jacobian.x_transpose_apply__mutmut_22': ('test', 'tests/test_residual_jacobian.py::test_the_transpose_apply_and_the_damped_solve_equal_the_dense_jacobians'),
    'recon.certify.residual_jacobian.x_gram_operator__mutmut_10': ('equivalent', 'the vectors are copied into a float64 buffer next (padded[:k] = v.T), which casts whatever real dtype v has, as the asarray cast did'),
    'recon.certify.residual_jacobian.x_smallest_singular_value__mutmut_121': ("equivalent", "without matmat scipy's LinearOperator applies the preconditioner's matvec column by column: the same einsum per column"),
    'recon.certify.residual_jacobian.x_smallest_singular_value__mutmut_41': ('equivalent', "the scale only sets lambda_max's LOBPCG tolerance (1e-8 scale); ||probe||^2 ~ m(d-1) times looser moves lambda_max by ~tol^2/gap (measured: sigma_max still equal to the dense one to 1e-10; not exact for a huge m(d-1))"),
    'recon.certify.residual_jacobian.x_stats__mutmut_121': ('equivalent', 'Stats.theta_norm is read by no caller (the certificate computes its own norm of theta)'),
    'recon.runtime.checkpoint.xǁRunCheckpointerǁ__call____mutmut_36': ('test', 'tests/test_checkpoint.py::test_the_first_signal_asks_an_active_checkpointer_to_save_the_second_stops'),
    'recon.runtime.checkpoint.xǁRunCheckpointerǁ_save__mutmut_25': ('test', 'tests/test_checkpoint.py::test_a_signal_during_a_save_waits_for_the_save'),
    # recon/audit/leak_width.py
    'recon.audit.leak_width.x__write_bound__mutmut_26': ('test', 'tests/test_leak_width.py::test_shadows_of_one_outcome_write_the_bound'),
    'recon.audit.leak_width.x__write_bound__mutmut_32': ('test', 'tests/test_leak_width.py::test_shadows_of_one_outcome_write_the_bound'),
    'recon.audit.leak_width.x__write_bound__mutmut_76': ('test', 'tests/test_leak_width.py::test_shadows_of_one_outcome_write_the_bound'),
    'recon.audit.leak_width.x_check__mutmut_18': ('test', 'tests/test_leak_width.py::test_the_smallest_shadow_size_is_2_and_an_empty_axis_is_refused'),
    'recon.audit.leak_width.x_check__mutmut_42': ('test', 'tests/test_leak_width.py::test_the_smallest_shadow_size_is_2_and_an_empty_axis_is_refused'),
    'recon.audit.leak_width.x_cost_line__mutmut_13': ('test', 'tests/test_leak_width.py::test_the_cost_line_counts_runs_and_compiled_groups_per_family'),
    'recon.audit.leak_width.x_run__mutmut_110': ('test', 'tests/test_leak_width.py::test_a_prediction_from_shadows_writes_its_fit_trend_and_runs'),
    'recon.audit.leak_width.x_run__mutmut_146': ('test', 'tests/test_leak_width.py::test_a_prediction_from_shadows_writes_its_fit_trend_and_runs'),
    'recon.audit.leak_width.x_run__mutmut_158': ('test', 'tests/test_leak_width.py::test_a_prediction_from_shadows_writes_its_fit_trend_and_runs'),
    'recon.audit.leak_width.x_run__mutmut_179': ('test', 'tests/test_leak_width.py::test_a_prediction_from_shadows_writes_its_fit_trend_and_runs'),
    'recon.audit.leak_width.x_run__mutmut_234': ('test', 'tests/test_leak_width.py::test_a_prediction_from_shadows_writes_its_fit_trend_and_runs'),
    'recon.audit.leak_width.x_run__mutmut_244': ('test', 'tests/test_leak_width.py::test_a_prediction_from_shadows_writes_its_fit_trend_and_runs'),
    'recon.audit.leak_width.x_run__mutmut_264': ('test', 'tests/test_leak_width.py::test_a_prediction_from_shadows_writes_its_fit_trend_and_runs'),
    'recon.audit.leak_width.x_run__mutmut_74': ('test', 'tests/test_leak_width.py::test_shadows_of_one_outcome_write_the_bound'),
    'recon.audit.leak_width.x_run__mutmut_9': ('test', 'tests/test_leak_width.py::test_a_prediction_from_shadows_writes_its_fit_trend_and_runs'),
    'recon.audit.leak_width.x_run__mutmut_92': ('test', 'tests/test_leak_width.py::test_a_prediction_from_shadows_writes_its_fit_trend_and_runs'),
    'recon.audit.leak_width.x_shadow_config__mutmut_17': ('test', 'tests/test_leak_width.py::test_the_shadows_config_is_the_auditors_on_synthetic_data_without_its_files'),
    'recon.audit.leak_width.x_shadow_config__mutmut_20': ('test', 'tests/test_leak_width.py::test_the_shadows_config_is_the_auditors_on_synthetic_data_without_its_files'),
    'recon.audit.leak_width.x_shadow_config__mutmut_54': ('test', 'tests/test_leak_width.py::test_the_shadows_config_is_the_auditors_on_synthetic_data_without_its_files'),
    'recon.audit.leak_width.x_shadow_records_rf__mutmut_13': ('test', 'tests/test_leak_width.py::test_random_features_shadows_scale_the_ratio_to_the_subspace_and_read_back_records'),
    'recon.audit.leak_width.x_shadow_records_rf__mutmut_14': ('test', 'tests/test_leak_width.py::test_random_features_shadows_scale_the_ratio_to_the_subspace_and_read_back_records'),
    'recon.audit.leak_width.x_shadow_records_rf__mutmut_31': ('test', 'tests/test_leak_width.py::test_random_features_shadows_scale_the_ratio_to_the_subspace_and_read_back_records'),
    'recon.audit.leak_width.x_shadow_records_rf__mutmut_48': ('test', 'tests/test_leak_width.py::test_random_features_shadows_scale_the_ratio_to_the_subspace_and_read_back_records'),
    'recon.audit.leak_width.x_shadow_records_two_layer__mutmut_79': ('test', 'tests/test_leak_width.py::test_two_layer_shadows_run_one_sweep_per_n_at_the_widths_of_the_ratios'),
    # recon/models/foreign.py
    'recon.models.foreign.x__split_variables__mutmut_11': ('test', 'tests/test_foreign_variables.py::test_flax_variables_split_into_params_and_the_other_collections'),
    'recon.models.foreign.x_read_variables__mutmut_2': ('test', 'tests/test_foreign_variables.py::test_a_refusal_names_victim_checkpoint_unless_told_another_field'),
    'recon.models.foreign.x_check_params_fit__mutmut_44': ('test', 'tests/test_foreign_variables.py::test_params_of_the_right_shapes_with_a_non_finite_weight_are_refused_by_name'),
    'recon.models.foreign.x_check_params_fit__mutmut_51': ('test', 'tests/test_foreign_variables.py::test_params_of_the_right_shapes_with_a_non_finite_weight_are_refused_by_name'),
    'recon.models.foreign.x_check_params_fit__mutmut_15': ('equivalent', "want is a Flax module's params, a tree of dicts: every key on its paths is a DictKey, which has .key"),
    # recon/models/saved.py
    'recon.models.saved.x_check_arrays__mutmut_110': ('test', 'tests/test_model_metadata.py::test_a_random_features_model_with_its_training_set_is_accepted'),
    'recon.models.saved.x_check_arrays__mutmut_111': ('test', 'tests/test_model_metadata.py::test_a_random_features_model_with_its_training_set_is_accepted'),
    'recon.models.saved.x_check_arrays__mutmut_22': ('test', 'tests/test_model_metadata.py::test_a_random_features_model_without_theta_is_refused_naming_what_it_has'),
    'recon.models.saved.x_check_arrays__mutmut_24': ('test', 'tests/test_model_metadata.py::test_a_random_features_model_without_theta_is_refused_naming_what_it_has'),
    'recon.models.saved.x_check_arrays__mutmut_25': ('test', 'tests/test_model_metadata.py::test_a_random_features_model_without_theta_is_refused_naming_what_it_has'),
    'recon.models.saved.x_check_arrays__mutmut_47': ('test', 'tests/test_model_metadata.py::test_a_random_features_models_arrays_of_the_wrong_shape_are_refused_by_name'),
    'recon.models.saved.x_check_arrays__mutmut_59': ('test', 'tests/test_model_metadata.py::test_a_random_features_models_arrays_of_the_wrong_shape_are_refused_by_name'),
    'recon.models.saved.x_check_arrays__mutmut_68': ('test', 'tests/test_model_metadata.py::test_a_random_features_models_arrays_of_the_wrong_shape_are_refused_by_name'),
    'recon.models.saved.x_check_metadata__mutmut_21': ('test', 'tests/test_model_metadata.py::test_n_is_null_or_a_count'),
    'recon.models.saved.x_check_metadata__mutmut_82': ('test', 'tests/test_model_metadata.py::test_a_file_without_weight_rng_reads_as_threefry'),
    'recon.models.saved.x_check_metadata__mutmut_88': ('test', 'tests/test_model_metadata.py::test_a_file_without_weight_rng_reads_as_threefry'),
    'recon.models.saved.x_check_metadata__mutmut_94': ('test', 'tests/test_model_metadata.py::test_a_file_without_weight_rng_reads_as_threefry'),
    'recon.models.saved.x_check_arrays__mutmut_155': ('test', 'tests/test_model_metadata.py::test_integer_or_non_finite_parameters_are_refused_by_name'),
    'recon.models.saved.x_check_arrays__mutmut_167': ('test', 'tests/test_model_metadata.py::test_integer_or_non_finite_parameters_are_refused_by_name'),
    'recon.models.saved.x_check_arrays__mutmut_193': ('test', 'tests/test_model_metadata.py::test_integer_or_non_finite_parameters_are_refused_by_name'),
    'recon.models.saved.x_check_arrays__mutmut_195': ('test', 'tests/test_model_metadata.py::test_integer_or_non_finite_parameters_are_refused_by_name'),
    # recon/runtime/workdir_lock.py
    'recon.runtime.workdir_lock.x_acquire__mutmut_41': ('equivalent', "ftruncate(fd, 1) keeps at most the first byte, and the pid written at offset 0 ('N\\n', >= 2 bytes) always covers it"),
    'recon.runtime.workdir_lock.x_owner__mutmut_10': ('equivalent', "codec names are case-insensitive: 'ASCII' is 'ascii'"),
    'recon.runtime.workdir_lock.x_owner__mutmut_2': ('test', 'tests/test_workdir_lock.py::test_owner_reads_the_recorded_pid_or_none'),
    # recon/runtime/io.py
    'recon.runtime.io.x_umask__mutmut_3': ('test', 'tests/test_io.py::test_umask_is_read_from_proc_without_setting_it'),
    'recon.runtime.io.x_umask__mutmut_5': ('test', 'tests/test_io.py::test_umask_is_read_from_proc_without_setting_it'),
    'recon.runtime.io.x_write_figure__mutmut_7': ('test', 'tests/test_io.py::test_a_figure_is_written_as_png_at_its_dpi'),
    'recon.models.defences.x_train_network_params__mutmut_86': ('test', 'tests/test_defences.py::test_a_dp_victims_noise_is_sigma_clip_over_the_expected_batch'),
}

# What a shard's score means beyond its counts (shown beside it in results/mutations.md).
SHARD_NOTES: Dict[str, str] = {
    'scoring': 'report() and write_audit() are reached only by whole runs (the slow tier): '
               "the fast tier's score here is not the module's",
    'defences': 'the utility of a defended victim (held_out, network_utility, '
                'regression_utility) is reached only by the slow end-to-end runs',
    'workdir_lock': "its tests are tests/test_workdir_lock.py's (the whole of "
                    "tests/test_reliability.py failed mutmut's stats run; its two whole-run "
                    'lock tests stay there)',
    'io': "its tests are tests/test_io.py's (see workdir_lock)",
}

# mutmut's exit codes (mutmut/stats.py) folded into the outcomes reported here.
_STATUS = {1: 'killed', 3: 'killed', 0: 'survived', 5: 'no tests', 33: 'no tests',
           36: 'timeout', 24: 'timeout', -24: 'timeout', 152: 'timeout', 255: 'timeout'}


def by_name(names: Optional[Sequence[str]] = None) -> List[Shard]:
  if not names:
    return list(SHARDS)
  known = {s.name: s for s in SHARDS}
  unknown = [n for n in names if n not in known]
  if unknown:
    raise ValueError(f'error: --shards: unknown {", ".join(unknown)}; accepted: '
                     f'{", ".join(known)}')
  return [known[n] for n in names]


def config_section(shard: Shard, workers_tests: Sequence[str]) -> str:
  """The `[mutmut]` section of the shard's clone: its module mutated, its tests selected."""
  lines = ['', '[mutmut]', 'source_paths = recon', 'only_mutate =']
  lines += [f'    {m}' for m in shard.modules]
  lines += ['also_copy =', '    configs', '    scripts', '    docs', '    results',
            '    README.md', 'pytest_add_cli_args_test_selection =']
  lines += [f'    {t}' for t in workers_tests]
  lines += ['pytest_add_cli_args =', '    -n', '    0', '    -m', '    not slow', '    -p',
            '    no:cacheprovider', 'do_not_mutate_patterns =']
  lines += [f'    {p}' for p in DO_NOT_MUTATE]
  lines += ['process_isolation = forkserver', '']
  return '\n'.join(lines)


def prepare(work: str, shard: Shard) -> str:
  """A fresh clone of HEAD for the shard, with its [mutmut] section; its path."""
  path = os.path.join(work, shard.name)
  if os.path.isdir(path):
    shutil.rmtree(path)
  subprocess.run(['git', 'clone', '-q', '--no-hardlinks', ROOT, path], check=True)
  tests = [t for t in shard.tests if os.path.isfile(os.path.join(path, t))]
  if not tests:
    raise ValueError(f'error: shard {shard.name}: none of its tests exist at HEAD: '
                     f'{", ".join(shard.tests)}')
  with open(os.path.join(path, 'setup.cfg'), 'a', encoding='utf-8') as f:
    f.write(config_section(shard, tests))
  return path


def _mutmut(path: str, args: Sequence[str], timeout: Optional[float] = None,
            log: Optional[str] = None) -> subprocess.CompletedProcess:
  env = dict(os.environ, PYTHONPATH=os.pathsep.join(
      p for p in (os.environ.get('MUTMUT_PATH'),) if p))
  cmd = [sys.executable, '-c', 'import sys; from mutmut.__main__ import cli; '
         'sys.argv[0] = "mutmut"; cli()'] + list(args)
  out = open(log, 'a', encoding='utf-8') if log else subprocess.PIPE
  try:
    return subprocess.run(cmd, cwd=path, env=env, stdout=out, stderr=subprocess.STDOUT,
                          text=True, timeout=timeout)
  finally:
    if log:
      out.close()


def generate(path: str) -> None:
  """mutmut's mutants of the shard's module, written under PATH/mutants (no test is run)."""
  code = ('import os; os.makedirs("mutants", exist_ok=True)\n'
          'from mutmut.__main__ import create_mutants\n'
          'from mutmut.utils.file_utils import copy_src_dir, copy_also_copy_files, '
          'setup_source_paths\n'
          'from mutmut.__main__ import store_lines_covered_by_tests\n'
          'copy_src_dir(); copy_also_copy_files(); setup_source_paths(); '
          'store_lines_covered_by_tests(); create_mutants(1)\n')
  env = dict(os.environ, PYTHONPATH=os.environ.get('MUTMUT_PATH', ''))
  subprocess.run([sys.executable, '-c', code], cwd=path, env=env, check=True,
                 capture_output=True, text=True)


def meta(path: str, shard: Shard) -> Dict[str, Optional[int]]:
  """{mutant name: exit code or None (not run)} from mutmut's .meta files (empty when the
  shard's clone holds none: never run here)."""
  codes = {}
  for module in shard.modules:
    p = os.path.join(path, 'mutants', module + '.meta')
    if os.path.isfile(p):
      with open(p, encoding='utf-8') as f:
        codes.update(json.load(f)['exit_code_by_key'])
  return codes


def sample(names: Sequence[str], n: int) -> List[str]:
  """The first `n` names by SHA-256 (all of them when n <= 0): fixed, no seed to choose."""
  if n <= 0 or n >= len(names):
    return sorted(names)
  key = lambda s: hashlib.sha256(s.encode()).hexdigest()  # noqa: E731
  return sorted(sorted(names, key=key)[:n])


def diff(path: str, name: str) -> str:
  """The mutant's changed lines (`-` original, `+` mutant), from `mutmut show`."""
  out = _mutmut(path, ['show', name], timeout=120).stdout or ''
  keep = [l for l in out.splitlines() if l[:1] in '+-' and not l.startswith(('+++', '---'))]
  return '\n'.join(keep)


def outcome(name: str, code: Optional[int]) -> str:
  if code is None:
    return 'not run'
  status = _STATUS.get(code, 'suspicious')
  if status == 'survived' and TRIAGE.get(name, ('',))[0] == 'equivalent':
    return 'equivalent'
  return status


def tally(records: Sequence[Dict[str, object]]) -> Dict[str, object]:
  count = lambda o: sum(r['outcome'] == o for r in records)  # noqa: E731
  t = {o.replace(' ', '_'): count(o) for o in
       ('killed', 'survived', 'equivalent', 'timeout', 'no tests', 'suspicious', 'not run')}
  run = len(records) - t['not_run']
  judged = run - t['equivalent']
  t['run'] = run
  t['score'] = round((t['killed'] + t['timeout']) / judged, 4) if judged else None
  return t


def run_shard(shard: Shard, work: str, n: int, workers: int, timeout: float,
              rerun: bool, log: str, collect: bool = False,
              known: Optional[Dict[str, str]] = None) -> Dict[str, object]:
  """The shard's record: a fresh clone and run, `rerun` its survivors again, or `collect`
  the results its clone holds (with the current TRIAGE) without running anything."""
  path = os.path.join(work, shard.name)
  if not rerun and not collect:
    path = prepare(work, shard)
    generate(path)
  codes = meta(path, shard)
  chosen = sample(list(codes), n)
  todo = [] if collect else chosen
  if rerun and not collect:  # the chosen mutants not killed yet, again (after new tests): clear their results
    todo = [k for k in chosen if _STATUS.get(codes[k]) != 'killed']
    for module in shard.modules:
      p = os.path.join(path, 'mutants', module + '.meta')
      with open(p, encoding='utf-8') as f:
        m = json.load(f)
      for k in todo:
        if k in m['exit_code_by_key']:
          m['exit_code_by_key'][k] = None
      with open(p, 'w', encoding='utf-8') as f:
        json.dump(m, f)
    for t in shard.tests:  # the tests as they are now in this checkout
      if os.path.isfile(os.path.join(ROOT, t)):
        for d in (path, os.path.join(path, 'mutants')):
          shutil.copy2(os.path.join(ROOT, t), os.path.join(d, t))
  t0 = time.time()
  try:
    for _ in range(2):
      if todo:
        _mutmut(path, ['run', '--max-children', str(workers)] + todo,
                timeout=max(1.0, timeout - (time.time() - t0)), log=log)
      # mutmut 3.8.1 may fail its clean run in the first call after collecting the stats (the
      # same tests pass in the next call, the stats cached): one more call in that case.
      if not todo or any(v is not None for k, v in meta(path, shard).items() if k in todo):
        break
    finished = True
  except subprocess.TimeoutExpired:
    finished = False
  codes = meta(path, shard)
  finished = finished and all(codes.get(k) is not None for k in chosen)
  records = []
  for name in chosen:
    r = {'name': name, 'outcome': outcome(name, codes.get(name))}
    if r['outcome'] in ('survived', 'equivalent', 'suspicious', 'no tests'):
      r['diff'] = (known or {}).get(name) or diff(path, name)
      kind, why = TRIAGE.get(name, ('open', 'no fast test reaches it') if r['outcome'] ==
                             'no tests' else ('untriaged', ''))
      r['triage'] = kind
      r['why'] = why
    records.append(r)
  return {'shard': shard.name, 'modules': list(shard.modules), 'tests': list(shard.tests),
          'generated': len(codes), 'sampled': len(chosen), 'finished': finished,
          'seconds': round(time.time() - t0, 1), 'counts': tally(records), 'mutants': records}


def legacy_score(shards: Sequence[Dict[str, object]]) -> Dict[str, int]:
  """The totals in the shape docs/testing.md's rendered block reads."""
  c = lambda k: sum(s['counts'][k] for s in shards)  # noqa: E731
  return {'total': c('run'), 'caught_fast': c('killed') + c('timeout'), 'caught_slow_only': 0,
          'survived': c('survived') + c('no_tests') + c('suspicious'),
          'equivalent': c('equivalent'), 'errors': c('suspicious')}


def render_md(out: Dict[str, object]) -> str:
  from scripts import common  # pylint: disable=import-outside-toplevel
  rows = []
  for s in out['shards']:
    c = s['counts']
    rows.append([s['shard'], ', '.join(m.split('/')[-1] for m in s['modules']),
                 f"{s['sampled']} of {s['generated']}", str(c['killed']), str(c['survived']),
                 str(c['equivalent']), str(c['timeout']), str(c['no_tests']),
                 '-' if c['score'] is None else f"{100 * c['score']:.0f}%",
                 '; '.join(([] if s['finished'] or not s['counts']['run'] else
                            ['stopped before its sample was done']) +
                           ([SHARD_NOTES[s['shard']]] if s['shard'] in SHARD_NOTES else []))])
  survivors = []
  for s in out['shards']:
    for r in s['mutants']:
      if 'diff' in r:
        survivors.append([f"`{r['name']}`", '<br>'.join(
            '`' + l.replace('|', '\\|') + '`' for l in r['diff'].splitlines())
            or '(diff unavailable)',
            r['outcome'], r['triage'] + (f": {r['why']}" if r['why'] else '')])
  not_run = [s for s in out.get('not_run', [])]
  return common.page(
      'Mutation testing by mutmut',
      f"{out['date']}, commit {out['commit']}, {out['machine']}. Tool: {out['tool']}. "
      f"Regenerate: `{out['command']}`. Each mutant runs the tests that reach its function "
      f"(`pytest -x -q -n 0 -m \"not slow\"` on the shard's tests); score = (killed + timeout) "
      f"/ (mutants run - equivalent).",
      common.table(['shard', 'modules', 'mutants run', 'killed', 'survived', 'equivalent',
                    'timeout', 'no tests', 'score', ''], rows),
      ('Not run in this pass: ' + ', '.join(not_run) + '.') if not_run else '',
      '## Survivors and their triage' if survivors else '',
      common.table(['mutant', 'diff', 'outcome', 'triage'], survivors) if survivors else '')


def define_flags() -> None:
  """The command line's flags (defined when run as a script only)."""
  flags.DEFINE_list('shards', [], 'run these shards only (default: all, in priority order)')
  flags.DEFINE_integer('sample', 40, 'mutants per shard (the first N by SHA-256; 0: all)')
  flags.DEFINE_integer('workers', 2, 'forked test processes per shard')
  flags.DEFINE_float('timeout', 1800.0, 'seconds per shard (its results so far are kept)')
  flags.DEFINE_string('work', '/tmp/recon-mutations', 'where the shard clones go')
  flags.DEFINE_string('out', os.path.join(ROOT, 'results', 'mutations'),
                      'output prefix (.json and .md are appended)')
  flags.DEFINE_bool('rerun', False, "run a finished shard's surviving mutants again (after "
                    'new tests), in its clone under --work')
  flags.DEFINE_bool('collect', False, "re-read the shards' clones (results, TRIAGE), run nothing")
  flags.DEFINE_bool('merge', True, 'keep the other shards of an existing --out file')
  flags.DEFINE_bool('list', False, 'print the shards and exit')


def main(argv):
  del argv
  shards = by_name(FLAGS.shards)
  if FLAGS.list:
    for s in shards:
      print(f'{s.name:18s} {" ".join(s.modules):60s} {" ".join(s.tests)}')
    return
  if FLAGS.sample < 0:
    raise ValueError(f'error: --sample: {FLAGS.sample}; accepted: 0 (all) or a positive count')
  from recon.runtime import machine  # pylint: disable=import-outside-toplevel
  commit = subprocess.run(['git', '-C', ROOT, 'rev-parse', '--short', 'HEAD'],
                          capture_output=True, text=True).stdout.strip()
  os.makedirs(FLAGS.work, exist_ok=True)
  previous = {}
  if FLAGS.merge and os.path.isfile(FLAGS.out + '.json'):
    with open(FLAGS.out + '.json', encoding='utf-8') as f:
      previous = {s['shard']: s for s in json.load(f).get('shards', [])}
  for s in shards:
    if FLAGS.collect and not meta(os.path.join(FLAGS.work, s.name), s):
      print(f'{s.name}: no mutmut results under {FLAGS.work}: kept as it was', flush=True)
      continue
    n = FLAGS.sample  # a rerun or a collect keeps the shard's own sample, unless --sample is given
    if (FLAGS.rerun or FLAGS.collect) and s.name in previous and not FLAGS['sample'].present:
      n = previous[s.name]['sampled'] if previous[s.name]['sampled'] < previous[s.name][
          'generated'] else 0
    rec = run_shard(s, FLAGS.work, n, FLAGS.workers, FLAGS.timeout, FLAGS.rerun,
                    os.path.join(FLAGS.work, s.name + '.log'), FLAGS.collect,
                    {r['name']: r['diff'] for r in previous.get(s.name, {}).get('mutants', [])
                     if r.get('diff')})
    clone = subprocess.run(['git', '-C', os.path.join(FLAGS.work, s.name), 'rev-parse', '--short',
                            'HEAD'], capture_output=True, text=True).stdout.strip()
    rec['commit'] = clone or commit  # the commit the shard's clone (its module, its tests) is at
    if FLAGS.collect and s.name in previous:  # nothing ran: keep the run's own time
      rec['seconds'] = previous[s.name]['seconds']
    previous[s.name] = rec
    print(f"{s.name}: {json.dumps(rec['counts'])}", flush=True)
    done = [previous[x.name] for x in SHARDS if x.name in previous]
    out = {'date': datetime.datetime.now(datetime.timezone.utc).strftime('%Y-%m-%d %H:%M UTC'),
           'commit': commit, 'machine': machine.describe(), 'tool': TOOL,
           'command': 'python -m scripts.mutations --shards=SHARD --sample=N (N per shard: '
                      'the table), then --rerun after the new tests',
           'pytest': '-x -q -n 0 -m "not slow"', 'score': legacy_score(done),
           'shards': done, 'not_run': [x.name for x in SHARDS if x.name not in previous],
           'mutations': [{'id': r['name'], 'what': r['diff'].replace('\n', ' / '),
                          'outcome': r['outcome'], 'note': r['why'], 'slow_tests': []}
                         for d in done for r in d['mutants'] if 'diff' in r]}
    from scripts import common  # pylint: disable=import-outside-toplevel
    common.save(FLAGS.out, out, render_md(out))


if __name__ == '__main__':
  define_flags()
  app.run(main)
