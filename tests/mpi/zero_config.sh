#!/usr/bin/env bash
# A zero-configuration launch: 4 ranks and no --topology/--plan. The job describes itself, rank 0
# plans it and writes plan.yaml and topology.yaml beside the metrics, and the 5 steps it trains
# equal one rank's on the same global batch.
#   zero_config.sh BUILD_DIR SOURCE_DIR
set -euo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
source "$src/tests/cli/cli_checks.sh"
model="$src/inputs/models/tiny-4l.yaml"
write_tiny_shard "$work/data.bin" 5
common=(--model "$model" --train-data "$work/data.bin" --seq-len 16 --steps 5 --lr 1e-3 --warmup 1 --seed 42 --batch 12)
# lr 1e-3, as random_plans.sh: at 1e-2 AdamW turns the rounding of gradients that are within
# ~1e-8 of zero into parameter differences near 1e-5 between any two summation orders.
run planned 4 --profiles "$work/no-profiles"
run reference 1 --micro-batch 12
grep -q "planned without --plan" "$work/planned.log"; check "rank 0 says it planned the job" $? "$(head -20 "$work/planned.log")"
[ -s "$work/planned/plan.yaml" ] && [ -s "$work/planned/topology.yaml" ]
check "plan.yaml and topology.yaml beside the metrics" $? "$(ls "$work/planned")"
sed -n '/^plan:/,/^iteration:/p' "$work/planned.log"
# The written plan is the one trained: run it again from the files, on the same 4 ranks.
run replay 4 --topology "$work/planned/topology.yaml" --plan "$work/planned/plan.yaml"
cmp -s "$work/planned.bin" "$work/replay.bin"; check "the written plan trains bit for bit as the planned run" $? "parameters differ"
$py "$src/tests/mpi/compare_runs.py" "$work/reference" "$work/reference.bin" "$work/planned" "$work/planned.bin"
check "the planned run equals one rank" $? "see the comparison above"
finish
