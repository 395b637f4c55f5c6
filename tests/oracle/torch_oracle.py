"""PyTorch oracle for ETH's CPU training step.

    /usr/bin/python3 torch_oracle.py DIR

DIR holds what oracle_dump wrote (manifest.json and raw little-endian tensors). This script
builds the same GPT-2 in float64 PyTorch from the same initial parameters, runs the same three
steps (gradient accumulation over micro-batches, global-norm clipping, AdamW with weight decay on
the tensors marked weight_decay only), and compares every tensor by its relative error

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

FORWARD_TOL = 1e-5
GRAD_TOL = 1e-4
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


def gpt2_logits(p, tokens, cfg):
    """tokens (B, T) -> logits (B, T, Vp) over every padded column; the LM head is wte."""
    L, NH = cfg["num_layers"], cfg["num_heads"]
    B, T = tokens.shape
    C = p["wte"].shape[1]
    x = p["wte"][tokens] + p["wpe"][:T]                        # (B, T, C)
    for l in range(L):
        w = {name: p[f"layer{l}.{name}"] for name in
             ("ln1_w", "ln1_b", "qkv_w", "qkv_b", "attproj_w", "attproj_b",
              "ln2_w", "ln2_b", "fc_w", "fc_b", "fcproj_w", "fcproj_b")}
        h = F.layer_norm(x, (C,), w["ln1_w"], w["ln1_b"], LAYERNORM_EPS)
        qkv = F.linear(h, w["qkv_w"], w["qkv_b"])              # (B, T, 3C)
        x = x + F.linear(attention(qkv, NH), w["attproj_w"], w["attproj_b"])
        h = F.layer_norm(x, (C,), w["ln2_w"], w["ln2_b"], LAYERNORM_EPS)
        h = F.gelu(F.linear(h, w["fc_w"], w["fc_b"]), approximate="tanh")  # (B, T, 4C)
        x = x + F.linear(h, w["fcproj_w"], w["fcproj_b"])
    x = F.layer_norm(x, (C,), p["lnf_w"], p["lnf_b"], LAYERNORM_EPS)
    return x @ p["wte"].T                                      # (B, T, Vp)


def sample_losses(logits, targets, V):
    """Cross-entropy over the first V of Vp columns. (B, T, Vp), (B, T) -> (B): mean over T."""
    B, T, _ = logits.shape
    ce = F.cross_entropy(logits[..., :V].reshape(B * T, V), targets.reshape(B * T), reduction="none")
    return ce.view(B, T).mean(dim=1)


# ----------------------------------------------------------------------------------------------

def reference(m, run_dir):
    """Runs the dumped training in float64 PyTorch. Returns {quantity: array} of the reference."""
    cfg, tensors = m["model"], m["tensors"]
    V, G, steps = cfg["vocab_size"], m["global_batch"], m["steps"]
    tokens = torch.from_numpy(load(run_dir, m["files"]["tokens"]))    # (steps, mbs, B, T)
    targets = torch.from_numpy(load(run_dir, m["files"]["targets"]))  # (steps, mbs, B, T)
    init = split_params(load(run_dir, m["files"]["params_init"]), tensors)
    p = {name: torch.nn.Parameter(torch.from_numpy(a.copy())) for name, a in init.items()}
    ref = {}

    with torch.no_grad():
        logits = gpt2_logits(p, tokens[0, 0], cfg)
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
            mb_loss = sample_losses(gpt2_logits(p, tokens[step, mb], cfg), targets[step, mb], V).sum() / G
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
    ref = reference(m, run_dir)
    steps, tensors = m["steps"], m["tensors"]
    log = {entry["step"]: entry for entry in m["step_log"]}

    results = []  # (quantity, rel error, tolerance): everything compared

    # Forward values and the per-step scalars.
    print(f"{'quantity':<24} {'ours':>14} {'reference':>14} {'rel error':>10}")
    err = rel_error(load(run_dir, m["files"]["logits"]), ref["logits"])
    results.append(("logits", err, FORWARD_TOL))
    print(f"{'logits':<24} {'(B, T, Vp)':>14} {'':>14} {err:10.2e}")
    scalars = [("eval loss", m["eval_loss"], FORWARD_TOL)]
    scalars += [(f"loss step{n}", log[n]["loss"], FORWARD_TOL) for n in range(1, steps + 1)]
    scalars += [(f"grad norm step{n}", log[n]["grad_norm"], GRAD_TOL) for n in range(1, steps + 1)]
    scalars += [(f"clip factor step{n}", log[n]["clip_factor"], GRAD_TOL) for n in range(1, steps + 1)]
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
    for t in tensors:
        name = t["name"]
        row = [rel_error(grads[name], ref["grads_step1"][name])]
        results.append((f"{name} grad step1", row[0], GRAD_TOL))
        for n in range(1, steps + 1):
            err = rel_error(after[n - 1][name], ref[f"params_step{n}"][name])
            results.append((f"{name} params step{n}", err, GRAD_TOL))
            row.append(err)
        shape = "x".join(str(d) for d in t["shape"])
        print(f"{name:<18} {shape:>10} {row[0]:11.2e}" + "".join(f" {e:14.2e}" for e in row[1:]))

    what, err, tol = max(results, key=lambda r: r[1] / r[2] if not math.isnan(r[1]) else math.inf)
    failed = [r for r in results if not r[1] <= r[2]]  # `not <=` also catches NaN
    print(f"\nworst: {what}: rel error {err:.3e} (tolerance {tol:.0e}, {err / tol:.2f} of it)")
    print(f"tolerances: forward {FORWARD_TOL:.0e}, gradients and parameters {GRAD_TOL:.0e}")
    if failed:
        print(f"FAILED: {len(failed)} of {len(results)} quantities exceed their tolerance:")
        for what, err, tol in failed:
            print(f"  {what}: {err:.3e} > {tol:.0e}")
        return 1
    print(f"PASSED: all {len(results)} quantities within tolerance")
    return 0


if __name__ == "__main__":
    sys.exit(main())
