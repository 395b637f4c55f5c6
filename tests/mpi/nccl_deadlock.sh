#!/usr/bin/env bash
# The NCCL path's ordering rule, shown on its CPU emulation (ETH_BACKEND=cpu-async
# ETH_NCCL=emulated, mpi_topology/stream_collectives.hpp): every rank issues its gradient sums in
# one global order, because a stream runs its collectives in the order issued and each holds the
# stream until every member has reached it. On crossed-groups-4 (ranks 0 and 1 in two groups
# with communicators of their own), rank 1 issuing step 2's sums in reverse order
# (--inject-fault reverse-sums) makes ranks 0 and 1 wait for each other. The job must end
# non-zero within the watchdog's timeout with a watchdog line naming the reduction it waited for
# and rank 0 or 1 waiting in another one; steps 1 (before the fault) must have completed. Which
# rank's watchdog fires first is a race: rank 0 or 1 (each waiting for the other), or rank 2,
# whose block-0 sum waits for both (seen in CI: "rank 2 (step 2, reduction): watchdog: reduction
# of block 0 ... did not arrive: rank 0 (..., waiting in reduction of block 1 ...); rank 1 (...,
# waiting in reduction of the tied word embedding)"); each line names the crossed waits. The
# same plan without the fault trains normally (a control that the plan itself does not hang).
#   nccl_deadlock.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
source "$src/tests/cli/cli_checks.sh"
tiny_job 3
common+=(--topology "$plans/cpu-2nodes-4.yaml" --plan "$plans/crossed-groups-4.yaml" --collective-timeout 10)
export ETH_BACKEND=cpu-async ETH_NCCL=emulated
set -e
run control 4
grep -q "NCCL (emulated" "$work/control.log" || { echo "FAIL: the control's log does not name the emulated NCCL path"; exit 1; }
set +e
launch_mpi 120 4 "$build/app/eth_train" "${common[@]}" --output-dir "$work/misordered" \
  --inject-fault reverse-sums:rank=1:step=2 > "$work/misordered.log" 2>&1
rc=$?
cat "$work/misordered.log" | grep -E "eth_train: rank|step +[0-9]" | head -20
status=0
[ "$rc" -ne 0 ] || { echo "FAIL: the misordered job exited 0"; status=1; }
[ "$rc" -ne 124 ] && [ "$rc" -ne 137 ] || { echo "FAIL: the misordered job hung until the test's timeout"; status=1; }
grep -qE "rank [0-3] \(step 2, [a-z]+\): watchdog: reduction of .* not complete after 10 s; did not arrive: .*rank [01] \(step 2, [a-z]+, waiting in reduction of" \
  "$work/misordered.log" || { echo "FAIL: no watchdog line naming the reduction and the rank waiting in the other one"; status=1; }
grep -qE "^step +1/3 " "$work/misordered.log" || { echo "FAIL: step 1 did not complete before the fault"; status=1; }
[ $status -eq 0 ] && echo "PASS: the misordered sums hang, and the watchdog names them"
exit $status
