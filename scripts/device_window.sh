#!/usr/bin/env bash
# The paper's CIFAR-10 table on a lent accelerator (issue #71), as two prepared commands that
# each fit one 10-minute device call. Run from the repository root with PYTHONPATH=. :
#
#   STAGE=step   bash scripts/device_window.sh   # the step time per feature path, both sizes
#   STAGE=points bash scripts/device_window.sh   # relu at p = 10 dn, dn, n, each under POINT_S
#   TINY=1 STAGE=step bash scripts/device_window.sh    # the CPU rehearsal (seconds), also points
#
# step: scripts/bench.py --parts=step at (100, 3072, 3 072 000) and (100, 3072, 307 200), dense
#   and blocked (victim.feature_mode 'blocked': V stored, streamed in row blocks) in separate
#   processes (one stored V is 37.7 GB at the larger size) -> OUT/NAME_step/bench.{json,md}.
# points: scripts/paper_scale.py, feature_mode 'blocked', each point stopped after POINT_S
#   seconds if unfinished (a finished point is appended to OUT/NAME.{json,md,png} at once; the
#   table lists what is still missing).
set -euo pipefail
OUT=${OUT:-results}
STAGE=${STAGE:-step}
if [[ -n "${TINY:-}" ]]; then
  N=4 IMG=2 SIZES=4x12x480x64,4x12x48x64 STEPS=${STEPS:-300} NAME=${NAME:-device_rehearsal}
  POINT_S=${POINT_S:-120}
else
  N=100 IMG=32 SIZES=100x3072x3072000x16384,100x3072x307200x16384 STEPS=${STEPS:-20000}
  NAME=${NAME:-paper_scale_gpu} POINT_S=${POINT_S:-170}
fi
python -c "import jax; print('devices:', jax.devices())"
case "$STAGE" in
  step)
    for path in dense blocked; do
      python scripts/bench.py --parts=step --sizes="$SIZES" --step_variants="$path" \
        --out="$OUT/${NAME}_step"
    done
    cat "$OUT/${NAME}_step/bench.md";;
  points)
    for point in 10dn dn n; do
      timeout --signal=TERM "$POINT_S" python scripts/paper_scale.py --n="$N" --image_size="$IMG" \
        --points="$point" --activations=relu --max_steps="$STEPS" \
        --set=victim.feature_mode=blocked --out="$OUT/$NAME" || echo "point $point: stopped"
    done
    python scripts/paper_scale.py --n="$N" --image_size="$IMG" --out="$OUT/$NAME" --render_only;;
  *) echo "error: STAGE: '$STAGE'; accepted: step, points" >&2; exit 2;;
esac
