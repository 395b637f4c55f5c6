"""Checks of Llama Hugging Face folders written by eth_convert --export-hf, with a safetensors
reader of its own (8-byte little-endian header length, JSON header, data) and numpy, apart from
the C++ (tests/cli/eth_convert_hf_llama.sh):

  layout MODEL.yaml DIR CKPT.h5 DTYPE [MAX_SHARD]  the folder holds transformers' LlamaForCausalLM
        tensors, each of transformers' shape and equal to its rows of ETH's stacked tensors in the
        checkpoint (F32: bit for bit; BF16: the round-to-nearest-even bf16 of each value);
        config.json has every key transformers needs; shards (when MAX_SHARD is given) are named
        and indexed as transformers names them, each within MAX_SHARD bytes of data
  same MODEL.yaml A.h5 B.h5 DTYPE   checkpoint B (an import of A's export) equals A: F32 bit for bit,
        BF16 (F16) each value the rounded bf16 (float16) of A's; the vocabulary's padded rows zero
  fault DIR OUT CASE   a damaged copy of folder DIR in OUT (missing_shard, missing_tensor,
        wrong_shape, config_disagrees, config_rope; f16: the
        folder with every tensor in F16, undamaged)
"""
import json
import os
import re
import shutil
import struct
import sys

import numpy as np
import yaml


def read_file(path):
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header = json.loads(data[8:8 + n])
    header.pop("__metadata__", None)
    out = {}
    for name, e in header.items():
        b, end = e["data_offsets"]
        raw = data[8 + n + b:8 + n + end]
        if e["dtype"] == "F32":
            a = np.frombuffer(raw, dtype="<f4")
        elif e["dtype"] == "BF16":
            a = (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            raise SystemExit(f"{path}: {name}: dtype {e['dtype']}, expected F32 or BF16")
        out[name] = (e["dtype"], a.reshape(e["shape"]))
    return out, header


def read_folder(folder, max_shard):
    index = os.path.join(folder, "model.safetensors.index.json")
    if not os.path.exists(index):
        assert max_shard is None, f"{folder}: no index, expected shards of at most {max_shard} bytes"
        return read_file(os.path.join(folder, "model.safetensors"))[0]
    assert max_shard is not None, f"{folder}: sharded, expected one model.safetensors"
    assert not os.path.exists(os.path.join(folder, "model.safetensors")), f"{folder}: both layouts"
    idx = json.load(open(index))
    files = sorted(set(idx["weight_map"].values()))
    assert len(files) > 1, f"{index}: {len(files)} shard, expected several"
    for i, f in enumerate(files):
        assert f == f"model-{i + 1:05d}-of-{len(files):05d}.safetensors", f"{index}: shard name {f}"
    tensors, total = {}, 0
    for f in files:
        part, header = read_file(os.path.join(folder, f))
        size = sum(e["data_offsets"][1] - e["data_offsets"][0] for e in header.values())
        assert size <= max_shard or len(part) == 1, f"{f}: {size} bytes of data, more than {max_shard} in several tensors"
        for name in part:
            assert idx["weight_map"][name] == f, f"{index}: {name} in {f}, the index says {idx['weight_map'][name]}"
        total += size
        tensors.update(part)
    assert set(tensors) == set(idx["weight_map"]), f"{index}: weight_map lists other tensors than the shards hold"
    assert idx["metadata"]["total_size"] == total, f"{index}: total_size {idx['metadata']['total_size']}, data {total}"
    return tensors


def params(path):
    import h5py
    with h5py.File(path, "r") as f:
        return {name: f["params"][name][()] for name in f["params"]}


def bf16(a):
    """Each float32 of `a` rounded to the nearest bf16, ties to even (no NaN in these tensors)."""
    bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
    bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16) << 16
    return bits.astype(np.uint32).view(np.float32)


def expected(m, p):
    """transformers' tensors from ETH's, sliced here: name -> array."""
    V, C, FC = m["vocab_size"], m["channels"], m["ffn_channels"]
    NH, NKV = m["num_heads"], m.get("num_kv_heads", m["num_heads"])
    hs = m.get("head_dim", C // NH)
    q, kv = NH * hs, NKV * hs
    out = {"model.embed_tokens.weight": p["wte"][:V], "model.norm.weight": p["lnf_w"]}
    if not m.get("tied_head", False):
        out["lm_head.weight"] = p["lm_head_w"][:V]
    for l in range(m["num_layers"]):
        h, e = f"model.layers.{l}.", f"layer{l}."
        out[h + "input_layernorm.weight"] = p[e + "ln1_w"]
        out[h + "post_attention_layernorm.weight"] = p[e + "ln2_w"]
        for part, qkv, o in [("weight", "qkv_w", "attproj_w")] + ([("bias", "qkv_b", "attproj_b")] if m.get("attention_bias") else []):
            x = p[e + qkv]
            out[h + f"self_attn.q_proj.{part}"] = x[:q]
            out[h + f"self_attn.k_proj.{part}"] = x[q:q + kv]
            out[h + f"self_attn.v_proj.{part}"] = x[q + kv:]
            out[h + f"self_attn.o_proj.{part}"] = p[e + o]
        out[h + "mlp.gate_proj.weight"] = p[e + "fc_w"][:FC]
        out[h + "mlp.up_proj.weight"] = p[e + "fc_w"][FC:]
        out[h + "mlp.down_proj.weight"] = p[e + "fcproj_w"]
    # transformers' shapes, restated from LlamaForCausalLM's nn.Linear(in, out) -> weight (out, in).
    shapes = {"q_proj.weight": (q, C), "k_proj.weight": (kv, C), "v_proj.weight": (kv, C), "o_proj.weight": (C, q),
              "q_proj.bias": (q,), "k_proj.bias": (kv,), "v_proj.bias": (kv,), "o_proj.bias": (C,),
              "gate_proj.weight": (FC, C), "up_proj.weight": (FC, C), "down_proj.weight": (C, FC),
              "lm_head.weight": (V, C), "embed_tokens.weight": (V, C)}
    for name, a in out.items():
        for suffix, shape in shapes.items():
            if name.endswith(suffix):
                assert a.shape == shape, f"ETH's {name} slice {a.shape}, transformers' {shape}"
    return out


def layout(model, folder, ckpt, dtype, max_shard=None):
    m = yaml.safe_load(open(model))
    want = expected(m, params(ckpt))
    got = read_folder(folder, None if max_shard is None else int(max_shard))
    assert set(got) == set(want), f"{folder}: tensors {sorted(set(got) ^ set(want))} differ from LlamaForCausalLM's"
    for name, a in want.items():
        d, b = got[name]
        assert d == dtype, f"{folder}: {name} is {d}, expected {dtype}"
        assert b.shape == a.shape, f"{folder}: {name} of shape {b.shape}, expected {a.shape}"
        ref = a.astype(np.float32) if dtype == "F32" else bf16(a)
        bad = np.flatnonzero(ref.view(np.uint32) != b.view(np.uint32))
        assert not bad.size, f"{folder}: {name}: {bad.size} values differ; first at {np.unravel_index(bad[0], a.shape)}: " \
                             f"{b.flat[bad[0]]!r}, expected {ref.flat[bad[0]]!r}"
    c = json.load(open(os.path.join(folder, "config.json")))
    keys = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": m["channels"],
            "intermediate_size": m["ffn_channels"], "num_hidden_layers": m["num_layers"],
            "num_attention_heads": m["num_heads"], "num_key_value_heads": m.get("num_kv_heads", m["num_heads"]),
            "head_dim": m.get("head_dim", m["channels"] // m["num_heads"]), "rms_norm_eps": m["norm_eps"],
            "rope_theta": m["rope_theta"], "tie_word_embeddings": m.get("tied_head", False),
            "attention_bias": m.get("attention_bias", False), "mlp_bias": m.get("mlp_bias", False),
            "hidden_act": "silu", "max_position_embeddings": m["max_seq_len"], "vocab_size": m["vocab_size"],
            "torch_dtype": {"F32": "float32", "BF16": "bfloat16"}[dtype]}
    r = m.get("rope_scaling")
    keys["rope_scaling"] = None if r is None else {
        "rope_type": "llama3", "factor": r["factor"], "low_freq_factor": r["low_freq_factor"],
        "high_freq_factor": r["high_freq_factor"], "original_max_position_embeddings": r["original_max_position"]}
    for k, v in keys.items():
        assert k in c and c[k] == v, f"{folder}/config.json: {k} = {c.get(k, '(none)')!r}, expected {v!r}"
    g = json.load(open(os.path.join(folder, "generation_config.json")))
    assert "eos_token_id" in g and "bos_token_id" in g, f"{folder}/generation_config.json: {g}"
    leftovers = [f for f in os.listdir(folder) if f.endswith(".partial")]
    assert not leftovers, f"{folder}: temporary files left: {leftovers}"
    print(f"{folder}: {len(want)} tensors of transformers' names, shapes and ETH's values ({dtype})")


def same(model, a, b, dtype):
    m = yaml.safe_load(open(model))
    V = m["vocab_size"]
    pa, pb = params(a), params(b)
    assert set(pa) == set(pb), f"{a}, {b}: tensors {sorted(set(pa) ^ set(pb))}"
    for name, x in pa.items():
        y = pb[name]
        if name in ("wte", "lm_head_w"):
            assert not y[V:].any(), f"{b}: {name}'s padded rows {V}.. are not zero"
            x, y = x[:V], y[:V]
        assert x.any(), f"{a}: {name} is all zero: comparing it would prove little"
        ref = x if dtype == "F32" else bf16(x) if dtype == "BF16" else x.astype(np.float16).astype(np.float32)
        bad = np.flatnonzero(ref.view(np.uint32) != y.view(np.uint32))
        assert not bad.size, f"{b}: {name}: {bad.size} values differ; first at {np.unravel_index(bad[0], x.shape)}: " \
                             f"{y.flat[bad[0]]!r}, expected {ref.flat[bad[0]]!r}"
        if dtype != "F32":
            assert (x != y).any() or name.endswith(("ln1_w", "ln2_w", "lnf_w")), f"{name}: rounding changed nothing"
    import h5py
    with h5py.File(b, "r") as f:  # an import is a step-0 checkpoint: AdamW's moments all zero
        for group in ("adam_m", "adam_v"):
            for name in pa:
                assert not f[group][name][()].any(), f"{b}: {group}/{name} is not all zero"
    print(f"{b}: {len(pa)} tensors equal to {a}'s ({dtype}), AdamW moments zero")


def rewrite(path, drop=None, reshape=None):
    """The safetensors file again, without tensor `drop` or with (name, shape) `reshape`."""
    with open(path, "rb") as f:
        data = f.read()
    (n,) = struct.unpack("<Q", data[:8])
    header, body = json.loads(data[8:8 + n]), data[8 + n:]
    if reshape:
        header[reshape[0]]["shape"] = reshape[1]
    if drop:
        b, e = header.pop(drop)["data_offsets"]
        body = body[:b] + body[e:]
        for v in header.values():
            if isinstance(v, dict) and "data_offsets" in v and v["data_offsets"][0] >= e:
                v["data_offsets"] = [v["data_offsets"][0] - (e - b), v["data_offsets"][1] - (e - b)]
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + body)


def fault(folder, out, case):
    shutil.copytree(folder, out)
    st = os.path.join(out, "model.safetensors")
    if case == "missing_shard":
        os.remove(os.path.join(out, "model-00002-of-" + re.search(r"of-(\d+)", str(os.listdir(out))).group(1) + ".safetensors"))
    elif case == "missing_tensor":
        rewrite(st, drop="model.layers.1.mlp.up_proj.weight")
    elif case == "wrong_shape":
        shape = read_file(st)[1]["model.layers.0.self_attn.k_proj.weight"]["shape"]
        rewrite(st, reshape=("model.layers.0.self_attn.k_proj.weight", shape[::-1]))
    elif case == "config_disagrees":
        c = json.load(open(os.path.join(out, "config.json")))
        c["num_key_value_heads"] = c["num_attention_heads"]
        json.dump(c, open(os.path.join(out, "config.json"), "w"))
    elif case == "f16":  # every tensor stored as F16, as a torch_dtype float16 save_pretrained does
        tensors, header = read_file(st)
        at, body = 0, b""
        for name in sorted(tensors, key=lambda n: header[n]["data_offsets"][0]):
            raw = tensors[name][1].astype("<f2").tobytes()
            header[name].update(dtype="F16", data_offsets=[at, at + len(raw)])
            at, body = at + len(raw), body + raw
        text = json.dumps(header).encode()
        text += b" " * ((8 - len(text) % 8) % 8)
        with open(st, "wb") as f:
            f.write(struct.pack("<Q", len(text)) + text + body)
    elif case == "config_rope":
        c = json.load(open(os.path.join(out, "config.json")))
        c["rope_scaling"]["factor"] *= 2
        json.dump(c, open(os.path.join(out, "config.json"), "w"))
    else:
        raise SystemExit(f"unknown case {case}")


if __name__ == "__main__":
    try:
        {"layout": layout, "same": same, "fault": fault}[sys.argv[1]](*sys.argv[2:])
    except AssertionError as e:
        print(f"FAIL: {e}")
        sys.exit(1)
