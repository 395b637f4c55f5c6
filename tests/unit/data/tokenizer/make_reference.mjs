// Makes the reference token lists that tests/unit/test_tokenizer.cpp compares eth_tokenize with,
// using the reference encoder itself. Run once (Node 20), from this folder:
//   npm install --no-save gpt-3-encoder@1.1.4 && node make_reference.mjs && rm -r node_modules
// It writes random_text.txt and random_bytes.txt (pseudo-random, from a fixed seed), then, for
// every corpus file here, NAME.tokens: one line per document, its token ids separated by spaces.
// Documents are read as eth_tokenize reads them and as Node would: readFileSync(path, 'utf8')
// (invalid UTF-8 becomes U+FFFD), a .txt file is one document, a .jsonl file one document per
// line that is not blank (only ' ', '\t', '\r'): the string field "text" of JSON.parse(line).
import { readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { encode } from 'gpt-3-encoder';

// mulberry32: a small seeded generator, so the random files are the same on every run.
let seed = 23;
function random() {
  seed = (seed + 0x6d2b79f5) | 0;
  let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
  t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
  return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
}
const pick = (items) => items[Math.floor(random() * items.length)];

// Pieces that stress the pre-tokenizer's alternatives and the BPE: runs of each class, every
// kind of white space, contractions, the comma-keyed merges (lib/io/gpt2_bpe.cpp), astral
// letters and digits, combining marks, emoji sequences.
const pieces = [
  'the', 'The', ' quick', 'brown', ' fox', 'jumped', 'over', 'lazy', 'dogs', 'aaaaaaaaaaaa', 'Zyzzyva',
  '0', '7', '42', '2024', '3.14', '1,000', '٣', '५', '７', '²', '½', 'Ⅻ', '𝟙',
  ' ', ' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', '\u00a0', '\u3000', '\u2028', '\u0085', '\ufeff', '\u000b', ' \n',
  "'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'", "''", "'S", "'x",
  '",', '"', '],', '[', ']', '),', "',", '.",', '.,', ',"', ",'", '{', '}', ':', ';', '!?', '...', '—', '-', '_', '/',
  'é', 'ß', 'Ω', 'Жж', 'ש', 'ع', 'क', 'ि', '中文', 'カ', 'ひ', '한', 'ก', '𝔘', '𐍈', 'e\u0301', '\u0301', '\u20dd',
  '😀', '👍🏽', '👨‍👩‍👧', '🇩🇪', '❤️', '\u200d', '\u0000', '\u0007', '\u007f', '\ufffd',
];

function randomText(length) {
  let text = '';
  while (text.length < length) text += pick(pieces);
  return text;
}

function randomBytes(length) {
  const bytes = Buffer.alloc(length);
  for (let i = 0; i < length; i++) {
    const r = random();
    bytes[i] = r < 0.4 ? 0x20 + Math.floor(random() * 0x5f) : r < 0.45 ? pick([0x20, 0x0a, 0x27, 0x09]) :
      0x80 + Math.floor(random() * 0x80);
  }
  return bytes;
}

writeFileSync('random_text.txt', randomText(40000));
writeFileSync('random_bytes.txt', randomBytes(20000));

function documents(file) {
  const text = readFileSync(file, 'utf8');
  if (!file.endsWith('.jsonl')) return [text];
  return text.split('\n').filter((line) => !/^[ \t\r]*$/.test(line)).map((line) => JSON.parse(line).text);
}

for (const file of readdirSync('.').filter((f) => /\.(txt|jsonl)$/.test(f)).sort()) {
  const lines = documents(file).map((doc) => encode(doc).join(' '));
  writeFileSync(file.replace(/\.[a-z]+$/, '.tokens'), lines.join('\n') + '\n');
  console.log(`${file}: ${lines.length} documents`);
}
