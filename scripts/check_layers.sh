#!/usr/bin/env bash
# The layering rule of docs/design.md ("Layout"), checked on the sources: fails on any include
# that points from a lower folder to a higher one, and on any MPI_COMM_WORLD outside
# mpi_topology/ (which alone decides what "the job's ranks" are: eth::world_comm()).
#   app -> lib/{base -> model -> plan -> io -> runtime -> planner -> job} -> {kernels, mpi_topology}
# kernels/ knows nothing of MPI; mpi_topology/ nothing of GPT (it may use kernels' device buffers).
# Usage: scripts/check_layers.sh [ROOT]   (default: the repository this script is in)
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

# Rank of a folder: a file may include only folders of a lower or equal rank.
rank_of() {
  case "$1" in
    kernels) echo 0 ;;
    mpi_topology) echo 1 ;;
    lib/base) echo 10 ;;
    lib/model) echo 11 ;;
    lib/plan) echo 12 ;;
    lib/io) echo 13 ;;
    lib/runtime) echo 14 ;;
    lib/planner) echo 15 ;;
    lib/job) echo 16 ;;
    app) echo 20 ;;
    *) echo "" ;;
  esac
}
# The layer folder of a path: lib/X for lib/X/..., else the top folder.
layer_of() {
  case "$1" in
    lib/*) echo "$1" | cut -d/ -f1-2 ;;
    *) echo "$1" | cut -d/ -f1 ;;
  esac
}

failures=0
fail() { echo "check_layers: $*"; failures=$((failures + 1)); }

sources=$(find kernels mpi_topology lib app -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' \) | sort)
[ -n "$sources" ] || { echo "check_layers: no sources under $root"; exit 2; }
for file in $sources; do
  from=$(layer_of "$file")
  from_rank=$(rank_of "$from")
  [ -n "$from_rank" ] || { fail "$file: folder $from is not in the layer list of scripts/check_layers.sh"; continue; }
  while IFS=: read -r line target; do
    to=$(layer_of "$target")
    to_rank=$(rank_of "$to")
    if [ -z "$to_rank" ]; then
      fail "$file:$line includes \"$target\": $to is not a layer folder"
    elif [ "$to_rank" -gt "$from_rank" ]; then
      fail "$file:$line includes \"$target\": $from may not include $to, a layer above it"
    fi
  done < <(grep -n '^[[:space:]]*#[[:space:]]*include[[:space:]]*"' "$file" | sed -E 's/^([0-9]+):[^"]*"([^"]+)".*/\1:\2/')
  # kernels/ and mpi_topology/ are siblings below lib/: kernels must not know MPI.
  if [ "$from" = kernels ] && grep -qE '#[[:space:]]*include[[:space:]]*[<"](mpi\.h|mpi_topology/)' "$file"; then
    fail "$file: kernels/ includes MPI; the kernels know nothing of MPI"
  fi
  if [ "$from" != mpi_topology ]; then
    grep -nw 'MPI_COMM_WORLD' "$file" | while IFS=: read -r line _; do
      echo "check_layers: $file:$line names MPI_COMM_WORLD; outside mpi_topology/ use eth::world_comm()"
    done | grep . && failures=$((failures + 1))
  fi
done
# Tests and benchmarks are users of every layer, but they too name the world through mpi_topology/.
for file in $(find tests bench -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.cu' \) | sort); do
  grep -nw 'MPI_COMM_WORLD' "$file" | while IFS=: read -r line _; do
    echo "check_layers: $file:$line names MPI_COMM_WORLD; use eth::world_comm()"
  done | grep . && failures=$((failures + 1))
done

if [ "$failures" -gt 0 ]; then
  echo "check_layers: $failures problem(s)"
  exit 1
fi
echo "check_layers: $(echo "$sources" | wc -l) sources, every include points down, MPI_COMM_WORLD only in mpi_topology/"
