#!/usr/bin/env bash
# Does scripts/demo.sh's loss fall smoothly? Runs the demo (its defaults, plus any extra
# arguments) once per seed and checks the rule of issue 30: after step 5, no step's loss is
# above the previous step's by more than 10%. Prints each seed's worst step-to-step rise and
# final loss and writes bench/results/demo_smoothness.json; exits 1 when a seed breaks the rule.
# A benchmark, not a CI test: three 40-step runs of 4 ranks take minutes.
#
#   bench/demo_smoothness.sh                          # seeds 1337 (the demo's), 1, 2
#   SEEDS="1337 7" bench/demo_smoothness.sh --lr 3e-3 --warmup 10   # other settings
#   PARALLEL=1 bench/demo_smoothness.sh                # the seeds at once
set -euo pipefail
cd "$(dirname "$0")/.."
load_at_start=$(cut -d' ' -f1 /proc/loadavg)
SEEDS=${SEEDS:-1337 1 2}
OUT=${OUT:-out/demo-smoothness}
RESULT=${RESULT:-bench/results/demo_smoothness.json}
PYTHON=${PYTHON:-/usr/bin/python3}
mkdir -p "$OUT" "$(dirname "$RESULT")"
# PARALLEL=1 runs the seeds at once (on a machine shared with other jobs, a larger share of it);
# RUN=0 only checks the runs already in OUT.
run_seed() {
  SETUP=${SETUP:-0} bash scripts/demo.sh --seed "$1" --output-dir "$OUT/seed_$1" --trace "$OUT/seed_$1/trace.json" \
    --sample-every 0 "${@:2}" >"$OUT/seed_$1.log" 2>&1
}
if [ "${RUN:-1}" != 0 ]; then
  for s in $SEEDS; do
    echo "seed $s ($(cut -d' ' -f1 /proc/loadavg) load)" >&2
    if [ "${PARALLEL:-0}" = 1 ]; then run_seed "$s" "$@" & else run_seed "$s" "$@"; fi
  done
  wait
fi
rc=0
"$PYTHON" - "$OUT" "$RESULT" "$SEEDS" "SEEDS=\"$SEEDS\" bench/demo_smoothness.sh $*" <<'PY' || rc=$?
import json, sys
out, result_path, seeds, command = sys.argv[1], sys.argv[2], sys.argv[3].split(), sys.argv[4]
runs, ok = {}, True
for s in seeds:
    losses = [r["loss"] for r in map(json.loads, open(f"{out}/seed_{s}/metrics.jsonl")) if "loss" in r]
    # rise[i]: step i+1's loss over step i's, for the steps after step 5 (1-based)
    rises = [(i + 1, losses[i] / losses[i - 1] - 1) for i in range(5, len(losses))]
    step, worst = max(rises, key=lambda r: r[1])
    runs[s] = {"losses": losses, "final_loss": losses[-1], "worst_rise": worst, "worst_rise_step": step,
               "smooth": worst <= 0.10}
    ok &= worst <= 0.10
    print(f"seed {s}: final loss {losses[-1]:.4f}, worst rise after step 5: {100 * worst:+.1f}% at step {step}"
          f" -> {'ok' if worst <= 0.10 else 'SPIKE'}")
json.dump({"benchmark": "demo_smoothness", "command": command, "rule": "loss[i] <= 1.10 * loss[i-1] for steps i > 5",
           "runs": runs, "all_smooth": ok}, open(result_path, "w"), indent=2)
sys.exit(0 if ok else 1)
PY
"$PYTHON" bench/stamp.py "$RESULT" "$load_at_start"
exit $rc
