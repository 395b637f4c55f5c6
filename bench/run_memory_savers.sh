#!/usr/bin/env bash
# What the planner's memory savers buy on the shipped scenarios (inputs/scenarios): for each,
# eth_plan with --memory-savers none (every activation kept, whole AdamW moments), recompute
# (activation recomputation per stage where a stage does not fit otherwise) and all (also AdamW
# moments sharded per block where the simulator says it pays): the simulated iteration, which
# options the chosen plan uses, its pipelines, and eth_plan's wall time (roofline profiles, as
# the scenarios ship). Writes bench/results/memory_savers.json; docs/results.md quotes it.
#
#   bench/run_memory_savers.sh            # a few minutes on 2 cores (the 1024-GPU scenario most)
#   ONLY=16gb bench/run_memory_savers.sh  # the scenarios whose name holds ONLY
set -euo pipefail
cd "$(dirname "$0")/.."
load_at_start=$(cut -d' ' -f1 /proc/loadavg)  # the result's stamp (bench/stamp.py)
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
OUT_DIR=${OUT_DIR:-bench/results}
ONLY=${ONLY:-}
cmake --build "$BUILD" -j2 --target eth_plan >/dev/null
mkdir -p "$OUT_DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for scenario in inputs/scenarios/*.yaml; do
  name=$(basename "$scenario" .yaml)
  [[ "$name" == *"$ONLY"* ]] || continue
  for savers in none recompute all; do
    echo "$name, --memory-savers $savers (load $(cut -d' ' -f1 /proc/loadavg))" >&2
    start=$(date +%s.%N)
    # A scenario may fit no plan without savers: eth_plan then says why, and exits non-zero.
    "$BUILD/app/eth_plan" --scenario "$scenario" --memory-savers "$savers" --out "$tmp/$name-$savers.yaml" \
      > "$tmp/$name-$savers.txt" 2>&1 && rc=0 || rc=$?
    end=$(date +%s.%N)
    echo "$rc $start $end" > "$tmp/$name-$savers.run"
  done
done

"$PYTHON" - "$tmp" "$OUT_DIR/memory_savers.json" <<'PY'
import glob, json, os, re, sys
import yaml
tmp, out = sys.argv[1], sys.argv[2]
result = {"benchmark": "memory_savers", "command": "bench/run_memory_savers.sh", "scenarios": {}}
names = sorted({os.path.basename(p).rsplit("-", 1)[0] for p in glob.glob(f"{tmp}/*.run")})
for name in names:
    entry = {}
    for savers in ("none", "recompute", "all"):
        rc, start, end = open(f"{tmp}/{name}-{savers}.run").read().split()
        text = open(f"{tmp}/{name}-{savers}.txt").read()
        run = {"seconds": float(end) - float(start)}
        if rc != "0":
            run["error"] = text.strip().splitlines()[-1]
        else:
            plan = yaml.safe_load(open(f"{tmp}/{name}-{savers}.yaml"))
            stages = [st for p in plan["pipelines"] for st in p["stages"]]
            run.update({
                "simulated_ms": float(re.search(r"iteration: simulated ([0-9.]+) ms", text).group(1)),
                "label": re.search(r"#1 plan: (.*)", text).group(1),
                "pipelines": len(plan["pipelines"]),
                "stages": len(stages),
                "recompute": {m: sum(st.get("recompute", "none") == m for st in stages) for m in ("selective", "full")},
                "sharded_blocks": len(plan.get("sharded_blocks", [])),
            })
        entry[savers] = run
    result["scenarios"][name] = entry
json.dump(result, open(out, "w"), indent=2)
print(f"{'scenario':20} {'none ms':>10} {'recompute ms':>13} {'all ms':>10} {'all/none':>9}  chosen (all)")
for name, e in result["scenarios"].items():
    def ms(s): return f"{e[s]['simulated_ms']:.1f}" if "simulated_ms" in e[s] else "no plan"
    a, n = e["all"], e["none"]
    ratio = f"{a['simulated_ms'] / n['simulated_ms']:.4f}" if "simulated_ms" in a and "simulated_ms" in n else "-"
    chosen = (f"{a['pipelines']} pipeline(s), {a['recompute']['selective']} selective + {a['recompute']['full']} full of "
              f"{a['stages']} stages, {a['sharded_blocks']} block(s) sharded") if "simulated_ms" in a else a.get("error", "")
    print(f"{name:20} {ms('none'):>10} {ms('recompute'):>13} {ms('all'):>10} {ratio:>9}  {chosen}")
print(f"\n{'scenario':20} {'eth_plan s: none':>16} {'recompute':>10} {'all':>8}")
for name, e in result["scenarios"].items():
    print(f"{name:20} {e['none']['seconds']:16.2f} {e['recompute']['seconds']:10.2f} {e['all']['seconds']:8.2f}")
PY
"$PYTHON" bench/stamp.py "$OUT_DIR/memory_savers.json" "$load_at_start"
