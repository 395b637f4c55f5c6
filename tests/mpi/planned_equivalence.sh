#!/usr/bin/env bash
# The planner's own plan runs as is and trains like one rank: eth_plan plans tiny-4l on a
# topology where its best plan has a stage of several ranks (each micro-batch split by speed),
# then equivalence.sh compares 5 steps of that plan with one rank's.
#   planned_equivalence.sh BUILD_DIR SOURCE_DIR RANKS TOPOLOGY BATCH
set -euo pipefail
build=$1 src=$2 ranks=$3 topology=$4 batch=$5
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/no-profiles"  # roofline estimates from the topology's declared peaks
"$build/app/eth_plan" --topology "$topology" --model "$src/inputs/models/tiny-4l.yaml" --batch "$batch" --seq-len 16 \
  --profiles "$work/no-profiles" --out "$work/planned.yaml"
/usr/bin/python3 - "$work/planned.yaml" <<'PY'
import sys, yaml
plan = yaml.safe_load(open(sys.argv[1]))
widths = [len(s["ranks"]) for p in plan["pipelines"] for s in p["stages"]]
if max(widths) < 2:
    sys.exit(f"the planner's plan has no stage of several ranks (stage widths {widths}); this test needs one")
print(f"planned stage widths {widths}")
PY
"$src/tests/mpi/equivalence.sh" "$build" "$src" "$ranks" "$topology" "$work/planned.yaml"
