#!/usr/bin/env bash
# The demo (scripts/demo.sh: inputs/models/demo.yaml on the King James Bible, 4 ranks of
# workstation-4cpu.yaml in the heterogeneous plan demo-4cpu-hetero.yaml) trained STEPS steps in
# fp32 and again in bf16 (the CPU twin, --precision bf16), same seed, data and schedule: bf16's
# final validation loss must be within 1% of fp32's. The two arms run at once (8 ranks on the
# machine's cores: step times are not the point here). Writes bench/results/bf16_demo.json;
# docs/results.md quotes it. eth_train is copied first, so rebuilding during the run changes
# neither arm.
#
#   bench/run_bf16_demo.sh             # 300 steps: about 50 minutes on 2 loaded cores
#   STEPS=20 bench/run_bf16_demo.sh    # a quick look (its JSON is written all the same)
set -euo pipefail
cd "$(dirname "$0")/.."
load_at_start=$(cut -d' ' -f1 /proc/loadavg)  # the result's stamp (bench/stamp.py)
source scripts/env.sh
STEPS=${STEPS:-300}
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
OUT=${OUT:-bench/results/bf16_demo.json}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cp "$BUILD/app/eth_train" "$tmp/eth_train"
args=(--model inputs/models/demo.yaml
  --topology inputs/topologies/workstation-4cpu.yaml --plan inputs/plans/demo-4cpu-hetero.yaml
  --train-data inputs/data/kjv_train.bin --val-data inputs/data/kjv_val.bin
  --seq-len 128 --steps "$STEPS" --lr 3e-3 --min-lr 3e-4 --warmup 10 --eval-every 100 --eval-samples 64)
for precision in fp32 bf16; do
  echo "$precision: $STEPS steps, log in $tmp/$precision.log"
  mpirun -np 4 --oversubscribe --mca mpi_yield_when_idle 1 "$tmp/eth_train" "${args[@]}" --precision "$precision" \
    --output-dir "$tmp/$precision" > "$tmp/$precision.log" 2>&1 &
done
for precision in fp32 bf16; do
  wait -n || { tail -20 "$tmp/fp32.log" "$tmp/bf16.log"; exit 1; }
done
grep -H "val loss" "$tmp/fp32.log" "$tmp/bf16.log" | tail -2

"$PYTHON" - "$tmp" "$OUT" "STEPS=$STEPS bench/run_bf16_demo.sh" "${args[*]}" <<'PY'
import json, statistics, sys
tmp, out, command, args = sys.argv[1:5]
runs = {}
for precision in ("fp32", "bf16"):
    records = [json.loads(l) for l in open(f"{tmp}/{precision}/metrics.jsonl")]
    steps = [r for r in records if "loss" in r]
    vals = {r["step"]: r["val_loss"] for r in records if "val_loss" in r}
    runs[precision] = {"final_val_loss": vals[max(vals)], "val_loss": vals,
                       "final_train_loss": steps[-1]["loss"],
                       "step_ms_median": statistics.median(r["ms"] for r in steps[1:])}
fp32, bf16 = runs["fp32"]["final_val_loss"], runs["bf16"]["final_val_loss"]
result = {"benchmark": "bf16_demo", "command": command, "eth_train_args": args, "runs": runs,
          "final_val_loss_relative_difference": (bf16 - fp32) / fp32,
          "within_1_percent": abs(bf16 - fp32) <= 0.01 * fp32}
json.dump(result, open(out, "w"), indent=2)
print(f"final validation loss: fp32 {fp32:.4f}, bf16 {bf16:.4f}, relative difference {(bf16 - fp32) / fp32:+.2%}")
PY
"$PYTHON" bench/stamp.py "$OUT" "$load_at_start"
