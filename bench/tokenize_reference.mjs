// The reference side of bench/run_tokenize.sh: npm gpt-3-encoder's encode() over text files,
// each one document, called per line as inputs/data/kjv_*.bin were first made (its encode() is
// quadratic in the length of its input; cutting after each "\n" gives the same tokens on these
// books). Prints the token count, with an end-of-text token per document as eth_tokenize counts.
//   node tokenize_reference.mjs NODE_MODULES_PARENT FILE...
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';

const { encode } = createRequire(process.argv[2] + '/')('gpt-3-encoder');
let tokens = 0;
for (const file of process.argv.slice(3)) {
  tokens += 1;
  for (const piece of readFileSync(file, 'utf8').split(/(?<=\n)/)) tokens += encode(piece).length;
}
console.log(tokens);
