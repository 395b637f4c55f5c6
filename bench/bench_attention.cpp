// bench_attention: the two CPU attention kernels, blocked (flash_attention.cpp) against
// materialised (B, NH, T, T) (materialised_attention.cpp), in the same process, interleaved per
// repeat so that both see the same load. Per sequence length: forward and backward medians, the
// floats each keeps for backward per (sample, head), and how far apart their results are. The
// CPU backend runs the faster by T (kernels/attention_path.hpp, whose threshold this measured);
// docs/results.md quotes the runs and their commands (--json bench/results/attention*.json).
#include <boost/program_options.hpp>
#include <omp.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <iostream>
#include <limits>
#include <nlohmann/json.hpp>
#include <vector>

#include "bench/bench_stamp.hpp"
#include "kernels/cpu/gpt_ops.hpp"
#include "lib/base/command_line.hpp"
#include "lib/base/input_error.hpp"
#include "lib/base/random.hpp"

namespace po = boost::program_options;
using json = nlohmann::json;
namespace ops = eth::kernels::cpu;

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::vector<float> random_floats(size_t n, uint64_t stream) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; i++) v[i] = static_cast<float>(2.0 * eth::uniform_at(stream, i) - 1.0);
  return v;
}

// max |a - b| / max |b|: how far the blocked result is from the materialised one.
double relative_max_diff(const std::vector<float>& a, const std::vector<float>& b) {
  double diff = 0, scale = 0;
  for (size_t i = 0; i < a.size(); i++) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(b[i])));
  }
  return diff / scale;
}

json run_one(int B, int T, int C, int NH, int repeats) {
  const size_t BTC = static_cast<size_t>(B) * T * C, TT = static_cast<size_t>(T) * T;
  // Scores of order one, as a trained model's: q and k entries in [-1, 1) give q.k / sqrt(hs)
  // of standard deviation about 0.6.
  const std::vector<float> qkv = random_floats(3 * BTC, 1), dout = random_floats(BTC, 2);
  std::vector<float> out_m(BTC), out_b(BTC), dqkv_m(3 * BTC), dqkv_b(3 * BTC);
  std::vector<float> att(static_cast<size_t>(B) * NH * TT), lse(static_cast<size_t>(B) * NH * T);
  std::vector<double> fwd_m, bwd_m, fwd_b, bwd_b;
  for (int r = 0; r <= repeats; r++) {  // repeat 0 warms caches and page tables, untimed
    double t0 = now_ms();
    ops::materialised_attention_forward(out_m.data(), att.data(), qkv.data(), B, T, eth::kernels::AttentionHeads::multi_head(C, NH));
    double t1 = now_ms();
    ops::materialised_attention_backward(dqkv_m.data(), dout.data(), qkv.data(), att.data(), B, T, eth::kernels::AttentionHeads::multi_head(C, NH));
    double t2 = now_ms();
    if (r > 0) fwd_m.push_back(t1 - t0), bwd_m.push_back(t2 - t1);
    t0 = now_ms();
    ops::flash_attention_forward(out_b.data(), lse.data(), qkv.data(), B, T, eth::kernels::AttentionHeads::multi_head(C, NH));
    t1 = now_ms();
    ops::flash_attention_backward(dqkv_b.data(), dout.data(), qkv.data(), out_b.data(), lse.data(), B, T, eth::kernels::AttentionHeads::multi_head(C, NH));
    t2 = now_ms();
    if (r > 0) fwd_b.push_back(t1 - t0), bwd_b.push_back(t2 - t1);
  }
  const double m = median(fwd_m) + median(bwd_m), b = median(fwd_b) + median(bwd_b);
  return {{"T", T},
          {"materialised_ms", {{"forward", median(fwd_m)}, {"backward", median(bwd_m)}, {"total", m}}},
          {"blocked_ms", {{"forward", median(fwd_b)}, {"backward", median(bwd_b)}, {"total", b}}},
          {"speedup_blocked_over_materialised", m / b},
          {"floats_kept_per_sample_head", {{"materialised", TT}, {"blocked", T}}},
          {"relative_max_diff", {{"out", relative_max_diff(out_b, out_m)}, {"dqkv", relative_max_diff(dqkv_b, dqkv_m)}}}};
}

}  // namespace

int main(int argc, char** argv) {
  const double load_at_start = eth::bench::load_now();
  try {
    int B = 4, C = 768, NH = 12, repeats = 5;
    std::vector<int> seq_lens{64, 128, 256, 512, 1024};
    std::string json_path;
    po::options_description desc("bench_attention: blocked vs materialised CPU attention (GPT-2 124M shapes by default)");
    desc.add_options()("help", "this text")("batch", po::value(&B)->default_value(B), "samples B")(
        "channels", po::value(&C)->default_value(C), "channels C")("heads", po::value(&NH)->default_value(NH),
                                                                   "heads NH")(
        "seq-lens", po::value(&seq_lens)->multitoken(), "sequence lengths T (default 64 128 256 512 1024)")(
        "repeats", po::value(&repeats)->default_value(repeats), "timed repeats per T (medians)")(
        "json", po::value(&json_path), "also write the JSON here");
    if (!eth::parse_command_line(argc, argv, desc)) return 0;
    if (B <= 0 || C <= 0 || NH <= 0 || C % NH != 0)
      eth::fail_input("--batch/--channels/--heads", "value", "positive, with channels a multiple of heads",
                      std::to_string(B) + "/" + std::to_string(C) + "/" + std::to_string(NH));
    if (repeats <= 0) eth::fail_input("--repeats", "value", "a positive count", std::to_string(repeats));
    for (int T : seq_lens)
      if (T <= 0) eth::fail_input("--seq-lens", "value", "positive token counts", std::to_string(T));
    json rows = json::array();
    for (int T : seq_lens) rows.push_back(run_one(B, T, C, NH, repeats));
    const json result = {{"benchmark", "attention"},
                         {"config", {{"B", B}, {"C", C}, {"NH", NH}, {"repeats", repeats},
                                     {"omp_max_threads", omp_get_max_threads()}}},
                         {"results", rows}};
    std::cout << result.dump(2) << '\n';
    if (!json_path.empty()) eth::bench::write_stamped(json_path, result, load_at_start);
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "bench_attention: " << e.what() << '\n';
    return 1;
  }
}
