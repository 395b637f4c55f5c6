#!/usr/bin/python3
"""The PyTorch twin of bench_train_step: the same GPT-2 or Llama step, timed the same way.

Run with Debian's /usr/bin/python3 (python3-torch 1.13). Same config as the C++ benchmark:
layers, heads, channels, B, T, padded vocabulary Vp with the loss over the first V logits,
tied LM head, tanh GELU (GPT-2; a model YAML) or transformers' LlamaForCausalLM (a Hugging Face
config.json: RMSNorm, rotary positions in the rotate-half layout with Llama 3's scaling where the
config has it, grouped-query attention by repeat_kv, SwiGLU, the head tied or not, Vp padded to
a multiple of 128 as ETH pads it), float32, AdamW (betas 0.9/0.95, eps 1e-8, weight decay 0.1 on matrices
and embeddings only), global-norm clipping at 1.0. A step is what a PyTorch user writes:
zero_grad, forward, loss, backward, clip_grad_norm_, optimizer.step, plus loss.item() (ours reads
the loss and the norm back too). Repeats are blocks of timed steps, each followed by a timing of
torch's own matmul on the LM-head forward shape, so torch's BLAS speed is on record beside its step.
Prints one JSON object.
"""
import argparse
import json
import math
import os
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


def read_hf_config(path):
    """A Hugging Face LlamaForCausalLM config.json, with ETH's padded vocabulary (a multiple of 128)."""
    with open(path) as f:
        c = json.load(f)
    c["padded_vocab_size"] = (c["vocab_size"] + 127) // 128 * 128
    c.setdefault("head_dim", c["hidden_size"] // c["num_attention_heads"])
    return c


def read_model_yaml(path):
    """The flat `key: value` model YAML of inputs/models (no PyYAML needed)."""
    config = {}
    with open(path) as f:
        for line in f:
            line = line.split("#", 1)[0].strip()
            if ":" in line:
                key, value = (s.strip() for s in line.split(":", 1))
                config[key] = int(value) if value.lstrip("-").isdigit() else value
    return config


class Block(nn.Module):
    def __init__(self, C, NH, T):
        super().__init__()
        self.NH = NH
        self.ln1 = nn.LayerNorm(C)
        self.qkv = nn.Linear(C, 3 * C)
        self.attproj = nn.Linear(C, C)
        self.ln2 = nn.LayerNorm(C)
        self.fc = nn.Linear(C, 4 * C)
        self.fcproj = nn.Linear(4 * C, C)
        self.register_buffer("causal", torch.tril(torch.ones(T, T, dtype=torch.bool)))

    def forward(self, x):
        B, T, C = x.shape
        hs = C // self.NH
        q, k, v = self.qkv(self.ln1(x)).split(C, dim=2)
        q = q.view(B, T, self.NH, hs).transpose(1, 2)  # (B, NH, T, hs)
        k = k.view(B, T, self.NH, hs).transpose(1, 2)
        v = v.view(B, T, self.NH, hs).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, NH, T, T), as ours: full T x T
        att = att.masked_fill(~self.causal[:T, :T], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        x = x + self.attproj(y)
        return x + self.fcproj(F.gelu(self.fc(self.ln2(x)), approximate="tanh"))


class RMSNorm(nn.Module):
    def __init__(self, C, eps):
        super().__init__()
        self.eps = eps
        self.weight = nn.Parameter(torch.ones(C))

    def forward(self, x):  # the statistics in fp32 under autocast (bench/gpu/torch_gpu_step.py)
        return x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + self.eps).to(x.dtype) * self.weight


def rotary_inverse_frequencies(c):
    """transformers' default and llama3 rope types (rope_scaling or rope_parameters)."""
    hs = c["head_dim"]
    inv_freq = 1.0 / c.get("rope_theta", 10000.0) ** (torch.arange(0, hs, 2, dtype=torch.float64) / hs)
    s = c.get("rope_scaling") or c.get("rope_parameters") or {}
    if s.get("rope_type", s.get("type")) == "llama3":
        factor, low, high, old = s["factor"], s["low_freq_factor"], s["high_freq_factor"], s["original_max_position_embeddings"]
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > old / low, inv_freq / factor, inv_freq)
        smooth = (old / wavelen - low) / (high - low)
        medium = (wavelen >= old / high) & (wavelen <= old / low)
        inv_freq = torch.where(medium, (1 - smooth) * scaled / factor + smooth * scaled, scaled)
    return inv_freq.float()


def rotate_half(x):
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


class LlamaBlock(nn.Module):
    def __init__(self, c, T):
        super().__init__()
        C, self.NH, self.NKV, self.hs = c["hidden_size"], c["num_attention_heads"], c["num_key_value_heads"], c["head_dim"]
        FC, bias, mlp_bias = c["intermediate_size"], c.get("attention_bias", False), c.get("mlp_bias", False)
        self.ln1 = RMSNorm(C, c["rms_norm_eps"])
        self.qkv = nn.Linear(C, (self.NH + 2 * self.NKV) * self.hs, bias=bias)  # q, k, v side by side
        self.attproj = nn.Linear(self.NH * self.hs, C, bias=bias)
        self.ln2 = RMSNorm(C, c["rms_norm_eps"])
        self.fc = nn.Linear(C, 2 * FC, bias=mlp_bias)  # gate, then up
        self.fcproj = nn.Linear(FC, C, bias=mlp_bias)
        angle = torch.arange(T, dtype=torch.float32)[:, None] * rotary_inverse_frequencies(c)[None, :]
        emb = torch.cat((angle, angle), dim=-1)  # (T, hs)
        self.register_buffer("cos", emb.cos())
        self.register_buffer("sin", emb.sin())
        self.register_buffer("causal", torch.tril(torch.ones(T, T, dtype=torch.bool)))

    def forward(self, x):
        B, T, _ = x.shape
        NH, NKV, hs = self.NH, self.NKV, self.hs
        q, k, v = self.qkv(self.ln1(x)).split((NH * hs, NKV * hs, NKV * hs), dim=2)
        q = q.view(B, T, NH, hs).transpose(1, 2)  # (B, NH, T, hs)
        k = k.view(B, T, NKV, hs).transpose(1, 2)
        v = v.view(B, T, NKV, hs).transpose(1, 2)
        cos, sin = self.cos[:T], self.sin[:T]
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(NH // NKV, dim=1), v.repeat_interleave(NH // NKV, dim=1)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(hs))  # (B, NH, T, T): torch 1.13 has no SDPA
        att = att.masked_fill(~self.causal[:T, :T], float("-inf")).softmax(dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, NH * hs)
        x = x + self.attproj(y)
        gate, up = self.fc(self.ln2(x)).chunk(2, dim=2)
        return x + self.fcproj(F.silu(gate) * up)


class Llama(nn.Module):
    def __init__(self, c, L, T):
        super().__init__()
        self.V, Vp, C = c["vocab_size"], c["padded_vocab_size"], c["hidden_size"]
        self.wte = nn.Embedding(Vp, C)
        self.blocks = nn.ModuleList(LlamaBlock(c, T) for _ in range(L))
        self.lnf = RMSNorm(C, c["rms_norm_eps"])
        self.head = None if c.get("tie_word_embeddings", False) else nn.Linear(C, Vp, bias=False)
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * L) if name.endswith(("attproj.weight", "fcproj.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets):
        x = self.wte(idx)
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.lnf(x), self.wte.weight if self.head is None else self.head.weight)  # (B, T, Vp)
        return F.cross_entropy(logits[..., : self.V].reshape(-1, self.V), targets.reshape(-1))


class GPT(nn.Module):
    def __init__(self, V, Vp, maxT, L, NH, C, T):
        super().__init__()
        self.V = V
        self.wte = nn.Embedding(Vp, C)  # (Vp, C), also the LM head
        self.wpe = nn.Embedding(maxT, C)
        self.blocks = nn.ModuleList(Block(C, NH, T) for _ in range(L))
        self.lnf = nn.LayerNorm(C)
        for name, p in self.named_parameters():
            if p.dim() >= 2:
                std = 0.02 / math.sqrt(2 * L) if name.endswith(("attproj.weight", "fcproj.weight")) else 0.02
                nn.init.normal_(p, 0.0, std)

    def forward(self, idx, targets):
        B, T = idx.shape
        x = self.wte(idx) + self.wpe(torch.arange(T))
        for block in self.blocks:
            x = block(x)
        logits = F.linear(self.lnf(x), self.wte.weight)  # (B, T, Vp): the tied head over all Vp rows
        return F.cross_entropy(logits[..., : self.V].reshape(-1, self.V), targets.reshape(-1))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", default="inputs/models/gpt2-124m.yaml")
    ap.add_argument("--layers", type=int, default=0, help="0: the YAML's num_layers")
    ap.add_argument("--batch", type=int, default=4)
    ap.add_argument("--seq-len", type=int, default=256)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--steps", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--matmul-calls", type=int, default=2)
    ap.add_argument("--threads", type=int, default=int(os.environ.get("OMP_NUM_THREADS", "1")))
    ap.add_argument("--seed", type=int, default=1337)
    args = ap.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    B, T = args.batch, args.seq_len
    if args.model.endswith(".json"):
        m = read_hf_config(args.model)
        L = args.layers or m["num_hidden_layers"]
        V, Vp, C, NH = m["vocab_size"], m["padded_vocab_size"], m["hidden_size"], m["num_attention_heads"]
        model = Llama(m, L, T)
    else:
        m = read_model_yaml(args.model)
        L = args.layers or m["num_layers"]
        V, Vp, C, NH = m["vocab_size"], m["padded_vocab_size"], m["channels"], m["num_heads"]
        model = GPT(V, Vp, m["max_seq_len"], L, NH, C, T)
    decay = [p for p in model.parameters() if p.dim() >= 2]
    no_decay = [p for p in model.parameters() if p.dim() < 2]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": 0.1}, {"params": no_decay, "weight_decay": 0.0}],
                                  lr=6e-4, betas=(0.9, 0.95), eps=1e-8)

    total = args.warmup + args.steps * args.repeats
    tokens = torch.randint(0, V, (total, B, T + 1))

    def step(i):
        optimizer.zero_grad()
        loss = model(tokens[i, :, :T], tokens[i, :, 1:])
        loss.backward()
        norm = torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return loss.item(), norm.item()

    # Torch's matmul on the head's forward shape: F.linear as the model calls it (a fresh output
    # every call, as in the step), and torch.mm into a preallocated output (the BLAS alone).
    x = torch.randn(B * T, C)
    w = torch.randn(Vp, C)
    out = torch.empty(B * T, Vp)
    head_calls = {"linear": lambda: F.linear(x, w), "mm_out": lambda: torch.mm(x, w.t(), out=out)}
    for call in head_calls.values():
        call()

    def matmul_gflops(call):
        start = time.perf_counter()
        for _ in range(args.matmul_calls):
            call()
        return 2.0 * B * T * C * Vp / ((time.perf_counter() - start) / args.matmul_calls) / 1e9

    losses, step_ms, repeat_ms = [], [], []
    matmul = {name: [] for name in head_calls}
    i = 0
    for _ in range(args.warmup):
        losses.append(step(i)[0])
        i += 1
    for r in range(args.repeats):
        block = []
        for _ in range(args.steps):
            start = time.perf_counter()
            losses.append(step(i)[0])
            block.append((time.perf_counter() - start) * 1e3)
            i += 1
        step_ms += block
        repeat_ms.append(sum(block) / len(block))
        for name, call in head_calls.items():
            matmul[name].append(matmul_gflops(call))
        print(f"repeat {r + 1}/{args.repeats}: {repeat_ms[-1]:.1f} ms/step, {B * T / repeat_ms[-1] * 1e3:.0f} tok/s, "
              f"head F.linear {matmul['linear'][-1]:.1f} GFLOP/s, mm(out=) {matmul['mm_out'][-1]:.1f} GFLOP/s",
              file=sys.stderr)

    def summary(x):
        s = sorted(x)
        n = len(s)
        med = s[n // 2] if n % 2 else 0.5 * (s[n // 2 - 1] + s[n // 2])
        return {"median": med, "min": s[0], "max": s[-1], "values": x}

    print(json.dumps({
        "benchmark": "train_step",
        "implementation": f"pytorch {torch.__version__}",
        "config": {"model": args.model, "layers": L, "heads": NH, "channels": C, "vocab": V, "padded_vocab": Vp,
                   "B": B, "T": T, "tokens_per_step": B * T,
                   "parameters": sum(p.numel() for p in model.parameters())},
        "threads": {"torch_num_threads": torch.get_num_threads(),
                    "omp_num_threads_env": os.environ.get("OMP_NUM_THREADS"),
                    "parallel_info": torch.__config__.parallel_info()},
        "blas_libraries": blas_libraries(),
        "timing": {"warmup_steps": args.warmup, "steps_per_repeat": args.steps, "repeats": args.repeats},
        "step_ms": summary(repeat_ms),
        "step_ms_each": step_ms,
        "tokens_per_s": summary([B * T / ms * 1e3 for ms in repeat_ms]),
        "head_matmul_gflops": {"linear": summary(matmul["linear"]), "mm_out": summary(matmul["mm_out"])},
        "losses": losses,
    }, indent=2))


def blas_libraries():
    """The BLAS/OpenMP/oneDNN shared objects this process actually mapped."""
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if line.rstrip().endswith((".so", ".so.0", ".so.1", ".so.2", ".so.3"))
                 or ".so." in line}
    keep = ("blas", "lapack", "gomp", "omp", "dnnl", "mkl")
    return sorted(os.path.realpath(p) for p in paths if any(k in os.path.basename(p) for k in keep))


if __name__ == "__main__":
    main()
