// Each op of the CUDA backend against the CPU backend on fresh random inputs. Outputs the GPU
// must overwrite are poisoned with NaN first; accumulated outputs start from random values and
// are compared by what each side added. Shapes are deliberately not multiples of 32 or of the
// kernels' block sizes, so every tail path runs.
#include "tests/gpu/cuda_checks.hpp"

#include <array>
#include <limits>
#include <memory>

#include "kernels/cpu/gpt_ops.hpp"
#include "kernels/device_buffer.hpp"
#ifdef ETH_HAVE_CUDA
#include "kernels/cuda/cuda_backend.hpp"
#endif
#include "lib/base/random.hpp"

namespace eth::test::gpu {
namespace {

using kernels::Backend;
using kernels::DeviceBuffer;
using Vec = std::vector<float>;
using Ids = std::vector<int32_t>;

// Values offset + scale * U(-1, 1): deterministic per stream, never all zero.
Vec random_floats(size_t n, uint64_t stream, float scale = 1.f, float offset = 0.f) {
  Vec v(n);
  for (size_t i = 0; i < n; i++) v[i] = offset + scale * static_cast<float>(2.0 * uniform_at(stream, i) - 1.0);
  return v;
}
Ids random_ids(size_t n, uint64_t stream, int limit) {
  Ids v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<int32_t>(uniform_at(stream, i) * limit);
  return v;
}
Vec nans(size_t n) { return Vec(n, std::numeric_limits<float>::quiet_NaN()); }

template <typename T>
DeviceBuffer<T> upload(Backend& gpu, const std::vector<T>& host) {
  DeviceBuffer<T> buf(gpu, host.size());
  gpu.copy_to_device(buf.data(), host.data(), host.size() * sizeof(T));
  return buf;
}
template <typename T>
std::vector<T> download(Backend& gpu, const DeviceBuffer<T>& buf) {
  std::vector<T> host(buf.size());
  gpu.copy_to_host(host.data(), buf.data(), host.size() * sizeof(T));
  return host;
}

std::vector<Comparison> check_encoder(const Backends& be) {
  const int B = 4, T = 64, C = 96, Vp = 128, maxT = 80;
  const Ids tokens = random_ids(static_cast<size_t>(B) * T, 1, 50);  // 256 positions, 50 ids: many repeats
  const Vec wte = random_floats(static_cast<size_t>(Vp) * C, 2), wpe = random_floats(static_cast<size_t>(maxT) * C, 3);
  const size_t BTC = static_cast<size_t>(B) * T * C;
  std::vector<Comparison> out;

  Vec ref(BTC);
  be.cpu.encoder_forward(ref.data(), tokens.data(), wte.data(), wpe.data(), B, T, C);
  auto d_tokens = upload(be.gpu, tokens);
  auto d_wte = upload(be.gpu, wte), d_wpe = upload(be.gpu, wpe), d_out = upload(be.gpu, nans(BTC));
  be.gpu.encoder_forward(d_out.data(), d_tokens.data(), d_wte.data(), d_wpe.data(), B, T, C);
  out.push_back(compare("encoder_forward out", download(be.gpu, d_out), ref, kExact));

  const Vec dout = random_floats(BTC, 4);
  const Vec dwte0 = random_floats(wte.size(), 5), dwpe0 = random_floats(wpe.size(), 6);
  Vec dwte = dwte0, dwpe = dwpe0;
  be.cpu.encoder_backward(dwte.data(), dwpe.data(), dout.data(), tokens.data(), B, T, C);
  auto d_dout = upload(be.gpu, dout), d_dwte = upload(be.gpu, dwte0), d_dwpe = upload(be.gpu, dwpe0);
  be.gpu.encoder_backward(d_dwte.data(), d_dwpe.data(), d_dout.data(), d_tokens.data(), B, T, C);
  out.push_back(compare("encoder_backward dwte", download(be.gpu, d_dwte), dwte, kExact, &dwte0));
  out.push_back(compare("encoder_backward dwpe", download(be.gpu, d_dwpe), dwpe, kExact, &dwpe0));
  return out;
}

std::vector<Comparison> check_layernorm(const Backends& be) {
  const int N = 300, C = 200;
  const size_t NC = static_cast<size_t>(N) * C;
  // A mean far from zero: the variance must be computed about the mean, not as E[x^2] - m^2.
  const Vec inp = random_floats(NC, 10, 2.f, 3.f);
  const Vec weight = random_floats(C, 11, 0.5f, 1.f), bias = random_floats(C, 12);
  std::vector<Comparison> out;

  Vec ref(NC), mean(N), rstd(N);
  be.cpu.layernorm_forward(ref.data(), mean.data(), rstd.data(), inp.data(), weight.data(), bias.data(), N, C);
  auto d_inp = upload(be.gpu, inp), d_w = upload(be.gpu, weight), d_b = upload(be.gpu, bias);
  auto d_out = upload(be.gpu, nans(NC)), d_mean = upload(be.gpu, nans(N)), d_rstd = upload(be.gpu, nans(N));
  be.gpu.layernorm_forward(d_out.data(), d_mean.data(), d_rstd.data(), d_inp.data(), d_w.data(), d_b.data(), N, C);
  out.push_back(compare("layernorm_forward out", download(be.gpu, d_out), ref, kFp32));
  out.push_back(compare("layernorm_forward mean", download(be.gpu, d_mean), mean, kFp32));
  out.push_back(compare("layernorm_forward rstd", download(be.gpu, d_rstd), rstd, kFp32));

  // Backward from the CPU's statistics on both sides, so that it is checked on its own.
  const Vec dout = random_floats(NC, 13);
  const Vec dinp0 = random_floats(NC, 14), dw0 = random_floats(C, 15), db0 = random_floats(C, 16);
  Vec dinp = dinp0, dw = dw0, db = db0;
  be.cpu.layernorm_backward(dinp.data(), dw.data(), db.data(), dout.data(), inp.data(), weight.data(), mean.data(),
                            rstd.data(), N, C);
  auto d_dout = upload(be.gpu, dout), d_dinp = upload(be.gpu, dinp0), d_dw = upload(be.gpu, dw0),
       d_db = upload(be.gpu, db0), d_mean_ref = upload(be.gpu, mean), d_rstd_ref = upload(be.gpu, rstd);
  be.gpu.layernorm_backward(d_dinp.data(), d_dw.data(), d_db.data(), d_dout.data(), d_inp.data(), d_w.data(),
                            d_mean_ref.data(), d_rstd_ref.data(), N, C);
  out.push_back(compare("layernorm_backward dinp", download(be.gpu, d_dinp), dinp, kFp32, &dinp0));
  out.push_back(compare("layernorm_backward dweight", download(be.gpu, d_dw), dw, kFp32, &dw0));
  out.push_back(compare("layernorm_backward dbias", download(be.gpu, d_db), db, kFp32, &db0));
  return out;
}

std::vector<Comparison> check_matmul(Backend& gpu, Backend& cpu, bool with_bias, double tolerance,
                                     const std::string& label) {
  const int N = 257, C = 96, OC = 200;
  const Vec inp = random_floats(static_cast<size_t>(N) * C, 20), weight = random_floats(static_cast<size_t>(OC) * C, 21),
            bias = random_floats(OC, 22);
  const float* bias_ptr = with_bias ? bias.data() : nullptr;
  std::vector<Comparison> out;

  Vec ref(static_cast<size_t>(N) * OC);
  cpu.matmul_forward(ref.data(), inp.data(), weight.data(), bias_ptr, N, C, OC);
  auto d_inp = upload(gpu, inp), d_w = upload(gpu, weight), d_b = upload(gpu, bias), d_out = upload(gpu, nans(ref.size()));
  gpu.matmul_forward(d_out.data(), d_inp.data(), d_w.data(), with_bias ? d_b.data() : nullptr, N, C, OC);
  out.push_back(compare(label + " matmul_forward out", download(gpu, d_out), ref, tolerance));

  const Vec dout = random_floats(ref.size(), 23);
  const Vec dw0 = random_floats(weight.size(), 24), db0 = random_floats(OC, 25);
  Vec dinp(inp.size()), dw = dw0, db = db0;
  cpu.matmul_backward(dinp.data(), dw.data(), with_bias ? db.data() : nullptr, dout.data(), inp.data(),
                      weight.data(), N, C, OC);
  auto d_dout = upload(gpu, dout), d_dinp = upload(gpu, nans(inp.size())), d_dw = upload(gpu, dw0),
       d_db = upload(gpu, db0);
  gpu.matmul_backward(d_dinp.data(), d_dw.data(), with_bias ? d_db.data() : nullptr, d_dout.data(), d_inp.data(),
                      d_w.data(), N, C, OC);
  out.push_back(compare(label + " matmul_backward dinp", download(gpu, d_dinp), dinp, tolerance));
  out.push_back(compare(label + " matmul_backward dweight", download(gpu, d_dw), dw, tolerance, &dw0));
  // dbias is a plain fp32 column sum, outside the GEMMs: kFp32 even with TF32 on.
  if (with_bias) out.push_back(compare(label + " matmul_backward dbias", download(gpu, d_db), db, kFp32, &db0));
  return out;
}

// One shape per compiled head-size family of kernels/cuda/attention.cu (hs 24 -> 32, 64, 128),
// each with T not a multiple of the tile (64 rows, 32 for hs 128), so partial tiles run too; and
// one of grouped-query heads (NKV < NH).
std::vector<Comparison> check_attention_shape(const Backends& be, int B, int T, kernels::AttentionHeads heads) {
  const int NH = heads.NH;
  std::string shape = " (T " + std::to_string(T) + ", hs " + std::to_string(heads.hs);
  shape += heads.NKV == NH ? ")" : ", NH " + std::to_string(NH) + ", NKV " + std::to_string(heads.NKV) + ")";
  const size_t BTC = static_cast<size_t>(B) * T * heads.out_row(), stats = static_cast<size_t>(B) * NH * T;
  const size_t qkv_n = static_cast<size_t>(B) * T * heads.qkv_row();
  const Vec qkv = random_floats(qkv_n, 30);
  std::vector<Comparison> out;

  // The CPU's blocked kernels, the CUDA kernel's twin: the CPU backend itself runs the
  // materialised ones below kCpuMaterialisedBelowT, which keep probabilities instead of lse.
  // The self-test's stand-in (a CPU backend) may run the materialised kernels at this T: then
  // it keeps its own probabilities, and its backward reads those instead of the reference's lse.
  const bool blocked = be.gpu.attention_path(T) == kernels::AttentionPath::blocked;
  Vec ref(BTC), lse(stats);
  kernels::cpu::flash_attention_forward(ref.data(), lse.data(), qkv.data(), B, T, heads);
  auto d_qkv = upload(be.gpu, qkv), d_out = upload(be.gpu, nans(BTC)),
       d_saved = upload(be.gpu, nans(be.gpu.attention_saved_floats(B, NH, T)));
  be.gpu.attention_forward(d_out.data(), d_saved.data(), d_qkv.data(), B, T, heads);
  out.push_back(compare("attention_forward out" + shape, download(be.gpu, d_out), ref, kFp32));
  if (blocked) out.push_back(compare("attention_forward lse" + shape, download(be.gpu, d_saved), lse, kFp32));

  // Backward from the CPU's out and lse on both sides.
  const Vec dout = random_floats(BTC, 31);
  Vec dqkv(qkv_n);
  kernels::cpu::flash_attention_backward(dqkv.data(), dout.data(), qkv.data(), ref.data(), lse.data(), B, T, heads);
  auto d_dout = upload(be.gpu, dout), d_ref = upload(be.gpu, ref), d_lse_ref = upload(be.gpu, lse),
       d_dqkv = upload(be.gpu, nans(qkv_n));
  be.gpu.attention_backward(d_dqkv.data(), d_dout.data(), d_qkv.data(), d_ref.data(),
                            blocked ? d_lse_ref.data() : d_saved.data(), B, T, heads);
  out.push_back(compare("attention_backward dqkv" + shape, download(be.gpu, d_dqkv), dqkv, kFp32));
  return out;
}

std::vector<Comparison> check_attention(const Backends& be) {
  std::vector<Comparison> out;
  for (const auto& [B, T, C, NH, NKV] : {std::array{3, 70, 96, 4, 4}, std::array{2, 130, 256, 4, 4},
                                         std::array{2, 45, 256, 2, 2}, std::array{2, 130, 256, 4, 2}}) {
    const std::vector<Comparison> one = check_attention_shape(be, B, T, {NH, NKV, C / NH});
    out.insert(out.end(), one.begin(), one.end());
  }
  return out;
}

std::vector<Comparison> check_gelu(const Backends& be) {
  const size_t n = 10007;
  const Vec inp = random_floats(n, 40, 4.f), dout = random_floats(n, 41);
  std::vector<Comparison> out;

  Vec ref(n), dref(n);
  be.cpu.gelu_forward(ref.data(), inp.data(), n);
  be.cpu.gelu_backward(dref.data(), inp.data(), dout.data(), n);
  auto d_inp = upload(be.gpu, inp), d_out = upload(be.gpu, nans(n));
  be.gpu.gelu_forward(d_out.data(), d_inp.data(), n);
  out.push_back(compare("gelu_forward out", download(be.gpu, d_out), ref, kFp32));
  auto d_dout = upload(be.gpu, dout), d_dinp = upload(be.gpu, nans(n));
  be.gpu.gelu_backward(d_dinp.data(), d_inp.data(), d_dout.data(), n);
  out.push_back(compare("gelu_backward dinp", download(be.gpu, d_dinp), dref, kFp32));
  // In place, as lib/model/stage.cpp calls it.
  be.gpu.gelu_backward(d_dout.data(), d_inp.data(), d_dout.data(), n);
  out.push_back(compare("gelu_backward dinp (in place)", download(be.gpu, d_dout), dref, kFp32));
  return out;
}

std::vector<Comparison> check_residual(const Backends& be) {
  const size_t n = 10007;
  const Vec a = random_floats(n, 50), b = random_floats(n, 51);
  Vec ref(n);
  be.cpu.residual_forward(ref.data(), a.data(), b.data(), n);
  auto d_a = upload(be.gpu, a), d_b = upload(be.gpu, b), d_out = upload(be.gpu, nans(n));
  be.gpu.residual_forward(d_out.data(), d_a.data(), d_b.data(), n);
  return {compare("residual_forward out", download(be.gpu, d_out), ref, kExact)};
}

std::vector<Comparison> check_crossentropy(const Backends& be, float scale) {
  const int B = 3, T = 17, V = 1000, Vp = 1024;
  const Vec logits = random_floats(static_cast<size_t>(B) * T * Vp, 60, 4.f);  // padded columns random too
  const Ids targets = random_ids(static_cast<size_t>(B) * T, 61, V);
  const std::string label = scale == 0.f ? "crossentropy (eval)" : "crossentropy (train)";
  std::vector<Comparison> out;

  Vec ref_logits = logits, ref_losses(B);
  be.cpu.crossentropy_forward_backward(ref_losses.data(), ref_logits.data(), targets.data(), B, T, V, Vp, scale);
  auto d_logits = upload(be.gpu, logits), d_losses = upload(be.gpu, nans(B));
  auto d_targets = upload(be.gpu, targets);
  be.gpu.crossentropy_forward_backward(d_losses.data(), d_logits.data(), d_targets.data(), B, T, V, Vp, scale);
  out.push_back(compare(label + " sample_losses", download(be.gpu, d_losses), ref_losses, kFp32));
  if (scale == 0.f) {
    out.push_back(compare(label + " logits untouched", download(be.gpu, d_logits), logits, kExact));
  } else {
    // dlogits, the padded columns included: they must be overwritten with zeros.
    out.push_back(compare(label + " dlogits", download(be.gpu, d_logits), ref_logits, kFp32));
  }
  return out;
}

std::vector<Comparison> check_sum_of_squares(const Backends& be) {
  const size_t n = 1000003;
  const Vec x = random_floats(n, 70);
  auto d_x = upload(be.gpu, x);
  return {compare("sum_of_squares", std::vector<double>{be.gpu.sum_of_squares(d_x.data(), n)},
                  std::vector<double>{be.cpu.sum_of_squares(x.data(), n)}, kDouble)};
}

std::vector<Comparison> check_adamw(const Backends& be) {
  const size_t n = 10007;
  const Vec params0 = random_floats(n, 80), grads = random_floats(n, 81), m0 = random_floats(n, 82, 0.1f);
  Vec v0 = random_floats(n, 83, 0.1f);
  for (float& x : v0) x = x * x + 1e-4f;  // a second moment is positive
  // lr 1e-2: updates well above the parameters' own rounding (ulp 6e-8 at 0.5), which both sides
  // share but may round differently where the update differs in its last bit.
  const kernels::AdamWParams hp{1e-2f, 0.9f, 0.95f, 1e-8f, 0.1f, 0.5f, 3};
  // Two runs (the first 500 without weight decay), their moments in the other order.
  std::vector<kernels::AdamWSegment> table;
  kernels::append_adamw_segments(table, 0, n - 500, 500, false);
  kernels::append_adamw_segments(table, 500, 0, n - 500, true);
  Vec params = params0, m = m0, v = v0;
  be.cpu.adamw_update(params.data(), nullptr, grads.data(), m.data(), v.data(), table.data(), table.size(), hp);
  auto d_p = upload(be.gpu, params0), d_g = upload(be.gpu, grads), d_m = upload(be.gpu, m0), d_v = upload(be.gpu, v0);
  kernels::DeviceBuffer<kernels::AdamWSegment> d_table(be.gpu, table.size());
  be.gpu.copy_to_device(d_table.data(), table.data(), table.size() * sizeof(kernels::AdamWSegment));
  be.gpu.adamw_update(d_p.data(), nullptr, d_g.data(), d_m.data(), d_v.data(), d_table.data(), table.size(), hp);
  // The parameters by their update (about lr), which is where an error would show.
  return {compare("adamw params", download(be.gpu, d_p), params, kFp32, &params0),
          compare("adamw m", download(be.gpu, d_m), m, kFp32),
          compare("adamw v", download(be.gpu, d_v), v, kFp32)};
}

// On a GPU only: the self-test and the interpreter (device < 0) have no TF32 GEMMs and skip it.
std::vector<Comparison> check_matmul_tf32(const Backends& be) {
#ifdef ETH_HAVE_CUDA
  if (be.device >= 0) {
    std::unique_ptr<Backend> tf32 =
        kernels::make_cuda_backend(be.device, kernels::own_arithmetic_path(kernels::Precision::tf32));
    return check_matmul(*tf32, be.cpu, true, kTf32, "tf32");
  }
#endif
  (void)be;
  return {};
}

}  // namespace

const std::vector<Check>& all_checks() {
  static const std::vector<Check> checks = {
      {"encoder", check_encoder},
      {"layernorm", check_layernorm},
      {"matmul", [](const Backends& be) { return check_matmul(be.gpu, be.cpu, true, kFp32, "fp32"); }},
      {"matmul_no_bias", [](const Backends& be) { return check_matmul(be.gpu, be.cpu, false, kFp32, "fp32"); }},
      {"matmul_tf32", check_matmul_tf32},
      {"attention", check_attention},
      {"gelu", check_gelu},
      {"residual", check_residual},
      {"crossentropy_train", [](const Backends& be) { return check_crossentropy(be, 1.f); }},
      {"crossentropy_train_scaled", [](const Backends& be) { return check_crossentropy(be, 0.25f); }},
      {"crossentropy_eval", [](const Backends& be) { return check_crossentropy(be, 0.f); }},
      {"sum_of_squares", check_sum_of_squares},
      {"adamw", check_adamw},
      {"stage_step", stage_step_check},
  };
  return checks;
}

std::vector<std::string> check_names() {
  std::vector<std::string> names;
  for (const Check& c : all_checks()) names.push_back(c.name);
  return names;
}

}  // namespace eth::test::gpu
