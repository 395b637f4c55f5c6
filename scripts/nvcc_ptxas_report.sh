#!/usr/bin/env bash
# The CUDA compiler launcher of eth_kernels (kernels/CMakeLists.txt): runs the nvcc command it is
# given, which asks ptxas for its report (-Xptxas=-v: registers, spills, stack per kernel entry
# and target), and writes that report to OBJECT.ptxas beside the object instead of the build's
# output; everything else nvcc says passes through. scripts/check_spills.py reads the reports, so
# that the check needs no second compile of every .cu.
#   nvcc_ptxas_report.sh NVCC ARGS... -o OBJECT ...
object="" previous=""
for arg in "$@"; do
  [ "$previous" != -o ] || object=$arg
  previous=$arg
done
said=$(mktemp)
"$@" 2> "$said"
status=$?
report='^ptxas info|^ *[0-9]+ bytes stack frame'
[ -z "$object" ] || grep -E "$report" "$said" > "$object.ptxas"
grep -vE "$report" "$said" >&2
rm -f "$said"
exit $status
