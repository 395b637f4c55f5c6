# Shared by the CLI tests (source it after setting $work): pass/fail counting and the check
# that a user's mistake ends with one error line naming what was wrong.

failures=0
passes=0
# A failing job ends when its ranks do, and keeps its session directory in $work
# (tests/mpi/mpi_test_env.sh says why for both).
export OMPI_MCA_odls_base_sigkill_timeout=0
export OMPI_MCA_orte_tmpdir_base="$work"

check() {  # check NAME STATUS WHY: STATUS 0 passes
  if [ "$2" -eq 0 ]; then passes=$((passes + 1)); echo "ok: $1"; else failures=$((failures + 1)); echo "FAIL: $1: $3"; fi
}

# expect_one_error PROGRAM NAME FRAGMENT... -- COMMAND...: COMMAND exits non-zero (and not by
# timing out) with exactly one "PROGRAM: error:" line on stderr, which holds every fragment.
# Leaves COMMAND's exit status in $error_status.
expect_one_error() {
  local program=$1 name=$2
  shift 2
  local fragments=()
  while [ "$1" != "--" ]; do fragments+=("$1"); shift; done
  shift
  "$@" >"$work/out" 2>"$work/err"
  local rc=$?
  error_status=$rc
  local lines
  lines=$(grep -c "$program: error:" "$work/err")
  local ok=0 why=""
  [ "$rc" -ne 0 ] || { ok=1; why="exit status 0"; }
  [ "$rc" -ne 124 ] || { ok=1; why="timed out"; }
  [ "$lines" -eq 1 ] || { ok=1; why="$lines error lines: $(cat "$work/err")"; }
  for f in "${fragments[@]}"; do
    grep -qF -- "$f" "$work/err" || { ok=1; why="no '$f' in: $(cat "$work/err")"; }
  done
  check "$name" $ok "$why"
}

finish() {
  echo "$passes passed, $failures failed"
  [ "$failures" -eq 0 ]
}
