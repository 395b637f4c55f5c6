// Rebuilds kjv_train.bin / kjv_val.bin (llm.c token-shard format) from the
// King James Bible text of the Debian package bible-kjv-text.
//
//   cd inputs/data && npm install --no-save gpt-3-encoder@1.1.4 && node prepare.mjs
//
// The text is read by running `bible -f Gen1:1-Rev22:21` (Debian package
// bible-kjv, which decodes /usr/lib/bible.data from bible-kjv-text 4.38).
// Alternatively pass a file holding that command's output:
//   node prepare.mjs /tmp/kjv_raw.txt
// The dump is checked against a known sha256 so the shards come out
// byte-identical; see README.md.
//
// Each of the 66 books is one document: "<Book name>\n\nChapter 1\n\n<verse>\n
// <verse>\n...\n\nChapter 2\n\n..." (verse numbers dropped, whitespace inside a
// verse collapsed to single spaces, no trailing newline). Every document is
// preceded by the GPT-2 end-of-text token 50256, as in llm.c.
// Split: books 1-49 (Genesis..Ephesians) -> train, books 50-66
// (Philippians..Revelation) -> val.

import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { encode } from 'gpt-3-encoder';

const HERE = dirname(fileURLToPath(import.meta.url));
const EXPECTED_DUMP_SHA256 =
  'cd45f0c9cedab8e4439bd6486c8952c77cc8b0ecc5d1f6ae3513f2039f47229d';
const EOT = 50256;
const FIRST_VAL_BOOK = 50; // 1-based: Philippians

// [abbreviation printed by `bible -f`, name used in the text]
const BOOKS = [
  ['Ge', 'Genesis'], ['Exo', 'Exodus'], ['Lev', 'Leviticus'], ['Num', 'Numbers'],
  ['Deu', 'Deuteronomy'], ['Josh', 'Joshua'], ['Jdgs', 'Judges'], ['Ruth', 'Ruth'],
  ['1Sm', '1 Samuel'], ['2Sm', '2 Samuel'], ['1Ki', '1 Kings'], ['2Ki', '2 Kings'],
  ['1Chr', '1 Chronicles'], ['2Chr', '2 Chronicles'], ['Ezra', 'Ezra'],
  ['Neh', 'Nehemiah'], ['Est', 'Esther'], ['Job', 'Job'], ['Psa', 'Psalms'],
  ['Prv', 'Proverbs'], ['Eccl', 'Ecclesiastes'], ['SSol', 'Song of Solomon'],
  ['Isa', 'Isaiah'], ['Jer', 'Jeremiah'], ['Lam', 'Lamentations'],
  ['Eze', 'Ezekiel'], ['Dan', 'Daniel'], ['Hos', 'Hosea'], ['Joel', 'Joel'],
  ['Amos', 'Amos'], ['Obad', 'Obadiah'], ['Jonah', 'Jonah'], ['Mic', 'Micah'],
  ['Nahum', 'Nahum'], ['Hab', 'Habakkuk'], ['Zep', 'Zephaniah'],
  ['Hag', 'Haggai'], ['Zec', 'Zechariah'], ['Mal', 'Malachi'],
  ['Mat', 'Matthew'], ['Mark', 'Mark'], ['Luke', 'Luke'], ['John', 'John'],
  ['Acts', 'Acts'], ['Rom', 'Romans'], ['1Cor', '1 Corinthians'],
  ['2Cor', '2 Corinthians'], ['Gal', 'Galatians'], ['Eph', 'Ephesians'],
  ['Phi', 'Philippians'], ['Col', 'Colossians'], ['1Th', '1 Thessalonians'],
  ['2Th', '2 Thessalonians'], ['1Tim', '1 Timothy'], ['2Tim', '2 Timothy'],
  ['Titus', 'Titus'], ['Phmn', 'Philemon'], ['Heb', 'Hebrews'], ['Jas', 'James'],
  ['1Pet', '1 Peter'], ['2Pet', '2 Peter'], ['1Jn', '1 John'], ['2Jn', '2 John'],
  ['3Jn', '3 John'], ['Jude', 'Jude'], ['Rev', 'Revelation'],
];

function readDump() {
  const file = process.argv.slice(2).find((a) => !a.startsWith('--'));
  if (file) return readFileSync(file, 'utf8');
  return execFileSync('bible', ['-f', 'Gen1:1-Rev22:21'], {
    encoding: 'utf8', maxBuffer: 64 << 20, cwd: '/',
  });
}

function fail(msg) {
  console.error('prepare.mjs: ' + msg);
  process.exit(1);
}

// Parse "<abbr><chapter>:<verse> <text>" lines into books of chapters of verses.
function parse(dump) {
  const books = [];
  const lines = dump.split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  for (const [n, line] of lines.entries()) {
    const m = /^(\d?[A-Za-z]+)(\d+):(\d+) (.*)$/.exec(line);
    if (!m) fail(`line ${n + 1} not understood: ${JSON.stringify(line)}`);
    const [, abbr, ch, vs, text] = m;
    let book = books[books.length - 1];
    if (!book || book.abbr !== abbr) {
      book = { abbr, chapters: [] };
      books.push(book);
    }
    const c = Number(ch), v = Number(vs);
    if (c === book.chapters.length + 1 && v === 1) book.chapters.push([]);
    const chapter = book.chapters[book.chapters.length - 1];
    if (!chapter || c !== book.chapters.length || v !== chapter.length + 1)
      fail(`line ${n + 1}: unexpected reference ${abbr}${ch}:${vs}`);
    chapter.push(text.trim().replace(/\s+/g, ' '));
  }
  if (books.length !== BOOKS.length) fail(`found ${books.length} books, expected 66`);
  books.forEach((b, i) => {
    if (b.abbr !== BOOKS[i][0]) fail(`book ${i + 1} is ${b.abbr}, expected ${BOOKS[i][0]}`);
    b.name = BOOKS[i][1];
  });
  return books;
}

function bookText(book) {
  const chapters = book.chapters.map((verses, i) => `Chapter ${i + 1}\n\n${verses.join('\n')}`);
  return `${book.name}\n\n${chapters.join('\n\n')}`;
}

// gpt-3-encoder's encode() is quadratic in the length of its input (it grows
// its result with Array.concat), so a whole book takes tens of seconds. The
// text is therefore encoded in pieces cut just after each "\n". With lines
// that neither start nor end with whitespace and at most one blank line in a
// row, every such cut falls on a boundary of GPT-2's pre-tokenisation regex,
// so the result is identical to encode(text) (verify with --check-whole).
function encodeDoc(text) {
  const out = [];
  for (const piece of text.split(/(?<=\n)/)) for (const t of encode(piece)) out.push(t);
  return out;
}

function writeShard(path, tokens) {
  const header = new Int32Array(256);
  header[0] = 20240520; // llm.c magic
  header[1] = 1; // version
  header[2] = tokens.length;
  const body = new Uint16Array(tokens.length);
  for (const [i, t] of tokens.entries()) {
    if (!Number.isInteger(t) || t < 0 || t > EOT) fail(`bad token ${t}`);
    body[i] = t;
  }
  // Typed arrays use the platform byte order; llm.c shards are little-endian.
  if (new Uint8Array(new Uint16Array([1]).buffer)[0] !== 1) fail('big-endian host');
  const buf = Buffer.concat([Buffer.from(header.buffer), Buffer.from(body.buffer)]);
  writeFileSync(path, buf);
  const sha = createHash('sha256').update(buf).digest('hex');
  console.log(`${path}: ${tokens.length} tokens, ${buf.length} bytes, sha256 ${sha}`);
}

const dump = readDump();
const dumpSha = createHash('sha256').update(dump, 'utf8').digest('hex');
if (dumpSha !== EXPECTED_DUMP_SHA256)
  fail(`text dump sha256 ${dumpSha} differs from the expected ${EXPECTED_DUMP_SHA256}`);
const books = parse(dump);
const checkWhole = process.argv.includes('--check-whole');

const train = [], val = [];
for (const [i, book] of books.entries()) {
  const text = bookText(book);
  const toks = encodeDoc(text);
  if (checkWhole) {
    const whole = encode(text);
    if (whole.length !== toks.length || whole.some((t, j) => t !== toks[j]))
      fail(`piecewise encoding of ${book.name} differs from encode(whole text)`);
  }
  const dst = i + 1 >= FIRST_VAL_BOOK ? val : train;
  dst.push(EOT);
  for (const t of toks) dst.push(t);
  if (process.env.VERBOSE) console.log(`${i + 1}\t${book.name}\t${toks.length}`);
}
if (checkWhole) console.log('piecewise encoding == encode(whole book) for all 66 books');

writeShard(join(HERE, 'kjv_train.bin'), train);
writeShard(join(HERE, 'kjv_val.bin'), val);
