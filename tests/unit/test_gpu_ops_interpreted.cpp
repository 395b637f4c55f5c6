// The GPU ops of kernels/gpu_ops, run through the kernel interpreter (HostLaunch: the very
// kernels, grids and library calls the CUDA backend launches), against the CPU backend, their
// reference twin: every op on fresh random inputs, with shapes that are not multiples of the
// kernels' tiles or blocks (N = 37 rows, C = 70 channels, V = 101 of Vp = 128, n = 1037), so
// that every tail path runs. Outputs an op must overwrite are poisoned with NaN first;
// accumulated outputs (parameter gradients, layernorm's dinp, the loss total) start from
// non-zero values and are compared by what each side added. Then each op is run again on a
// fresh HostLaunch and must give the same bits.
//
// Tolerances are tests/gpu/cuda_checks.hpp's, compared by its norm-wise relative error:
//   kExact   the encoder (forward, and backward as the design's bit-for-bit twin: the same
//            additions in the same order), the residual add and bf16 rounding: equal bits.
//   kFp32    every other fp32 op: both sides round each operation to fp32 but add in different
//            orders (warp butterflies, column-sum chunks, OpenBLAS's kernels for the two GEMM
//            layouts); sums of at most a few hundred terms err by ~1e-6, so 1e-5 has a margin
//            while a wrong index or term shows at 1e-2 or more.
//   kDouble  sum_of_squares and accumulate_sum, accumulated in double on both sides.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <type_traits>
#include <vector>

#include "kernels/backend.hpp"
#include "kernels/emulated/host_launch.hpp"
#include "kernels/forwarding_device.hpp"
#include "kernels/gpu_ops/crossentropy.hpp"
#include "kernels/gpu_ops/elementwise.hpp"
#include "kernels/gpu_ops/encoder.hpp"
#include "kernels/gpu_ops/layernorm.hpp"
#include "kernels/gpu_ops/matmul.hpp"
#include "kernels/gpu_ops/optimizer.hpp"
#include "lib/base/random.hpp"
#include "tests/gpu/cuda_checks.hpp"

namespace {

namespace gpu_ops = eth::kernels::gpu_ops;
using eth::kernels::Backend;
using eth::kernels::emulated::HostLaunch;
using eth::test::gpu::compare;
using eth::test::gpu::Comparison;
using eth::test::gpu::kDouble;
using eth::test::gpu::kExact;
using eth::test::gpu::kFp32;
using Vec = std::vector<float>;
using Ids = std::vector<int32_t>;

// The emulated backend's base (forwarding_device.hpp) passes on the device alone, none of the
// operations: an operation GpuOpsBackend does not implement leaves the emulated backend abstract,
// a compile error, instead of running on its host CPU backend. (The emulated backend itself is
// made, so it implements them all: make_cuda_emulated_backend would not compile otherwise.)
static_assert(std::is_abstract_v<eth::kernels::ForwardingDevice<Backend>>);

// Values offset + scale * U(-1, 1): deterministic per stream, never all zero.
Vec random_floats(size_t n, uint64_t stream, float scale = 1.f, float offset = 0.f) {
  Vec v(n);
  for (size_t i = 0; i < n; i++) v[i] = offset + scale * static_cast<float>(2.0 * eth::uniform_at(stream, i) - 1.0);
  return v;
}
Ids random_ids(size_t n, uint64_t stream, int limit) {
  Ids v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<int32_t>(eth::uniform_at(stream, i) * limit);
  return v;
}
Vec nans(size_t n) { return Vec(n, std::numeric_limits<float>::quiet_NaN()); }

// The counts a HostLaunch kept under `name` (zeros when it has none).
template <typename Counts>
Counts count_of(const std::map<std::string, Counts>& counts, const std::string& name) {
  const auto it = counts.find(name);
  return it == counts.end() ? Counts{} : it->second;
}

// What one op check gives: its comparisons with the CPU backend, and the bytes of every output
// the interpreted op wrote, for the rerun.
struct OpResult {
  std::vector<Comparison> comparisons;
  std::string bytes;

  template <typename T>
  void keep(const std::vector<T>& v) {
    bytes.append(reinterpret_cast<const char*>(v.data()), v.size() * sizeof(T));
  }
  void add(Comparison c) { comparisons.push_back(std::move(c)); }
};

// The rows (b, t) of the first N, and the ids of a vocabulary V = 101 padded to Vp = 128.
constexpr int kB = 2, kT = 19, kN = 37, kC = 70, kV = 101, kVp = 128, kMaxT = 23;
constexpr size_t kElements = 1037;

OpResult check_encoder(HostLaunch& launch, Backend& cpu) {
  const int B = kB, T = kT, C = kC;
  const size_t BTC = static_cast<size_t>(B) * T * C;
  const Ids tokens = random_ids(static_cast<size_t>(B) * T, 1, 12);  // 38 positions, 12 ids: many repeats
  const Vec wte = random_floats(static_cast<size_t>(kVp) * C, 2), wpe = random_floats(static_cast<size_t>(kMaxT) * C, 3);
  OpResult r;

  Vec ref(BTC), out = nans(BTC);
  cpu.encoder_forward(ref.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  gpu_ops::encoder_forward(launch, out.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  r.add(compare("encoder_forward out", out, ref, kExact));
  r.keep(out);

  const Vec dout = random_floats(BTC, 4);
  const Vec dwte0 = random_floats(wte.size(), 5), dwpe0 = random_floats(wpe.size(), 6);
  Vec dwte_ref = dwte0, dwpe_ref = dwpe0, dwte = dwte0, dwpe = dwpe0;
  cpu.encoder_backward(dwte_ref.data(), dwpe_ref.data(), dout.data(), tokens.data(), B, T, C);
  gpu_ops::encoder_backward(launch, dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C);
  r.add(compare("encoder_backward dwte", dwte, dwte_ref, kExact, &dwte0));
  r.add(compare("encoder_backward dwpe", dwpe, dwpe_ref, kExact, &dwpe0));
  // Bit for bit, as the design says (the norm-wise 0 above would pass -0 for +0).
  EXPECT_EQ(std::memcmp(dwte.data(), dwte_ref.data(), dwte.size() * sizeof(float)), 0) << "dwte not bit-identical";
  EXPECT_EQ(std::memcmp(dwpe.data(), dwpe_ref.data(), dwpe.size() * sizeof(float)), 0) << "dwpe not bit-identical";
  r.keep(dwte);
  r.keep(dwpe);
  // The launches the GPU runs: the wpe kernel, the iota, the sort, one wte block per position.
  for (const char* kernel : {"encoder_backward_wpe", "encoder_backward_iota", "encoder_backward_wte"})
    EXPECT_EQ(count_of(launch.kernel_counts(), kernel).launches, 1u) << kernel;
  EXPECT_EQ(count_of(launch.kernel_counts(), "encoder_backward_wte").threads, 38u * gpu_ops::kEncoderThreads);
  EXPECT_EQ(count_of(launch.library_counts(), "cub_sort_pairs").calls, 1u);
  return r;
}

OpResult check_layernorm(HostLaunch& launch, Backend& cpu) {
  const int N = kN, C = kC;
  const size_t NC = static_cast<size_t>(N) * C;
  // A mean far from zero: the variance must be computed about the mean, not as E[x^2] - m^2.
  const Vec inp = random_floats(NC, 10, 2.f, 3.f);
  const Vec weight = random_floats(C, 11, 0.5f, 1.f), bias = random_floats(C, 12);
  OpResult r;

  Vec ref(NC), mean_ref(N), rstd_ref(N), out = nans(NC), mean = nans(N), rstd = nans(N);
  cpu.layernorm_forward(ref.data(), mean_ref.data(), rstd_ref.data(), inp.data(), weight.data(), bias.data(), N, C);
  gpu_ops::layernorm_forward(launch, out.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N,
                             C);
  r.add(compare("layernorm_forward out", out, ref, kFp32));
  r.add(compare("layernorm_forward mean", mean, mean_ref, kFp32));
  r.add(compare("layernorm_forward rstd", rstd, rstd_ref, kFp32));
  r.keep(out);
  r.keep(mean);
  r.keep(rstd);

  // Backward from the CPU's statistics on both sides, so that it is checked on its own.
  const Vec dout = random_floats(NC, 13);
  const Vec dinp0 = random_floats(NC, 14), dw0 = random_floats(C, 15), db0 = random_floats(C, 16);
  Vec dinp_ref = dinp0, dw_ref = dw0, db_ref = db0, dinp = dinp0, dw = dw0, db = db0;
  cpu.layernorm_backward(dinp_ref.data(), dw_ref.data(), db_ref.data(), dout.data(), inp.data(), weight.data(),
                         mean_ref.data(), rstd_ref.data(), N, C);
  gpu_ops::layernorm_backward(launch, dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), weight.data(),
                              mean_ref.data(), rstd_ref.data(), N, C);
  r.add(compare("layernorm_backward dinp", dinp, dinp_ref, kFp32, &dinp0));
  r.add(compare("layernorm_backward dweight", dw, dw_ref, kFp32, &dw0));
  r.add(compare("layernorm_backward dbias", db, db_ref, kFp32, &db0));
  r.keep(dinp);
  r.keep(dw);
  r.keep(db);
  return r;
}

OpResult check_matmul(HostLaunch& launch, Backend& cpu, bool with_bias) {
  const int N = kN, C = kC, OC = kV;
  const std::string label = with_bias ? "matmul " : "matmul (no bias) ";
  const Vec inp = random_floats(static_cast<size_t>(N) * C, 20), weight = random_floats(static_cast<size_t>(OC) * C, 21),
            bias = random_floats(OC, 22);
  const float* bias_ptr = with_bias ? bias.data() : nullptr;
  OpResult r;

  Vec ref(static_cast<size_t>(N) * OC), out = nans(ref.size());
  cpu.matmul_forward(ref.data(), inp.data(), weight.data(), bias_ptr, N, C, OC);
  gpu_ops::matmul_forward(launch, out.data(), inp.data(), weight.data(), bias_ptr, N, C, OC);
  r.add(compare(label + "forward out", out, ref, kFp32));
  r.keep(out);

  const Vec dout = random_floats(ref.size(), 23);
  const Vec dw0 = random_floats(weight.size(), 24), db0 = random_floats(OC, 25);
  Vec dinp_ref(inp.size()), dw_ref = dw0, db_ref = db0, dinp = nans(inp.size()), dw = dw0, db = db0;
  cpu.matmul_backward(dinp_ref.data(), dw_ref.data(), with_bias ? db_ref.data() : nullptr, dout.data(), inp.data(),
                      weight.data(), N, C, OC);
  gpu_ops::matmul_backward(launch, dinp.data(), dw.data(), with_bias ? db.data() : nullptr, dout.data(), inp.data(),
                           weight.data(), N, C, OC);
  r.add(compare(label + "backward dinp", dinp, dinp_ref, kFp32));
  r.add(compare(label + "backward dweight", dw, dw_ref, kFp32, &dw0));
  if (with_bias) {
    r.add(compare(label + "backward dbias", db, db_ref, kFp32, &db0));
  } else {
    EXPECT_EQ(db, db0) << "a null dbias was written through";
  }
  r.keep(dinp);
  r.keep(dw);
  r.keep(db);
  // Forward's GEMM and backward's two, at cuBLAS's contract.
  EXPECT_EQ(count_of(launch.library_counts(), "cublas_sgemm").calls, 3u);
  return r;
}

OpResult check_elementwise(HostLaunch& launch, Backend& cpu) {
  const size_t n = kElements;
  const Vec inp = random_floats(n, 40, 4.f), dout = random_floats(n, 41), b = random_floats(n, 42);
  OpResult r;

  Vec ref(n), out = nans(n);
  cpu.gelu_forward(ref.data(), inp.data(), n);
  gpu_ops::gelu_forward(launch, out.data(), inp.data(), n);
  r.add(compare("gelu_forward out", out, ref, kFp32));
  r.keep(out);

  Vec dref(n), dinp = nans(n);
  cpu.gelu_backward(dref.data(), inp.data(), dout.data(), n);
  gpu_ops::gelu_backward(launch, dinp.data(), inp.data(), dout.data(), n);
  r.add(compare("gelu_backward dinp", dinp, dref, kFp32));
  Vec in_place = dout;  // as lib/model/stage.cpp calls it: dinp == dout
  gpu_ops::gelu_backward(launch, in_place.data(), inp.data(), in_place.data(), n);
  r.add(compare("gelu_backward dinp (in place)", in_place, dref, kFp32));
  r.keep(dinp);
  r.keep(in_place);

  Vec sum_ref(n), sum = nans(n);
  cpu.residual_forward(sum_ref.data(), inp.data(), b.data(), n);
  gpu_ops::residual_forward(launch, sum.data(), inp.data(), b.data(), n);
  r.add(compare("residual_forward out", sum, sum_ref, kExact));
  r.keep(sum);

  // Values whose low 16 bits are random: most round, some tie. The same values to fp16: most are
  // normal fp16 numbers, the small ones subnormal.
  Vec rounded_ref(n), rounded = nans(n);
  cpu.round_to(eth::kernels::ElementType::bf16, rounded_ref.data(), inp.data(), n);
  gpu_ops::round_to<HostLaunch, eth::kernels::bf16>(launch, rounded.data(), inp.data(), n);
  r.add(compare("round_to bf16 out", rounded, rounded_ref, kExact));
  r.keep(rounded);
  Vec rounded16_ref(n), rounded16 = nans(n);
  cpu.round_to(eth::kernels::ElementType::f16, rounded16_ref.data(), inp.data(), n);
  gpu_ops::round_to<HostLaunch, eth::kernels::fp16>(launch, rounded16.data(), inp.data(), n);
  r.add(compare("round_to fp16 out", rounded16, rounded16_ref, kExact));
  r.keep(rounded16);
  return r;
}

OpResult check_crossentropy(HostLaunch& launch, Backend& cpu, float scale) {
  const int B = kB, T = kT, V = kV, Vp = kVp;
  const Vec logits = random_floats(static_cast<size_t>(B) * T * Vp, 60, 4.f);  // padded columns random too
  const Ids targets = random_ids(static_cast<size_t>(B) * T, 61, V);
  const std::string label = scale == 0.f ? "crossentropy (eval) " : "crossentropy (scale " + std::to_string(scale) + ") ";
  OpResult r;

  Vec ref_logits = logits, ref_losses(B), ours_logits = logits, losses = nans(B);
  cpu.crossentropy_forward_backward(ref_losses.data(), ref_logits.data(), targets.data(), B, T, V, Vp, scale);
  gpu_ops::crossentropy_forward_backward(launch, losses.data(), ours_logits.data(), targets.data(), B, T, V, Vp,
                                         scale);
  r.add(compare(label + "sample_losses", losses, ref_losses, kFp32));
  if (scale == 0.f) {
    r.add(compare(label + "logits untouched", ours_logits, logits, kExact));
  } else {
    // dlogits, the padded columns included: they must be overwritten with zeros.
    r.add(compare(label + "dlogits", ours_logits, ref_logits, kFp32));
  }
  r.keep(losses);
  r.keep(ours_logits);
  return r;
}

OpResult check_reductions(HostLaunch& launch, Backend& cpu) {
  const Vec x = random_floats(kElements * 37, 70);  // 38369: each of the 1024 x 256 threads reads 0 or 1
  OpResult r;
  const std::vector<double> ours{gpu_ops::sum_of_squares(launch, x.data(), x.size())};
  r.add(compare("sum_of_squares", ours, std::vector<double>{cpu.sum_of_squares(x.data(), x.size())}, kDouble));
  r.keep(ours);

  // accumulate_sum adds to a running total: compared by what it added.
  const double start = 12.375;
  const Vec losses = random_floats(kElements, 71, 1.f, 3.f);
  double ref_total = start, total = start;
  cpu.accumulate_sum(&ref_total, losses.data(), losses.size());
  gpu_ops::accumulate_sum(launch, &total, losses.data(), losses.size());
  const std::vector<double> added{total - start};
  r.add(compare("accumulate_sum added", added, std::vector<double>{ref_total - start}, kDouble));
  r.keep(added);
  return r;
}

OpResult check_adamw(HostLaunch& launch, Backend& cpu) {
  // Two runs over more than two segments' worth of floats: the first 700 parameters without
  // weight decay, their moments at the end, the rest with it, their moments first: every block
  // must find its parameters, moments and decay through the table.
  const size_t n = 2 * eth::kernels::kAdamWSegmentFloats + kElements, head = 700;
  std::vector<eth::kernels::AdamWSegment> segments;
  eth::kernels::append_adamw_segments(segments, 0, n - head, head, false);
  eth::kernels::append_adamw_segments(segments, head, 0, n - head, true);
  const Vec params0 = random_floats(n, 80), grads = random_floats(n, 81), m0 = random_floats(n, 82, 0.1f);
  Vec v0 = random_floats(n, 83, 0.1f);
  for (float& x : v0) x = x * x + 1e-4f;  // a second moment is positive
  // lr 1e-2: updates well above the parameters' own rounding (cuda_checks.cpp's reasoning).
  const eth::kernels::AdamWParams hp{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 3};
  Vec params_ref = params0, m_ref = m0, v_ref = v0, params = params0, m = m0, v = v0;
  cpu.adamw_update(params_ref.data(), nullptr, grads.data(), m_ref.data(), v_ref.data(), segments.data(),
                   segments.size(), hp);
  // The bias corrections as the CUDA backend computes them (the CPU twin's formula).
  const float correction1 = 1.f - static_cast<float>(std::pow(static_cast<double>(hp.beta1), hp.step));
  const float correction2 = 1.f - static_cast<float>(std::pow(static_cast<double>(hp.beta2), hp.step));
  gpu_ops::adamw_update<HostLaunch, float>(launch, params.data(), nullptr, grads.data(), m.data(), v.data(), segments.data(),
                        segments.size(),
                        {hp.lr, hp.beta1, hp.beta2, hp.eps, hp.weight_decay, hp.grad_scale, correction1, correction2});
  OpResult r;
  // The parameters by their update (about lr), which is where an error would show.
  r.add(compare("adamw params", params, params_ref, kFp32, &params0));
  r.add(compare("adamw m", m, m_ref, kFp32));
  r.add(compare("adamw v", v, v_ref, kFp32));
  r.keep(params);
  r.keep(m);
  r.keep(v);
  EXPECT_EQ(count_of(launch.kernel_counts(), "adamw_update").launches, 1u) << "one launch for every segment";
  return r;
}

using OpCheck = std::function<OpResult(HostLaunch&, Backend&)>;

// Runs `check` on a fresh HostLaunch, expects every comparison to pass (printing each line, so
// that the log shows the errors), then runs it once more on another and expects the same bits.
void run_op_check(const OpCheck& check) {
  std::unique_ptr<Backend> cpu = eth::kernels::make_cpu_backend();
  HostLaunch first;
  const auto start = std::chrono::steady_clock::now();
  const OpResult r = check(first, *cpu);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  ASSERT_FALSE(r.comparisons.empty());
  for (const Comparison& c : r.comparisons) {
    std::printf("%s\n", c.describe().c_str());
    EXPECT_TRUE(c.passed()) << c.describe();
  }
  std::printf("(interpreted in %.2f s)\n", seconds);
  HostLaunch second;
  const OpResult again = check(second, *cpu);
  EXPECT_TRUE(again.bytes == r.bytes) << "a rerun on a fresh HostLaunch gave different bits";
}

TEST(GpuOpsInterpreted, Encoder) { run_op_check(check_encoder); }
TEST(GpuOpsInterpreted, LayerNorm) { run_op_check(check_layernorm); }
TEST(GpuOpsInterpreted, Matmul) {
  run_op_check([](HostLaunch& l, Backend& cpu) { return check_matmul(l, cpu, true); });
}
TEST(GpuOpsInterpreted, MatmulWithoutBias) {
  run_op_check([](HostLaunch& l, Backend& cpu) { return check_matmul(l, cpu, false); });
}
TEST(GpuOpsInterpreted, Elementwise) { run_op_check(check_elementwise); }
TEST(GpuOpsInterpreted, CrossEntropyTrain) {
  run_op_check([](HostLaunch& l, Backend& cpu) { return check_crossentropy(l, cpu, 1.f); });
}
TEST(GpuOpsInterpreted, CrossEntropyTrainScaled) {
  run_op_check([](HostLaunch& l, Backend& cpu) { return check_crossentropy(l, cpu, 0.25f); });
}
TEST(GpuOpsInterpreted, CrossEntropyEval) {
  run_op_check([](HostLaunch& l, Backend& cpu) { return check_crossentropy(l, cpu, 0.f); });
}
TEST(GpuOpsInterpreted, Reductions) { run_op_check(check_reductions); }
TEST(GpuOpsInterpreted, AdamW) { run_op_check(check_adamw); }

}  // namespace
