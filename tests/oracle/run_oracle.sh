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
"$dump" "$out" "$model" "$@"
exec "$python" "$(dirname "$0")/torch_oracle.py" "$out"
