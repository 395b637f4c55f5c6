"""Hugging Face GPT-2 and Llama folders (lib/io/hf_folder.hpp) against float64 PyTorch, for tests/oracle/hf_interop.sh.

    hf_oracle.py write MODEL_YAML SEED DIR:DTYPE:NAMING...
        GPT-2 folders (model.safetensors, config.json) of MODEL_YAML's dimensions written from
        PyTorch tensors (normal, std 0.1; layernorm weights 1 + that; no zero tensor) by the
        safetensors writer below, in DTYPE (F32, F16 or BF16) and NAMING: "lmhead" as
        GPT2LMHeadModel saves it (the "transformer." prefix, and lm_head.weight = wte) or "model"
        as GPT2Model does (no prefix, no head)
    hf_oracle.py check MODEL_YAML CHECK...
        runs each CHECK, a line or two each, and exits 1 if any fails (one process: torch starts once):
        --export DIR DUMP   DIR/model.safetensors, read with the reader below, holds exactly
                            GPT2LMHeadModel's tensors without the tied head and format "pt"
                            metadata (transformers requires it), as ETH exports; and the logits
                            below
        --import DIR DUMP   the logits: GPT-2 built in float64 from DIR/model.safetensors, on
                            DUMP's prompt (oracle_dump: the tokens of step 1's first micro-batch,
                            (B, T)), against ETH's logits there (DUMP/logits.f32, the first V of
                            Vp columns)
        --same A.h5 B.h5    B's parameters are A's, bit for bit, except the padded rows of wte
                            (V..Vp), which a Hugging Face folder does not hold and B must have
                            zero; B is a step-0 checkpoint (zero AdamW moments)
        --llama DIR DUMP PROMPT_LEN
                            a Llama folder as transformers reads it: config.json alone gives
                            the model (LlamaConfig's keys; rope_scaling or rope_parameters),
                            model.safetensors (or the shards of its index) holds exactly
                            LlamaForCausalLM's tensors (lm_head.weight only with an untied head,
                            biases only where the config has them), format "pt"; computed by
                            torch_oracle.llama_logits (float64, no 16-bit rounding) on DUMP's
                            tokens: ETH's logits there; and at every generated position of row 0
                            (the first PROMPT_LEN tokens are the prompt, the rest ETH's greedy
                            continuation) the float64 argmax is the token ETH took. Positions
                            where the two best logits lie within 1e-4 of each other (a tie that
                            rounding may break either way) are listed, not judged.

Tolerance of the logits: 1e-5 relative (Frobenius norm of the difference over that of the
reference), as torch_oracle.py's forward values: ETH computes in float32 (observed ~2e-7 there)
and any misplaced tensor (a transposition, a swapped q/k/v, a dropped bias) moves the logits by
far more. The reference is float64 of the file's values exactly (F16 and BF16 widen exactly).

The safetensors reader and writer here follow the specification (github.com/huggingface/
safetensors, README "Format") with struct, json and NumPy only, and the reader checks every rule
the specification states, so that an export that breaks one fails here even where ETH's own
reader would accept it.
"""

import json
import os
import struct
import sys

import numpy as np
import torch
import yaml

from torch_oracle import gpt2_logits, llama_logits, rel_error

TOL = 1e-5
TIE = 1e-4
DTYPES = {"F32": ("<f4", 4), "F16": ("<f2", 2), "BF16": (None, 2)}
LAYER = [  # (transformers' name in a layer, ETH's, Conv1D weight stored (in, out))
    ("ln_1.weight", "ln1_w", False), ("ln_1.bias", "ln1_b", False),
    ("attn.c_attn.weight", "qkv_w", True), ("attn.c_attn.bias", "qkv_b", False),
    ("attn.c_proj.weight", "attproj_w", True), ("attn.c_proj.bias", "attproj_b", False),
    ("ln_2.weight", "ln2_w", False), ("ln_2.bias", "ln2_b", False),
    ("mlp.c_fc.weight", "fc_w", True), ("mlp.c_fc.bias", "fc_b", False),
    ("mlp.c_proj.weight", "fcproj_w", True), ("mlp.c_proj.bias", "fcproj_b", False)]


def hf_shapes(m):
    """transformers' GPT-2 tensors, without the prefix: {name: shape}."""
    V, C, T = m["vocab_size"], m["channels"], m["max_seq_len"]
    per = {"ln_1.weight": (C,), "ln_1.bias": (C,), "attn.c_attn.weight": (C, 3 * C), "attn.c_attn.bias": (3 * C,),
           "attn.c_proj.weight": (C, C), "attn.c_proj.bias": (C,), "ln_2.weight": (C,), "ln_2.bias": (C,),
           "mlp.c_fc.weight": (C, 4 * C), "mlp.c_fc.bias": (4 * C,), "mlp.c_proj.weight": (4 * C, C),
           "mlp.c_proj.bias": (C,)}
    out = {"wte.weight": (V, C), "wpe.weight": (T, C)}
    for l in range(m["num_layers"]):
        out.update({f"h.{l}.{k}": s for k, s in per.items()})
    return {**out, "ln_f.weight": (C,), "ln_f.bias": (C,)}


# ----------------------------------------------------------------------------------------------
# safetensors, to the specification.

def write_safetensors(path, tensors, dtype):
    """tensors: {name: float64 torch tensor}, stored as DTYPE in the given order."""
    header, blobs, at = {"__metadata__": {"format": "pt"}}, [], 0
    for name, x in tensors.items():
        if dtype == "BF16":
            raw = x.to(torch.float32).to(torch.bfloat16).view(torch.int16).numpy().astype("<i2").tobytes()
        else:
            raw = x.numpy().astype(DTYPES[dtype][0]).tobytes()
        header[name] = {"dtype": dtype, "shape": list(x.shape), "data_offsets": [at, at + len(raw)]}
        blobs.append(raw)
        at += len(raw)
    text = json.dumps(header).encode()
    text += b" " * ((8 - len(text) % 8) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(text)) + text + b"".join(blobs))


def read_safetensors(path):
    """{name: float64 torch tensor} and the metadata; AssertionError on any breach of the format,
    or of what the writer promises (8-byte alignment, ascending offsets in header order)."""
    data = open(path, "rb").read()
    assert len(data) >= 8, f"{path}: {len(data)} bytes, no header length"
    (n,) = struct.unpack("<Q", data[:8])
    assert 8 + n <= len(data), f"{path}: header length {n} past the file's {len(data)} bytes"
    assert (8 + n) % 8 == 0, f"{path}: 8 + header length {n} is not a multiple of 8"
    header = json.loads(data[8:8 + n].decode("utf-8"))
    assert isinstance(header, dict), f"{path}: the header is not a JSON object"
    metadata = header.pop("__metadata__", {})
    assert all(isinstance(v, str) for v in metadata.values()), f"{path}: __metadata__ holds a non-string"
    buffer, out, at = data[8 + n:], {}, 0
    for name, e in sorted(header.items(), key=lambda kv: kv[1]["data_offsets"]):
        begin, end = e["data_offsets"]
        numpy_dtype, size = DTYPES[e["dtype"]]
        numel = int(np.prod(e["shape"], dtype=np.int64))
        assert begin == at, f"{path}: {name} begins at {begin}, the tensor before it ends at {at}"
        assert end - begin == numel * size, f"{path}: {name}: {end - begin} bytes for {e['shape']} of {e['dtype']}"
        raw = buffer[begin:end]
        if e["dtype"] == "BF16":
            x = torch.from_numpy(np.frombuffer(raw, dtype="<i2").copy()).view(torch.bfloat16)
        else:
            x = torch.from_numpy(np.frombuffer(raw, dtype=numpy_dtype).copy())
        out[name] = x.to(torch.float64).reshape(e["shape"])
        at = end
    assert at == len(buffer), f"{path}: {len(buffer) - at} bytes after the last tensor"
    return out, metadata


# ----------------------------------------------------------------------------------------------

def random_model(m, seed):
    """transformers' tensors (no prefix), float64, none zero."""
    g = torch.Generator().manual_seed(seed)
    out = {}
    for name, shape in hf_shapes(m).items():
        x = 0.1 * torch.randn(shape, generator=g, dtype=torch.float64)
        out[name] = x + 1 if name.endswith(("ln_1.weight", "ln_2.weight", "ln_f.weight")) else x
    return out


def gpt2_config(m):
    return {"architectures": ["GPT2LMHeadModel"], "model_type": "gpt2", "vocab_size": m["vocab_size"],
            "n_positions": m["max_seq_len"], "n_embd": m["channels"], "n_layer": m["num_layers"],
            "n_head": m["num_heads"], "n_inner": None, "activation_function": "gelu_new",
            "layer_norm_epsilon": 1e-5, "tie_word_embeddings": True}


def write(m, folder, dtype, naming, seed):
    os.makedirs(folder, exist_ok=True)
    t = random_model(m, seed)
    if naming == "lmhead":
        t = {"transformer." + k: v for k, v in t.items()}
        t["lm_head.weight"] = t["transformer.wte.weight"]
    write_safetensors(os.path.join(folder, "model.safetensors"), t, dtype)
    json.dump(gpt2_config(m), open(os.path.join(folder, "config.json"), "w"), indent=2)
    return 0


def to_eth(m, hf):
    """transformers' tensors (either naming) as ETH's (torch_oracle.gpt2_logits' names): a Conv1D
    weight W (in, out) computes x @ W + b, which is F.linear(x, W.T, b); wte padded to Vp rows
    with zeros, which only the padded logit columns read."""
    hf = {k.removeprefix("transformer."): v for k, v in hf.items() if k != "lm_head.weight"}
    C, V, Vp = m["channels"], m["vocab_size"], m["padded_vocab_size"]
    p = {"wte": torch.cat([hf["wte.weight"], torch.zeros(Vp - V, C, dtype=torch.float64)]),
         "wpe": hf["wpe.weight"], "lnf_w": hf["ln_f.weight"], "lnf_b": hf["ln_f.bias"]}
    for l in range(m["num_layers"]):
        for name, eth, conv1d in LAYER:
            x = hf[f"h.{l}.{name}"]
            p[f"layer{l}.{eth}"] = x.T if conv1d else x
    return p


def check(m, folder, dump, any_naming):
    hf, metadata = read_safetensors(os.path.join(folder, "model.safetensors"))
    if not any_naming:
        expected = {"transformer." + k: s for k, s in hf_shapes(m).items()}
        got = {k: tuple(v.shape) for k, v in hf.items()}
        assert got == expected, f"tensors: expected GPT2LMHeadModel's {expected}, got {got}"
        assert metadata.get("format") == "pt", f"__metadata__: expected format pt (transformers needs it), got {metadata}"
    config = json.load(open(os.path.join(folder, "config.json")))
    for ours, theirs in (("vocab_size", "vocab_size"), ("max_seq_len", "n_positions"), ("channels", "n_embd"),
                         ("num_layers", "n_layer"), ("num_heads", "n_head")):
        assert config[theirs] == m[ours], f"config.json: {theirs} {config[theirs]}, the model's {ours} {m[ours]}"
    tokens, ours = dump_logits(dump, m["vocab_size"])
    ref = gpt2_logits(to_eth(m, hf), tokens, m)[..., :m["vocab_size"]]
    return 0 if logits_within(folder, ours, ref, "") else 1


def logits_within(folder, ours, ref, what):
    """Prints the relative error of ETH's logits (B, T, V) and their worst element; True within TOL."""
    err = rel_error(ours, ref)
    worst = (ours - ref).abs().argmax().item()
    print(f"logits (B, T, V) = {tuple(ours.shape)} of {folder}{what}: relative error {err:.2e} (tolerance {TOL:g}); "
          f"worst element {np.unravel_index(worst, ours.shape)}: ETH {ours.flatten()[worst]:.8f}, "
          f"float64 PyTorch {ref.flatten()[worst]:.8f}")
    return err <= TOL


def dump_logits(dump, V):
    """oracle_dump's tokens (B, T) and logits (B, T, V of Vp), float64."""
    manifest = json.load(open(os.path.join(dump, "manifest.json")))
    B, T, Vp = manifest["micro_batch"], manifest["seq_len"], manifest["model"]["padded_vocab_size"]
    tokens = np.fromfile(os.path.join(dump, "tokens.i32"), dtype="<i4")[:B * T].reshape(B, T)
    ours = torch.from_numpy(np.fromfile(os.path.join(dump, "logits.f32"), dtype="<f4").astype(np.float64))
    return torch.from_numpy(tokens.astype(np.int64)), ours.reshape(B, T, Vp)[..., :V]


def llama_folder(folder):
    """The config as llama_logits takes it, from config.json alone, and the tensors by
    transformers' names: every shard of the index, or model.safetensors."""
    c = json.load(open(os.path.join(folder, "config.json")))
    assert c.get("model_type") == "llama" and c.get("hidden_act", "silu") == "silu", f"config.json: {c}"
    NH = c["num_attention_heads"]
    rope = c.get("rope_scaling") or c.get("rope_parameters") or {}
    llama3 = rope.get("rope_type", rope.get("type")) == "llama3"
    cfg = {"vocab_size": c["vocab_size"], "num_layers": c["num_hidden_layers"], "num_heads": NH,
           "num_kv_heads": c.get("num_key_value_heads", NH), "head_dim": c.get("head_dim") or c["hidden_size"] // NH,
           "norm_eps": c["rms_norm_eps"], "rope_theta": rope.get("rope_theta", c.get("rope_theta", 10000.0)),
           "tied_head": c.get("tie_word_embeddings", False),
           "rope_scaling": {"factor": rope["factor"], "low_freq_factor": rope["low_freq_factor"],
                            "high_freq_factor": rope["high_freq_factor"],
                            "original_max_position": rope["original_max_position_embeddings"]}
           if llama3 else {"factor": 0}}
    index = os.path.join(folder, "model.safetensors.index.json")
    files = sorted(set(json.load(open(index))["weight_map"].values())) if os.path.exists(index) else ["model.safetensors"]
    tensors = {}
    for name in files:
        t, metadata = read_safetensors(os.path.join(folder, name))
        assert metadata.get("format") == "pt", f"{name}: __metadata__: expected format pt, got {metadata}"
        tensors.update(t)
    per = ["input_layernorm.weight", "post_attention_layernorm.weight"]
    per += [f"self_attn.{x}_proj.{p}" for x in "qkvo" for p in ("weight", "bias")[:1 + bool(c.get("attention_bias"))]]
    per += [f"mlp.{x}_proj.{p}" for x in ("gate", "up", "down") for p in ("weight", "bias")[:1 + bool(c.get("mlp_bias"))]]
    expected = {"model.embed_tokens.weight", "model.norm.weight"} | {f"model.layers.{l}.{k}" for l in range(cfg["num_layers"]) for k in per}
    expected |= set() if cfg["tied_head"] else {"lm_head.weight"}
    assert set(tensors) == expected, (f"tensors: missing {sorted(expected - set(tensors))}, "
                                      f"not LlamaForCausalLM's {sorted(set(tensors) - expected)}")
    return cfg, tensors


def llama_params(cfg, hf):
    """transformers' Llama tensors as llama_logits' (ETH's names): q, k, v stacked into qkv, gate
    and up into fc (its first half the gate)."""
    p = {"wte": hf["model.embed_tokens.weight"], "lnf_w": hf["model.norm.weight"]}
    if not cfg["tied_head"]:
        p["lm_head_w"] = hf["lm_head.weight"]
    for l in range(cfg["num_layers"]):
        get = lambda k: hf.get(f"model.layers.{l}.{k}")
        for part, suffix in (("weight", "w"), ("bias", "b")):
            if get(f"self_attn.q_proj.{part}") is not None:
                p[f"layer{l}.qkv_{suffix}"] = torch.cat([get(f"self_attn.{x}_proj.{part}") for x in "qkv"])
                p[f"layer{l}.attproj_{suffix}"] = get(f"self_attn.o_proj.{part}")
            if get(f"mlp.gate_proj.{part}") is not None:
                p[f"layer{l}.fc_{suffix}"] = torch.cat([get(f"mlp.{x}_proj.{part}") for x in ("gate", "up")])
                p[f"layer{l}.fcproj_{suffix}"] = get(f"mlp.down_proj.{part}")
        p[f"layer{l}.ln1_w"] = get("input_layernorm.weight")
        p[f"layer{l}.ln2_w"] = get("post_attention_layernorm.weight")
    return p


def check_llama(folder, dump, prompt_len):
    cfg, hf = llama_folder(folder)
    V = cfg["vocab_size"]
    tokens, ours = dump_logits(dump, V)
    B, T = tokens.shape
    ref = llama_logits(llama_params(cfg, hf), tokens, cfg, "fp32")[..., :V]
    close = logits_within(folder, ours, ref, f" (tied head {cfg['tied_head']}, rope scaling {cfg['rope_scaling']['factor'] or 'none'})")
    top2 = ref[0].topk(2, dim=-1).values
    judged, ties, wrong = 0, [], []
    for p in range(prompt_len - 1, T - 1):
        if (top2[p, 0] - top2[p, 1]).item() < TIE:
            ties.append(p)
            continue
        judged += 1
        if ref[0, p].argmax().item() != tokens[0, p + 1].item():
            wrong.append(p)
    print(f"greedy continuation: float64 PyTorch's argmax is ETH's next token at {judged - len(wrong)} of {judged} "
          f"positions; near ties not judged: {ties or 'none'}")
    assert not wrong, f"the greedy continuations differ at positions {wrong}"
    assert judged >= (T - prompt_len) // 2, f"{judged} positions judged of {T - prompt_len}: too many ties to judge"
    return 0 if close else 1


def same(m, a, b):
    import h5py
    V = m["vocab_size"]
    with h5py.File(a, "r") as fa, h5py.File(b, "r") as fb:
        assert fb.attrs["step"] == 0, f"{b}: step {fb.attrs['step']}, expected 0"
        bad = []
        for name in fa["params"]:
            x, y = fa["params"][name][()], fb["params"][name][()]
            if name == "wte":
                assert not y[V:].any(), f"{b}: wte's padded rows {V}.. are not zero"
                x, y = x[:V], y[:V]
            assert x.any(), f"{a}: {name} is all zero: comparing it would prove little"
            if not np.array_equal(x.view(np.uint32), y.view(np.uint32)):
                bad.append(f"{name} ({np.count_nonzero(x.view(np.uint32) != y.view(np.uint32))} elements differ)")
            for moment in ("adam_m", "adam_v"):
                assert not fb[moment][name][()].any(), f"{b}: {moment}/{name} is not zero"
        print(f"{len(fa['params'])} parameter tensors of {a} and {b}: "
              f"{'bit-identical' if not bad else 'DIFFER: ' + ', '.join(bad)} (wte's first {V} rows)")
        return 0 if not bad else 1


def main():
    cmd, m, args = sys.argv[1], yaml.safe_load(open(sys.argv[2])), sys.argv[3:]
    if cmd == "write":
        for spec in args[1:]:
            folder, dtype, naming = spec.split(":")
            write(m, folder, dtype, naming, int(args[0]))
        return 0
    checks = {"--export": lambda d, dump: check(m, d, dump, False), "--import": lambda d, dump: check(m, d, dump, True),
              "--same": lambda a, b: same(m, a, b), "--llama": lambda d, dump, n: check_llama(d, dump, int(n))}
    failed, at = 0, 0
    while at < len(args):
        kind = args[at]
        arity = checks[kind].__code__.co_argcount
        operands, at = args[at + 1:at + 1 + arity], at + 1 + arity
        try:
            status = checks[kind](*operands)
        except AssertionError as e:
            print(f"FAIL: {e}")
            status = 1
        failed += status != 0
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
