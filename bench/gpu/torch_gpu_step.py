#!/usr/bin/env python3
"""PyTorch's own training step for the model bench_gpu_step times, on the same GPU: GPT-2 (tied
LM head, GELU tanh, pre-LN), eager mode, fp32 weights and activations, causal attention through
F.scaled_dot_product_attention (PyTorch's fused kernels), cross-entropy over the first V of Vp
logits, global-norm clipping, fused AdamW. Prints one JSON line per precision:

  fp32  torch.set_float32_matmul_precision("highest"): fp32 matmuls, TF32 off (as ETH's fp32)
  tf32  torch.set_float32_matmul_precision("high"): TF32 tensor cores (as ETH's tf32)
  bf16  autocast to bfloat16 around forward and loss (fp32 master weights, fused AdamW), TF32
        for what autocast leaves in fp32: PyTorch's usual mixed precision (as ETH's bf16)
  fp16  autocast to float16 with a GradScaler (init 2^16), as bf16 otherwise (as ETH's fp16)

  torch_gpu_step.py --model gpt2-124m|gpt2-350m [--batch B] [--seq T] [--steps S] [--warmup W]
                    [--precisions fp32,tf32,bf16,fp16]

Model FLOPs per token: the same formula as bench_gpu_step.cpp (see there).
"""
import argparse
import json
import math
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

# The shapes of inputs/models/gpt2-{124m,350m}.yaml, and bench_gpu_step's default batches.
MODELS = {
    "gpt2-124m": dict(L=12, NH=12, C=768, B=16),
    "gpt2-350m": dict(L=24, NH=16, C=1024, B=8),
}
V, VP, MAX_T = 50257, 50304, 1024


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


class GPT(nn.Module):
    def __init__(self, L, NH, C):
        super().__init__()
        self.wte = nn.Embedding(VP, C)
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
        return F.cross_entropy(logits[..., :V].reshape(-1, V), targets.reshape(-1))


def flops_per_token(L, C, T):
    return 6.0 * (12.0 * L * C * C + VP * C) + 12.0 * L * T * C


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="gpt2-124m", choices=sorted(MODELS))
    ap.add_argument("--batch", type=int, default=0)
    ap.add_argument("--seq", type=int, default=1024)
    ap.add_argument("--steps", type=int, default=8)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--precisions", default="fp32,tf32,bf16,fp16")
    args = ap.parse_args()
    if not torch.cuda.is_available():
        print("torch_gpu_step: no usable GPU", file=sys.stderr)
        return 77
    m = MODELS[args.model]
    B, T = args.batch or m["B"], args.seq
    device = torch.device("cuda", 0)
    gen = torch.Generator(device="cpu").manual_seed(1)
    batches = [(torch.randint(0, V, (B, T), generator=gen).to(device),
                torch.randint(0, V, (B, T), generator=gen).to(device)) for _ in range(4)]

    for precision in args.precisions.split(","):
        torch.set_float32_matmul_precision({"fp32": "highest", "tf32": "high", "bf16": "high", "fp16": "high"}[precision])
        torch.backends.cudnn.allow_tf32 = precision != "fp32"
        half = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
        autocast = torch.autocast("cuda", dtype=half or torch.bfloat16, enabled=half is not None)
        # fp16: PyTorch's gradient scaler (init 2^16, as ETH's loss scale), unscaled before clipping.
        scaler = torch.cuda.amp.GradScaler(init_scale=65536.0, enabled=precision == "fp16")
        torch.manual_seed(1337)
        model = GPT(m["L"], m["NH"], m["C"]).to(device)
        opt = torch.optim.AdamW(model.parameters(), lr=3e-4, betas=(0.9, 0.95), eps=1e-8, weight_decay=0.1,
                                fused=True)
        times, losses = [], []
        for step in range(args.warmup + args.steps):
            tokens, targets = batches[step % len(batches)]
            torch.cuda.synchronize()
            start = time.perf_counter()
            opt.zero_grad(set_to_none=True)
            with autocast:
                loss = model(tokens, targets)
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
        fpt = flops_per_token(m["L"], m["C"], T)
        print(json.dumps({
            "impl": "torch", "model": args.model, "precision": precision, "device": torch.cuda.get_device_name(0),
            "torch": torch.__version__, "B": B, "T": T, "steps": args.steps, "step_ms_median": round(median_ms, 3),
            "step_ms_min": round(min(times), 3), "tokens_per_s": round(tokens_per_s, 1), "flops_per_token": fpt,
            "tflops": round(tokens_per_s * fpt / 1e12, 3), "loss_first": round(losses[0], 4),
            "loss_last": round(losses[-1], 4)}), flush=True)
        del model, opt
        torch.cuda.empty_cache()
    return 0


if __name__ == "__main__":
    sys.exit(main())
