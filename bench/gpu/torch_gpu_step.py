#!/usr/bin/env python3
"""PyTorch's own training step for the model bench_gpu_step times, on the same GPU: GPT-2 (tied
LM head, GELU tanh, pre-LN) or SmolLM2-135M (transformers' LlamaForCausalLM: RMSNorm, rotary
positions, grouped-query attention by repeat_kv, SwiGLU, tied head), eager mode or (--compile)
torch.compile, fp32 weights and activations, causal attention through
F.scaled_dot_product_attention (PyTorch's fused kernels), cross-entropy over the first V of Vp
logits, global-norm clipping, fused AdamW. Prints one JSON line per precision:

  fp32  torch.set_float32_matmul_precision("highest"): fp32 matmuls, TF32 off (as ETH's fp32)
  tf32  torch.set_float32_matmul_precision("high"): TF32 tensor cores (as ETH's tf32)
  bf16  autocast to bfloat16 around forward and loss (fp32 master weights, fused AdamW), TF32
        for what autocast leaves in fp32: PyTorch's usual mixed precision (as ETH's bf16)
  fp16  autocast to float16 with a GradScaler (init 2^16), as bf16 otherwise (as ETH's fp16)

  torch_gpu_step.py --model gpt2-124m|gpt2-350m|smollm2-135m [--batch B] [--seq T] [--steps S]
                    [--warmup W] [--precisions fp32,tf32,bf16,fp16] [--compile]

Model FLOPs per token: the same formula as bench_gpu_step.cpp (see there).
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

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from torch_train_step import RMSNorm, rotate_half  # noqa: E402  (the CPU benchmark's, one definition)

# The shapes of inputs/models/gpt2-{124m,350m}.yaml and inputs/models/hf/SmolLM2-135M/config.json,
# and bench_gpu_step's default batches.
MODELS = {
    "gpt2-124m": dict(L=12, NH=12, C=768, B=16, V=50257, VP=50304),
    "gpt2-350m": dict(L=24, NH=16, C=1024, B=8, V=50257, VP=50304),
    "smollm2-135m": dict(L=30, NH=9, NKV=3, hs=64, C=576, FC=1536, B=16, V=49152, VP=49152, theta=1e5, eps=1e-5),
}
MAX_T = 1024


class Block(nn.Module):
    def __init__(self, C, NH):
        super().__init__()
        self.NH = NH
        self.ln_1 = nn.LayerNorm(C)
        self.c_attn = nn.Linear(C, 3 * C)
        self.attn_proj = nn.Linear(C, C)
        self.ln_2 = nn.LayerNorm(C)
        self.c_fc = nn.Linear(C, 4 * C)
        self.mlp_proj = nn.Linear(4 * C, C)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(self.ln_1(x)).split(C, dim=2)
        q, k, v = (t.view(B, T, self.NH, C // self.NH).transpose(1, 2) for t in (q, k, v))
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.attn_proj(y.transpose(1, 2).contiguous().view(B, T, C))
        return x + self.mlp_proj(F.gelu(self.c_fc(self.ln_2(x)), approximate="tanh"))


class LlamaBlock(nn.Module):
    def __init__(self, m):
        super().__init__()
        C, self.NH, self.NKV, self.hs = m["C"], m["NH"], m["NKV"], m["hs"]
        self.ln_1 = RMSNorm(C, m["eps"])
        self.qkv = nn.Linear(C, (self.NH + 2 * self.NKV) * self.hs, bias=False)
        self.o_proj = nn.Linear(self.NH * self.hs, C, bias=False)
        self.ln_2 = RMSNorm(C, m["eps"])
        self.gate_up = nn.Linear(C, 2 * m["FC"], bias=False)
        self.down_proj = nn.Linear(m["FC"], C, bias=False)

    def forward(self, x, cos, sin):
        B, T, _ = x.shape
        NH, NKV, hs = self.NH, self.NKV, self.hs
        q, k, v = self.qkv(self.ln_1(x)).split((NH * hs, NKV * hs, NKV * hs), dim=2)
        q, k, v = q.view(B, T, NH, hs).transpose(1, 2), k.view(B, T, NKV, hs).transpose(1, 2), v.view(B, T, NKV, hs).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        k, v = k.repeat_interleave(NH // NKV, dim=1), v.repeat_interleave(NH // NKV, dim=1)
        y = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.o_proj(y.transpose(1, 2).contiguous().view(B, T, NH * hs))
        gate, up = self.gate_up(self.ln_2(x)).chunk(2, dim=2)
        return x + self.down_proj(F.silu(gate) * up)


class Llama(nn.Module):
    def __init__(self, m):
        super().__init__()
        self.V = m["V"]
        self.wte = nn.Embedding(m["VP"], m["C"])
        self.blocks = nn.ModuleList(LlamaBlock(m) for _ in range(m["L"]))
        self.ln_f = RMSNorm(m["C"], m["eps"])
        inv_freq = 1.0 / m["theta"] ** (torch.arange(0, m["hs"], 2, dtype=torch.float32) / m["hs"])
        angle = torch.arange(MAX_T, dtype=torch.float32)[:, None] * inv_freq[None, :]
        emb = torch.cat((angle, angle), dim=-1)
        self.register_buffer("cos", emb.cos(), persistent=False)
        self.register_buffer("sin", emb.sin(), persistent=False)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * m["L"]) if name.endswith(("o_proj.weight", "down_proj.weight")) else 0.02
                nn.init.normal_(p, std=std)

    def forward(self, tokens, targets):
        T = tokens.shape[1]
        cos, sin = self.cos[:T].to(self.wte.weight.dtype), self.sin[:T].to(self.wte.weight.dtype)
        x = self.wte(tokens)
        for block in self.blocks:
            x = block(x, cos, sin)
        logits = self.ln_f(x) @ self.wte.weight.t()  # (B, T, Vp), the tied head
        return F.cross_entropy(logits[..., :self.V].reshape(-1, self.V), targets.reshape(-1))


class GPT(nn.Module):
    def __init__(self, m):
        super().__init__()
        L, NH, C = m["L"], m["NH"], m["C"]
        self.V = m["V"]
        self.wte = nn.Embedding(m["VP"], C)
        self.wpe = nn.Embedding(MAX_T, C)
        self.blocks = nn.ModuleList(Block(C, NH) for _ in range(L))
        self.ln_f = nn.LayerNorm(C)
        for name, p in self.named_parameters():
            if p.dim() == 2:
                std = 0.02 / math.sqrt(2 * L) if name.endswith("proj.weight") else 0.02
                nn.init.normal_(p, std=std)

    def forward(self, tokens, targets):
        T = tokens.shape[1]
        x = self.wte(tokens) + self.wpe(torch.arange(T, device=tokens.device))
        for block in self.blocks:
            x = block(x)
        logits = self.ln_f(x) @ self.wte.weight.t()  # (B, T, Vp), the tied head
        return F.cross_entropy(logits[..., :self.V].reshape(-1, self.V), targets.reshape(-1))


def flops_per_token(m, T):
    """bench_gpu_step.cpp's: GPT-2's formula, or the model description's 6 N + 12 L T NH hs."""
    L, C = m["L"], m["C"]
    if "FC" not in m:
        return 6.0 * (12.0 * L * C * C + m["VP"] * C) + 12.0 * L * T * C
    Q, KV, FC = m["NH"] * m["hs"], m["NKV"] * m["hs"], m["FC"]
    N = L * (C * (Q + 2 * KV) + Q * C + 3 * C * FC + 2 * C) + C + m["VP"] * C
    return 6.0 * N + 12.0 * L * T * Q


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gpt2-124m", choices=sorted(MODELS))
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--precisions", default="fp32,tf32,bf16,fp16")
    ap.add_argument("--compile", action="store_true", help="torch.compile the model (PyTorch at its best)")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_gpu_step: no usable GPU", file=sys.stderr)
        return 77
    m = MODELS[args.model]
    B, T = args.batch or m["B"], args.seq
    device = torch.device("cuda", 0)
    gen = torch.Generator(device="cpu").manual_seed(1)
    batches = [(torch.randint(0, m["V"], (B, T), generator=gen).to(device),
                torch.randint(0, m["V"], (B, T), generator=gen).to(device)) for _ in range(4)]

    for precision in args.precisions.split(","):
        torch.set_float32_matmul_precision({"fp32": "highest", "tf32": "high", "bf16": "high", "fp16": "high"}[precision])
        torch.backends.cudnn.allow_tf32 = precision != "fp32"
        half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
        autocast = torch.autocast("cuda", dtype=half or torch.bfloat16, enabled=half is not None)
        # fp16: PyTorch's gradient scaler (init 2^16, as ETH's loss scale), unscaled before clipping.
        scaler = torch.cuda.amp.GradScaler(init_scale=65536.0, enabled=precision == "fp16")
        torch.manual_seed(1337)
        model = (Llama(m) if "FC" in m else GPT(m)).to(device)
        step_model = torch.compile(model) if args.compile else model
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1,
                                fused=True)
        times, losses = [], []
        for step in range(args.warmup + args.steps):
            tokens, targets = batches[step % len(batches)]
            torch.cuda.synchronize()
            start = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            with autocast:
                loss = step_model(tokens, targets)
            scaler.scale(loss).backward()
            scaler.unscale_(opt)
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0, foreach=True)
            scaler.step(opt)
            scaler.update()
            torch.cuda.synchronize()
            ms = (time.perf_counter() - start) * 1e3
            losses.append(loss.item())
            if step >= args.warmup:
                times.append(ms)
        median_ms = sorted(times)[len(times) // 2]  # as bench_gpu_step.cpp
        tokens_per_s = B * T / (median_ms / 1e3)
        fpt = flops_per_token(m, T)
        print(json.dumps({
            "impl": "torch-compile" if args.compile else "torch", "model": args.model, "precision": precision, "device": torch.cuda.get_device_name(0),
            "torch": torch.__version__, "B": B, "T": T, "steps": args.steps, "step_ms_median": round(median_ms, 3),
            "step_ms_min": round(min(times), 3), "tokens_per_s": round(tokens_per_s, 1), "flops_per_token": fpt,
            "tflops": round(tokens_per_s * fpt / 1e12, 3), "loss_first": round(losses[0], 4),
            "loss_last": round(losses[-1], 4)}), flush=True)
        del model, step_model, opt
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
