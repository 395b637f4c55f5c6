# Sourced by the MPI shell tests after they set `build` and `src`: Open MPI's environment, one
# OpenMP thread per rank, a scratch directory ($work) removed on exit, token data for the tiny
# models, and a wrapper that runs eth_train.
source "$src/scripts/env.sh"
# A failing job ends when its ranks do: when a rank exits non-zero, mpirun sends the others
# SIGTERM and waits odls_base_sigkill_timeout seconds (Open MPI's default 1) before SIGKILL,
# twice, even when there are no others. The tests end about a hundred jobs that way, each after
# it has said why (eth_train_cli took 55 s instead of 15). interrupt.sh, which is about that
# window, restores the default that users' jobs run with. (tests/cli/cli_checks.sh: the same.)
export OMPI_MCA_odls_base_sigkill_timeout=0
export OMP_NUM_THREADS=1
# The CPU backend unless the caller chose another (bench/gpu/run.sh runs these on the GPU).
export ETH_BACKEND=${ETH_BACKEND:-cpu}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# Each test's jobs keep Open MPI's session directory in $work, not in the /tmp/ompi.HOST.UID that
# every job of the user shares: the tests run side by side (ctest -j), and Open MPI 4.1 fails a
# job at start ("A call to mkdir was unable to create the desired directory ... File exists",
# orte_session_dir failed) when another job's cleanup removes that directory as it creates it
# (seen in CI: random_plans, equivalence_data_parallel_4_nccl).
export OMPI_MCA_orte_tmpdir_base="$work"
py=${PYTHON:-/usr/bin/python3}  # Debian's, with numpy and yaml; a GPU machine names its own

# write_tiny_shard PATH SEED: an llm.c shard of 20000 random tokens below 97, the tiny models'
# vocabulary.
write_tiny_shard() {
  $py - "$1" "$2" <<'PY'
import sys, numpy as np
h = np.zeros(256, dtype=np.int32); h[0], h[1], h[2] = 20240520, 1, 20000
tokens = np.random.default_rng(int(sys.argv[2])).integers(0, 97, 20000).astype(np.uint16)
open(sys.argv[1], "wb").write(h.tobytes() + tokens.tobytes())
PY
}

# launch_mpi SECONDS RANKS ARGS...: mpirun -np RANKS ARGS, ended after SECONDS. On this host, or,
# when ETH_CLUSTER names an emulated cluster (tests/cluster/on_cluster.sh) and RANKS > 1, across
# its nodes: declared node i of the run's --topology on emulated node i, so that transfers and
# reductions between declared nodes cross real TCP. One-rank references stay on this host.
launch_mpi() {
  local seconds=$1 np=$2 topology="" a
  shift 2
  for a in "$@"; do
    [ "$topology" != next ] || topology=$a
    [ "$a" != --topology ] || topology=next
  done
  if [ -n "${ETH_CLUSTER:-}" ] && [ "$np" -gt 1 ]; then
    timeout "$seconds" "$src/scripts/cluster/mpirun.sh" "$ETH_CLUSTER" ${topology:+--topology "$topology"} -np "$np" "$@"
  else
    timeout "$seconds" mpirun -np "$np" "$@"
  fi
}

# tiny_job STEPS: the 4-layer tiny model ($model: MODEL, default inputs/models/tiny-4l.yaml), the
# test plans' folder ($plans), a shard ($work/data.bin) and the options every run of the test
# shares ($common: lr LR, default 1e-2) for STEPS steps.
tiny_job() {
  model="$src/${MODEL:-inputs/models/tiny-4l.yaml}"
  plans="$src/tests/mpi/plans"
  write_tiny_shard "$work/data.bin" 7
  common=(--model "$model" --train-data "$work/data.bin" --seq-len 16 --steps "$1" --lr "${LR:-1e-2}" --warmup 1 --seed 42)
}

# run NAME RANKS ARGS...: eth_train with the caller's "${common[@]}" and ARGS, metrics in
# $work/NAME, final parameters in $work/NAME.bin; on failure prints its log and exits. At
# --precision $PRECISION, fp32 by default: explicit, so that on a GPU (where auto is bf16) the
# fp32 tests stay fp32. ETH_TRAIN_WRAPPER, when set, is a command each rank runs eth_train through
# (fp32_compute_on_ranks.sh). Under ETH_NCCL=emulated a run on several ranks must have summed its
# gradients on the NCCL path (unless its optimizer state is sharded, which takes MPI), so that
# such a test cannot pass on the MPI path instead.
run() {
  local name=$1 np=$2
  shift 2
  launch_mpi 300 "$np" ${ETH_TRAIN_WRAPPER:+"$ETH_TRAIN_WRAPPER"} "$build/app/eth_train" "${common[@]}" --precision "${PRECISION:-fp32}" --output-dir "$work/$name" \
    --save-params "$work/$name.bin" "$@" > "$work/$name.log" 2>&1 || { cat "$work/$name.log"; exit 1; }
  if [ "${ETH_NCCL:-}" = emulated ] && [ "$np" -gt 1 ] && ! grep -q "AdamW moments sharded" "$work/$name.log" &&
     ! grep -q "NCCL (emulated" "$work/$name.log"; then
    echo "FAIL: $name ran under ETH_NCCL=emulated but its log does not name the emulated NCCL path"
    exit 1
  fi
}
