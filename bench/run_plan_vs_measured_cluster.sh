#!/usr/bin/env bash
# Planner prediction vs measured eth_train run across an emulated cluster (scripts/cluster):
# 4 nodes of 2 CPU ranks, NICs at RATE (default 1gbit), the demo model, T 64, global batch 32
# (docs/results.md, "Planner prediction vs measured run across emulated nodes"). Root only.
#
#   bash bench/run_plan_vs_measured_cluster.sh [BUILD_DIR]      # default build/
#
#   0. links: bench/link_probe.c between two nodes (both directions at once: a reduction's ring
#      sends and receives together) gives the network's GB/s and latency; bench/iallreduce_bandwidth.c
#      on the two ranks of one node gives the node link's all-reduce bus bandwidth. Both go into a
#      copy of the cluster's topology.yaml, which the planner reads.
#   then RUNS times (default 2), back to back, so that each prediction and its runs see the same
#   background load on the shared machine:
#   1. profile: eth_profile on all 8 ranks at once (lockstep), so each block is timed under the
#      run's load of 4 ranks per core;
#   2. plan: eth_plan's choice (--top 4, #1), and --evaluate of two hand-written plans:
#      inputs/plans/cluster-4x2-demo-span.yaml (stages spanning nodes) and
#      inputs/plans/cluster-4x2-demo-local.yaml (every layer block inside a node);
#   3. run: eth_train, STEPS steps (default 8) per plan, the median step after WARMUP (default 2);
#   4. compare: bench/compare_plan_runs.py -> bench/results/plan_vs_measured_cluster.json.
set -euo pipefail
cd "$(dirname "$0")/.."
load_at_start=$(cut -d' ' -f1 /proc/loadavg)  # the result's stamp (bench/stamp.py)
BUILD=${1:-build}
RATE=${RATE:-1gbit}
STEPS=${STEPS:-8}
RUNS=${RUNS:-2}
WARMUP=${WARMUP:-2}
REPS=${REPS:-3}
MODEL=inputs/models/demo.yaml
T=64
BATCH=32
HAND_PLANS=(span local)   # inputs/plans/cluster-4x2-demo-NAME.yaml
source scripts/env.sh
source scripts/cluster/cluster_env.sh
export OMP_NUM_THREADS=1
cluster_can_run || exit 1
WORK=${WORK:-$(mktemp -d)}
mkdir -p "$WORK" bench/results
name="ethp$$"
trap 'bash scripts/cluster/down.sh "$name"' EXIT
bash scripts/cluster/up.sh "$name" --nodes 4 --ranks-per-node 2 --rate "$RATE"
on_cluster() { bash scripts/cluster/mpirun.sh "$name" "$@"; }
LOG=$WORK/log.txt
say() { echo "$@" | tee -a "$LOG"; }

# 0. Links, each probe alone on the cluster.
mpicc -O2 -o "$WORK/link_probe" bench/link_probe.c
mpicc -O2 -o "$WORK/allreduce" bench/iallreduce_bandwidth.c
printf 'nodes:\n  - {name: n, count: 2, devices: [{type: cpu-rank, count: 1}]}\n' > "$WORK/two-nodes.yaml"
printf 'nodes:\n  - {name: n, devices: [{type: cpu-rank, count: 2}]}\n' > "$WORK/one-node.yaml"
read -r _ NET_GBS NET_US < <(on_cluster --topology "$WORK/two-nodes.yaml" -np 2 "$WORK/link_probe" 24000000)
# With the all-reduce algorithm eth_train asks for (mpi_topology/mpi_session.cpp), not libnbc's own.
read -r NODE_GBS _ < <(OMPI_MCA_coll_libnbc_iallreduce_algorithm=1 \
  on_cluster --topology "$WORK/one-node.yaml" -np 2 "$WORK/allreduce" 7250000)
say "== 0. network $NET_GBS GB/s each way (both at once), $NET_US us; node link all-reduce bus $NODE_GBS GB/s"
TOPO=$WORK/topology-measured.yaml
sed -e "s/^network: {kind: ethernet, bandwidth_gbs: [0-9.]*, latency_us: [0-9.]*}/network: {kind: ethernet, bandwidth_gbs: $NET_GBS, latency_us: $NET_US}/" \
    -e "s/link: {kind: shared-memory, bandwidth_gbs: [0-9.]*/link: {kind: shared-memory, bandwidth_gbs: $NODE_GBS/" \
    "$(cluster_dir "$name")/topology.yaml" > "$TOPO"

for r in $(seq 1 "$RUNS"); do
  say "== repetition $r: 1. profile (8 ranks in lockstep; load $(cat /proc/loadavg))"
  on_cluster -np 8 "$BUILD/app/eth_profile" --model "$MODEL" --seq-len $T --device-type cpu-rank \
    --repetitions "$REPS" --out "$WORK/profile-$r.yaml" | tee -a "$LOG"
  say "== repetition $r: 2. plan"
  "$BUILD/app/eth_plan" --topology "$TOPO" --model "$MODEL" --batch $BATCH --seq-len $T --top 4 \
    --profile "$WORK/profile-$r.yaml" --out "$WORK/best-$r.yaml" | tee -a "$LOG"
  for plan in "${HAND_PLANS[@]}"; do
    "$BUILD/app/eth_plan" --evaluate "inputs/plans/cluster-4x2-demo-$plan.yaml" --topology "$TOPO" --model "$MODEL" \
      --seq-len $T --profile "$WORK/profile-$r.yaml" | tee "$WORK/$plan-eval-$r.txt" | tee -a "$LOG"
  done
  say "== repetition $r: 3. run"
  for plan in best "${HAND_PLANS[@]}"; do
    file=inputs/plans/cluster-4x2-demo-$plan.yaml; [ "$plan" = best ] && file=$WORK/best-$r.yaml
    say "-- $plan run $r ($(cat /proc/loadavg))"
    on_cluster -np 8 "$BUILD/app/eth_train" --topology "$TOPO" --plan "$file" --model "$MODEL" \
      --train-data inputs/data/kjv_train.bin --seq-len $T --steps "$STEPS" --output-dir "$WORK/$plan-$r" \
      2>&1 | tee -a "$LOG" | tail -n 1
  done
done

say "== 4. compare"
SETUP=$(printf '{"machine": "2 cores (AMD Zen3), shared with other jobs", "cluster": "4 emulated nodes x 2 CPU ranks (scripts/cluster), NICs at %s", "network_gbs_measured": %s, "network_latency_us_measured": %s, "node_allreduce_bus_gbs_measured": %s, "model": "%s", "seq_len": %s, "global_batch": %s, "steps": %s, "repetitions": %s, "warmup_steps_skipped": %s, "method": "per repetition: profile (8 ranks lockstep), plan, run each plan once; medians over repetitions"}' \
  "$RATE" "$NET_GBS" "$NET_US" "$NODE_GBS" "$MODEL" $T $BATCH "$STEPS" "$RUNS" "$WARMUP")
python3 bench/compare_plan_runs.py "$WORK" "$RUNS" "$WARMUP" "$SETUP" bench/results/plan_vs_measured_cluster.json \
  "best=planner's choice (eth_plan --top 4, #1)" \
  "span=stages spanning nodes (inputs/plans/cluster-4x2-demo-span.yaml, --evaluate)" \
  "local=every layer block inside a node (inputs/plans/cluster-4x2-demo-local.yaml, --evaluate)" | tee -a "$LOG"
python3 bench/stamp.py bench/results/plan_vs_measured_cluster.json "$load_at_start"
