#!/usr/bin/env bash
# Plans as pictures and run reports (docs/usage.md), made from short real runs of the tiny model
# and checked for content by check_pictures.py:
#   - eth_plan --evaluate --draw of a plan with an idle rank, and the plan.svg eth_train writes
#     beside its metrics: each SVG parses and names every rank;
#   - eth_report of a finished 4-rank run with a trace and validation: every PNG is on the page
#     and decodes;
#   - eth_report of a run cut short (no trace, a half-written last metrics line, a plan from
#     eth_plan with its prediction): still a page, which says what is missing;
#   - eth_report of an empty directory: a page that says no step is recorded.
#   pictures.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
source "$src/tests/cli/cli_checks.sh"
tiny_job 6
topology="$plans/cpu-2nodes-4.yaml"
check_pictures() { $py "$src/tests/mpi/check_pictures.py" "$@"; }
report() { $py "$src/scripts/eth_report.py" "$@" > "$work/report.log" 2>&1 || cat "$work/report.log"; }

"$build/app/eth_plan" --evaluate "$plans/idle-rank-4.yaml" --topology "$topology" --model "$model" --seq-len 16 \
  --profiles "$src/inputs/profiles" --draw "$work/idle.svg" > "$work/plan.log" 2>&1 && check_pictures svg "$work/idle.svg" 4
check "eth_plan --evaluate --draw: the SVG of a plan with an idle rank parses and names ranks 0-3" $? "$(tail -3 "$work/plan.log")"

set -e
run finished 4 --topology "$topology" --plan "$plans/idle-rank-4.yaml" --trace "$work/finished/trace.json" \
  --val-data "$work/data.bin" --eval-every 3
set +e
check_pictures svg "$work/finished/plan.svg" 4
check "eth_train draws the plan it runs: OUTPUT_DIR/plan.svg parses and names ranks 0-3" $? ""
report "$work/finished" --plan "$plans/idle-rank-4.yaml"
check_pictures html "$work/finished" "report/timeline.png" "plan.svg" "MFU at the last step:" "validation loss"
check "eth_report of a finished run: every PNG on the page decodes, the plan drawing shown" $? "$(cat "$work/report.log")"

# A plan from the planner (with predicted times and memory) beside the run, as zero-config writes it.
mkdir -p "$work/cut"
"$build/app/eth_plan" --topology "$topology" --model "$model" --batch 8 --seq-len 16 --profiles "$src/inputs/profiles" \
  --out "$work/cut/plan.yaml" > "$work/plan.log" 2>&1 || cat "$work/plan.log"
set -e
run cut 4 --topology "$topology" --plan "$work/cut/plan.yaml"
set +e
head -c -40 "$work/cut/metrics.jsonl" > "$work/cut/cut.jsonl" && mv "$work/cut/cut.jsonl" "$work/cut/metrics.jsonl"
report "$work/cut"
check_pictures html "$work/cut" "not complete JSON" "no trace.json" "report/step_time.png"
check "eth_report of a run cut short: a page with its figures that says what is missing" $? "$(cat "$work/report.log")"
grep -q "has no predicted section" "$work/cut/report.html"
[ $? -ne 0 ]
check "the planner's plan beside the run gives its prediction" $? "$(grep -o 'the plan[^<]*' "$work/cut/report.html")"

mkdir -p "$work/empty"
report "$work/empty" && check_pictures html "$work/empty" "No step recorded yet" "no $work/empty/metrics.jsonl"
check "eth_report of an empty directory: a page saying no step is recorded" $? "$(cat "$work/report.log")"
finish
