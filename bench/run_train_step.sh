#!/usr/bin/env bash
# One rank's training step (GPT-2 by default; MODEL a Hugging Face config.json for a Llama): ETH's
# CPU backend against OpenBLAS sgemm (same process) and against Debian's PyTorch (same config,
# same thread count), run in interleaved rounds because the machine is shared and noisy. Writes
# bench/results/train_step.json (OUT another); docs/results.md quotes it.
#
#   bench/run_train_step.sh                 # defaults below, about 3-5 minutes on 2 cores
#   ROUNDS=5 LAYERS=4 bench/run_train_step.sh
set -euo pipefail
cd "$(dirname "$0")/.."
load_at_start=$(cut -d' ' -f1 /proc/loadavg)  # the result's stamp (bench/stamp.py)

THREADS=${THREADS:-2}        # the machine's cores; both sides get the same
LAYERS=${LAYERS:-2}          # GPT-2 124M shape with fewer layers, so a step takes seconds
B=${B:-4}
T=${T:-256}
ROUNDS=${ROUNDS:-3}          # each round: one run of ours and one of torch, order alternating
WARMUP=${WARMUP:-1}
STEPS=${STEPS:-2}            # ours: timed steps per repeat
REPEATS=${REPEATS:-2}        # ours: repeats per run
TORCH_WARMUP=${TORCH_WARMUP:-2}     # torch's first steps are slow while its allocator settles
TORCH_STEPS=${TORCH_STEPS:-1}       # torch's step is several times longer: fewer steps keep the
TORCH_REPEATS=${TORCH_REPEATS:-2}   # script near 5 minutes
MODEL=${MODEL:-inputs/models/gpt2-124m.yaml}
BUILD=${BUILD:-build}
TORCH_PYTHON=${TORCH_PYTHON:-/usr/bin/python3}   # Debian's python3-torch lives only there
OUT=${OUT:-bench/results/train_step.json}

# One OpenMP pool on both sides: our binary links the OpenMP build of OpenBLAS, and torch loads
# it too through the libblas.so.3 alternative (both are recorded in the JSON).
export OMP_NUM_THREADS=$THREADS
export OPENBLAS_NUM_THREADS=$THREADS

[ -f "$BUILD/CMakeCache.txt" ] || cmake -S . -B "$BUILD" -DCMAKE_BUILD_TYPE=Release
cmake --build "$BUILD" -j"$THREADS" --target bench_train_step >/dev/null

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
common=(--model "$MODEL" --layers "$LAYERS" --batch "$B" --seq-len "$T")
ours_cmd=("$BUILD/bench/bench_train_step" "${common[@]}" --warmup "$WARMUP" --steps "$STEPS" --repeats "$REPEATS")
torch_cmd=("$TORCH_PYTHON" bench/torch_train_step.py "${common[@]}" --warmup "$TORCH_WARMUP" --steps "$TORCH_STEPS"
           --repeats "$TORCH_REPEATS" --threads "$THREADS")

# The machine's load when each run starts and ends (other users show up here, not in top).
load() { echo "$1 $(date +%T) loadavg $(cut -d' ' -f1-3 /proc/loadavg) cpu-psi $(head -1 /proc/pressure/cpu 2>/dev/null)" >>"$tmp/load.txt"; }
run_ours() {  # the per-op profile once, in the first round: it adds two steps
  local profile=0
  [ "$1" -eq 1 ] && profile=1
  echo "round $1: ours" >&2
  load "ours_$1 start"
  "${ours_cmd[@]}" --profile-steps "$profile" --json "$tmp/ours_$1.json" >/dev/null
  load "ours_$1 end"
}
run_torch() {
  echo "round $1: torch" >&2
  load "torch_$1 start"
  "${torch_cmd[@]}" >"$tmp/torch_$1.json"
  load "torch_$1 end"
}

start=$(date +%s)
for ((r = 1; r <= ROUNDS; r++)); do
  if ((r % 2 == 1)); then run_ours "$r"; run_torch "$r"; else run_torch "$r"; run_ours "$r"; fi
done
elapsed=$(($(date +%s) - start))

mkdir -p "$(dirname "$OUT")"
"$TORCH_PYTHON" bench/summarize_train_step.py --dir "$tmp" --rounds "$ROUNDS" --out "$OUT" \
  --elapsed-s "$elapsed" --ours-cmd "OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS ${ours_cmd[*]} --profile-steps N (N = 1 in round 1, else 0)" \
  --torch-cmd "OMP_NUM_THREADS=$THREADS OPENBLAS_NUM_THREADS=$THREADS ${torch_cmd[*]}" \
  --script-cmd "THREADS=$THREADS LAYERS=$LAYERS B=$B T=$T ROUNDS=$ROUNDS bench/run_train_step.sh"
"$TORCH_PYTHON" bench/stamp.py "$OUT" "$load_at_start"
