// kernel_profile: the interpreter's counters (kernels/simt/profile.hpp) over real kernels of the
// bf16 path, one row per kernel, and each kernel's time on a named GPU by the time model
// (kernels/simt/time_model.hpp): the flash attention forward and backward (its Delta kernel,
// dK/dV, dQ), the fused residual + layernorm forward and the layernorm backward (its rows kernel
// and the column sums), at GPT-2 124M's widths (C 768, 12 heads, 12 layers) on B x T rows, the
// classifier on B x T rows of its vocabulary and AdamW over its 124M parameters; the step's
// cuBLASLt GEMMs by the roofline of their shapes. The predicted step adds every row times its
// launches in one step. The inputs are synthetic; no count here depends on the values.
//
//   kernel_profile [--batch 1] [--seq-len 256] [--sample-batch 1] [--gpu H200] [--ptxas FILE] [--json FILE]
//
// The interpreter runs the kernels at --sample-batch (B must be a whole multiple of it) and scales
// each launch's counts to B (simt::scaled: the grid along the batch, or the loops of a kernel
// whose grid is fixed); the classifier runs 4 rows and AdamW 62 of its 7,688 segments, scaled
// the same way. docs/gpu.md, "The time model", checks the scaling against whole runs.
#include <boost/program_options.hpp>
#include <cxxabi.h>

#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <memory>
#include <type_traits>
#include <fstream>
#include <map>
#include <regex>
#include <iostream>
#include <nlohmann/json.hpp>

#include "bench/bench_stamp.hpp"
#include "lib/base/input_error.hpp"
#include <string>
#include <tuple>
#include <vector>

#include "kernels/emulated/host_launch.hpp"
#include "kernels/gpu_ops/classifier_bf16.hpp"
#include "kernels/gpu_ops/flash_attention_bf16.hpp"
#include "kernels/gpu_ops/layernorm_bf16.hpp"
#include "kernels/gpu_ops/optimizer.hpp"
#include "kernels/gpu_peaks.hpp"
#include "kernels/simt/time_model.hpp"

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

// One kernel of the step: its launch scaled to the predicted micro-batch, its launches a step and
// its predicted time.
struct Row {
  simt::LaunchProfile p;
  int launches;
  simt::KernelTime time;
  int registers = 0;  // per thread, from --ptxas; 0: not known
};

// A GEMM of the step by its shape, (M x K) x (K x N), `count` times a step.
struct Gemm {
  std::string name;
  int64_t M, N, K;
  int count;
  double us;
};

void print(const std::vector<Row>& rows, const std::vector<Gemm>& gemms, const char* gpu, double step_ms) {
  std::printf("%-37s %-10s %5s %4s %9s %9s %-9s %4s %6s %9s %6s %6s %12s %17s %15s %8s %8s %9s %7s  %s\n", "kernel",
              "grid", "block", "n", "pred_us", "total_us", "bound", "b/SM", "tail", "ld_req", "sec/rq", "ideal",
              "bytes_uniq", "shared_wf/ideal", "ldmatrix_wf/id", "mma", "special", "fp64", "atomics",
              "worst line (sectors/request)");
  for (const Row& r : rows) {
    const simt::LaunchProfile& p = r.p;
    const std::string grid =
        std::to_string(p.grid.x) + "," + std::to_string(p.grid.y) + "," + std::to_string(p.grid.z);
    const simt::GlobalSite* worst = p.worst_site();
    std::printf("%-37s %-10s %5u %4d %9.1f %9.1f %-9s %4d %6.2f %9llu %6.2f %6.2f %12llu %17s %15s %8llu %8llu %9llu %7llu  %s (%.1f)\n",
                p.dialect_name.c_str(), grid.c_str(), p.block.x, r.launches, r.time.predicted_us,
                r.time.predicted_us * r.launches, simt::resource_name(r.time.bound), r.time.blocks_per_sm, r.time.tail,
                static_cast<unsigned long long>(p.loads.requests), p.loads.sectors_per_request(),
                p.loads.requests ? double(p.loads.ideal_sectors) / double(p.loads.requests) : 0.0,
                static_cast<unsigned long long>(p.distinct_bytes_read + p.distinct_bytes_written),
                ratio(p.shared_loads.wavefronts + p.shared_stores.wavefronts, p.shared_loads.ideal + p.shared_stores.ideal)
                    .c_str(),
                ratio(p.ldmatrix.wavefronts, p.ldmatrix.ideal).c_str(), static_cast<unsigned long long>(p.mma),
                static_cast<unsigned long long>(p.special), static_cast<unsigned long long>(p.fp64),
                static_cast<unsigned long long>(p.atomics), worst ? worst->where.c_str() : "-",
                worst ? worst->traffic.sectors_per_request() : 0.0);
  }
  for (const Gemm& g : gemms)
    std::printf("%-37s %-10s %5s %4d %9.1f %9.1f %-9s (cuBLASLt, roofline of %lld x %lld x %lld)\n", g.name.c_str(), "-", "-",
                g.count, g.us, g.us * g.count, "roofline", static_cast<long long>(g.M), static_cast<long long>(g.N),
                static_cast<long long>(g.K));
  std::printf("predicted step on %s: %.2f ms of kernels (the rows above times their launches)\n", gpu, step_ms);
  for (const Row& r : rows) std::printf("%s: %s\n", r.p.dialect_name.c_str(), r.p.name.c_str());
}

// One entry per kernel, with the names issue 50 gives the fields where it names them.
json as_json(const std::vector<Row>& rows) {
  json kernels = json::array();
  for (const Row& r : rows) {
    const simt::LaunchProfile& p = r.p;
    const simt::GlobalSite* worst = p.worst_site();
    const uint64_t requests = p.loads.requests + p.stores.requests;
    json resource_us = json::object();
    for (int i = 0; i < simt::kResources; i++) resource_us[simt::resource_name(static_cast<simt::Resource>(i))] = r.time.us[i];
    kernels.push_back({
        {"name", p.name},
        {"dialect_name", p.dialect_name},
        {"grid", {p.grid.x, p.grid.y, p.grid.z}},
        {"block", {p.block.x, p.block.y, p.block.z}},
        {"shared_bytes", p.shared_bytes},
        {"launches", r.launches},
        {"predicted_us", r.time.predicted_us},
        {"bound", simt::resource_name(r.time.bound)},
        {"resource_us", resource_us},
        {"dram_bytes", r.time.dram_bytes},
        {"distinct_bytes", p.distinct_bytes_read + p.distinct_bytes_written},
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
        {"blocks_per_sm", r.time.blocks_per_sm},
        {"registers", r.registers},
        {"tail", r.time.tail},
        {"worst_line", worst ? worst->where : ""},
        {"worst_sectors_per_request", worst ? worst->traffic.sectors_per_request() : 0.0},
    });
  }
  return kernels;
}

// A kernel's name up to its parameter list, without the space older demanglers put between '>'s:
// the key on which a profile's name and ptxas' demangled entry meet.
std::string entry_key(std::string name) {
  for (size_t at; (at = name.find("> >")) != std::string::npos;) name.erase(at + 1, 1);
  return name.substr(0, name.find('('));
}

// Registers per thread of each kernel entry that `nvcc -Xptxas -v` compiled for sm_`cc`, from
// its output, by entry_key.
std::map<std::string, int> ptxas_registers(const std::string& path, int cc) {
  std::ifstream file(path);
  if (!file) throw std::runtime_error("cannot read " + path);
  const std::regex entry(R"(Compiling entry function '([^']+)' for 'sm_([0-9]+)')"), used(R"(Used ([0-9]+) registers)");
  std::map<std::string, int> registers;
  std::string line, key;
  std::smatch m;
  while (std::getline(file, line)) {
    if (std::regex_search(line, m, entry)) {
      key.clear();
      if (std::stoi(m[2]) != cc) continue;
      int status = 0;
      char* demangled = abi::__cxa_demangle(m[1].str().c_str(), nullptr, nullptr, &status);
      if (status == 0) key = entry_key(demangled);
      std::free(demangled);
    } else if (!key.empty() && std::regex_search(line, m, used)) {
      registers[key] = std::stoi(m[1]);
    }
  }
  return registers;
}

// The launch `p`, run at a sample, as it would be `times` times larger: along its grid's batch
// dimension (y where the grid has one: the flash kernels' B x NH; else x), or, for the column sums
// whose grid is the columns, by the rows each block adds.
simt::LaunchProfile scale_to(const simt::LaunchProfile& p, unsigned times) {
  if (p.dialect_name == "column_sums_of_partials") return simt::scaled(p, p.grid, times);
  if (p.dialect_name == "column_finish") return p;  // C columns, whatever the rows
  simt::Dim3 grid = p.grid;
  (grid.y > 1 ? grid.y : grid.x) *= times;
  return simt::scaled(p, grid);
}
}  // namespace

int main(int argc, char** argv) {
  const double load_at_start = eth::bench::load_now();
  int B = 1, T = 256, sample_B = 1;
  std::string json_path, gpu_name = "H200", ptxas_path;
  po::options_description options("kernel_profile");
  options.add_options()("help", "this text")("batch", po::value(&B), "B, the micro-batch predicted (default 1)")(
      "seq-len", po::value(&T), "T (default 256)")("sample-batch", po::value(&sample_B),
                                                     "the B the interpreter runs, scaled to --batch (default 1)")(
      "gpu", po::value(&gpu_name), ("the GPU of the time model: " + eth::kernels::gpu_models()).c_str())(
      "ptxas", po::value(&ptxas_path),
      "nvcc -Xptxas -v's output for the kernels' .cu files: registers per thread, for blocks per SM")(
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
  const eth::kernels::GpuPeak* gpu = eth::kernels::find_gpu_model(gpu_name);
  if (gpu == nullptr) {
    std::cerr << "kernel_profile: --gpu " << gpu_name << " is not in the catalog; known: " << eth::kernels::gpu_models()
              << "\n";
    return 2;
  }
  if (B < 1 || T < 1 || sample_B < 1 || B % sample_B != 0) {
    std::cerr << "kernel_profile: --batch, --seq-len and --sample-batch must be at least 1, --batch a multiple of "
                 "--sample-batch\n";
    return 2;
  }
  const int C = 768, NH = 12, L = 12, b = sample_B, n = b * T;
  const unsigned times = static_cast<unsigned>(B / sample_B);
  eth::kernels::emulated::HostLaunch launch;
  launch.set_counters(true);
  std::vector<int> launches;  // a step's launches of each profile, in the order they come
  auto ran = [&](int per_step) { launches.resize(launch.profiles().size(), per_step); };

  const Buffer<bf16> qkv(size_t(n) * 3 * C, 0.01f), out(size_t(n) * C, 0.02f), dout(size_t(n) * C, 0.03f);
  const Buffer<float> lse(size_t(b) * NH * T, 0.1f);
  const Buffer<bf16> dqkv(size_t(n) * 3 * C), residual(size_t(n) * C), normed(size_t(n) * C);
  const eth::kernels::AttentionHeads heads = eth::kernels::AttentionHeads::multi_head(C, NH);
  eth::kernels::gpu_ops::attention_forward16<eth::kernels::emulated::HostLaunch, bf16>(launch, out.data(), lse.data(),
                                                                                        qkv.data(), b, T, heads);
  eth::kernels::gpu_ops::attention_backward16<eth::kernels::emulated::HostLaunch, bf16>(
      launch, dqkv.data(), dout.data(), qkv.data(), out.data(), lse.data(), b, T, heads);
  ran(L);

  const Buffer<bf16> inp(size_t(n) * C, 0.05f), weight(C, 0.1f), dinp(size_t(n) * C);
  const Buffer<float> mean(n, 0.01f), rstd(n, 0.1f), dweight(C), dbias(C);
  eth::kernels::gpu_ops::fused_residual_layernorm_forward16<eth::kernels::emulated::HostLaunch, bf16>(
      launch, residual.data(), normed.data(), mean.data(), rstd.data(), inp.data(), dout.data(), weight.data(),
      weight.data(), n, C);
  ran(2 * L);  // ln2 of every layer, ln1 of all but the first, and lnf
  eth::kernels::gpu_ops::layernorm_backward16<eth::kernels::emulated::HostLaunch, bf16>(
      launch, dinp.data(), dweight.data(), dbias.data(), dout.data(), inp.data(), weight.data(), mean.data(),
      rstd.data(), n, C);
  ran(2 * L + 1);

  // The LM head's classifier on 4 rows of GPT-2's padded vocabulary (each row 100 KB in bf16),
  // scaled to B x T rows.
  const int rows = 4, V = 50257, Vp = 50304;
  const Buffer<bf16> logits(size_t(rows) * Vp, 0.01f);
  const Buffer<float> token_losses(rows);
  const Buffer<int32_t> targets(rows);
  eth::kernels::gpu_ops::classifier_rows16<eth::kernels::emulated::HostLaunch, bf16>(
      launch, token_losses.data(), logits.data(), targets.data(), rows, V, Vp, 1.f / static_cast<float>(rows));
  ran(1);
  const unsigned classifier_times = static_cast<unsigned>(size_t(B) * T / rows);

  // AdamW on 62 full segments of the 7,688 of GPT-2 124M's parameters (kernels/adamw_segments.hpp).
  const int segments = 62, step_segments = 7688;
  std::vector<eth::kernels::AdamWSegment> table;
  eth::kernels::append_adamw_segments(table, 0, 0, size_t(segments) * eth::kernels::kAdamWSegmentFloats, true);
  const size_t floats = size_t(segments) * eth::kernels::kAdamWSegmentFloats;
  const Buffer<float> params(floats, 0.01f), grads(floats, 0.001f), m(floats), v(floats);
  const Buffer<bf16> copies(floats);
  const eth::kernels::gpu_ops::AdamWSettings h{1e-4f, 0.9f, 0.95f, 1e-8f, 0.1f, 1.f, 0.1f, 0.05f};
  eth::kernels::gpu_ops::adamw_update(launch, params.data(), copies.data(), grads.data(), m.data(), v.data(),
                                      table.data(), table.size(), h);
  ran(1);

  std::map<std::string, int> registers;
  if (!ptxas_path.empty()) {
    try {
      registers = ptxas_registers(ptxas_path, gpu->sm.compute_capability);
    } catch (const std::exception& e) {
      std::cerr << "kernel_profile: --ptxas: " << e.what() << "\n";
      return 2;
    }
  }
  const simt::TimeModelConstants constants;
  std::vector<Row> rows_out;
  double step_us = 0.0;
  const std::vector<simt::LaunchProfile>& profiles = launch.profiles();
  for (size_t i = 0; i < profiles.size(); i++) {
    const simt::LaunchProfile& p = profiles[i];
    const unsigned k = p.dialect_name.rfind("classifier", 0) == 0 ? classifier_times
                       : p.dialect_name.rfind("adamw", 0) == 0    ? static_cast<unsigned>(step_segments / segments)
                                                                  : times;
    Row row{scale_to(p, k), launches[i], {}, 0};
    const auto found = registers.find(entry_key(p.name));
    row.registers = found == registers.end() ? 0 : found->second;
    row.time = simt::predict(row.p, *gpu, constants, row.registers);
    step_us += row.time.predicted_us * row.launches;
    rows_out.push_back(std::move(row));
  }
  // The step's GEMMs (bf16, N = B T tokens): per layer QKV, the attention projection, the MLP's
  // two; each forward once and backward twice (dinp, dweight); the tied LM head likewise.
  const int64_t N = int64_t(B) * T;
  std::vector<Gemm> gemms;
  auto add_gemm = [&](const std::string& name, int64_t M, int64_t Nn, int64_t K, int count) {
    gemms.push_back({name, M, Nn, K, count, simt::gemm_us(M, Nn, K, 2, *gpu, constants)});
    step_us += gemms.back().us * count;
  };
  for (const auto& [name, in, outw] : {std::tuple<const char*, int64_t, int64_t>{"gemm qkv", C, 3 * C},
                                       {"gemm attention proj", C, C},
                                       {"gemm fc", C, 4 * C},
                                       {"gemm fc proj", 4 * C, C}}) {
    add_gemm(std::string(name) + " forward", N, outw, in, L);  // (N, in) x (in, out)
    add_gemm(std::string(name) + " dinp", N, in, outw, L);     // (N, out) x (out, in)
    add_gemm(std::string(name) + " dweight", in, outw, N, L);  // (in, N) x (N, out)
  }
  add_gemm("gemm lm head forward", N, Vp, C, 1);
  add_gemm("gemm lm head dinp", N, C, Vp, 1);
  add_gemm("gemm lm head dweight", Vp, C, N, 1);

  std::printf("B %d (interpreted at %d, scaled), T %d, C %d, NH %d, %d layers; GPT-2 124M's bf16 step on %s\n", B,
              sample_B, T, C, NH, L, gpu->sm.model);
  print(rows_out, gemms, gpu->sm.model, step_us / 1e3);
  if (!json_path.empty()) {
    json gemm_rows = json::array();
    for (const Gemm& g : gemms)
      gemm_rows.push_back({{"name", g.name}, {"m", g.M}, {"n", g.N}, {"k", g.K}, {"launches", g.count},
                           {"predicted_us", g.us}, {"bound", "roofline"}});
    try {
      eth::bench::write_stamped(
          json_path,
          json{{"batch", B},
               {"sample_batch", sample_B},
               {"seq_len", T},
               {"gpu", gpu->sm.model},
               {"constants",
                {{"dram_fraction", constants.dram_fraction}, {"mma_fraction", constants.mma_fraction},
                 {"l2_fraction", constants.l2_fraction}, {"launch_us", constants.launch_us},
                 {"gemm_efficiency", constants.gemm_efficiency}}},
               {"predicted_step_ms", step_us / 1e3},
               {"kernels", as_json(rows_out)},
               {"gemms", gemm_rows}},
          load_at_start);
    } catch (const eth::InputError& e) {
      std::cerr << "kernel_profile: " << e.what() << "\n";
      return 1;
    }
  }
  return 0;
}
