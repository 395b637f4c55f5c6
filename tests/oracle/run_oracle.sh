#!/bin/sh
# The oracle_torch test: dump a CPU training run, then check it against PyTorch.
#   run_oracle.sh ORACLE_DUMP MODEL_YAML OUT_DIR [SEQ_LEN ATTENTION [PRECISION]]
set -eu
if [ $# -ne 3 ] && [ $# -ne 5 ] && [ $# -ne 6 ]; then
  echo "usage: run_oracle.sh ORACLE_DUMP MODEL_YAML OUT_DIR [SEQ_LEN ATTENTION [PRECISION]]" >&2
  exit 2
fi
# Debian's interpreter, where python3-torch installs, not whichever python3 is first on PATH;
# PYTHON names another (a GPU machine's own, with torch).
python=$(command -v "${PYTHON:-/usr/bin/python3}") || python=""
if [ -z "$python" ]; then
  echo "run_oracle.sh: error: ${PYTHON:-/usr/bin/python3} not found: install Debian's python3, python3-numpy and python3-torch" >&2
  exit 1
fi
rm -rf "$3"
dump=$1 model=$2 out=$3
shift 3
# EXPECT_PRECISION_PATH, when set: words the dump's precision line must hold (which bf16 path ran).
status=0
"$dump" "$out" "$model" "$@" > "$out.log" 2>&1 || status=$?
cat "$out.log"
[ "$status" -eq 0 ] || exit "$status"
if [ -n "${EXPECT_PRECISION_PATH:-}" ] && ! grep -q "precision .*${EXPECT_PRECISION_PATH}" "$out.log"; then
  echo "run_oracle.sh: FAIL: the dump's precision line does not say '${EXPECT_PRECISION_PATH}'" >&2
  exit 1
fi
exec "$python" "$(dirname "$0")/torch_oracle.py" "$out"
