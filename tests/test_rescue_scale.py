"""scripts/rescue_scale.py: a run's log is read for escalation rounds, the rung's progress, CPU
seconds, and (for a run stopped in the rung) what it had reached."""
from scripts import rescue_scale

LOG = '''I1127 08:08:17.771036 1 driver.py:140] step    3500  loss 5.051e-05  recon_error 0.0975  (21s)
I1127 08:08:25.798408 1 escalate.py:293] step 5900: loss plateau at 8.11e-05; candidate 86 (the weakest by leave-one-out loss) replaced by its random proposal: 3.78e-05 after 500 trial steps
I1127 08:09:01.196566 1 escalate.py:300] step 15700: loss plateau at 2.96e-07; replacing candidate 47 (weakest by leave-one-out loss) did not help (best trial 1.96e-07); continuing
I1127 08:09:45.671115 1 driver.py:140] step   20000  loss 2.090e-07  recon_error 0.0222  (109s)
I1127 08:09:55.677945 1 polish.py:332] not certified: loss 2.13e-07 > tol 1e-09; 95 of 100 candidates within the threshold at this loss; precision rung: float64 re-search of the free rows, then Gauss-Newton
I1127 08:36:47.270744 1 polish.py:283] precision rung: row 9 re-searched (1 of 5): float64 loss 4.72e-10, replaced (1612s)
Command terminated by signal 15
	User time (seconds): 497.66
	System time (seconds): 7.29
	Maximum resident set size (kbytes): 2052164
'''


def test_the_log_gives_rounds_cpu_seconds_and_where_a_stopped_run_was():
  out = rescue_scale.parse_log(LOG)
  assert out['escalation_rounds'] == 2
  assert 0 < out['escalation_seconds_log_upper'] < 45  # 8.0 s + 35.4 s before the two lines
  assert out['cpu_seconds'] == 497.66 + 7.29 and out['peak_rss_gb'] == 1.96
  m = rescue_scale.partial_metrics(LOG)
  assert m['steps'] == 20000 and m['final_loss'] == 2.09e-07
  assert m['frac_recovered'] == 0.95 and not m['certified'] and not m['complete']
  assert m['polish']['seconds_until_stopped'] == 1611.6


def test_render_marks_a_stopped_run():
  rec = {'label': 'before', 'seed': 5, 'n': 100, 'wall_seconds': 1731.0, 'cpu_seconds': 505.0,
         'steps': 20000, 'rows_within': 95, 'certified': False, 'escalations_tried': 7,
         'escalations_accepted': 5, 'escalation_seconds': None,
         'escalation_seconds_log_upper': 69.4, 'rung_seconds': None, 'complete': False,
         'rung_seconds_until_stopped': 1611.6, 'final_loss': 2.09e-07, 'machine': 'cpu: x',
         'commit': 'abc'}
  md = rescue_scale.render([rec])
  assert '| before | 5 | 1731 | 505 | 20000 | 95/100 | no | 7 (5) | <= 69 (log) | stopped after 1612 |' in md


def test_render_reports_the_prune_check_with_its_worst_gaps():
  rec = {'label': 'after', 'seed': 5, 'n': 100, 'wall_seconds': 300.0, 'cpu_seconds': 500.0,
         'steps': 20000, 'rows_within': 100, 'certified': True, 'escalations_tried': 7,
         'escalations_accepted': 5, 'escalation_seconds': 40.0, 'rung_seconds': 90.0,
         'final_loss': 1e-13, 'machine': 'cpu: x', 'commit': 'abc'}
  check = {'seed': 200, 'machine': 'cpu: x', 'recorded': 'now',
           'pruned_float32': {'rows': [7, 3, 9], 'l_i': [0.02, 0.37, 0.5], 'seconds': 136.0},
           'all_starts_float64': {'rows': [7, 3], 'l_i': [0.0201, 0.37], 'seconds': 254.0},
           'relative_distance': [7e-7, 1.8e-4]}
  md = rescue_scale.render([rec], check=check)
  assert 'Seed 200 (a probe seed' in md and '3 free rows' in md
  assert 'agree to 1.8e-04 (relative, up to sign) and their l_i to 5.0e-03' in md
  assert '| 3 | 3.700e-01 | 3.700e-01 | 1.8e-04 |' in md
