// The operations of the kernel interface, listed once. Each entry is
//
//   OP(return type, name, (parameters), (arguments))
//
// and every place that names the whole set expands a list instead of repeating it: Backend
// declares each op (kernels/backend.hpp), ForwardingBackend passes each on
// (kernels/forwarding_backend.hpp), the bench's TimingBackend times each (bench/timing_backend.hpp).
// Adding an op is one entry here and its implementations: the CPU reference twin
// (kernels/cpu/cpu_backend.cpp, and the asynchronous one), the GPU ops
// (kernels/gpu_ops/gpu_ops_backend.hpp) and the bf16 twin (kernels/twin_backend.cpp); a
// backend that lacks one is abstract, a compile error.
//
// Dimension names, the same everywhere:
//   B  micro-batch size (samples)       T  sequence length
//   C  channels                          NH attention heads
//   V  vocabulary size                   Vp vocabulary padded for alignment (>= V)
//   N  rows = B * T                      OC output channels of a matmul
//
// Conventions (kernels/backend.hpp says more): Tensor / ConstTensor are of the precision path's
// element type (kernels/tensor.hpp), float* is fp32 on every path; parameter gradients
// ACCUMULATE (+=), activation gradients are OVERWRITTEN (=) except layernorm_backward's dinp,
// which accumulates so that the residual stream's gradient needs no separate add. Comments sit
// in /* */ because the entries are one macro.
#pragma once

// ---- the operations every backend implements ---------------------------------------------------
#define ETH_BACKEND_OPS(OP)                                                                                     \
  /* out = inp rounded to the nearest value of `type` (bf16 or fp16), ties to even, held in fp32 (n);       \
     out may be inp. NaN stays NaN, infinities stay, finite values past the type's largest become           \
     infinite (fp16: from 65520 on), fp16's subnormals are kept. */                                         \
  OP(void, round_to, (ElementType type, float* out, const float* inp, size_t n), (type, out, inp, n))       \
  /* out = inp in out's element type (n elements): to bf16 or fp16 rounds as round_to does, to fp32 is      \
     exact, a type to itself copies. out may be inp where both types are 16 bits wide. */                                         \
  OP(void, convert, (Tensor out, ConstTensor inp, size_t n), (out, inp, n))                                 \
  /* convert where a value past out's largest finite one is clamped to it (sign kept) instead of becoming    \
     infinite; NaN and infinities stay. *saturated (one count in this device's memory) += how many were     \
     clamped. out may be inp where both types are 16 bits wide (element i is read before it is written). */ \
  OP(void, convert_saturating, (Tensor out, ConstTensor inp, size_t n, unsigned* saturated),                \
     (out, inp, n, saturated))                                                                              \
                                                                                                            \
  /* ---- GPT-2 forward and backward ---- */                                                                \
  /* The embedding, from the fp32 masters (on the bf16 path read as their bf16 copies: rounded as            \
     read, since which rows are read is known on the device only). */                                       \
  OP(void, encoder_forward,                                                                                 \
     (Tensor out,            /* (B, T, C) */                                                                \
      const int32_t* tokens, /* (B, T) */                                                                   \
      const float* wte,      /* (Vp, C) */                                                                  \
      const float* wpe,      /* (maxT, C), or null: rotary positions, the word rows alone */                \
      int B, int T, int C),                                                                                 \
     (out, tokens, wte, wpe, B, T, C))                                                                      \
  /* Either gradient may be null: it is then left out (the runtime adds a step's last word                  \
     embedding rows late, lib/runtime/late_embedding_rows.hpp). */                                          \
  OP(void, encoder_backward,                                                                                \
     (float* dwte,           /* (Vp, C) accumulated, or null */                                             \
      float* dwpe,           /* (maxT, C) accumulated, or null */                                           \
      ConstTensor dout,      /* (B, T, C) */                                                                \
      const int32_t* tokens, /* (B, T) */                                                                   \
      int B, int T, int C),                                                                                 \
     (dwte, dwpe, dout, tokens, B, T, C))                                                                   \
                                                                                                            \
  OP(void, layernorm_forward,                                                                               \
     (Tensor out,                         /* (N, C) */                                                      \
      float* mean, float* rstd,           /* (N) */                                                         \
      ConstTensor inp,                    /* (N, C) */                                                      \
      ConstTensor weight, ConstTensor bias, /* (C) */                                                       \
      int N, int C),                                                                                        \
     (out, mean, rstd, inp, weight, bias, N, C))                                                            \
  OP(void, layernorm_backward,                                                                              \
     (Tensor dinp,                         /* (N, C) accumulated */                                         \
      float* dweight, float* dbias,        /* (C) accumulated */                                            \
      ConstTensor dout,                    /* (N, C) */                                                     \
      ConstTensor inp,                     /* (N, C) */                                                     \
      ConstTensor weight,                  /* (C) */                                                        \
      const float* mean, const float* rstd, /* (N) */                                                       \
      int N, int C),                                                                                        \
     (dinp, dweight, dbias, dout, inp, weight, mean, rstd, N, C))                                           \
                                                                                                            \
  /* out = inp @ weight^T + bias */                                                                         \
  OP(void, matmul_forward,                                                                                  \
     (Tensor out,         /* (N, OC) */                                                                     \
      ConstTensor inp,    /* (N, C) */                                                                      \
      ConstTensor weight, /* (OC, C) */                                                                     \
      ConstTensor bias,   /* (OC) or null */                                                                \
      int N, int C, int OC),                                                                                \
     (out, inp, weight, bias, N, C, OC))                                                                    \
  OP(void, matmul_backward,                                                                                 \
     (Tensor dinp,        /* (N, C) overwritten */                                                          \
      float* dweight,     /* (OC, C) accumulated */                                                         \
      float* dbias,       /* (OC) accumulated, or null */                                                   \
      ConstTensor dout,   /* (N, OC) */                                                                     \
      ConstTensor inp,    /* (N, C) */                                                                      \
      ConstTensor weight, /* (OC, C) */                                                                     \
      int N, int C, int OC),                                                                                \
     (dinp, dweight, dbias, dout, inp, weight, N, C, OC))                                                   \
                                                                                                            \
  /* Causal self-attention over `heads` (kernels/attention_heads.hpp: NH query heads sharing NKV K/V        \
     heads); qkv holds q, k, v side by side per token. What forward keeps in `saved` for backward is        \
     decided by Backend::attention_path (kernels/attention_path.hpp); the caller allocates                  \
     Backend::attention_saved_floats(B, NH, T) floats for it. */                                            \
  OP(void, attention_forward,                                                                               \
     (Tensor out,      /* (B, T, NH hs) */                                                                  \
      float* saved,    /* attention_saved_floats(B, NH, T) */                                               \
      ConstTensor qkv, /* (B, T, (NH + 2 NKV) hs) */                                                        \
      int B, int T, AttentionHeads heads),                                                                  \
     (out, saved, qkv, B, T, heads))                                                                        \
  /* dK and dV of each K/V head summed over its query heads in one fixed order: the same bits on           \
     every launch. */                                                                                       \
  OP(void, attention_backward,                                                                              \
     (Tensor dqkv,        /* (B, T, (NH + 2 NKV) hs) overwritten */                                         \
      ConstTensor dout,   /* (B, T, NH hs) */                                                               \
      ConstTensor qkv,    /* (B, T, (NH + 2 NKV) hs) */                                                     \
      ConstTensor out,    /* (B, T, NH hs) forward's */                                                     \
      const float* saved, /* forward's */                                                                   \
      int B, int T, AttentionHeads heads),                                                                  \
     (dqkv, dout, qkv, out, saved, B, T, heads))                                                            \
  /* Incremental (decoding) attention: Tn new positions [T0, T0 + Tn) of each sample against the keys       \
     and values of every earlier position, kept in a cache. First writes the new rows' keys and values,     \
     taken from qkv_new, into the caches at [T0, T0 + Tn); then new row i (at position T0 + i) attends      \
     causally to cached positions [0, T0 + i]. The caches hold positions [0, T0) from earlier calls;        \
     T0 + Tn <= Tmax. Keeps nothing for backward (inference only). With T0 = 0 and Tn = T it computes       \
     what attention_forward does. */                                                                        \
  OP(void, attention_decode,                                                                                \
     (Tensor out,          /* (B, Tn, NH hs) */                                                             \
      Tensor k_cache,      /* (B, NKV, Tmax, hs) */                                                         \
      Tensor v_cache,      /* (B, NKV, Tmax, hs) */                                                         \
      ConstTensor qkv_new, /* (B, Tn, (NH + 2 NKV) hs) */                                                   \
      int B, int Tn, int T0, int Tmax, AttentionHeads heads),                                               \
     (out, k_cache, v_cache, qkv_new, B, Tn, T0, Tmax, heads))                                              \
                                                                                                            \
  /* GELU, tanh approximation (GPT-2's), elementwise over n; backward may run in place (dinp == dout). */   \
  OP(void, gelu_forward, (Tensor out, ConstTensor inp, size_t n), (out, inp, n))                            \
  OP(void, gelu_backward, (Tensor dinp, ConstTensor inp, ConstTensor dout, size_t n), (dinp, inp, dout, n)) \
  OP(void, residual_forward, (Tensor out, ConstTensor a, ConstTensor b, size_t n), (out, a, b, n))          \
                                                                                                            \
  /* ---- the llama family's parts (kernels/cpu/llama_ops.hpp says what each computes) ---- */             \
  /* RMSNorm: out = weight * (inp * rstd), rstd = 1 / sqrt(mean(inp^2) + eps), statistics fp32. */        \
  OP(void, rmsnorm_forward,                                                                                 \
     (Tensor out,         /* (N, C) */                                                                      \
      float* rstd,        /* (N) */                                                                         \
      ConstTensor inp,    /* (N, C) */                                                                      \
      ConstTensor weight, /* (C) */                                                                         \
      int N, int C, float eps),                                                                             \
     (out, rstd, inp, weight, N, C, eps))                                                                   \
  OP(void, rmsnorm_backward,                                                                                \
     (Tensor dinp,         /* (N, C) accumulated */                                                         \
      float* dweight,      /* (C) accumulated */                                                            \
      ConstTensor dout,    /* (N, C) */                                                                     \
      ConstTensor inp,     /* (N, C) */                                                                     \
      ConstTensor weight,  /* (C) */                                                                        \
      const float* rstd,   /* (N) */                                                                        \
      int N, int C),                                                                                        \
     (dinp, dweight, dout, inp, weight, rstd, N, C))                                                        \
  /* Rotary positions in place on q's NH and k's NKV heads of each qkv row ((NH + 2 NKV) hs), the first     \
     half of each head turned against its second (transformers' rotate_half); row t of each sample at      \
     position T0 + t, the angle (T0 + t) inv_freq[i] and its cos and sin in fp32. */                       \
  OP(void, rotary_forward,                                                                                  \
     (Tensor qkv,            /* (B, T, (NH + 2 NKV) hs) in place */                                        \
      const float* inv_freq, /* (hs / 2) */                                                                 \
      int B, int T, int T0, AttentionHeads heads),                                                          \
     (qkv, inv_freq, B, T, T0, heads))                                                                      \
  /* The rotation's transpose, in place on dq and dk (dv untouched). */                                    \
  OP(void, rotary_backward,                                                                                 \
     (Tensor dqkv,           /* (B, T, (NH + 2 NKV) hs) in place */                                        \
      const float* inv_freq, /* (hs / 2) */                                                                 \
      int B, int T, int T0, AttentionHeads heads),                                                          \
     (dqkv, inv_freq, B, T, T0, heads))                                                                     \
  /* SwiGLU: out = silu(gate) * up, gate and up side by side in each row; backward overwrites dinp. */      \
  OP(void, swiglu_forward,                                                                                  \
     (Tensor out,      /* (N, FC) */                                                                        \
      ConstTensor inp, /* (N, 2 FC): gate, then up */                                                       \
      int N, int FC),                                                                                       \
     (out, inp, N, FC))                                                                                     \
  OP(void, swiglu_backward,                                                                                 \
     (Tensor dinp,      /* (N, 2 FC) overwritten */                                                         \
      ConstTensor inp,  /* (N, 2 FC) */                                                                     \
      ConstTensor dout, /* (N, FC) */                                                                       \
      int N, int FC),                                                                                       \
     (dinp, inp, dout, N, FC))                                                                              \
                                                                                                            \
  /* Fused softmax + cross-entropy over the first V of Vp logits. Writes each sample's loss, the mean       \
     over its T tokens. When dlogits_scale != 0 it then overwrites logits with                              \
     dlogits = dlogits_scale * (softmax - onehot(target)) / T (zero in the padded columns); with 0 the      \
     logits are left untouched (evaluation). Probabilities are never stored. */                             \
  OP(void, crossentropy_forward_backward,                                                                   \
     (float* sample_losses,   /* (B) */                                                                     \
      Tensor logits,          /* (B, T, Vp) */                                                              \
      const int32_t* targets, /* (B, T) */                                                                  \
      int B, int T, int V, int Vp, float dlogits_scale),                                                    \
     (sample_losses, logits, targets, B, T, V, Vp, dlogits_scale))                                          \
  /* *total += the sum of x (n), in double, in index order: per-sample losses summed on the device, so      \
     that the host reads one number per step. */                                                            \
  OP(void, accumulate_sum, (double* total, const float* x, size_t n), (total, x, n))                        \
                                                                                                            \
  /* ---- optimizer ---- */                                                                                 \
  /* Waits for queued work and returns the sum of x^2 (n), accumulated in double. */                        \
  OP(double, sum_of_squares, (const float* x, size_t n), (x, n))                                            \
  /* AdamW over a rank's parameters in one launch: the `count` segments of `segments` (a table in this      \
     device's memory, kernels/adamw_segments.hpp) say which parameters it updates and where their           \
     moments lie. param_copies, where given (the 16-bit paths: the copies the kernels read, (params'        \
     size)), gets each updated parameter rounded to its element type in the same pass. */                   \
  OP(void, adamw_update,                                                                                    \
     (float* params, Tensor param_copies, const float* grads, float* m, float* v,                          \
      const AdamWSegment* segments, size_t count, const AdamWParams& hp),                                   \
     (params, param_copies, grads, m, v, segments, count, hp))

// ---- two ops in one pass ------------------------------------------------------------------------
// Backend defines each as the two ops it fuses (kernels/backend.cpp): a backend without the fused
// kernel gets the same numbers in fp32. On the bf16 path the fused form rounds once less, where
// the fused kernel does.
#define ETH_FUSED_BACKEND_OPS(OP)                                                                               \
  /* The fc matmul with GELU in its epilogue: pre_gelu = inp @ weight^T + bias, out = GELU of that sum,     \
     taken before pre_gelu is stored (so on the bf16 path from the unrounded fp32 sum). */                  \
  OP(void, matmul_gelu_forward,                                                                             \
     (Tensor out,         /* (N, OC) */                                                                     \
      Tensor pre_gelu,    /* (N, OC), kept for matmul_dgelu_backward */                                     \
      ConstTensor inp,    /* (N, C) */                                                                      \
      ConstTensor weight, /* (OC, C) */                                                                     \
      ConstTensor bias,   /* (OC) or null */                                                                \
      int N, int C, int OC),                                                                                \
     (out, pre_gelu, inp, weight, bias, N, C, OC))                                                          \
  /* matmul_backward of a matmul whose input is GELU(pre_gelu), taken on through GELU's backward:           \
     dpre_gelu = gelu'(pre_gelu) * (dout @ weight), from the matmul's sum before it is stored. */           \
  OP(void, matmul_dgelu_backward,                                                                           \
     (Tensor dpre_gelu,     /* (N, C) overwritten */                                                        \
      float* dweight,       /* (OC, C) accumulated */                                                       \
      float* dbias,         /* (OC) accumulated, or null */                                                 \
      ConstTensor dout,     /* (N, OC) */                                                                   \
      ConstTensor inp,      /* (N, C) = GELU(pre_gelu) */                                                   \
      ConstTensor weight,   /* (OC, C) */                                                                   \
      ConstTensor pre_gelu, /* (N, C) */                                                                    \
      int N, int C, int OC),                                                                                \
     (dpre_gelu, dweight, dbias, dout, inp, weight, pre_gelu, N, C, OC))                                    \
  /* The residual add and the layernorm after it: residual = a + b, out = layernorm(residual) of the        \
     residual as stored (so the same numbers fused or not, on every path). */                               \
  OP(void, residual_layernorm_forward,                                                                      \
     (Tensor residual,                       /* (N, C) */                                                   \
      Tensor out,                            /* (N, C) */                                                   \
      float* mean, float* rstd,              /* (N) */                                                      \
      ConstTensor a, ConstTensor b,          /* (N, C) */                                                   \
      ConstTensor weight, ConstTensor bias,  /* (C) */                                                      \
      int N, int C),                                                                                        \
     (residual, out, mean, rstd, a, b, weight, bias, N, C))                                                 \
  /* The same with RMSNorm after the add: residual = a + b, out = rmsnorm(residual) as stored. */           \
  OP(void, residual_rmsnorm_forward,                                                                        \
     (Tensor residual,              /* (N, C) */                                                            \
      Tensor out,                   /* (N, C) */                                                            \
      float* rstd,                  /* (N) */                                                               \
      ConstTensor a, ConstTensor b, /* (N, C) */                                                            \
      ConstTensor weight,           /* (C) */                                                               \
      int N, int C, float eps),                                                                             \
     (residual, out, rstd, a, b, weight, N, C, eps))

// The parameter list of an entry as written, without its parentheses: ETH_OP_ARGS args.
#define ETH_OP_ARGS(...) __VA_ARGS__
