// The CPU attention kernel of a given path (kernels/attention_path.hpp), with the backend's
// signature: the CPU backend passes cpu_attention_path(T), bench_train_step a fixed one, the
// tests both (in float and double).
#pragma once

#include "kernels/attention_path.hpp"
#include "kernels/cpu/gpt_ops.hpp"

namespace eth::kernels::cpu {

template <typename F>
void attention_forward(AttentionPath path, F* out,  // (B, T, NH hs)
                       F* saved,                    // attention_saved_floats(path, B, NH, T)
                       const F* qkv,                // (B, T, (NH + 2 NKV) hs)
                       int B, int T, AttentionHeads heads) {
  if (path == AttentionPath::materialised) {
    materialised_attention_forward(out, saved, qkv, B, T, heads);
  } else {
    flash_attention_forward(out, saved, qkv, B, T, heads);
  }
}

template <typename F>
void attention_backward(AttentionPath path, F* dqkv,  // (B, T, (NH + 2 NKV) hs) overwritten
                        const F* dout,                // (B, T, NH hs)
                        const F* qkv,                 // (B, T, (NH + 2 NKV) hs)
                        const F* out,                 // (B, T, NH hs) forward's
                        const F* saved,               // forward's
                        int B, int T, AttentionHeads heads) {
  if (path == AttentionPath::materialised) {
    materialised_attention_backward(dqkv, dout, qkv, saved, B, T, heads);
  } else {
    flash_attention_backward(dqkv, dout, qkv, out, saved, B, T, heads);
  }
}

}  // namespace eth::kernels::cpu
