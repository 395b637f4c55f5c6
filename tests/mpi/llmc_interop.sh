#!/usr/bin/env bash
# llm.c model files (lib/io/llmc_model.hpp, eth_convert): a random llm.c GPT-2 file (written by
# NumPy in llm.c's layout) imported as a step-0 checkpoint and exported again is the same file,
# byte for byte; eth_train started from the imported checkpoint (lr 0, so the weights stay the
# llm.c file's) computes the validation loss that float64 PyTorch computes from the llm.c file
# (1e-5), on one rank and under a 4-rank plan; wrong files get one error line naming them.
#   llmc_interop.sh BUILD_DIR SOURCE_DIR
set -uo pipefail
build=$1 src=$2
source "$src/tests/mpi/mpi_test_env.sh"
source "$src/tests/cli/cli_checks.sh"
tiny_job 1  # $model, $plans, $work/data.bin; this test's own options below
write_tiny_shard "$work/val.bin" 8
oracle() { $py "$src/tests/oracle/llmc_oracle.py" "$@"; }
convert() { timeout 60 mpirun -np 1 "$build/app/eth_convert" --model "$model" "$@"; }

oracle write "$model" "$work/gpt2.bin" 3
convert --import-llmc "$work/gpt2.bin" --out "$work/start.h5" > /dev/null \
  && convert --export-llmc "$work/start.h5" --out "$work/back.bin" > /dev/null \
  && cmp "$work/gpt2.bin" "$work/back.bin"
check "import then export gives the llm.c file back, byte for byte" $? "$(ls -l "$work")"

# Validation over the first 20 windows, after one step at lr 0 from the imported weights.
common=(--model "$model" --train-data "$work/data.bin" --val-data "$work/val.bin" --seq-len 16 --steps 1
        --lr 0 --min-lr 0 --eval-samples 20 --resume "$work/start.h5")
timeout 120 mpirun -np 1 "$build/app/eth_train" "${common[@]}" --batch 10 --micro-batch 5 \
  --output-dir "$work/one" > "$work/one.log" 2>&1 \
  && oracle check "$model" "$work/gpt2.bin" "$work/val.bin" 16 20 "$work/one/metrics.jsonl"
check "one rank from the imported model: the float64 PyTorch loss of the llm.c weights" $? "$(tail -3 "$work/one.log")"
timeout 120 mpirun -np 4 "$build/app/eth_train" "${common[@]}" --topology "$plans/cpu-2nodes-4.yaml" \
  --plan "$plans/two-depths-4.yaml" --output-dir "$work/four" > "$work/four.log" 2>&1 \
  && oracle check "$model" "$work/gpt2.bin" "$work/val.bin" 16 20 "$work/four/metrics.jsonl"
check "a 4-rank plan from the imported model: the same loss" $? "$(tail -3 "$work/four.log")"

# Wrong files.
expect_one_error eth_convert "an llm.c file of another model" "$work/gpt2.bin: num_layers" "as in the model YAML (tiny)" -- \
  timeout 60 mpirun -np 1 "$build/app/eth_convert" --model "$src/inputs/models/tiny.yaml" --import-llmc "$work/gpt2.bin" --out "$work/x.h5"
head -c 5000 "$work/gpt2.bin" > "$work/short.bin"
expect_one_error eth_convert "a truncated llm.c file" "$work/short.bin: wte" "parameters in all" -- \
  convert --import-llmc "$work/short.bin" --out "$work/x.h5"
expect_one_error eth_convert "not an llm.c file" "$work/data.bin: magic" "20240326" -- \
  convert --import-llmc "$work/data.bin" --out "$work/x.h5"
expect_one_error eth_convert "neither direction" "--import-llmc/--export-llmc" -- convert --out "$work/x.bin"
finish
