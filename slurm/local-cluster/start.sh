#!/usr/bin/env bash
# Starts a one-machine Slurm cluster (munged unless running, slurmctld, slurmd) with its state
# in DIR, as root (munged runs as user munge, the Slurm daemons as root).
#   source slurm/local-cluster/start.sh DIR     # exports SLURM_CONF; stop.sh DIR ends it
# Returns once the node is idle (at most 30 s). Ports 6917/6918 unless ETH_SLURM_PORT is set.
eth_slurm_start() {
  local dir=$1 here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  mkdir -p "$dir/state" "$dir/spool"
  local port=${ETH_SLURM_PORT:-6917}
  sed -e "s#@DIR@#$dir#g" -e "s#@CPUS@#$(getconf _NPROCESSORS_ONLN)#g" -e "s#@PORT@#$port#g" -e "s#@SLURMD_PORT@#$((port + 1))#g" \
    "$here/slurm.conf.in" > "$dir/slurm.conf"
  export SLURM_CONF=$dir/slurm.conf
  if ! pgrep -x munged > /dev/null; then
    install -d -o munge -g munge /run/munge
    runuser -u munge -- /usr/sbin/munged || return 1
    touch "$dir/munged.ours"  # stop.sh ends it
  fi
  /usr/sbin/slurmctld -f "$SLURM_CONF" || return 1
  /usr/sbin/slurmd -f "$SLURM_CONF" -N localhost || return 1
  for _ in $(seq 60); do
    sinfo -h -N -o "%t" 2>/dev/null | grep -qx "idle" && return 0
    sleep 0.5
  done
  echo "slurm/local-cluster/start.sh: the node did not become idle within 30 s; see $dir/*.log" >&2
  return 1
}
eth_slurm_start "$1"
