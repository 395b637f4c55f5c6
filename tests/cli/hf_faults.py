"""Damaged Hugging Face folders for tests/cli/eth_convert_hf_cli.sh.

    hf_faults.py SRC WORK
        WORK/CASE/ for every CASE of CORRUPT and CONFIG_FAULTS: SRC (a folder tests/oracle/
        hf_oracle.py wrote: F32, GPT2LMHeadModel's names, lm_head.weight = wte) with that one fault

The safetensors layout (8-byte little-endian header length, JSON header, byte buffer) is edited
with struct and json alone.
"""

import json
import os
import struct
import sys


def split(path):
    """A safetensors file as (header dict, byte buffer)."""
    data = open(path, "rb").read()
    (n,) = struct.unpack("<Q", data[:8])
    return json.loads(data[8:8 + n]), data[8 + n:]


def join(header, buffer):
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + buffer


def shift(header, name, by):
    """Moves the tensor `name`'s offsets by `by` bytes."""
    header[name]["data_offsets"] = [o + by for o in header[name]["data_offsets"]]
    return header


def edited(edit):
    """A fault made by editing the header (edit(header) -> header) over the same buffer."""
    return lambda h, b: join(edit(h), b)


def last(h):
    return max((k for k in h if k != "__metadata__"), key=lambda k: h[k]["data_offsets"])


W, PE = "transformer.wte.weight", "transformer.wpe.weight"  # wte: offset 0; wpe right after it
CORRUPT = {
    "short": lambda h, b: b"\x10\0\0",
    "length_past_end": lambda h, b: struct.pack("<Q", 1 << 40) + join(h, b)[8:],
    "not_json": lambda h, b: struct.pack("<Q", 8) + b"{\"a\": ]" + b" " + b,
    "not_object": lambda h, b: struct.pack("<Q", 8) + b"[1, 2]  " + b,
    "size_lie": edited(lambda h: {**h, PE: {**h[PE], "shape": [h[PE]["shape"][0] - 1, h[PE]["shape"][1]]}}),
    "overlap": edited(lambda h: shift(h, PE, -4)),
    "hole": lambda h, b: join(shift(h, last(h), 4), b + b"\0" * 4),
    "reversed": edited(lambda h: {**h, PE: {**h[PE], "data_offsets": h[PE]["data_offsets"][::-1]}}),
    "past_end": lambda h, b: join(shift(h, last(h), 4), b),
    "trailing": lambda h, b: join(h, b + b"\0" * 8),
    "unknown_dtype": edited(lambda h: {**h, PE: {**h[PE], "dtype": "F33"}}),
    "int_dtype": edited(lambda h: {**h, PE: {**h[PE], "dtype": "I32"}}),
    "missing": lambda h, b: join(*drop(h, b, "transformer.h.1.ln_2.bias")),
    "wrong_shape": edited(lambda h: {**h, "transformer.h.0.attn.c_attn.weight": {
        **h["transformer.h.0.attn.c_attn.weight"], "shape": h["transformer.h.0.attn.c_attn.weight"]["shape"][::-1]}}),
    "unknown_tensor": lambda h, b: join({**h, "transformer.h.0.attn.rotary": {
        "dtype": "F32", "shape": [1], "data_offsets": [len(b), len(b) + 4]}}, b + b"\0" * 4),
    "head_differs": lambda h, b: join(h, b[:h["lm_head.weight"]["data_offsets"][0]] + b"\0\0\x80\x3f" +
                                      b[h["lm_head.weight"]["data_offsets"][0] + 4:]),
}


def drop(h, b, name):
    """The file without tensor `name`: the tensors after it move down."""
    begin, end = h.pop(name)["data_offsets"]
    for k, e in h.items():
        if k != "__metadata__" and e["data_offsets"][0] >= end:
            e["data_offsets"] = [o - (end - begin) for o in e["data_offsets"]]
    return h, b[:begin] + b[end:]


CONFIG_FAULTS = {"config_n_layer": lambda c: {**c, "n_layer": c["n_layer"] - 2}}


def main():
    src, work = sys.argv[1], sys.argv[2]
    for case in [*CORRUPT, *CONFIG_FAULTS]:
        folder = os.path.join(work, case)
        os.makedirs(folder, exist_ok=True)
        config = json.load(open(os.path.join(src, "config.json")))
        json.dump(CONFIG_FAULTS.get(case, lambda c: c)(config), open(os.path.join(folder, "config.json"), "w"))
        header, buffer = split(os.path.join(src, "model.safetensors"))
        open(os.path.join(folder, "model.safetensors"), "wb").write(CORRUPT.get(case, join)(header, buffer))


if __name__ == "__main__":
    main()
