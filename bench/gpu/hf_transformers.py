"""transformers itself on ETH's Hugging Face export (bench/gpu/hf_transformers.sh; needs a Python
with transformers, which the GPU machine's has; no GPU is used). The model is the folder's
(AutoModelForCausalLM: GPT2LMHeadModel, or LlamaForCausalLM for a Llama); a folder without a
tokenizer (a Llama on GPT-2's vocabulary, whose export writes none) takes ETH_SHARD's ids as the
prompt and skips the tokenizer's check.

    hf_transformers.py prompt DIR TEXT ETH_SHARD T OUT_TOKENS
        GPT2TokenizerFast.from_pretrained(DIR) encodes TEXT: its ids must be ETH's (ETH_SHARD:
        the shard eth_tokenize wrote of TEXT, its leading end-of-text token dropped). Then
        GPT2LMHeadModel.from_pretrained(DIR), in float64, continues the prompt greedily to T
        tokens (or fewer, where it chose the end-of-text token); OUT_TOKENS gets (4, T) int32:
        that sequence (padded with end-of-text), then 3 rows of random ids, for oracle_dump
        --tokens. Writes OUT_TOKENS.json: the prompt's length and the decoded text.
    hf_transformers.py compare DIR DUMP OUT_TOKENS.json
        ETH's logits (oracle_dump's DUMP/logits.f32, the first V of Vp columns) against those of
        GPT2LMHeadModel.from_pretrained(DIR) on the same tokens, in float64: relative error (as
        tests/oracle/torch_oracle.py: ||ours - ref|| / ||ref||) within 1e-5, as the oracle's
        forward tolerance (ETH fp32, ~2e-7 observed there). And ETH's greedy continuation is
        transformers': at every generated position of row 0, ETH's argmax is the token
        transformers chose next (after the prompt, whose length `prompt` wrote). Positions where transformers' two best logits lie within 1e-4
        of each other (a tie float rounding may break either way) are listed, not judged.
"""

import json
import os
import sys

import numpy as np
import torch
from transformers import AutoModelForCausalLM, GPT2TokenizerFast

FORWARD_TOL = 1e-5
TIE = 1e-4


def load(folder):
    model = AutoModelForCausalLM.from_pretrained(folder, torch_dtype=torch.float64).eval()
    has_tokenizer = os.path.exists(os.path.join(folder, "vocab.json"))
    return model, GPT2TokenizerFast.from_pretrained(folder) if has_tokenizer else None


def prompt(folder, text, eth_shard, T, out):
    model, tok = load(folder)
    eth_ids = np.fromfile(eth_shard, dtype="<u2")[512:].astype(int).tolist()[1:]  # after the 256-int32 header
    if tok is None:
        ids, eos = eth_ids, 50256  # GPT-2's end-of-text, as the shard's vocabulary
        print(f"prompt {text!r}: eth_tokenize's {len(ids)} ids (the folder holds no tokenizer)")
    else:
        ids, eos = tok.encode(text), tok.eos_token_id
        print(f"prompt {text!r}: GPT2TokenizerFast {len(ids)} ids, eth_tokenize {len(eth_ids)} ids")
        if ids != eth_ids:
            print(f"FAILED: the tokenizers differ: transformers {ids}, ETH {eth_ids}")
            return 1
    with torch.no_grad():
        seq = model.generate(torch.tensor([ids]), max_new_tokens=T - len(ids), do_sample=False,
                             eos_token_id=eos, pad_token_id=eos)[0]
    n = seq.numel()  # T, or fewer where generate stopped at the end-of-text token
    row = np.full(T, eos)
    row[:n] = seq.numpy()
    rows = np.random.default_rng(0).integers(0, model.config.vocab_size, (3, T))
    np.concatenate([row[None], rows]).astype("<i4").tofile(out)
    continuation = tok.decode(seq[len(ids):]) if tok else seq[len(ids):].tolist()
    json.dump({"prompt_tokens": len(ids), "tokens": n, "continuation": continuation}, open(out + ".json", "w"))
    print(f"greedy continuation by transformers ({n - len(ids)} tokens): {continuation!r}")
    return 0


def compare(folder, dump, prompt_json):
    model, _ = load(folder)
    manifest = json.load(open(os.path.join(dump, "manifest.json")))
    B, T, V, Vp = (manifest["micro_batch"], manifest["seq_len"], manifest["model"]["vocab_size"],
                   manifest["model"]["padded_vocab_size"])
    tokens = torch.from_numpy(np.fromfile(os.path.join(dump, "tokens.i32"), dtype="<i4")[:B * T].reshape(B, T).astype(np.int64))
    ours = torch.from_numpy(np.fromfile(os.path.join(dump, "logits.f32"), dtype="<f4").astype(np.float64)).reshape(B, T, Vp)[..., :V]
    with torch.no_grad():
        ref = model(tokens).logits  # (B, T, V)
    err = ((ours - ref).norm() / ref.norm()).item()
    print(f"logits (B, T, V) = ({B}, {T}, {V}): ETH against {type(model).__name__} in float64, relative error {err:.2e} "
          f"(tolerance {FORWARD_TOL:g})")
    generated = json.load(open(prompt_json))
    top2 = ref[0].topk(2, dim=-1).values  # (T, 2)
    judged, ties, wrong = 0, [], []
    for p in range(generated["prompt_tokens"] - 1, generated["tokens"] - 1):
        if (top2[p, 0] - top2[p, 1]).item() < TIE:
            ties.append(p)
        else:
            judged += 1
            if ours[0, p].argmax().item() != tokens[0, p + 1].item():
                wrong.append(p)
    print(f"greedy continuation: ETH's argmax is transformers' next token at {judged - len(wrong)} of {judged} "
          f"positions; near ties not judged: {ties or 'none'}")
    if wrong:
        print(f"FAILED: ETH's greedy choice differs at positions {wrong}")
    return 0 if err <= FORWARD_TOL and not wrong else 1


def main():
    cmd, args = sys.argv[1], sys.argv[2:]
    if cmd == "prompt":
        return prompt(args[0], args[1], args[2], int(args[3]), args[4])
    return compare(args[0], args[1], args[2])


if __name__ == "__main__":
    sys.exit(main())
