// Token + position embedding, forward and a deterministic backward.
//
// Backward without atomics: a token may repeat in the batch, so the positions are first sorted
// by token with a stable radix sort (launch.sort_pairs: positions stay ascending inside a
// token's run); then one block per run adds the run's rows of dout into its dwte row, in
// position order, starting from the accumulated value. That is exactly the CPU twin's order of
// additions, so dwte and dwpe match it bit for bit.
#pragma once

#include <cstdint>

#include "kernels/gpu_ops/common.hpp"
#include "kernels/gpu_ops/ops.hpp"

namespace eth::kernels::gpu_ops {

constexpr int kEncoderThreads = 256;

// Grid-stride over the (B, T, C) outputs, one element per thread step. Stored as E (float or
// bf16); wte and wpe are the fp32 masters, read as the path's copies (as_copy: bf16-rounded on
// the bf16 path, the CPU twin's numbers without a copy of the whole table).
template <class E>
struct EncoderForwardKernel {
  static constexpr const char* kName =
      simt::named<E>("encoder_forward", "encoder_forward_bf16", "encoder_forward_fp16");
  Global<E> out;                   // (B, T, C)
  Global<const int32_t> tokens;    // (B, T)
  Global<const float> wte;         // (Vp, C)
  Global<const float> wpe;         // (maxT, C), or null: rotary positions, the word rows alone
  int T, C;
  size_t total;                    // B * T * C
  bool learned_positions;          // wpe given

  SIMT_DEVICE void operator()(Thread& t) const {
    for (size_t i = global_index(t); i < total; i += grid_stride(t)) {
      const size_t row = i / C;  // b * T + t
      const size_t c = i % C;
      const size_t pos = row % T;
      const int32_t token = tokens[row];
      const float word = simt::as_copy<E>(wte[static_cast<size_t>(token) * C + c]);
      out[i] = simt::from_float<E>(learned_positions ? word + simt::as_copy<E>(wpe[pos * C + c]) : word);
    }
  }
};

// One thread per (t, c) of dwpe: adds over b in order, as the CPU twin does. dout of either type.
template <class E>
struct WpeBackwardKernel {
  static constexpr const char* kName =
      simt::named<E>("encoder_backward_wpe", "encoder_backward_wpe_bf16", "encoder_backward_wpe_fp16");
  Global<float> dwpe;         // (maxT, C) accumulated; rows [0, T) touched
  Global<const E> dout;       // (B, T, C)
  int B, T, C;

  SIMT_DEVICE void operator()(Thread& t) const {
    const size_t i = global_index(t);
    if (i >= static_cast<size_t>(T) * C) return;
    const size_t pos = i / C, c = i % C;
    float acc = dwpe[i];
    for (int b = 0; b < B; b++) acc += simt::to_float(dout[(static_cast<size_t>(b) * T + pos) * C + c]);
    dwpe[i] = acc;
  }
};

// x[i] = i, one thread per i.
struct IotaKernel {
  static constexpr const char* kName = "encoder_backward_iota";
  Global<int32_t> x;  // (n)
  int n;

  SIMT_DEVICE void operator()(Thread& t) const {
    const int i = static_cast<int>(t.block_idx().x * t.block_dim().x + t.thread_idx().x);
    if (i < n) x[i] = i;
  }
};

// Block i owns sorted entry i when it starts a run of equal tokens (the others return): its
// threads stride over the C columns of that token's dwte row, each adding the run's rows of dout
// to its column in position order.
template <class E>
struct WteBackwardKernel {
  static constexpr const char* kName =
      simt::named<E>("encoder_backward_wte", "encoder_backward_wte_bf16", "encoder_backward_wte_fp16");
  Global<float> dwte;                   // (Vp, C) accumulated
  Global<const E> dout;                 // (B, T, C)
  Global<const int32_t> sorted_tokens;  // (N) ascending
  Global<const int32_t> sorted_rows;    // (N) the rows b * T + t of each, ascending within a token
  int N, C;

  SIMT_DEVICE void operator()(Thread& t) const {
    const int i = static_cast<int>(t.block_idx().x);
    const int32_t token = sorted_tokens[i];
    if (i > 0 && sorted_tokens[i - 1] == token) return;
    const Global<float> dst = dwte + static_cast<size_t>(token) * C;
    for (int c = static_cast<int>(t.thread_idx().x); c < C; c += static_cast<int>(t.block_dim().x)) {
      float acc = dst[c];
      for (int j = i; j < N && sorted_tokens[j] == token; j++) {
        const int32_t row = sorted_rows[j];
        acc += simt::to_float(dout[static_cast<size_t>(row) * C + c]);
      }
      dst[c] = acc;
    }
  }
};

template <class Launch, class E>
void encoder_forward(Launch& launch, E* out, const int32_t* tokens, const float* wte, const float* wpe, int B,
                     int T, int C) {
  const size_t total = static_cast<size_t>(B) * T * C;
  if (total == 0) return;
  launch.kernel(EncoderForwardKernel<E>{out, tokens, wte, wpe, T, C, total, wpe != nullptr},
                LaunchShape{Dim3(grid_for(total, kEncoderThreads)), Dim3(kEncoderThreads), 0});
}

template <class Launch, class E>
void encoder_backward(Launch& launch, float* dwte, float* dwpe, const E* dout, const int32_t* tokens, int B,
                      int T, int C) {
  const int N = B * T;
  if (N == 0 || C == 0) return;
  const size_t TC = static_cast<size_t>(T) * C;
  if (dwpe) {
    launch.kernel(WpeBackwardKernel<E>{dwpe, dout, B, T, C},
                  LaunchShape{Dim3(static_cast<unsigned>(ceil_div(TC, kEncoderThreads))), Dim3(kEncoderThreads), 0});
  }
  if (!dwte) return;

  // Scratch: sorted tokens, and the row indices before and after sorting, (N) each.
  const EncoderBackwardScratch at(static_cast<size_t>(N));
  char* base = static_cast<char*>(launch.scratch(at.total));
  auto* sorted_tokens = reinterpret_cast<int32_t*>(base + at.keys);
  auto* rows = reinterpret_cast<int32_t*>(base + at.rows);
  auto* sorted_rows = reinterpret_cast<int32_t*>(base + at.sorted_rows);

  launch.kernel(IotaKernel{rows, N},
                LaunchShape{Dim3(static_cast<unsigned>(ceil_div(static_cast<size_t>(N), kEncoderThreads))),
                            Dim3(kEncoderThreads), 0});
  // Stable: rows of one token keep their ascending order.
  launch.sort_pairs(tokens, sorted_tokens, rows, sorted_rows, N);
  launch.kernel(WteBackwardKernel<E>{dwte, dout, sorted_tokens, sorted_rows, N, C},
                LaunchShape{Dim3(static_cast<unsigned>(N)), Dim3(kEncoderThreads), 0});
}

}  // namespace eth::kernels::gpu_ops
