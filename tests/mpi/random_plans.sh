#!/usr/bin/env bash
# Property test: random valid plans train like one rank. random_plans.py writes COUNT random
# (topology, plan) pairs for tiny-4l on 4-8 ranks (shuffled ranks over 2-4 declared nodes, 1-3
# pipelines, stages of width 1-3 with random splits, split stages feeding split stages of another
# width, split middle stages, random micro-batch sizes and counts). For each, 3 steps of the plan
# must equal 3 steps of one rank with the same global batch as one micro-batch: per-step loss and
# gradient norm and the final parameters within 1e-5 relative (compare_runs.py).
#   random_plans.sh BUILD_DIR SOURCE_DIR [COUNT] [SEED]
#
# Environment:
#   MODEL (default inputs/models/tiny-4l.yaml): another 4-layer model (its Llama twin, tiny-llama-4l).
#   ETH_NCCL=emulated: the plans whose moments are not sharded must sum on NCCL's emulation.
#   MODES (default "cpu cpu-async"): the backend modes the plans take turns in, four plans each
#     (plan i runs once, with ETH_BACKEND the (i / 4 mod n)-th of the n modes; random_plans.py
#     forces a feature by i mod 4, so each forced feature meets every mode). Every plan is a new
#     case; running each in every mode took twice as long for what the cases already cover. The
#     one-rank references always run with ETH_BACKEND=cpu, cached per global batch.
#   RANDOM_PLANS_REF_SEED (default 42, the plans' seed): another value gives the references other
#     parameters and data, so every plan must fail: a check that the test can fail.
#   RANDOM_PLANS_LR (default 1e-3), RANDOM_PLANS_BUDGET_S (default 840: gives up, failing, after),
#   RANDOM_PLANS_KEEP (a directory to keep the scratch files in).
#   PRECISION (default fp32): every run's --precision; TOLERANCE (default 1e-5): compare_runs.py's
#     bound (bf16's, and why: tests/mpi/CMakeLists.txt).
#
# Why lr 1e-3: AdamW's first step moves a parameter by lr * g / (|g| + 1e-8), so the rare element
# whose true gradient is within ~1e-8 of zero turns the gradient's float-rounding noise into an
# update difference of up to ~lr. With lr 1e-2 that one element alone makes the parameter vector of
# two ONE-rank runs with different micro-batches differ by up to 1.3e-5 relative (seen: batch 16,
# micro-batch 16 vs 2), over the 1e-5 bound; at 1e-3 the same noise is ten times smaller, while
# any real fault (a lost micro-batch, wrong samples or rows, a missed reduction) still moves loss,
# norm or parameters by orders of magnitude more. A failing plan's report adds a one-rank control
# (its global batch in micro-batches of 1) against the same reference: the noise floor beside it.
# (The CPU matmuls sum in one order whatever the micro-batch, kernels/cpu/ordered_gemm.hpp, so a
# control differs from its reference only where the tied embedding's two sums interleave: ~1e-8.)
#
# On a failure it prints the plan, the topology, the log or comparison and the control, goes on
# with the other plans, and exits 1 at the end.
set -euo pipefail
build=$1 src=$2 count=${3:-20} seed=${4:-1}
read -r -a modes <<< "${MODES:-cpu cpu-async}"
budget=${RANDOM_PLANS_BUDGET_S:-840}
lr=${RANDOM_PLANS_LR:-1e-3}
ref_seed=${RANDOM_PLANS_REF_SEED:-42}
source "$src/tests/mpi/mpi_test_env.sh"
# RANDOM_PLANS_KEEP=DIR: keep the plans, logs, metrics and parameters there (for debugging).
[ -z "${RANDOM_PLANS_KEEP:-}" ] || trap 'rm -rf "$RANDOM_PLANS_KEEP"; cp -r "$work" "$RANDOM_PLANS_KEEP"; rm -rf "$work"' EXIT
model="$src/${MODEL:-inputs/models/tiny-4l.yaml}"
write_tiny_shard "$work/data.bin" 7
common=(--model "$model" --train-data "$work/data.bin" --seq-len 16 --steps 3 --lr "$lr" --warmup 1
        --precision "${PRECISION:-fp32}")
$py "$src/tests/mpi/random_plans.py" "$work/plans" "$count" "$seed"
start=$SECONDS

# launch NAME RANKS BACKEND ARGS...: eth_train with "${common[@]}" and ARGS under ETH_BACKEND, metrics
# in $work/NAME, parameters in $work/NAME.bin, log in $work/NAME.log; returns its exit status.
launch() {
  local name=$1 np=$2 backend=$3
  shift 3
  ETH_BACKEND=$backend launch_mpi 120 "$np" --oversubscribe --bind-to none --mca mpi_yield_when_idle 1 \
    -x ETH_BACKEND -x OMP_NUM_THREADS "$build/app/eth_train" "${common[@]}" --output-dir "$work/$name" \
    --save-params "$work/$name.bin" "$@" < /dev/null > "$work/$name.log" 2>&1
}

# compare REF RUN: compare_runs.py of two launched runs into $work/RUN.cmp; returns its status.
compare() {
  $py "$src/tests/mpi/compare_runs.py" "$work/$1" "$work/$1.bin" "$work/$2" "$work/$2.bin" "${TOLERANCE:-1e-5}" \
    > "$work/$2.cmp" 2>&1
}

# diffs FILE: the loss, grad norm and parameter relative differences of a comparison, tab-separated
# (nan nan nan when it stopped before printing them).
diffs() {
  local d
  mapfile -t d < <(sed -n 's/.*max relative difference \([^ ]*\).*/\1/p; s/^parameters but the key biases: relative difference \([^ ]*\).*/\1/p' "$1")
  [ "${#d[@]}" -eq 3 ] || d=(nan nan nan)
  printf '%s\t%s\t%s' "${d[@]}"
}

# show_failure I BATCH WHAT FILE: the plan, its topology, FILE (a log or a comparison), the control.
show_failure() {
  local i=$1 batch=$2 what=$3 file=$4
  echo "FAIL: plan $i: $what"
  echo "---- plan$i.yaml"; cat "$work/plans/plan$i.yaml"
  echo "---- topo$i.yaml"; cat "$work/plans/topo$i.yaml"
  echo "---- $(basename "$file")"; tail -n 60 "$file"
  if [ -f "$work/ref_b$batch.bin" ] && [ ! -f "$work/ctl_b$batch.cmp" ] &&
     launch "ctl_b$batch" 1 cpu --batch "$batch" --micro-batch 1 --seed 42; then
    compare "ref_b$batch" "ctl_b$batch" || true
  fi
  if [ -f "$work/ctl_b$batch.cmp" ]; then
    echo "---- control: one rank, micro-batch 1 instead of $batch, against the same reference"
    cat "$work/ctl_b$batch.cmp"
  fi
  echo "----"
}

failures=0
nccl_plans=0
: > "$work/results.tsv"
while IFS=$'\t' read -r i np batch shape feats; do
  mode=${modes[$((10#$i / 4 % ${#modes[@]}))]}
  if (( SECONDS - start > budget )); then
    echo "FAIL: out of time (${budget} s) before plan $i"
    failures=$((failures + 1))
    break
  fi
  ref="ref_b$batch"
  if [ ! -f "$work/$ref.bin" ]; then
    if ! launch "$ref" 1 cpu --batch "$batch" --micro-batch "$batch" --seed "$ref_seed"; then
      show_failure "$i" "$batch" "the one-rank reference (batch $batch) failed" "$work/$ref.log"
      failures=$((failures + 1))
      continue
    fi
  fi
  run_name="${mode}_plan$i"
  t0=$SECONDS
  if ! launch "$run_name" "$np" "$mode" --seed 42 --topology "$work/plans/topo$i.yaml" --plan "$work/plans/plan$i.yaml"; then
    show_failure "$i" "$batch" "eth_train failed under ETH_BACKEND=$mode on $np ranks" "$work/$run_name.log"
    failures=$((failures + 1))
    printf '%s\t%s\tRUN-FAILED\tnan\tnan\tnan\n' "$mode" "$i" >> "$work/results.tsv"
    continue
  fi
  secs=$((SECONDS - t0))
  status=ok
  # Under ETH_NCCL=emulated every plan whose moments are not sharded sums on the NCCL path.
  if [ "${ETH_NCCL:-}" = emulated ] && ! grep -q "AdamW moments sharded" "$work/$run_name.log"; then
    if grep -q "NCCL (emulated" "$work/$run_name.log"; then
      nccl_plans=$((nccl_plans + 1))
    else
      status=NOT-NCCL
      show_failure "$i" "$batch" "ETH_NCCL=emulated, but its log does not name the NCCL path" "$work/$run_name.log"
      failures=$((failures + 1))
    fi
  fi
  if ! compare "$ref" "$run_name"; then
    status=DIFFERS
    show_failure "$i" "$batch" "differs from one rank under ETH_BACKEND=$mode" "$work/$run_name.cmp"
    failures=$((failures + 1))
  fi
  printf '%s\t%s\t%s\t%s\n' "$mode" "$i" "$status" "$(diffs "$work/$run_name.cmp")" >> "$work/results.tsv"
  printf '%-9s plan %s %-7s %s ranks, batch %2s, %2s s: %s\n' "$mode" "$i" "$status" "$np" "$batch" "$secs" "$shape"
done < "$work/plans/list.tsv"
echo "$((SECONDS - start)) s (one-rank references included)"
[ "${ETH_NCCL:-}" = emulated ] && echo "$nccl_plans plan run(s) summed on the emulated NCCL path (the others' moments sharded: MPI)"

# Worst differences per mode.
$py - "$work/results.tsv" <<'PY'
import math, sys
rows = [l.rstrip("\n").split("\t") for l in open(sys.argv[1]) if l.strip()]
for mode in dict.fromkeys(r[0] for r in rows):
    mine = [r for r in rows if r[0] == mode]
    done = [r for r in mine if not any(math.isnan(float(x)) for x in r[3:6])]
    bad = [r[1] for r in mine if r[2] != "ok"]
    print(f"mode {mode}: {len(done)} compared" + (f", {len(bad)} failed: {' '.join(bad)}" if bad else ""))
    for col, name in ((3, "loss"), (4, "grad norm"), (5, "parameters")):
        if done:
            w = max(done, key=lambda r: float(r[col]))
            print(f"  worst {name:10s} relative difference {float(w[col]):.3e} (plan {w[1]})")
PY
if [ "$failures" -gt 0 ]; then
  echo "FAIL: $failures failure(s) over modes: ${modes[*]}"
  exit 1
fi
echo "all $count random plans equal one rank in modes: ${modes[*]} ($((SECONDS - start)) s)"
