#!/usr/bin/env bash
# The layering rule of docs/design.md ("Layout"), checked on the sources: fails on any include
# that points from a lower folder to a higher one, and on any MPI_COMM_WORLD outside
# mpi_topology/ (which alone decides what "the job's ranks" are: eth::world_comm()).
#   app -> lib/{base -> model -> plan -> io -> runtime -> planner -> job} -> {kernels, mpi_topology}
# kernels/ knows nothing of MPI; mpi_topology/ nothing of GPT (it may use kernels' device buffers).
# Only app/ reads the environment (app/environment.hpp): the layers below take settings values.
# Usage: scripts/check_layers.sh [ROOT]   (default: the repository this script is in)
set -uo pipefail
root=${1:-$(cd "$(dirname "$0")/.." && pwd)}
cd "$root" || exit 2

# One awk over every file (the shell loop it replaces forked a few processes per include: 9 s a
# build, twice that in its test). A file may include only folders of a lower or equal rank.
sources=$(find kernels mpi_topology lib app -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' -o -name '*.h' \) | sort)
[ -n "$sources" ] || { echo "check_layers: no sources under $root"; exit 2; }
# Tests and benchmarks are users of every layer, but they too name the world through mpi_topology/.
users=$(find tests bench -type f \( -name '*.hpp' -o -name '*.cpp' -o -name '*.cu' \) | sort)
# shellcheck disable=SC2086  # the file lists split on white space: no source path holds any
awk -v layered_count="$(echo "$sources" | wc -l)" '
  BEGIN {
    split("kernels:0 mpi_topology:1 lib/base:10 lib/model:11 lib/plan:12 lib/io:13 lib/runtime:14 " \
          "lib/planner:15 lib/job:16 app:20", pairs, " ")
    for (i in pairs) { split(pairs[i], kv, ":"); rank[kv[1]] = kv[2] }
    failures = 0
  }
  # The layer folder of a path: lib/X for lib/X/..., else the top folder.
  function layer_of(path,    parts) {
    split(path, parts, "/")
    return parts[1] == "lib" ? parts[1] "/" parts[2] : parts[1]
  }
  function fail(text) { print "check_layers: " text; failures++ }
  FNR == 1 {
    file = FILENAME; from = layer_of(file)
    layered = file !~ /^(tests|bench)\//
    if (layered && !(from in rank)) fail(file ": folder " from " is not in the layer list of scripts/check_layers.sh")
    said_mpi = 0; said_world = 0
  }
  layered && (from in rank) && /^[[:space:]]*#[[:space:]]*include[[:space:]]*"/ {
    target = $0; sub(/^[^"]*"/, "", target); sub(/".*/, "", target)
    to = layer_of(target)
    if (!(to in rank)) fail(file ":" FNR " includes \"" target "\": " to " is not a layer folder")
    else if (rank[to] + 0 > rank[from] + 0)
      fail(file ":" FNR " includes \"" target "\": " from " may not include " to ", a layer above it")
  }
  # kernels/ and mpi_topology/ are siblings below lib/: kernels must not know MPI.
  layered && from == "kernels" && !said_mpi && /#[[:space:]]*include[[:space:]]*[<"](mpi\.h|mpi_topology\/)/ {
    fail(file ": kernels/ includes MPI; the kernels know nothing of MPI"); said_mpi = 1
  }
  from != "mpi_topology" && /(^|[^A-Za-z0-9_])MPI_COMM_WORLD([^A-Za-z0-9_]|$)/ {
    print "check_layers: " file ":" FNR " names MPI_COMM_WORLD; " \
          (layered ? "outside mpi_topology/ use eth::world_comm()" : "use eth::world_comm()")
    if (!said_world) { failures++; said_world = 1 }
  }
  # The environment is read once, by the program: the layers take what it read as arguments.
  layered && from != "app" && /(^|[^A-Za-z0-9_])(std::)?(secure_)?getenv[[:space:]]*\(/ {
    fail(file ":" FNR " reads the environment; only app/ does (app/environment.hpp)")
  }
  END {
    if (failures > 0) { print "check_layers: " failures " problem(s)"; exit 1 }
    print "check_layers: " layered_count " sources, every include points down, MPI_COMM_WORLD only in mpi_topology/, the environment read in app/ only"
  }' $sources $users
