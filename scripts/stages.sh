# Sourced by scripts/test.sh, setup.sh, sanitize.sh and fuzz.sh: `stage NAME CMD...` runs CMD and
# appends its name, seconds and exit status to $ETH_STAGE_LOG; `stage_report` prints them, one
# line each, with the total. scripts/test.sh exports ETH_STAGE_LOG so that the scripts it calls
# add their stages to its report (CI's log ends with where its time went); run alone, a script
# reports its own stages.
if [ -z "${ETH_STAGE_LOG:-}" ]; then
  ETH_STAGE_LOG=$(mktemp)
  export ETH_STAGE_LOG
  eth_stage_owner=1  # this script reports (and removes the log) at exit
fi

# stage NAME CMD...: runs CMD; its exit status is stage's.
stage() {
  local name=$1 start=$SECONDS status=0
  shift
  "$@" || status=$?
  printf '%s\t%d\t%d\n' "$name" $((SECONDS - start)) "$status" >> "$ETH_STAGE_LOG"
  return "$status"
}

stage_report() {
  echo "stages (seconds, on $(nproc) cores):"
  awk -F'\t' '{ printf "  %-24s %6d  %s\n", $1, $2, $3 == 0 ? "ok" : "FAILED (exit " $3 ")"; total += $2 }
              END { printf "  %-24s %6d\n", "total", total }' "$ETH_STAGE_LOG"
}

if [ -n "${eth_stage_owner:-}" ]; then
  trap 'stage_report; rm -f "$ETH_STAGE_LOG"' EXIT
fi
