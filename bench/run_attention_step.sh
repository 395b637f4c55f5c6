#!/usr/bin/env bash
# Attention that stores no T x T matrix, against the materialised attention it replaced, on the
# CPU: (1) the kernels alone over a sweep of T (bench_attention, both in one process, repeats
# interleaved), (2) one rank's whole GPT-2 training step at T = 1024 (bench_train_step with
# --attention blocked and --attention materialised, in alternating rounds, because the machine
# is shared and noisy). Writes bench/results/attention.json and bench/results/attention_step.json;
# docs/results.md quotes both.
#
#   bench/run_attention_step.sh                 # defaults below, about 5 minutes on 2 cores
#   ROUNDS=5 B=4 bench/run_attention_step.sh
set -euo pipefail
cd "$(dirname "$0")/.."
load_at_start=$(cut -d' ' -f1 /proc/loadavg)  # the result's stamp (bench/stamp.py)

THREADS=${THREADS:-2}
LAYERS=${LAYERS:-2}          # GPT-2 124M shapes with fewer layers, so that a step takes seconds
B=${B:-2}
T=${T:-1024}
ROUNDS=${ROUNDS:-3}          # each round: one run of each attention, order alternating
STEPS=${STEPS:-1}
REPEATS=${REPEATS:-3}
KERNEL_REPEATS=${KERNEL_REPEATS:-5}
MODEL=${MODEL:-inputs/models/gpt2-124m.yaml}
BUILD=${BUILD:-build}
PYTHON=${PYTHON:-/usr/bin/python3}
OUT_DIR=${OUT_DIR:-bench/results}

export OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS
cmake --build "$BUILD" -j"$THREADS" --target bench_attention bench_train_step >/dev/null
mkdir -p "$OUT_DIR"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

echo "kernels: T = 64 .. 1024" >&2
"$BUILD/bench/bench_attention" --batch 4 --seq-lens 64 128 256 512 1024 --repeats "$KERNEL_REPEATS" \
  --json "$OUT_DIR/attention.json" >/dev/null

step_cmd=("$BUILD/bench/bench_train_step" --model "$MODEL" --layers "$LAYERS" --batch "$B" --seq-len "$T"
          --warmup 1 --steps "$STEPS" --repeats "$REPEATS" --profile-steps 1)
for ((r = 1; r <= ROUNDS; r++)); do
  order=(blocked materialised)
  ((r % 2 == 0)) && order=(materialised blocked)
  for a in "${order[@]}"; do
    echo "round $r: $a ($(cut -d' ' -f1 /proc/loadavg) load)" >&2
    "${step_cmd[@]}" --attention "$a" --json "$tmp/${a}_$r.json" >/dev/null
  done
done

"$PYTHON" - "$tmp" "$ROUNDS" "$OUT_DIR/attention_step.json" "THREADS=$THREADS LAYERS=$LAYERS B=$B T=$T ROUNDS=$ROUNDS bench/run_attention_step.sh" <<'PY'
import json, statistics, sys
tmp, rounds, out, cmd = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
runs = {a: [json.load(open(f"{tmp}/{a}_{r}.json")) for r in range(1, rounds + 1)] for a in ("blocked", "materialised")}
def ms(a):  # every repeat of every run
    return [v for run in runs[a] for v in run["step_ms"]["values"]]
def op_ms(a, op):
    return statistics.median([o["ms_per_step"] for run in runs[a] for o in run["profile"]["ops"] if o["op"] == op])
per_round = [statistics.median(runs["materialised"][r]["step_ms"]["values"]) /
             statistics.median(runs["blocked"][r]["step_ms"]["values"]) for r in range(rounds)]
result = {"benchmark": "attention_step", "command": cmd, "config": runs["blocked"][0]["config"],
          "step_ms": {a: {"median": statistics.median(ms(a)), "min": min(ms(a)), "max": max(ms(a)), "values": ms(a)}
                      for a in runs},
          "attention_ms_per_step": {a: {op: op_ms(a, op) for op in ("attention_forward", "attention_backward")}
                                    for a in runs},
          "speedup_blocked_over_materialised": {"median_of_medians": statistics.median(ms("materialised")) /
                                                statistics.median(ms("blocked")), "per_round": per_round},
          # Same seed, tokens and steps in every run: the losses differ only by fp32 rounding.
          "loss_max_rel_diff": max(abs(x - y) / abs(y) for x, y in zip(runs["blocked"][0]["losses"],
                                                                     runs["materialised"][0]["losses"])),
          "losses": {a: runs[a][0]["losses"] for a in runs}}
json.dump(result, open(out, "w"), indent=2)
s = result["step_ms"]
print(f"step ms median: blocked {s['blocked']['median']:.0f}, materialised {s['materialised']['median']:.0f}, "
      f"speed-up {result['speedup_blocked_over_materialised']['median_of_medians']:.2f} (per round {per_round})")
print("attention ms per step:", result["attention_ms_per_step"])
PY
"$PYTHON" bench/stamp.py "$OUT_DIR/attention_step.json" "$load_at_start"
