// The reference side of tests/tokenizer: Hugging Face's tokenizers.js (npm @huggingface/tokenizers)
// encodes each input file as one document and writes the ids as an llm.c shard, the layout
// written here from llm.c's dev/data/data_common.py, apart from ETH's C++. Special-token text
// inside a document is plain text (llm.c's split_special_tokens): the added tokens are taken out
// of the tokenizer before it is built, and the beginning-of-text token, named on the command
// line, is put before each document by its id among them.
//   node reference_shard.mjs TOKENIZER.json BOS_NAME 16|32 OUT.bin FILE...
import { readFileSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Tokenizer } = require('@huggingface/tokenizers');

const [jsonPath, bosName, bits, output, ...inputs] = process.argv.slice(2);
const json = JSON.parse(readFileSync(jsonPath, 'utf8'));
const bos = json.added_tokens.find((t) => t.content === bosName);
if (!bos) throw new Error(`${jsonPath} has no added token ${bosName}`);
json.added_tokens = [];
const tokenizer = new Tokenizer(json, {});

const ids = [];
for (const file of inputs) {
  ids.push(bos.id);
  for (const id of tokenizer.encode(readFileSync(file, 'utf8'), { add_special_tokens: false }).ids) ids.push(id);
}
const layouts = { 16: [20240520, 1, Uint16Array], 32: [20240801, 7, Uint32Array] };
const [magic, version, Tokens] = layouts[bits];
const header = new Int32Array(256);
header.set([magic, version, ids.length]);
const tokens = Tokens.from(ids);
writeFileSync(output, Buffer.concat([Buffer.from(header.buffer), Buffer.from(tokens.buffer)]));
console.log(`${output}: ${ids.length} tokens`);
