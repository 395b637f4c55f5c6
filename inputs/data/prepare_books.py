#!/usr/bin/env python3
"""Writes the 66 books of the King James Bible as text files, one document each, for eth_tokenize.

    prepare_books.py OUT_DIR [DUMP]

The text is the output of `bible -f Gen1:1-Rev22:21` (Debian package bible-kjv, which decodes
/usr/lib/bible.data of bible-kjv-text 4.38), or a saved copy of it given as DUMP. It is checked
against a known sha256, so the shards that rebuild.sh makes from it come out byte-identical.

Book i is written to OUT_DIR/NN_<name>.txt (NN = 01..66, so the names sort in canonical order) as
"<Book name>\n\nChapter 1\n\n<verse>\n<verse>\n...\n\nChapter 2\n\n...": verse numbers dropped,
white space inside a verse collapsed to single spaces, no newline at the end (README.md).
"""
import hashlib
import os
import re
import subprocess
import sys

EXPECTED_DUMP_SHA256 = "cd45f0c9cedab8e4439bd6486c8952c77cc8b0ecc5d1f6ae3513f2039f47229d"

# (abbreviation printed by `bible -f`, name used in the text)
BOOKS = [
    ("Ge", "Genesis"), ("Exo", "Exodus"), ("Lev", "Leviticus"), ("Num", "Numbers"),
    ("Deu", "Deuteronomy"), ("Josh", "Joshua"), ("Jdgs", "Judges"), ("Ruth", "Ruth"),
    ("1Sm", "1 Samuel"), ("2Sm", "2 Samuel"), ("1Ki", "1 Kings"), ("2Ki", "2 Kings"),
    ("1Chr", "1 Chronicles"), ("2Chr", "2 Chronicles"), ("Ezra", "Ezra"),
    ("Neh", "Nehemiah"), ("Est", "Esther"), ("Job", "Job"), ("Psa", "Psalms"),
    ("Prv", "Proverbs"), ("Eccl", "Ecclesiastes"), ("SSol", "Song of Solomon"),
    ("Isa", "Isaiah"), ("Jer", "Jeremiah"), ("Lam", "Lamentations"),
    ("Eze", "Ezekiel"), ("Dan", "Daniel"), ("Hos", "Hosea"), ("Joel", "Joel"),
    ("Amos", "Amos"), ("Obad", "Obadiah"), ("Jonah", "Jonah"), ("Mic", "Micah"),
    ("Nahum", "Nahum"), ("Hab", "Habakkuk"), ("Zep", "Zephaniah"),
    ("Hag", "Haggai"), ("Zec", "Zechariah"), ("Mal", "Malachi"),
    ("Mat", "Matthew"), ("Mark", "Mark"), ("Luke", "Luke"), ("John", "John"),
    ("Acts", "Acts"), ("Rom", "Romans"), ("1Cor", "1 Corinthians"),
    ("2Cor", "2 Corinthians"), ("Gal", "Galatians"), ("Eph", "Ephesians"),
    ("Phi", "Philippians"), ("Col", "Colossians"), ("1Th", "1 Thessalonians"),
    ("2Th", "2 Thessalonians"), ("1Tim", "1 Timothy"), ("2Tim", "2 Timothy"),
    ("Titus", "Titus"), ("Phmn", "Philemon"), ("Heb", "Hebrews"), ("Jas", "James"),
    ("1Pet", "1 Peter"), ("2Pet", "2 Peter"), ("1Jn", "1 John"), ("2Jn", "2 John"),
    ("3Jn", "3 John"), ("Jude", "Jude"), ("Rev", "Revelation"),
]
SPACE = " \t\n\v\f\r"  # JavaScript's \s over ASCII: the text was first prepared in Node


def fail(message):
    sys.exit(f"prepare_books.py: {message}")


def read_dump(path):
    if path:
        with open(path, "rb") as f:
            return f.read()
    return subprocess.run(["bible", "-f", "Gen1:1-Rev22:21"], cwd="/", check=True, capture_output=True).stdout


def parse(dump):
    """[abbreviation, [chapter: [verse text]]] per book, checking every reference is the next one."""
    books = []
    lines = dump.split("\n")
    if lines[-1] == "":
        lines.pop()
    for n, line in enumerate(lines, 1):
        m = re.fullmatch(r"(\d?[A-Za-z]+)(\d+):(\d+) (.*)", line)
        if not m:
            fail(f"line {n} not understood: {line!r}")
        abbr, c, v, text = m.group(1), int(m.group(2)), int(m.group(3)), m.group(4)
        if not books or books[-1][0] != abbr:
            books.append((abbr, []))
        chapters = books[-1][1]
        if c == len(chapters) + 1 and v == 1:
            chapters.append([])
        if not chapters or c != len(chapters) or v != len(chapters[-1]) + 1:
            fail(f"line {n}: unexpected reference {abbr}{c}:{v}")
        chapters[-1].append(re.sub(f"[{SPACE}]+", " ", text.strip(SPACE)))
    if [abbr for abbr, _ in books] != [abbr for abbr, _ in BOOKS]:
        fail(f"found books {[abbr for abbr, _ in books]}, expected {[abbr for abbr, _ in BOOKS]}")
    return books


def main():
    if len(sys.argv) not in (2, 3):
        fail("usage: prepare_books.py OUT_DIR [DUMP]")
    out_dir = sys.argv[1]
    dump = read_dump(sys.argv[2] if len(sys.argv) == 3 else None)
    sha = hashlib.sha256(dump).hexdigest()
    if sha != EXPECTED_DUMP_SHA256:
        fail(f"text dump sha256 {sha} differs from the expected {EXPECTED_DUMP_SHA256}")
    os.makedirs(out_dir, exist_ok=True)
    for i, ((_, chapters), (_, name)) in enumerate(zip(parse(dump.decode("ascii")), BOOKS), 1):
        text = name + "\n\n" + "\n\n".join(f"Chapter {c}\n\n" + "\n".join(verses) for c, verses in enumerate(chapters, 1))
        with open(os.path.join(out_dir, f"{i:02d}_{name.replace(' ', '_')}.txt"), "w", encoding="ascii", newline="") as f:
            f.write(text)


if __name__ == "__main__":
    main()
