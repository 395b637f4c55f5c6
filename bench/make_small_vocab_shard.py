#!/usr/bin/env python3
"""Remaps a GPT-2 token shard (llm.c format) to a small vocabulary: the V-1 most frequent ids
become 0..V-2 by descending frequency, every other id becomes V-1 (an "unknown" token).
Usage: make_small_vocab_shard.py IN.bin OUT.bin V"""
import struct
import sys
from array import array
from collections import Counter

src, dst, vocab = sys.argv[1], sys.argv[2], int(sys.argv[3])
with open(src, "rb") as f:
    header = array("i"); header.fromfile(f, 256)
    assert header[0] == 20240520 and header[1] == 1, "not an llm.c token shard"
    tokens = array("H"); tokens.fromfile(f, header[2])
keep = [t for t, _ in Counter(tokens).most_common(vocab - 1)]
remap = {t: i for i, t in enumerate(keep)}
out = array("H", (remap.get(t, vocab - 1) for t in tokens))
with open(dst, "wb") as f:
    header.tofile(f); out.tofile(f)
