// kernel_profile: the interpreter's counters (kernels/simt/profile.hpp) over real kernels of the
// bf16 path, one row per launch: the flash attention forward and backward (its Delta kernel, dK/dV,
// dQ), the fused residual + layernorm forward and the layernorm backward (its rows kernel and the
// column sums), at GPT-2 124M's widths (C 768, 12 heads) on B x T rows, and the classifier on 4
// rows of its vocabulary. Counts only: no time model yet (issue 50, item 2). The inputs are
// synthetic; no count here depends on the values.
//
//   kernel_profile [--batch 1] [--seq-len 256] [--slots 132] [--json FILE]
//
// --slots: the blocks that run at once (SMs x blocks per SM) for the tail factor; an H200 has 132 SMs.
#include <boost/program_options.hpp>

#include <cstdio>
#include <cstdlib>
#include <memory>
#include <type_traits>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "kernels/emulated/host_launch.hpp"
#include "kernels/gpu_ops/classifier_bf16.hpp"
#include "kernels/gpu_ops/flash_attention_bf16.hpp"
#include "kernels/gpu_ops/layernorm_bf16.hpp"

namespace po = boost::program_options;
using json = nlohmann::json;
using eth::kernels::bf16;
namespace simt = eth::kernels::simt;

namespace {

// n values of T at a 256-byte boundary, as cudaMalloc places an allocation: sectors and lines
// per request depend on it.
template <class T>
class Buffer {
 public:
  explicit Buffer(size_t n, float fill = 0.f)
      : p_(static_cast<T*>(std::aligned_alloc(256, (n * sizeof(T) + 255) / 256 * 256)), std::free) {
    for (size_t i = 0; i < n; i++) {
      const float v = fill * static_cast<float>(static_cast<int>(i % 17) - 8);
      if constexpr (std::is_same_v<T, int32_t>) p_.get()[i] = static_cast<int32_t>(i % 1000);
      else if constexpr (std::is_same_v<T, float>) p_.get()[i] = v;
      else p_.get()[i] = simt::to_bf16(v);
    }
  }
  T* data() const { return p_.get(); }

 private:
  std::unique_ptr<T, void (*)(void*)> p_;
};

std::string ratio(uint64_t a, uint64_t b) {
  char text[64];
  std::snprintf(text, sizeof text, "%llu/%llu", static_cast<unsigned long long>(a), static_cast<unsigned long long>(b));
  return text;
}

void print(const std::vector<simt::LaunchProfile>& profiles, int slots) {
  std::printf("%-37s %-10s %5s %9s %6s %6s %9s %6s %12s %12s %17s %15s %7s %8s %6s %7s %5s %6s  %s\n", "kernel", "grid",
              "block", "ld_req", "sec/rq", "ideal", "st_req", "sec/rq", "bytes_req", "bytes_uniq", "shared_wf/ideal",
              "ldmatrix_wf/id", "mma", "special", "fp64", "atomics", "bars", "tail", "worst line (sectors/request)");
  for (const simt::LaunchProfile& p : profiles) {
    const std::string grid =
        std::to_string(p.grid.x) + "," + std::to_string(p.grid.y) + "," + std::to_string(p.grid.z);
    const simt::GlobalSite* worst = p.worst_site();
    std::printf("%-37s %-10s %5u %9llu %6.2f %6.2f %9llu %6.2f %12llu %12llu %17s %15s %7llu %8llu %6llu %7llu %5llu %6.2f  %s (%.1f)\n",
                p.dialect_name.c_str(), grid.c_str(), p.block.x, static_cast<unsigned long long>(p.loads.requests),
                p.loads.sectors_per_request(),
                p.loads.requests ? double(p.loads.ideal_sectors) / double(p.loads.requests) : 0.0,
                static_cast<unsigned long long>(p.stores.requests),
                p.stores.sectors_per_request(), static_cast<unsigned long long>(p.loads.bytes + p.stores.bytes),
                static_cast<unsigned long long>(p.distinct_bytes_read + p.distinct_bytes_written),
                ratio(p.shared_loads.wavefronts + p.shared_stores.wavefronts, p.shared_loads.ideal + p.shared_stores.ideal)
                    .c_str(),
                ratio(p.ldmatrix.wavefronts, p.ldmatrix.ideal).c_str(), static_cast<unsigned long long>(p.mma),
                static_cast<unsigned long long>(p.special), static_cast<unsigned long long>(p.fp64),
                static_cast<unsigned long long>(p.atomics), static_cast<unsigned long long>(p.barriers),
                p.tail_factor(slots), worst ? worst->where.c_str() : "-",
                worst ? worst->traffic.sectors_per_request() : 0.0);
  }
  for (const simt::LaunchProfile& p : profiles) std::printf("%s: %s\n", p.dialect_name.c_str(), p.name.c_str());
}

// One entry per launch, with the names issue 50 gives the fields where it names them.
json as_json(const std::vector<simt::LaunchProfile>& profiles, int slots) {
  json kernels = json::array();
  for (const simt::LaunchProfile& p : profiles) {
    const simt::GlobalSite* worst = p.worst_site();
    const uint64_t requests = p.loads.requests + p.stores.requests;
    kernels.push_back({
        {"name", p.name},
        {"dialect_name", p.dialect_name},
        {"grid", {p.grid.x, p.grid.y, p.grid.z}},
        {"block", {p.block.x, p.block.y, p.block.z}},
        {"shared_bytes", p.shared_bytes},
        {"launches", 1},
        {"dram_bytes", p.distinct_bytes_read + p.distinct_bytes_written},
        {"requested_bytes", p.loads.bytes + p.stores.bytes},
        {"requests", requests},
        {"sectors_per_request", requests ? double(p.loads.sectors + p.stores.sectors) / double(requests) : 0.0},
        {"ideal_sectors_per_request",
         requests ? double(p.loads.ideal_sectors + p.stores.ideal_sectors) / double(requests) : 0.0},
        {"shared_wavefronts", p.shared_loads.wavefronts + p.shared_stores.wavefronts + p.ldmatrix.wavefronts},
        {"shared_wavefronts_ideal", p.shared_loads.ideal + p.shared_stores.ideal + p.ldmatrix.ideal},
        {"mma", p.mma},
        {"sfu", p.special},
        {"fp64", p.fp64},
        {"atomics", p.atomics},
        {"atomic_addresses", p.atomic_addresses},
        {"barriers", p.barriers},
        {"tail", p.tail_factor(slots)},
        {"worst_line", worst ? worst->where : ""},
        {"worst_sectors_per_request", worst ? worst->traffic.sectors_per_request() : 0.0},
    });
  }
  return kernels;
}

}  // namespace

int main(int argc, char** argv) {
  int B = 1, T = 256, slots = 132;
  std::string json_path;
  po::options_description options("kernel_profile");
  options.add_options()("help", "this text")("batch", po::value(&B), "B (default 1)")(
      "seq-len", po::value(&T), "T (default 256)")("slots", po::value(&slots), "blocks at once (default 132)")(
      "json", po::value(&json_path), "also write the rows to this file as JSON");
  po::variables_map vm;
  try {
    po::store(po::parse_command_line(argc, argv, options), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    std::cerr << "kernel_profile: " << e.what() << "\n";
    return 2;
  }
  if (vm.count("help")) {
    std::cout << options;
    return 0;
  }
  if (B < 1 || T < 1 || slots < 1) {
    std::cerr << "kernel_profile: --batch, --seq-len and --slots must be at least 1\n";
    return 2;
  }
  const int C = 768, NH = 12, N = B * T;
  eth::kernels::emulated::HostLaunch launch;
  launch.set_counters(true);

  const Buffer<bf16> qkv(size_t(N) * 3 * C, 0.01f), out(size_t(N) * C, 0.02f), dout(size_t(N) * C, 0.03f);
  const Buffer<float> lse(size_t(B) * NH * T, 0.1f);
  const Buffer<bf16> dqkv(size_t(N) * 3 * C), residual(size_t(N) * C), normed(size_t(N) * C);
  eth::kernels::gpu_ops::attention_forward16<eth::kernels::emulated::HostLaunch, bf16>(launch, out.data(), lse.data(),
                                                                                        qkv.data(), B, T, C, NH);
  eth::kernels::gpu_ops::attention_backward16<eth::kernels::emulated::HostLaunch, bf16>(
      launch, dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), B, T, C, NH);

  const Buffer<bf16> inp(size_t(N) * C, 0.05f), weight(C, 0.1f), dinp(size_t(N) * C);
  const Buffer<float> mean(N, 0.01f), rstd(N, 0.1f), dweight(C), dbias(C);
  eth::kernels::gpu_ops::fused_residual_layernorm_forward16<eth::kernels::emulated::HostLaunch, bf16>(
      launch, residual.data(), normed.data(), mean.data(), rstd.data(), inp.data(), dout.data(), weight.data(),
      weight.data(), N, C);
  eth::kernels::gpu_ops::layernorm_backward16<eth::kernels::emulated::HostLaunch, bf16>(
      launch, dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(), weight.data(), mean.data(),
      rstd.data(), N, C);

  // The LM head's classifier on 4 rows of GPT-2's padded vocabulary (each row 100 KB in bf16).
  const int rows = 4, V = 50257, Vp = 50304;
  const Buffer<bf16> logits(size_t(rows) * Vp, 0.01f);
  const Buffer<float> token_losses(rows);
  const Buffer<int32_t> targets(rows);
  eth::kernels::gpu_ops::classifier_rows16<eth::kernels::emulated::HostLaunch, bf16>(
      launch, token_losses.data(), logits.data(), targets.data(), rows, V, Vp, 1.f / static_cast<float>(rows));

  std::printf("B %d, T %d, C %d, NH %d; tail factor on %d slots\n", B, T, C, NH, slots);
  print(launch.profiles(), slots);
  if (!json_path.empty()) {
    std::ofstream file(json_path);
    file << json{{"batch", B}, {"seq_len", T}, {"slots", slots}, {"kernels", as_json(launch.profiles(), slots)}}.dump(1)
         << "\n";
    if (!file) {
      std::cerr << "kernel_profile: cannot write " << json_path << "\n";
      return 1;
    }
  }
  return 0;
}
