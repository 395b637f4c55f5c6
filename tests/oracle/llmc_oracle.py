"""llm.c model files for tests/mpi/llmc_interop.sh, and the float64 PyTorch check of a loss.

    llmc_oracle.py write MODEL_YAML OUT.bin SEED
        an llm.c GPT-2 model file (version 3, lib/io/llmc_model.hpp) of MODEL_YAML's dimensions with
        random parameters (normal, std 0.1; layernorm weights 1 + that), written by NumPy alone
    llmc_oracle.py check MODEL_YAML LLMC.bin SHARD T N METRICS
        the mean per-sample loss, in float64, of the llm.c model on the first N windows of the
        token shard (file order, window w = tokens[w T : w T + T + 1], as eth_train validates),
        against the last val_loss of eth_train's METRICS (metrics.jsonl). Tolerance 1e-5
        relative: ETH computes in float32 and its forward losses agree with float64 to ~2e-7
        (torch_oracle.py); any wrong tensor order or transposition moves the loss by far more.
"""

import json
import sys

import numpy as np
import torch
import yaml

from torch_oracle import gpt2_logits, sample_losses

KINDS = ("ln1_w", "ln1_b", "qkv_w", "qkv_b", "attproj_w", "attproj_b",
         "ln2_w", "ln2_b", "fc_w", "fc_b", "fcproj_w", "fcproj_b")


def shapes(m):
    """llm.c's tensors in file order: (ETH names for each layer or the one name, shape of one)."""
    C, L = m["channels"], m["num_layers"]
    per_layer = {"ln1_w": (C,), "ln1_b": (C,), "qkv_w": (3 * C, C), "qkv_b": (3 * C,),
                 "attproj_w": (C, C), "attproj_b": (C,), "ln2_w": (C,), "ln2_b": (C,),
                 "fc_w": (4 * C, C), "fc_b": (4 * C,), "fcproj_w": (C, 4 * C), "fcproj_b": (C,)}
    out = [(["wte"], (m["padded_vocab_size"], C)), (["wpe"], (m["max_seq_len"], C))]
    out += [([f"layer{l}.{k}" for l in range(L)], per_layer[k]) for k in KINDS]
    return out + [(["lnf_w"], (C,)), (["lnf_b"], (C,))]


def header(m):
    h = np.zeros(256, dtype="<i4")
    h[:8] = [20240326, 3, m["max_seq_len"], m["vocab_size"], m["num_layers"], m["num_heads"],
             m["channels"], m["padded_vocab_size"]]
    return h


def write(m, path, seed):
    rng = np.random.default_rng(seed)
    with open(path, "wb") as f:
        f.write(header(m).tobytes())
        for names, shape in shapes(m):
            for name in names:
                x = rng.normal(0, 0.1, shape)
                if name.endswith(("ln1_w", "ln2_w", "lnf_w")):
                    x += 1
                f.write(x.astype("<f4").tobytes())


def read(m, path):
    data = np.fromfile(path, dtype="<f4")[256:].astype(np.float64)
    p, at = {}, 0
    for names, shape in shapes(m):
        for name in names:
            n = int(np.prod(shape))
            p[name] = torch.from_numpy(data[at:at + n].reshape(shape))
            at += n
    assert at == data.size, f"{path}: {data.size} floats, the model has {at}"
    return p


def check(m, path, shard, T, N, metrics):
    tokens = np.fromfile(shard, dtype="<u2")[512:].astype(np.int64)  # after the 256-int32 header
    windows = np.stack([tokens[w * T:w * T + T + 1] for w in range(N)])
    inputs, targets = torch.from_numpy(windows[:, :-1]), torch.from_numpy(windows[:, 1:])
    ref = sample_losses(gpt2_logits(read(m, path), inputs, m), targets, m["vocab_size"]).mean().item()
    ours = [r["val_loss"] for r in map(json.loads, open(metrics)) if "val_loss" in r][-1]
    err = abs(ours - ref) / abs(ref)
    print(f"loss on {N} windows: eth_train {ours:.9f}, float64 PyTorch {ref:.9f}, relative error {err:.2e} (tolerance 1e-5)")
    return 0 if err <= 1e-5 else 1


def main():
    torch.set_default_dtype(torch.float64)
    m = yaml.safe_load(open(sys.argv[2]))
    if sys.argv[1] == "write":
        write(m, sys.argv[3], int(sys.argv[4]))
        return 0
    return check(m, sys.argv[3], sys.argv[4], int(sys.argv[5]), int(sys.argv[6]), sys.argv[7])


if __name__ == "__main__":
    sys.exit(main())
