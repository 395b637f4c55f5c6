// The CPU attention kernel of a given path (kernels/attention_path.hpp), with the backend's
// signature: the CPU backend passes cpu_attention_path(T), bench_train_step a fixed one, the
// tests both (in float and double).
#pragma once

#include "kernels/attention_path.hpp"
#include "kernels/cpu/gpt_ops.hpp"

namespace eth::kernels::cpu {

template <typename F>
void attention_forward(AttentionPath path, F* out,  // (B, T, C)
                       F* saved,                    // attention_saved_floats(path, B, NH, T)
                       const F* qkv,                // (B, T, 3C)
                       int B, int T, int C, int NH) {
  if (path == AttentionPath::materialised) {
    materialised_attention_forward(out, saved, qkv, B, T, AttentionHeads::multi_head(C, NH));
  } else {
    flash_attention_forward(out, saved, qkv, B, T, AttentionHeads::multi_head(C, NH));
  }
}

template <typename F>
void attention_backward(AttentionPath path, F* dqkv,  // (B, T, 3C) overwritten
                        const F* dout,                // (B, T, C)
                        const F* qkv,                 // (B, T, 3C)
                        const F* out,                 // (B, T, C) forward's
                        const F* saved,               // forward's
                        int B, int T, int C, int NH) {
  if (path == AttentionPath::materialised) {
    materialised_attention_backward(dqkv, dout, qkv, saved, B, T, AttentionHeads::multi_head(C, NH));
  } else {
    flash_attention_backward(dqkv, dout, qkv, out, saved, B, T, AttentionHeads::multi_head(C, NH));
  }
}

}  // namespace eth::kernels::cpu
