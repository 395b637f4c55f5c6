#!/usr/bin/env bash
# A heterogeneous Slurm job across emulated nodes: an emulated cluster of 2 nodes
# (scripts/cluster/up.sh, NICs at 1 Gbit/s) runs a Slurm cluster (slurm/local-cluster/start.sh
# --nodes-from) with one partition per node, `fast` and `slow` (standing for two GPU types).
# A two-component hetjob, 2 tasks in each partition, runs slurm/eth_train.sbatch's whole flow as
# one MPI job across both components (mpirun, its daemons Slurm steps of each component; not
# srun --het-group, which hangs at times in Slurm 22.05: slurm/README.md): eth_topo finds 4 ranks on 2 nodes,
# eth_plan plans them, eth_train trains over real TCP between the nodes and checkpoints. Then the
# preemption path in the hetjob: USR1 to its batch script, checkpoint, requeue of the whole
# hetjob, resume, every step's loss equal to an uninterrupted hetjob's. Needs root (namespaces,
# munged); skips (exit 77) otherwise or without Slurm. Cleans up however it ends.
#   hetjob.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
source "$src/tests/slurm/slurm_test_env.sh"
source "$src/scripts/cluster/cluster_env.sh"
cluster_can_run || exit 77
name="eths$$"
trap 'bash "$src/slurm/local-cluster/stop.sh" "$work/cluster"; bash "$src/scripts/cluster/down.sh" "$name"; rm -rf "$work"' EXIT
bash "$src/scripts/cluster/up.sh" "$name" --nodes 2 --ranks-per-node 2 --rate 1gbit || exit 1
source "$src/slurm/local-cluster/start.sh" "$work/cluster" --nodes-from "$name" --partition fast=0 --partition slow=1
check "a Slurm cluster on 2 emulated nodes starts, partitions fast and slow" $? "$(tail -n 5 "$work"/cluster/*.log)"
write_tiny_shard "$work/data.bin" 7

# Open MPI as on the emulated cluster (docs/emulated-cluster.md): ranks of one node share memory,
# ranks of different nodes use TCP on the cluster's network, ranks yield when idle (4 on 2 cores).
export OMPI_MCA_btl=self,vader,tcp OMPI_MCA_btl_tcp_if_include=$CLUSTER_NET.0/24 OMPI_MCA_oob_tcp_if_include=$CLUSTER_NET.0/24 \
  OMPI_MCA_mpi_yield_when_idle=1
allocation=(-p fast -n 2 : -p slow -n 2)
sent() { ip netns exec "$(node_ns "$name" 1)" tc -s qdisc show dev eth0 | awk '/Sent/ {print $2; exit}'; }
before=$(sent)
check_short_job "4 ranks on 2 node(s)"
[ "$(awk '/^nodes:/ { n = 1 } n && /^  - name: / { print $3 }' "$work/job/topology.yaml" | paste -sd' ')" = "$name-node0 $name-node1" ]
check "the topology lists node 0 (partition fast) before node 1 (slow)" $? "$(cat "$work/job/topology.yaml")"
# What node 1's NIC carried during the job. Two srun steps of eth_topo across both nodes (Slurm,
# PMIx and MPI start-up, no training) sent 31 kB; 4 steps of tiny-4l whose plan spans both nodes
# send gradients (or activations) over TCP: 990 kB were seen with the plan of 4 one-rank pipelines.
kb=$((($(sent) - before) / 1000))
[ "$kb" -ge 300 ]
check "the slow partition's node sent ${kb} kB through its NIC (at least 300 expected)" $? "$(cat "$work/job/plan.txt")"

check_preemption
finish
