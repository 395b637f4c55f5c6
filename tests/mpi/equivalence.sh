#!/usr/bin/env bash
# The central test: 5 steps of a plan on several ranks equal 5 steps of one rank with the same
# global batch and seed, to float rounding; so do the validation losses after steps 2, 4 and 5
# (13 windows: no plan's pipelines divide them evenly, and every plan must evaluate the same ones). As a control, a second one-rank run with another
# micro-batch split shows the size of pure summation-order differences.
#   equivalence.sh BUILD_DIR SOURCE_DIR RANKS TOPOLOGY PLAN [ETH_TRAIN_OPTIONS...]
# (the options go to the plan's run only, e.g. --grad-sync flat). MODEL (default
# inputs/models/tiny-4l.yaml) names another model, LR (default 1e-2) another learning rate,
# SEQ_LEN (default 16) another sequence length, EXPECT a line the plan's log must hold,
# PRECISION (default fp32) every run's --precision, TOLERANCE (default 1e-5) compare_runs.py's
# bound (bf16's, and why: tests/mpi/CMakeLists.txt), and PLAN_BACKEND the plan's ETH_BACKEND
# where it differs from the one-rank runs' (cuda-emulated against the CPU backend), PLAN_PRECISION
# the plan's --precision where it differs (auto on a cluster of bf16 and fp16 devices). FAULT, a
# silent fault (--inject-fault lose-micro-batch:rank=R:step=S) for the plan's run, turns the test
# round: the comparison must fail, showing that the bound catches a real fault.
set -euo pipefail
build=$1 src=$2 ranks=$3 topology=$4 plan=$5
shift 5
source "$src/tests/mpi/mpi_test_env.sh"
model="$src/${MODEL:-inputs/models/tiny-4l.yaml}"
batch=$($py -c "import yaml, sys; print(yaml.safe_load(open(sys.argv[1]))['global_batch'])" "$plan")
write_tiny_shard "$work/data.bin" 7
write_tiny_shard "$work/val.bin" 8
common=(--model "$model" --train-data "$work/data.bin" --seq-len "${SEQ_LEN:-16}" --steps 5 --lr "${LR:-1e-2}" --warmup 1 --seed 42
        --val-data "$work/val.bin" --eval-samples 13 --eval-every 2)
run reference 1 --batch "$batch" --micro-batch "$batch"
half=$batch; for d in 2 3 5; do [ $((batch % d)) -eq 0 ] && { half=$((batch / d)); break; }; done
run control 1 --batch "$batch" --micro-batch "$half"
ETH_BACKEND=${PLAN_BACKEND:-${ETH_BACKEND:-auto}} PRECISION=${PLAN_PRECISION:-${PRECISION:-fp32}} run plan "$ranks" --topology "$topology" --plan "$plan" "$@" \
  ${FAULT:+--inject-fault "$FAULT"}
grep "collective" "$work/plan.log"
if [ -n "${EXPECT:-}" ] && ! grep -q -- "$EXPECT" "$work/plan.log"; then
  echo "FAIL: the plan's log does not say '$EXPECT'"
  exit 1
fi
echo "control: one rank, micro-batch $half instead of $batch"
tolerance=${TOLERANCE:-1e-5}
$py "$src/tests/mpi/compare_runs.py" "$work/reference" "$work/reference.bin" "$work/control" "$work/control.bin" "$tolerance"
echo "plan $(basename "$plan") on $ranks ranks $*${FAULT:+ with --inject-fault $FAULT}:"
compare_plan=("$src/tests/mpi/compare_runs.py" "$work/reference" "$work/reference.bin" "$work/plan" "$work/plan.bin"
              "$tolerance")
if [ -z "${FAULT:-}" ]; then
  $py "${compare_plan[@]}"
  exit 0
fi
grep "injected fault" "$work/plan.log"
if $py "${compare_plan[@]}"; then
  echo "FAIL: the plan's run with --inject-fault $FAULT passed the bound $tolerance"
  exit 1
fi
echo "the fault is caught: the run with it fails the bound $tolerance"
