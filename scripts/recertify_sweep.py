"""Re-derive a finished random-features sweep's records from its saved candidates.

    python -m scripts.recertify_sweep --from_dir=SWEEP_DIR --to_dir=NEW_DIR

The certificate, the precision rung and the scores run again, with this code and on this
machine, on the candidates SWEEP_DIR/sweep.npz holds; the descent does not (`recon.recertify`:
what it copies, what it re-derives). E.g. a sweep whose descent ran on a lent accelerator, its
rung on a CPU afterwards. NEW_DIR/sweep.json is a sweep's, its `machine` naming both machines;
a `scripts/recovery_law.py --work_dir=DIR` point whose folder holds it reads it back.

Exit status 2 with one line when SWEEP_DIR holds no finished random-features sweep or NEW_DIR
already holds one.
"""
from __future__ import annotations

import sys

from absl import app, flags

import recon

FLAGS = flags.FLAGS


def main(argv):
  del argv
  try:
    result = recon.recertify(FLAGS.from_dir, FLAGS.to_dir)
  except recon.RunError as e:
    print(f'error: {e}', file=sys.stderr)
    return e.exit_code
  done = sum(r['certified'] for r in result['records'])
  print(f'{len(result["records"])} records re-derived in {result["recertify_seconds"]:.0f} s: '
        f'{done} certified -> {FLAGS.to_dir}')
  return 0


def define_flags():
  flags.DEFINE_string('from_dir', None, 'A finished sweep folder (sweep.json, sweep.npz).')
  flags.DEFINE_string('to_dir', None, 'A new folder for the re-derived sweep.')
  flags.mark_flags_as_required(['from_dir', 'to_dir'])


if __name__ == '__main__':
  define_flags()
  recon.setup_process()
  app.run(main)
