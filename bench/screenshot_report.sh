#!/usr/bin/env bash
# Looks at a run report and a plan drawing in a real browser: draws the plan (eth_plan --evaluate
# --draw) into RUN_DIR/plan.svg, writes RUN_DIR/report.html (scripts/eth_report.py), and saves
# headless Chromium's screenshots of both as bench/results/screenshots/{report,plan}.png, and of the
# planner's plan for inputs/scenarios/a100-t4.yaml as plan-a100-t4.png. Installs
# nothing: without `chromium` on PATH it says so and exits 0 (apt-get install -y
# --no-install-recommends chromium; not part of scripts/setup.sh, CI does not need it).
#   bench/screenshot_report.sh [RUN_DIR [PLAN TOPOLOGY MODEL SEQ_LEN]]   (default: the demo's)
set -euo pipefail
cd "$(dirname "$0")/.."
run=${1:-out/demo}
plan=${2:-inputs/plans/demo-4cpu-hetero.yaml}
topology=${3:-inputs/topologies/workstation-4cpu.yaml}
model=${4:-inputs/models/demo.yaml}
seq_len=${5:-128}
out=bench/results/screenshots
if ! command -v chromium > /dev/null; then
  echo "screenshot_report: no chromium on PATH; nothing done"
  exit 0
fi
[ -f "$run/metrics.jsonl" ] || { echo "screenshot_report: no $run/metrics.jsonl: run scripts/demo.sh first" >&2; exit 1; }
build/app/eth_plan --evaluate "$plan" --topology "$topology" --model "$model" --seq-len "$seq_len" --draw "$run/plan.svg" \
  | tail -1
/usr/bin/python3 scripts/eth_report.py "$run" --plan "$plan"
mkdir -p "$out"
# shot FILE WIDTH HEIGHT PNG: one page at that window size (root needs --no-sandbox).
shot() {
  chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --screenshot="$4" --window-size="$2,$3" \
    "file://$(realpath "$1")" 2> /dev/null
  echo "wrote $4 ($2x$3)"
}
svg_size() { sed -n 's/.*<svg xmlns="[^"]*" width="\([0-9]*\)" height="\([0-9]*\)".*/\1 \2/p' "$1" | head -1; }
read -r width height < <(svg_size "$run/plan.svg")
shot "$run/plan.svg" "$width" "$height" "$out/plan.png"
# And a plan of two device types, as the planner chooses it for a scenario (colours, legend).
build/app/eth_plan --scenario inputs/scenarios/a100-t4.yaml --out "$run/plan-a100-t4.yaml" --draw "$run/plan-a100-t4.svg" \
  | tail -1
read -r width height < <(svg_size "$run/plan-a100-t4.svg")
shot "$run/plan-a100-t4.svg" "$width" "$height" "$out/plan-a100-t4.png"
shot "$run/report.html" 1200 6400 "$out/report.png"
# Headless Chromium shoots the window, not the page: cut the blank below the page's end.
/usr/bin/python3 - "$out/report.png" <<'PY'
import sys
from PIL import Image, ImageChops
image = Image.open(sys.argv[1]).convert("RGB")
box = ImageChops.difference(image, Image.new("RGB", image.size, "white")).getbbox()
image.crop((0, 0, image.width, min(image.height, box[3] + 20))).save(sys.argv[1])
print(f"cropped {sys.argv[1]} to {image.width}x{min(image.height, box[3] + 20)}")
PY
