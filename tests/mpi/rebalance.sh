#!/usr/bin/env bash
# Online re-balancing (lib/runtime/rebalance.hpp) changes the batch split, never the numbers:
#   - 20 steps of a 4-rank plan re-balanced every 2 steps, with rank 1 slowed 8x for steps 1-9
#     and rank 0, its partner in the split stage, instead from step 10 (--slowdown,
#     lib/runtime/slowdown.hpp): whatever the first re-balances chose, the stage's split must then turn
#     round (a change needs two decisions in a row that find the split behind; each phase gives
#     four or five decisions, because measured times on shared cores are noisy); equal one rank's
#     20 steps on the same global batch (losses, gradient norms, parameters within 1e-5
#     relative: the two add the same per-sample gradients in different orders, compare_runs.py);
#   - the run re-balanced at least twice (metrics.jsonl), each event a real change of split
#     with its predicted gain at or above the threshold: without that, the first check proves
#     nothing. (Which split it picks depends on measured times; that it changes with an 8x
#     slower rank is what the check needs.)
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
  --slowdown 1:8:1 --slowdown 1:1:10 --slowdown 0:8:10
grep "re-balanced" "$work/rebalanced.log" || true
$py - "$work/rebalanced/metrics.jsonl" <<'PY'
import json, sys
events = [r["rebalance"] for r in map(json.loads, open(sys.argv[1])) if "rebalance" in r]
if len(events) < 2:
    sys.exit(f"FAIL: {len(events)} re-balance(s), expected at least 2 with an 8x slower rank")
for e in events:
    assert e["old"] != e["new"], f"after step {e['after_step']}: the split did not change"
    assert e["predicted_gain"] >= 0.05, f"after step {e['after_step']}: gain {e['predicted_gain']} below the threshold"
    assert sum(p["samples"] for p in e["new"]) == 12, f"after step {e['after_step']}: {e['new']}"
print(f"{len(events)} re-balances, after steps {[e['after_step'] for e in events]}; pipeline samples "
      + " -> ".join(str([p['samples'] for p in e['new']]) for e in events))
open(sys.argv[1] + ".last", "w").write(str(events[-1]["after_step"]))
PY
last=$(cat "$work/rebalanced/metrics.jsonl.last")
echo "re-balanced run on 4 ranks against one rank:"
$py "$src/tests/mpi/compare_runs.py" "$model" "$work/reference" "$work/reference.bin" "$work/rebalanced" "$work/rebalanced.bin"

run resumed 4 "${four[@]}" --resume "$work/rebalanced/checkpoints/step_$last.h5"
grep "resumed from" "$work/resumed.log"
grep -q "with its batch split" "$work/resumed.log"
cmp "$work/rebalanced.bin" "$work/resumed.bin"
echo "resumed after step $last with the checkpoint's split: final parameters bit-identical to the uninterrupted run"
