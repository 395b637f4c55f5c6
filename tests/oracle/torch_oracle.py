"""PyTorch oracle for ETH's CPU training step.

    /usr/bin/python3 torch_oracle.py DIR

DIR holds what oracle_dump wrote (manifest.json and raw little-endian tensors). This script
builds the same model (GPT-2, or a Llama: see below) in float64 PyTorch from the same initial
parameters, runs the same three steps (gradient accumulation over micro-batches, global-norm
clipping, AdamW with weight decay on the tensors marked weight_decay only), and compares every
tensor by its relative error

    err = ||ours - ref|| / ||ref||        (Frobenius norms, in float64; ||ours|| when ref is 0)

Tolerances, and why:
  - forward values (logits, losses): 1e-5. ETH computes in float32 (unit roundoff 6e-8) through
    two layers of matmuls, softmaxes and layernorms; the observed error is ~2e-7, and 1e-5 still
    catches any wrong term (a missing bias or a wrong layernorm eps moves them by far more).
  - gradients, gradient norms, clip factors and updated parameters: 1e-4. Backward sums over B*T
    rows and chains many products, so float32 error grows; the observed gradient error is ~4e-7.
    AdamW's update m / (sqrt(v) + eps) is invariant to the gradient's scale, so an element whose
    gradient nearly cancels (large relative error) gets an update error of up to lr times that
    relative error. The largest case is the key part of qkv_b: its true gradient is zero (softmax
    ignores a shift shared by all keys), float32 leaves rounding noise g of ~5e-10 (vs ~1e-18 here),
    and AdamW moves it by about lr * g_scaled / eps. oracle_dump's small max_grad_norm keeps that
    at ~1e-5 of qkv_b; the rest of the parameters are within ~7e-6. 1e-4 leaves room for another
    BLAS or CPU, while every real mistake (a wrong sign, scale, bias correction, decay mask or clip)
    is >= 1e-3.
  The reference is float64, so its own error is negligible: the measured error is ETH's.

bf16 (manifest "precision": "bf16", oracle_dump's PRECISION): the reference rounds, float64 ->
float32 -> bf16 to nearest even (torch's .to(torch.bfloat16)), at the points the mixed-precision
rule of docs/design.md names: every parameter as a forward reads it (its gradient passes through
unrounded: parameter gradients are fp32), and every activation a kernel stores, forward value and,
once complete, its gradient (Store below). Everything else stays float64. ETH's bf16 twin computes
between those points in float32, so the two differ where a float32 result lies within float32
rounding of a bf16 rounding boundary: that element lands one bf16 ulp (2^-8 relative) away, and
the difference travels on, flipping more elements at the next points. GELU is ETH's fused one
(GeluOfSum below): GELU of the fc GEMM's unrounded sum, its gradient of the dinp GEMM's unrounded
sum, each rounded once. Measured (2026-12-03) on tiny.yaml at T = 12 (materialised attention) and
tiny-long.yaml at T = 80 (blocked; also on the interpreted GPU kernels), and tolerances:
  - logits 4.1e-5 and 2.3e-6, losses <= 3.7e-5: forward 1e-3. Leaving out any ONE rounding point
    of the reference (the GELU output, the attention output, the final layernorm output, or the
    parameter copies) moved the T = 12 logits error to 2.7e-3 to 8.7e-3 (measured 2026-12-01);
    the reference's GELU unfused (of the rounded pre-activation) against ETH's fused one gives
    5.9e-3; the twin against the fp32 reference is 7e-3. So 1e-3 is what pins the rounding points
    down.
  - gradients <= 4.1e-3, grad norms <= 2.5e-4: 1e-2 (the twin against the fp32 reference: ~7e-3
    on every matrix; the logits check above is the sharp one).
  - parameters <= 3.7e-3 (1.2e-2 before GELU was fused): 3e-2. Step 1 of AdamW moves every
    element by about lr * sign(g), and bf16's gradient noise (2^-8 relative per stored activation
    gradient, vs 2^-24 in fp32) flips the sign of the gradients that nearly cancel; every real
    optimizer mistake is >= 1e-1. The key biases (the middle C of each qkv_b, see the fp32 note;
    a Llama's: see below) are pure noise here: up to 2e-1. They are left out of the parameter
    comparison in bf16 and fp16 and printed on their own.

fp16 (manifest "precision": "fp16", with oracle_dump's fixed loss scale S = 2^10): the same
rounding points in fp16 (torch.float16: round to nearest even, subnormals, overflow to infinity),
and every stored activation gradient rounded at the scale ETH stores it (G S times the
reference's, Rounding below). fp16's finer grid (u = 2^-11) does not make the comparison finer
in proportion: ETH computes between the rounding points in float32, the reference in float64, and
a float32 result within float32 rounding of an fp16 boundary lands one fp16 ulp away, which is 8
times as likely as with bf16's grid; each such element shifts every dot product it enters, and
after two layers a third of the logits sit one ulp (at most 2u = 2^-10 relative) from the
reference's (a float32 reference of the same rounding points differs from ETH in 2%: summation
order). Measured (2026-12-05), and tolerances:
  - logits 4.1e-4 (T = 12) and 1.9e-4 (T = 80), losses <= 1.4e-5: forward 1e-3, the one-ulp
    bound 2u. The float32 reference without rounding points: 8.3e-4; fp16's rounding points are
    pinned down by the bf16 checks above (the twin is one code for both formats), this one checks
    what is fp16's own: the format's rounding and range, and the loss scale (a scale left in the
    gradients or in AdamW is a factor of 1024).
  - step-1 gradients <= 4.6e-4; grad norms 2.3e-6 (step 1) to 2.5e-3 (step 2, T = 80): 1e-2, as
    bf16's: after step 1 the norms follow the parameters (below).
  - parameters <= 4.7e-3: 3e-2, bf16's argument (AdamW's first steps move elements by lr sign(g),
    and the gradients that nearly cancel flip sign with the rounding noise).

Llama (manifest "family": "llama"; tiny-llama*.yaml): llama_logits below, transformers'
LlamaForCausalLM: RMSNorm, rotary positions (rotate_half, Llama 3's frequency scaling), grouped-
query attention (repeat_kv), SwiGLU, an untied or tied head, and Qwen2-style biases where the
model has them. inv_freq is rounded to float32, as transformers' buffer and ETH's: part of the
model; so are the angles and their cos and sin, float32 as in transformers and ETH. In 16 bits
the rounding points are ETH's twin's: the embedding, each RMSNorm output (rounded once, after
the weight; statistics fp32 of the stored input), every GEMM output
(qkv, the attention's projection, fc's gate and up in one (N, 2 FC) row, fc_proj, the logits),
q and k once rotated (in place, from the stored qkv), the attention output, the SwiGLU output and
each residual sum; gradients where each op stores them (the SwiGLU's and the rotary's backward
outputs, each GEMM's dinp, the residual stream's once RMSNorm's backward has added to it).
Tolerances: GPT-2's, with GPT-2's arguments. The key biases again: with rotary positions a key's
bias enters the score as q_t R((s - t) inv_freq) b, which differs from the shift softmax ignores
only through the rotation, so on the frequencies whose angles stay small over the sequence (most
of a head's under Llama 3's scaling) its gradient nearly cancels as GPT-2's does; qkv_b's
[Q, Q + KV) is set apart in 16 bits as GPT-2's middle C is. Measured against ETH (2026-12-06),
worst quantity against its tolerance: fp32 logits 2.1e-7 (T = 12), 2.2e-7 (T = 80), 1.6e-7 (tied),
2.4e-7 (the interpreted GPU kernels); parameters at most 2.0e-5 (the key biases of
tiny-llama-long on the GPU kernels, 0.20 of 1e-4); bf16 gradients up to 5.6e-3 (0.56 of 1e-2,
T = 80), parameters up to 2.8e-3; fp16 parameters up to 5.1e-3; in 16 bits the logits' median row
0 (bit-equal), the whole tensor 0 (bf16, T = 12) to 2.3e-3 (bf16, T = 80: one flip, below).
Before ETH computed a Llama, a float32 training by this script's own code (float32 between the
same rounding points) against the float64 reference gave a floor of the same order (fp32 logits
2.2e-7, bf16 gradients <= 1.6e-3). Leaving out any one rounding point of the bf16 reference moves
its logits by 1.7e-3 (the logits' own) to 8.2e-3 (the parameter copies), in every row: the 1e-3
pins them down as for GPT-2 (in fp16 by 2e-4 to 1e-3: pinned by bf16, the twin being one code).

One flip (16 bits). Where a float32 result lies within float32 rounding of a 16-bit boundary, ETH
and the reference round it to neighbouring values; that element then differs by one ulp, and
from there every later rounding point of that sample's later positions (attention carries it
forward) rounds on its own: those rows' logits differ by the format's noise, a few 1e-3 in bf16,
as much as a missing rounding point moves every row. Measured (2026-12-06) on tiny-llama-long in
bf16: one element of layer 0's first RMSNorm output at sample 3, position 7, 9.6e-9 (relative)
from a bf16 tie, rounds the other way; samples 0-2 and sample 3's positions 0-6 are bit-equal to
the reference, positions 7-79 of sample 3 are not, and the whole tensor's error is 2.3e-3. So in
16 bits the logits' criterion is the median over rows of each row's error: a rounding point
missing or added moves every row (the 1.7e-3 to 8.7e-3 above are whole-tensor errors of changes
that touch every row) and so the median, while a flip moves the rows after it in one sample.

Prints a table of every tensor with its error, then the worst (largest error relative to its
tolerance), and exits non-zero if any tolerance is exceeded.
"""

import json
import math
import os
import sys

try:
    import numpy as np
except ImportError:
    sys.exit(f"torch_oracle.py: error: NumPy is not installed for {sys.executable}: "
             "install Debian's python3-numpy")
try:
    import torch
    import torch.nn.functional as F
except ImportError:
    sys.exit(f"torch_oracle.py: error: PyTorch is not installed for {sys.executable}: "
             "install Debian's python3-torch")

FORWARD_TOL = {"fp32": 1e-5, "bf16": 1e-3, "fp16": 1e-3}
GRAD_TOL = {"fp32": 1e-4, "bf16": 1e-2, "fp16": 1e-2}
PARAM_TOL = {"fp32": 1e-4, "bf16": 3e-2, "fp16": 3e-2}
LAYERNORM_EPS = 1e-5


def load(run_dir, entry):
    """One data file of the manifest as a float64 or int64 array of its shape."""
    dtype = {"float32": "<f4", "int32": "<i4"}[entry["dtype"]]
    data = np.fromfile(os.path.join(run_dir, entry["path"]), dtype=dtype)
    wide = np.float64 if entry["dtype"] == "float32" else np.int64
    return data.astype(wide).reshape(entry["shape"])


def split_params(flat, tensors):
    """The flat parameter buffer (P) as {name: array of the tensor's shape}."""
    return {t["name"]: flat[t["offset"]:t["offset"] + t["size"]].reshape(t["shape"]) for t in tensors}


# ----------------------------------------------------------------------------------------------
# The 16-bit paths' rounding points (identities in fp32): the storage type, and the factor ETH's
# stored activation gradients carry beside the reference's (they are sums over the global batch's
# G samples, not its mean, times the loss scale S): a gradient is rounded as ETH stores it, K g
# rounded then divided by K. K = G S is a power of two, so this is rounding g itself wherever K g
# stays inside the format's range; in fp16 it is not, and the scale is what keeps it in range.
class Rounding:
    dtype = None  # torch.bfloat16 or torch.float16; None in fp32
    grad_factor = 1.0


def to_16(x):
    """x rounded to the nearest value of the storage type from its float32 value, as ETH's twin
    rounds, in x's dtype."""
    return x.to(torch.float32).to(Rounding.dtype).to(x.dtype)


def to_16_grad(g):
    """An activation gradient rounded where ETH stores it, at its scale there."""
    return to_16(g * Rounding.grad_factor) / Rounding.grad_factor


class Store(torch.autograd.Function):
    """An activation a kernel stores in 16 bits: its value rounded, and its gradient rounded once
    all of its consumers have added theirs (autograd sums them before calling backward)."""

    @staticmethod
    def forward(ctx, x):
        return to_16(x)

    @staticmethod
    def backward(ctx, g):
        return to_16_grad(g)


class Read(torch.autograd.Function):
    """A parameter read through its 16-bit copy: the value rounded, the gradient fp32."""

    @staticmethod
    def forward(ctx, x):
        return to_16(x)

    @staticmethod
    def backward(ctx, g):
        return g


def gelu_grad(x):
    """d/dx of GPT-2's tanh GELU, in x's dtype."""
    a = math.sqrt(2 / math.pi)
    th = torch.tanh(a * (x + 0.044715 * x ** 3))
    return 0.5 * (1 + th) + 0.5 * x * (1 - th * th) * a * (1 + 3 * 0.044715 * x * x)


class GeluOfSum(torch.autograd.Function):
    """GELU fused into the fc GEMM's epilogue, its gradient into fc_proj's dinp GEMM's (ETH's
    matmul_gelu_forward and matmul_dgelu_backward): x is the GEMM's sum, never stored itself. It is
    kept rounded (pre_gelu, bf16), and the output is GELU of the unrounded x, rounded. The output's
    gradient arrives as the dinp GEMM's unrounded sum, is multiplied by gelu' of the kept bf16
    pre_gelu, and rounded once."""

    @staticmethod
    def forward(ctx, x):
        pre_gelu = to_16(x)
        ctx.save_for_backward(pre_gelu)
        return to_16(F.gelu(x, approximate="tanh"))

    @staticmethod
    def backward(ctx, g):
        pre_gelu, = ctx.saved_tensors
        return to_16_grad(gelu_grad(pre_gelu) * g)


def plain_gelu(x):
    return F.gelu(x, approximate="tanh")


STORE = {"fp32": lambda x: x, "bf16": Store.apply, "fp16": Store.apply}
READ = {"fp32": lambda x: x, "bf16": Read.apply, "fp16": Read.apply}
GELU_OF_SUM = {"fp32": plain_gelu, "bf16": GeluOfSum.apply, "fp16": GeluOfSum.apply}


# ----------------------------------------------------------------------------------------------
# GPT-2, float64, the parameters named as in ParamLayout ("wte", "layer0.qkv_w", "lnf_b", ...).

def attention(qkv, NH):
    """Causal self-attention. qkv (B, T, 3C) -> (B, T, C)."""
    B, T, C3 = qkv.shape
    C = C3 // 3
    hs = C // NH
    q, k, v = qkv.split(C, dim=2)                              # (B, T, C) each
    q, k, v = (x.view(B, T, NH, hs).transpose(1, 2) for x in (q, k, v))  # (B, NH, T, hs)
    att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)            # (B, NH, T, T)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
    y = att @ v                                                # (B, NH, T, hs)
    return y.transpose(1, 2).reshape(B, T, C)


def gpt2_logits(p, tokens, cfg, precision="fp32"):
    """tokens (B, T) -> logits (B, T, Vp) over every padded column; the LM head is wte. In bf16 the
    values pass the rounding points of ETH's kernels (kernels/twin_backend.hpp)."""
    L, NH = cfg["num_layers"], cfg["num_heads"]
    s, r = STORE[precision], READ[precision]
    B, T = tokens.shape
    C = p["wte"].shape[1]
    wte = r(p["wte"])
    x = s(wte[tokens] + r(p["wpe"])[:T])                       # (B, T, C)
    for l in range(L):
        w = {name: r(p[f"layer{l}.{name}"]) for name in
             ("ln1_w", "ln1_b", "qkv_w", "qkv_b", "attproj_w", "attproj_b",
              "ln2_w", "ln2_b", "fc_w", "fc_b", "fcproj_w", "fcproj_b")}
        h = s(F.layer_norm(x, (C,), w["ln1_w"], w["ln1_b"], LAYERNORM_EPS))
        qkv = s(F.linear(h, w["qkv_w"], w["qkv_b"]))           # (B, T, 3C)
        x = s(x + s(F.linear(s(attention(qkv, NH)), w["attproj_w"], w["attproj_b"])))
        h = s(F.layer_norm(x, (C,), w["ln2_w"], w["ln2_b"], LAYERNORM_EPS))
        h = GELU_OF_SUM[precision](F.linear(h, w["fc_w"], w["fc_b"]))  # (B, T, 4C)
        x = s(x + s(F.linear(h, w["fcproj_w"], w["fcproj_b"])))
    x = s(F.layer_norm(x, (C,), r(p["lnf_w"]), r(p["lnf_b"]), LAYERNORM_EPS))
    return s(x @ wte.T)                                        # (B, T, Vp)


# ----------------------------------------------------------------------------------------------
# Llama, float64, as transformers' LlamaForCausalLM computes it (RMSNorm, rotary positions with
# rotate_half, grouped-query attention through repeat_kv, SwiGLU), the parameters named as in
# ParamLayout: fc_w holds the gate's FC rows then the up's FC rows, lm_head_w is the untied head.

def rmsnorm(x, weight, eps):
    """LlamaRMSNorm: x / sqrt(mean(x^2) + eps) times the weight. (..., C) -> (..., C)."""
    return x * torch.rsqrt(x.pow(2).mean(dim=-1, keepdim=True) + eps) * weight


def rope_inverse_frequencies(cfg):
    """The rotary embedding's inv_freq (hs / 2): theta^(-2i / hs), then Llama 3's scaling when the
    model has it (transformers' _compute_llama3_parameters), in float64, then rounded to float32
    as transformers keeps the buffer (and ETH's lib/model/rotary.cpp)."""
    hs = cfg["head_dim"]
    inv_freq = 1.0 / cfg["rope_theta"] ** (torch.arange(0, hs, 2, dtype=torch.float64) / hs)
    s = cfg["rope_scaling"]
    if s["factor"] != 0:
        factor, low, high = s["factor"], s["low_freq_factor"], s["high_freq_factor"]
        old_len = s["original_max_position"]
        low_freq_wavelen, high_freq_wavelen = old_len / low, old_len / high
        wavelen = 2 * math.pi / inv_freq
        scaled = torch.where(wavelen > low_freq_wavelen, inv_freq / factor, inv_freq)
        smooth = (old_len / wavelen - low) / (high - low)
        smoothed = (1 - smooth) * scaled / factor + smooth * scaled
        medium = ~(wavelen < high_freq_wavelen) & ~(wavelen > low_freq_wavelen)
        inv_freq = torch.where(medium, smoothed, scaled)
    return inv_freq.to(torch.float32).to(torch.float64)


def rotate_half(x):
    """(x1, x2) -> (-x2, x1), the halves of the last dimension."""
    x1, x2 = x.chunk(2, dim=-1)
    return torch.cat((-x2, x1), dim=-1)


def rope(x, inv_freq):
    """Rotary positions on x (B, T, H, hs), position t at row t: x cos + rotate_half(x) sin, the
    angle t inv_freq[i] shared by channels i and i + hs/2 (transformers' apply_rotary_pos_emb).
    The angle and its cos and sin are float32, as transformers' LlamaRotaryEmbedding computes them
    (and ETH's kernels)."""
    T = x.shape[1]
    angle = torch.arange(T, dtype=torch.float32)[:, None] * inv_freq.to(torch.float32)[None, :]  # (T, hs/2)
    emb = torch.cat((angle, angle), dim=-1)[None, :, None, :]                  # (1, T, 1, hs)
    return x * emb.cos().to(torch.float64) + rotate_half(x) * emb.sin().to(torch.float64)


def gqa_attention(q, k, v, NH, NKV):
    """Causal attention, query head h on K/V head h // (NH / NKV) (transformers' repeat_kv).
    q (B, T, NH hs), k and v (B, T, NKV hs) -> (B, T, NH hs)."""
    B, T, _ = q.shape
    hs = q.shape[2] // NH
    q = q.view(B, T, NH, hs).transpose(1, 2)                                   # (B, NH, T, hs)
    k, v = (x.view(B, T, NKV, hs).transpose(1, 2).repeat_interleave(NH // NKV, dim=1) for x in (k, v))
    att = (q @ k.transpose(-2, -1)) / math.sqrt(hs)                            # (B, NH, T, T)
    causal = torch.ones(T, T, dtype=torch.bool).tril()
    att = att.masked_fill(~causal, float("-inf")).softmax(dim=-1)
    return (att @ v).transpose(1, 2).reshape(B, T, NH * hs)


def llama_logits(p, tokens, cfg, precision="fp32"):
    """tokens (B, T) -> logits (B, T, Vp); the LM head is lm_head_w, or wte when tied. In 16 bits
    the values pass the rounding points of ETH's kernels: every stored activation (the embedding,
    each RMSNorm output, each GEMM output, q and k once rotated, the attention output, the
    SwiGLU output, each residual sum, the logits), computed between them in float64."""
    L, NH, NKV, hs = cfg["num_layers"], cfg["num_heads"], cfg["num_kv_heads"], cfg["head_dim"]
    eps = cfg["norm_eps"]
    s, r = STORE[precision], READ[precision]
    wte = r(p["wte"])
    inv_freq = rope_inverse_frequencies(cfg)
    B, T = tokens.shape
    Q, KV = NH * hs, NKV * hs
    x = s(wte[tokens])                                                          # (B, T, C)
    for l in range(L):
        # The biases the model lacks are None (F.linear's none).
        w = {name: r(p[f"layer{l}.{name}"]) if f"layer{l}.{name}" in p else None for name in
             ("ln1_w", "qkv_w", "qkv_b", "attproj_w", "attproj_b", "ln2_w",
              "fc_w", "fc_b", "fcproj_w", "fcproj_b")}
        h = s(rmsnorm(x, w["ln1_w"], eps))
        qkv = s(F.linear(h, w["qkv_w"], w["qkv_b"]))                            # (B, T, Q + 2 KV)
        q, k, v = qkv.split((Q, KV, KV), dim=2)
        q, k = (rope(y.view(B, T, -1, hs), inv_freq).reshape(B, T, -1) for y in (q, k))
        q, k, v = s(torch.cat((q, k, v), dim=2)).split((Q, KV, KV), dim=2)      # rotated in place
        y = s(gqa_attention(q, k, v, NH, NKV))                                  # (B, T, Q)
        x = s(x + s(F.linear(y, w["attproj_w"], w["attproj_b"])))
        h = s(rmsnorm(x, w["ln2_w"], eps))
        gate, up = s(F.linear(h, w["fc_w"], w["fc_b"])).chunk(2, dim=2)         # (B, T, FC) each
        h = s(F.silu(gate) * up)                                                # (B, T, FC)
        x = s(x + s(F.linear(h, w["fcproj_w"], w["fcproj_b"])))
    x = s(rmsnorm(x, r(p["lnf_w"]), eps))
    head = wte if cfg["tied_head"] else r(p["lm_head_w"])
    return s(x @ head.T)                                                       # (B, T, Vp)


def model_logits(p, tokens, cfg, precision="fp32"):
    """The manifest's model: GPT-2 (manifests before the family was written too) or Llama."""
    if cfg.get("family", "gpt2") == "llama":
        return llama_logits(p, tokens, cfg, precision)
    return gpt2_logits(p, tokens, cfg, precision)


def sample_losses(logits, targets, V):
    """Cross-entropy over the first V of Vp columns. (B, T, Vp), (B, T) -> (B): mean over T."""
    B, T, _ = logits.shape
    ce = F.cross_entropy(logits[..., :V].reshape(B * T, V), targets.reshape(B * T), reduction="none")
    return ce.view(B, T).mean(dim=1)


# ----------------------------------------------------------------------------------------------

def reference(m, run_dir):
    """Runs the dumped training in float64 PyTorch. Returns {quantity: array} of the reference."""
    cfg, tensors, precision = m["model"], m["tensors"], m.get("precision", "fp32")
    V, G, steps = cfg["vocab_size"], m["global_batch"], m["steps"]
    Rounding.dtype = {"bf16": torch.bfloat16, "fp16": torch.float16}.get(precision)
    Rounding.grad_factor = G * m.get("loss_scale", 1.0)
    tokens = torch.from_numpy(load(run_dir, m["files"]["tokens"]))    # (steps, mbs, B, T)
    targets = torch.from_numpy(load(run_dir, m["files"]["targets"]))  # (steps, mbs, B, T)
    init = split_params(load(run_dir, m["files"]["params_init"]), tensors)
    p = {name: torch.nn.Parameter(torch.from_numpy(a.copy())) for name, a in init.items()}
    ref = {}

    with torch.no_grad():
        logits = model_logits(p, tokens[0, 0], cfg, precision)
        ref["logits"] = logits.numpy().copy()
        ref["eval loss"] = sample_losses(logits, targets[0, 0], V).mean().item()

    hp = m["adamw"]
    decay = [p[t["name"]] for t in tensors if t["weight_decay"]]
    no_decay = [p[t["name"]] for t in tensors if not t["weight_decay"]]
    optimizer = torch.optim.AdamW([{"params": decay, "weight_decay": hp["weight_decay"]},
                                   {"params": no_decay, "weight_decay": 0.0}],
                                  lr=m["lr"], betas=(hp["beta1"], hp["beta2"]), eps=hp["eps"])
    for step in range(steps):
        optimizer.zero_grad()
        loss = 0.0
        for mb in range(m["micro_batches"]):
            # Each micro-batch adds its share of the global batch's mean loss, so the
            # accumulated .grad is the mean gradient over all G samples.
            # On the 16-bit paths the dlogits are rounded as the twin rounds them (Rounding).
            mb_logits = model_logits(p, tokens[step, mb], cfg, precision)
            mb_loss = sample_losses(mb_logits, targets[step, mb], V).sum() / G
            mb_loss.backward()
            loss += mb_loss.item()
        n = step + 1
        ref[f"loss step{n}"] = loss
        if step == 0:  # ETH's gradient buffer holds sums over samples: G times the mean
            ref["grads_step1"] = {name: x.grad.numpy() * G for name, x in p.items()}
        norm = torch.nn.utils.clip_grad_norm_(list(p.values()), hp["max_grad_norm"]).item()
        ref[f"grad norm step{n}"] = norm
        ref[f"clip factor step{n}"] = min(1.0, hp["max_grad_norm"] / (norm + 1e-6))  # as clip_grad_norm_
        optimizer.step()
        ref[f"params_step{n}"] = {name: x.detach().numpy().copy() for name, x in p.items()}
    return ref


def rel_error(ours, ref):
    ours, ref = np.asarray(ours, dtype=np.float64), np.asarray(ref, dtype=np.float64)
    ref_norm = np.linalg.norm(ref)
    diff = np.linalg.norm(ours - ref)
    return diff / ref_norm if ref_norm > 0 else diff


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: torch_oracle.py DIR   (DIR written by oracle_dump)")
    run_dir = sys.argv[1]
    with open(os.path.join(run_dir, "manifest.json")) as f:
        m = json.load(f)
    torch.set_default_dtype(torch.float64)
    precision = m.get("precision", "fp32")
    forward_tol, grad_tol, param_tol = FORWARD_TOL[precision], GRAD_TOL[precision], PARAM_TOL[precision]
    print(f"precision {precision}")
    ref = reference(m, run_dir)
    steps, tensors = m["steps"], m["tensors"]
    log = {entry["step"]: entry for entry in m["step_log"]}

    results = []  # (quantity, rel error, tolerance): everything compared

    # Forward values and the per-step scalars.
    print(f"{'quantity':<24} {'ours':>14} {'reference':>14} {'rel error':>10}")
    ours_logits = load(run_dir, m["files"]["logits"]).reshape(ref["logits"].shape)
    if precision == "fp32":
        err = rel_error(ours_logits, ref["logits"])
        print(f"{'logits':<24} {'(B, T, Vp)':>14} {'':>14} {err:10.2e}")
    else:
        # In 16 bits, the median over the rows (a sample's position) of each row's error: see
        # "One flip" in the header. The whole tensor's error is printed beside it.
        rows = [rel_error(o, r) for o, r in zip(ours_logits.reshape(-1, ours_logits.shape[-1]),
                                                ref["logits"].reshape(-1, ours_logits.shape[-1]))]
        err = float(np.median(rows))
        exact = sum(1 for o, r in zip(ours_logits.reshape(-1, ours_logits.shape[-1]),
                                      ref["logits"].reshape(-1, ours_logits.shape[-1])) if np.array_equal(o, r))
        print(f"{'logits, median row':<24} {'(B, T, Vp)':>14} {'':>14} {err:10.2e}   "
              f"(whole tensor {rel_error(ours_logits, ref['logits']):.2e}; {exact} of {len(rows)} rows bit-equal)")
    results.append(("logits", err, forward_tol))
    scalars = [("eval loss", m["eval_loss"], forward_tol)]
    scalars += [(f"loss step{n}", log[n]["loss"], forward_tol) for n in range(1, steps + 1)]
    scalars += [(f"grad norm step{n}", log[n]["grad_norm"], grad_tol) for n in range(1, steps + 1)]
    scalars += [(f"clip factor step{n}", log[n]["clip_factor"], grad_tol) for n in range(1, steps + 1)]
    for what, ours, tol in scalars:
        err = rel_error(ours, ref[what])
        results.append((what, err, tol))
        print(f"{what:<24} {ours:14.8f} {ref[what]:14.8f} {err:10.2e}")

    # Every parameter tensor: its step-1 gradient and its values after each step.
    grads = split_params(load(run_dir, m["files"]["grads_step1"]), tensors)
    after = [split_params(load(run_dir, m["files"][f"params_step{n}"]), tensors) for n in range(1, steps + 1)]
    header = f"\n{'tensor':<18} {'shape':>10} {'grad step1':>11}" + \
        "".join(f" {'params step' + str(n):>14}" for n in range(1, steps + 1))
    print(header)
    # The key biases: qkv_b's [Q, Q + KV), as wide as the queries' Q and the values' KV (GPT-2's
    # manifests before head_dim and num_kv_heads were written: both C).
    cfg = m["model"]
    hs = cfg.get("head_dim", cfg["channels"] // cfg["num_heads"])
    Q, KV = cfg["num_heads"] * hs, cfg.get("num_kv_heads", cfg["num_heads"]) * hs
    key_bias_errors = []
    for t in tensors:
        name = t["name"]
        row = [rel_error(grads[name], ref["grads_step1"][name])]
        results.append((f"{name} grad step1", row[0], grad_tol))
        for n in range(1, steps + 1):
            ours, theirs = after[n - 1][name], ref[f"params_step{n}"][name]
            if precision != "fp32" and name.endswith("qkv_b"):  # the key biases apart (see the header)
                key_bias_errors.append(rel_error(ours[Q:Q + KV], theirs[Q:Q + KV]))
                ours, theirs = np.concatenate([ours[:Q], ours[Q + KV:]]), np.concatenate([theirs[:Q], theirs[Q + KV:]])
            err = rel_error(ours, theirs)
            results.append((f"{name} params step{n}", err, param_tol))
            row.append(err)
        shape = "x".join(str(d) for d in t["shape"])
        print(f"{name:<18} {shape:>10} {row[0]:11.2e}" + "".join(f" {e:14.2e}" for e in row[1:]))

    if key_bias_errors:
        print(f"qkv_b params above: without the key biases, whose largest error is {max(key_bias_errors):.2e} "
              "(not a criterion)")
    what, err, tol = max(results, key=lambda r: r[1] / r[2] if not math.isnan(r[1]) else math.inf)
    failed = [r for r in results if not r[1] <= r[2]]  # `not <=` also catches NaN
    print(f"\nworst: {what}: rel error {err:.3e} (tolerance {tol:.0e}, {err / tol:.2f} of it)")
    print(f"tolerances ({precision}): forward {forward_tol:.0e}, gradients {grad_tol:.0e}, parameters {param_tol:.0e}")
    if failed:
        print(f"FAILED: {len(failed)} of {len(results)} quantities exceed their tolerance:")
        for what, err, tol in failed:
            print(f"  {what}: {err:.3e} > {tol:.0e}")
        return 1
    print(f"PASSED: all {len(results)} quantities within tolerance")
    return 0


if __name__ == "__main__":
    sys.exit(main())
