#!/usr/bin/env bash
# Tears down the emulated cluster NAME made by up.sh: kills what still runs in its namespaces,
# deletes them (their veths and bridge go with them) and its state directory. Safe to repeat.
#   down.sh NAME
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source "$here/cluster_env.sh"
name=$1
for ns in $(ip netns list 2> /dev/null | awk '{print $1}' | grep -E "^$name-(h|[0-9]+)$"); do
  pids=$(ip netns pids "$ns" 2> /dev/null)
  [ -z "$pids" ] || kill $pids 2> /dev/null
  ip netns delete "$ns"
done
rm -rf "$(cluster_dir "$name")"
