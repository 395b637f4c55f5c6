#!/usr/bin/env bash
# Sets up (scripts/setup.sh), then trains the demo GPT on the shipped King James Bible shards
# with mpirun on this machine's CPUs. Extra arguments go to eth_train (e.g. --steps 50).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
source scripts/env.sh
mpirun -np 1 build/app/eth_train \
  --model inputs/models/demo.yaml \
  --train-data inputs/data/kjv_train.bin --val-data inputs/data/kjv_val.bin \
  --batch 16 --micro-batch 8 --seq-len 128 --steps 80 \
  --lr 3e-3 --min-lr 3e-4 --warmup 10 --eval-every 20 --eval-batches 8 \
  --output-dir out/demo "$@"
