#!/usr/bin/env bash
# Stops the cluster start.sh started in DIR: slurmd, slurmctld, and munged if start.sh started it.
#   bash slurm/local-cluster/stop.sh DIR
dir=$1
for daemon in slurmd slurmctld; do
  [ -f "$dir/$daemon.pid" ] && kill "$(cat "$dir/$daemon.pid")" 2> /dev/null
done
[ -f "$dir/munged.ours" ] && pkill -x munged
for _ in $(seq 20); do
  pgrep -f "slurm(ctl)?d -f $dir/slurm.conf" > /dev/null || exit 0
  sleep 0.5
done
pkill -9 -f "slurm(ctl)?d -f $dir/slurm.conf"
exit 0
