#!/usr/bin/env bash
# Re-balancing within the memory one runtime needs (issue 22 item 6): each rank's CPU backend is
# given a device-memory limit (ETH_CPU_DEVICE_MEMORY, as a GPU's memory limits cudaMalloc) under
# which one runtime of the plan uses at least 70% of it. The switch copies each rank's state to
# the host, frees the old runtime, and only then builds the new one (lib/job/trainer.cpp,
# Training::rebalance), so the re-balanced run completes; a switch that built the new runtime
# beside the old would need 1.4x the limit and fail on its first allocation past it. The run
# must re-balance at least once, keep every rank's allocator peak within the limit, and train
# exactly like the run without a limit: the same re-balances and the same parameters, bit for bit.
# The re-balancer sees modelled compute (--modelled-compute-ms, lib/runtime/slowdown.hpp), so that
# both runs re-balance after the same steps whatever the machine's load.
#   rebalance_memory.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
tiny_job 8
four=(--topology "$plans/cpu-2nodes-4.yaml" --plan "$plans/rebalance-4.yaml" --rebalance-every 2
  --slowdown 1:8:1 --modelled-compute-ms 10)
run unlimited 4 "${four[@]}"
# The limit: the fullest rank's allocator peak (one runtime, no switch yet after step 1) is 70% of it.
limit=$($py - "$work/unlimited/metrics.jsonl" <<'PY'
import json, sys
first = next(r for r in map(json.loads, open(sys.argv[1])) if "ranks" in r)
print(int(max(rank["peak_bytes"] for rank in first["ranks"]) / 0.70))
PY
)
echo "device-memory limit per rank: $limit bytes"
ETH_CPU_DEVICE_MEMORY=$limit run limited 4 "${four[@]}"
$py - "$work/limited/metrics.jsonl" "$limit" <<'PY'
import json, sys
records = list(map(json.loads, open(sys.argv[1])))
limit = int(sys.argv[2])
events = [r["rebalance"] for r in records if "rebalance" in r]
if not events:
    sys.exit("FAIL: no re-balance happened, so the limit tested nothing")
peaks = [rank["peak_bytes"] for r in records if "ranks" in r for rank in r["ranks"]]
first = next(r for r in records if "ranks" in r)
use = max(rank["peak_bytes"] for rank in first["ranks"]) / limit
if use < 0.69:
    sys.exit(f"FAIL: one runtime uses {use:.0%} of the limit, expected at least 70%")
if max(peaks) > limit:
    sys.exit(f"FAIL: an allocator peak of {max(peaks)} bytes past the limit of {limit}")
print(f"{len(events)} re-balance(s) under a limit of {limit} bytes; one runtime uses {use:.0%} of it; "
      f"the highest allocator peak over the run is {max(peaks) / limit:.0%} of it")
PY
grep "re-balanced" "$work/limited.log" | cut -d'|' -f1-3 > "$work/limited.events"
grep "re-balanced" "$work/unlimited.log" | cut -d'|' -f1-3 > "$work/unlimited.events"
cat "$work/limited.events"
cmp "$work/limited.events" "$work/unlimited.events"
cmp "$work/limited.bin" "$work/unlimited.bin"
echo "the limited run re-balanced as the unlimited one did, and ends with its parameters bit for bit"
