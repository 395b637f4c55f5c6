#!/usr/bin/env bash
# Online re-balancing (lib/runtime/rebalance.hpp) changes the batch split, never the numbers:
#   - 20 steps of a 4-rank plan re-balanced every 2 steps, with rank 1 slowed 8x for steps 1-9
#     and rank 0, its partner in the split stage, instead from step 10 (--slowdown,
#     lib/runtime/slowdown.hpp), equal one rank's 20 steps on the same global batch (losses,
#     gradient norms, parameters within 1e-5 relative: the two add the same per-sample gradients
#     in different orders, compare_runs.py);
#   - the re-balancer sees the compute those speeds give (--modelled-compute-ms: 10 ms a sample,
#     times each rank's factor), not the times measured, which on a loaded machine are noise
#     enough to flip a decision (4 ranks on 2 cores under ASan beside another job: one re-balance
#     instead of two). So the decisions are known: after step 4 (the second decision that finds
#     the split behind; hysteresis) the split stage gives rank 1 one sample of four and the
#     pipelines take 4 and 8 samples; after step 12 (the smoothed rates have turned) it gives
#     rank 0 one: "8 (2:2), 4 -> 4 (3:1), 8", then "4 (3:1), 8 -> 4 (1:3), 8", each with its
#     predicted gain at or above the threshold, and no other change;
#   - a resume from the checkpoint written after the last re-balance (a checkpoint every 2 steps;
#     it holds the new split) continues with the checkpoint's split and ends bit-identical to the
#     uninterrupted run (re-balancing off in the resumed run: the uninterrupted one changed
#     nothing after that step).
#   rebalance.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
tiny_job 20
four=(--topology "$plans/cpu-2nodes-4.yaml" --plan "$plans/rebalance-4.yaml")
run reference 1 --batch 12 --micro-batch 4
run rebalanced 4 "${four[@]}" --rebalance-every 2 --checkpoint-every 2 \
  --slowdown 1:8:1 --slowdown 1:1:10 --slowdown 0:8:10 --modelled-compute-ms 10
grep "re-balanced" "$work/rebalanced.log" || true
$py - "$work/rebalanced/metrics.jsonl" <<'PY'
import json, sys
events = [r["rebalance"] for r in map(json.loads, open(sys.argv[1])) if "rebalance" in r]
def split(pipes):  # "4 (3:1), 8", as the log writes it
    return ", ".join(str(p["samples"]) + "".join(" (" + ":".join(map(str, s["split"])) + ")" for s in p["stages"])
                     for p in pipes)
seen = [(e["after_step"], split(e["old"]), split(e["new"])) for e in events]
expected = [(4, "8 (2:2), 4", "4 (3:1), 8"), (12, "4 (3:1), 8", "4 (1:3), 8")]
if seen != expected:
    sys.exit(f"FAIL: re-balances (after step, old, new) {seen}, expected {expected}")
for e in events:
    assert e["predicted_gain"] >= 0.05, f"after step {e['after_step']}: gain {e['predicted_gain']} below the threshold"
print("re-balanced as the modelled speeds require: " + "; ".join(f"after step {a}: {o} -> {n}" for a, o, n in seen))
open(sys.argv[1] + ".last", "w").write(str(events[-1]["after_step"]))
PY
last=$(cat "$work/rebalanced/metrics.jsonl.last")
echo "re-balanced run on 4 ranks against one rank:"
$py "$src/tests/mpi/compare_runs.py" "$work/reference" "$work/reference.bin" "$work/rebalanced" "$work/rebalanced.bin"

run resumed 4 "${four[@]}" --resume "$work/rebalanced/checkpoints/step_$last.h5"
grep "resumed from" "$work/resumed.log"
grep -q "with its batch split" "$work/resumed.log"
cmp "$work/rebalanced.bin" "$work/resumed.bin"
echo "resumed after step $last with the checkpoint's split: final parameters bit-identical to the uninterrupted run"
