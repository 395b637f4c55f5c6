#!/usr/bin/env bash
# Stops the cluster start.sh started in DIR: every slurmd, slurmctld, and the munged start.sh
# started, if it did. (The namespaces of an emulated cluster stay: scripts/cluster/down.sh ends them.)
#   bash slurm/local-cluster/stop.sh DIR
dir=$1
for pidfile in "$dir"/slurmd-*.pid "$dir/slurmctld.pid"; do
  [ -f "$pidfile" ] && kill "$(cat "$pidfile")" 2> /dev/null
done
[ -f "$dir/munged.ours" ] && kill "$(cat "$dir/munged.ours")" 2> /dev/null
for _ in $(seq 20); do
  pgrep -f "slurm(ctl)?d -f $dir/slurm.conf" > /dev/null || exit 0
  sleep 0.5
done
pkill -9 -f "slurm(ctl)?d -f $dir/slurm.conf"
exit 0
