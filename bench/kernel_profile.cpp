// kernel_profile: one training step of a model as a GPU would run it, profiled in the kernel
// interpreter (ETH_BACKEND=cuda-emulated) and priced on a named GPU: every kernel launch's
// counters (kernels/simt/profile.hpp) and its time by the time model (kernels/simt/time_model.hpp),
// every library GEMM by the roofline of its shape; one row per kernel with its launches in the
// step, and the predicted step. Also the step's device memory on that GPU (lib/plan/memory_model.hpp),
// and one line where it would not fit.
//
//   kernel_profile [--model inputs/models/gpt2-124m.yaml] [--precision bf16] [--batch 1] [--seq-len 1024]
//                  [--gpu H200] [--ptxas FILE] [--sample-blocks 256] [--json FILE]
//
// The step is lib/job/trainer.cpp's with micro_batch == global_batch on one GPU: zero_grads,
// forward, loss with gradient (the head in its chunks), backward, the gradient norm, AdamW.
// What makes it fast enough to run in CI's minutes:
//  - layers: the steps of 1 and 2 layers are profiled and every count and time extrapolated to
//    the model's L (c1 + (L - 1)(c2 - c1): exact, each layer runs the same launches on the same
//    shapes, and the optimizer's per-layer parameters add the same per layer);
//  - blocks: a launch counts at most --sample-blocks of its blocks (whole rows of its grid where a
//    row fits, whole samples of NH rows where its rows are the batch's heads) and extends their counts to the grid
//    (simt::extend_sample); its other blocks, and the GEMMs' products, do not run at all. The
//    counts of no kernel of the step depend on the values it reads (the sort, which the
//    embedding backward indexes by, still runs), so the values are left undefined.
// docs/gpu.md, "The time model", gives the model, its calibration and what the step leaves out.
#include <boost/program_options.hpp>
#include <cxxabi.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <map>
#include <memory>
#include <new>
#include <nlohmann/json.hpp>
#include <regex>
#include <stdexcept>
#include <string>
#include <vector>

#include "bench/bench_stamp.hpp"
#include "kernels/emulated/cuda_emulated_backend.hpp"
#include "kernels/emulated/host_launch.hpp"
#include "kernels/gpu_peaks.hpp"
#include "kernels/precision.hpp"
#include "kernels/simt/time_model.hpp"
#include "lib/base/command_line.hpp"
#include "lib/base/input_error.hpp"
#include "lib/base/random.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/model_tensors.hpp"
#include "lib/model/optimizer.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/model/stage.hpp"
#include "lib/plan/memory_model.hpp"

namespace po = boost::program_options;
using json = nlohmann::json;
namespace simt = eth::kernels::simt;
using eth::kernels::emulated::LibraryCall;

namespace {

// The launches and library calls of one step.
struct StepProfile {
  std::vector<simt::LaunchProfile> launches;
  std::vector<LibraryCall> calls;
};

std::unique_ptr<eth::kernels::Backend> gpu_backend(eth::kernels::Precision precision) {
  return eth::kernels::make_cuda_emulated_backend(0, eth::kernels::own_arithmetic_path(precision));
}

StepProfile profile_step(const eth::ModelConfig& model, int B, int T, eth::kernels::Precision precision,
                         uint64_t sample_blocks) {
  const std::unique_ptr<eth::kernels::Backend> backend = gpu_backend(precision);
  eth::kernels::emulated::HostLaunch& launch = *eth::kernels::cuda_emulated_launch(*backend);
  const eth::LayerRange layers{0, model.num_layers};
  eth::Stage stage(model, layers, B, T, 1, *backend);
  std::vector<float> params(stage.layout().size());
  eth::init_parameters(model, stage.layout(), 1, params.data());
  backend->copy_to_device(stage.params(), params.data(), params.size() * sizeof(float));
  stage.params_written();
  std::vector<int32_t> tokens(static_cast<size_t>(B) * T), targets(tokens.size());
  for (size_t i = 0; i < tokens.size(); i++) {
    tokens[i] = static_cast<int32_t>(eth::uniform_at(11, i) * model.vocab_size);
    targets[i] = static_cast<int32_t>(eth::uniform_at(12, i) * model.vocab_size);
  }
  const eth::AdamWConfig adamw;
  eth::AdamW optimizer(stage.layout(), adamw, *backend);
  backend->reserve_workspace(eth::stage_shape(model, layers, B, T, 0));

  // Rows of the flash kernels' grids come NH to a sample (the heaviest tiles of a sample first).
  launch.set_counters(true, {sample_blocks, static_cast<unsigned>(model.num_heads)}, /*values=*/false);
  stage.zero_grads();
  stage.forward(0, tokens.data(), nullptr);
  stage.loss(0, targets.data(), 1.0f);
  stage.backward(0, nullptr);
  const double grad_norm = std::sqrt(backend->sum_of_squares(stage.grads(), stage.layout().size())) / B;
  optimizer.step(stage.params(), stage.param_copies(), stage.grads(), 3e-4f,
                 static_cast<float>(eth::clip_factor(grad_norm, adamw.max_grad_norm) / B));
  backend->synchronize();
  StepProfile out{launch.profiles(), launch.library_calls()};
  launch.set_counters(false);
  return out;
}

// A kernel's launches of one grid in a step, and the time of each.
struct Variant {
  simt::Dim3 grid;
  double launches = 0;
  simt::KernelTime time;
};

// One kernel's launches in a step: the counts summed over them, their predicted time, each grid's
// launches (the head's classifier runs its chunks, the last one smaller), and the most expensive
// launch's bound, occupancy and tail.
struct KernelRow {
  std::string name, dialect_name;
  double launches = 0;
  double total_us = 0;
  std::map<std::string, double> counts;  // summed over the step's launches
  simt::LaunchProfile heaviest;          // the launch with the largest predicted time
  simt::KernelTime heaviest_time;
  double mma_min = 0;                    // summed, where the kernel's products are known
  int registers = 0;
  std::vector<Variant> variants;
};

bool same_grid(simt::Dim3 a, simt::Dim3 b) { return a.x == b.x && a.y == b.y && a.z == b.z; }

// A library call's shape in a step.
struct CallRow {
  LibraryCall call;
  double launches = 0;
  double us = 0;  // per call
};

// The fewest mma.sync (m16n8k16: 4096 FLOPs) the causal products of an attention kernel need: per
// query head, T (T + 1) / 2 query-key pairs times the head size, 2 FLOPs each, per product; the
// forward has two products (Q K^T, P V), dK/dV four (S, dP, dV, dK), dQ three (S, dP, dQ).
double attention_mma_min(const std::string& dialect_name, const eth::ModelConfig& model, int B, int T) {
  int products = 0;
  if (dialect_name.find("attention_forward") == 0) products = 2;
  else if (dialect_name.find("_dkdv") != std::string::npos) products = 4;
  else if (dialect_name.find("_dq") != std::string::npos) products = 3;
  if (products == 0) return 0;
  const double pairs = double(T) * (T + 1) / 2;
  return products * double(B) * model.num_heads * pairs * model.head_size() * 2 / 4096;
}

std::map<std::string, double> counts_of(const simt::LaunchProfile& p, uint64_t dram_bytes) {
  return {{"requests", double(p.loads.requests + p.stores.requests)},
          {"sectors", double(p.loads.sectors + p.stores.sectors)},
          {"ideal_sectors", double(p.loads.ideal_sectors + p.stores.ideal_sectors)},
          {"requested_bytes", double(p.loads.bytes + p.stores.bytes)},
          {"distinct_bytes", double(p.distinct_bytes_read + p.distinct_bytes_written)},
          {"dram_bytes", double(dram_bytes)},
          {"shared_wavefronts", double(p.shared_loads.wavefronts + p.shared_stores.wavefronts + p.ldmatrix.wavefronts)},
          {"shared_wavefronts_ideal", double(p.shared_loads.ideal + p.shared_stores.ideal + p.ldmatrix.ideal)},
          {"mma", double(p.mma)},
          {"sfu", double(p.special)},
          {"fp64", double(p.fp64)},
          {"atomics", double(p.atomics)},
          {"barriers", double(p.barriers)}};
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

// The step's kernels, each launch priced, by kernel (in the order they first launch).
std::vector<KernelRow> kernel_rows(const StepProfile& step, const eth::kernels::GpuPeak& gpu,
                                   const std::map<std::string, int>& registers, const eth::ModelConfig& model, int B,
                                   int T) {
  const simt::TimeModelConstants constants;
  std::vector<KernelRow> rows;
  for (const simt::LaunchProfile& p : step.launches) {
    auto row = std::find_if(rows.begin(), rows.end(), [&](const KernelRow& r) { return r.dialect_name == p.dialect_name; });
    if (row == rows.end()) row = rows.insert(rows.end(), KernelRow{p.name, p.dialect_name});
    const auto found = registers.find(entry_key(p.name));
    const int regs = found == registers.end() ? 0 : found->second;
    const simt::KernelTime time = simt::predict(p, gpu, constants, regs);
    row->launches += 1;
    row->total_us += time.predicted_us;
    for (const auto& [key, value] : counts_of(p, time.dram_bytes)) row->counts[key] += value;
    row->mma_min += attention_mma_min(p.dialect_name, model, B, T);
    auto v = std::find_if(row->variants.begin(), row->variants.end(), [&](const Variant& x) { return same_grid(x.grid, p.grid); });
    if (v == row->variants.end()) v = row->variants.insert(row->variants.end(), Variant{p.grid, 0, time});
    v->launches += 1;
    if (row->launches == 1 || time.predicted_us > row->heaviest_time.predicted_us) {
      row->heaviest = p;
      row->heaviest_time = time;
      row->registers = regs;
    }
  }
  return rows;
}

std::vector<CallRow> call_rows(const StepProfile& step, const eth::kernels::GpuPeak& gpu) {
  const simt::TimeModelConstants constants;
  std::vector<CallRow> rows;
  for (const LibraryCall& c : step.calls) {
    auto row = std::find_if(rows.begin(), rows.end(), [&](const CallRow& r) {
      return r.call.name == c.name && r.call.m == c.m && r.call.n == c.n && r.call.k == c.k;
    });
    if (row == rows.end()) {
      // The sort by its keys' and values' bytes (read and written once) at the attained DRAM rate.
      const double us = c.k > 0 ? simt::gemm_us(c.m, c.n, c.k, c.element_bytes, gpu, constants)
                                : 2.0 * double(c.m) * c.element_bytes /
                                          (gpu.bandwidth_gbs * 1e3 * constants.dram_fraction) +
                                      constants.launch_us;
      row = rows.insert(rows.end(), CallRow{c, 0, us});
    }
    row->launches += 1;
  }
  return rows;
}

// A kernel launched as often in both steps but on a grid that grows with the layers (AdamW's
// segments) has each such launch replaced, in both, by its profile at L layers
// (simt::extrapolated), which extrapolate_rows then leaves as priced.
void extrapolate_resized_launches(StepProfile& one, StepProfile& two, int L) {
  std::map<std::string, std::vector<simt::LaunchProfile*>> of_one, of_two;
  for (simt::LaunchProfile& p : one.launches) of_one[p.dialect_name].push_back(&p);
  for (simt::LaunchProfile& p : two.launches) of_two[p.dialect_name].push_back(&p);
  for (auto& [name, twos] : of_two) {
    const std::vector<simt::LaunchProfile*>& ones = of_one[name];
    if (ones.size() != twos.size()) continue;  // launches per layer: the same shapes each
    for (size_t i = 0; i < ones.size(); i++)
      if (ones[i]->grid.count() != twos[i]->grid.count())
        *ones[i] = *twos[i] = simt::extrapolated(*ones[i], *twos[i], L);
  }
}

// c1 + (L - 1)(c2 - c1).
double extrapolate(double c1, double c2, int L) { return c1 + (L - 1) * (c2 - c1); }

// The rows of a step of L layers from those of 1 (`one`) and 2 (`two`) layers.
void extrapolate_rows(const std::vector<KernelRow>& one, std::vector<KernelRow>& two, int L) {
  for (KernelRow& r : two) {
    const auto a = std::find_if(one.begin(), one.end(), [&](const KernelRow& o) { return o.dialect_name == r.dialect_name; });
    const KernelRow zero;
    const KernelRow& o = a == one.end() ? zero : *a;
    r.launches = extrapolate(o.launches, r.launches, L);
    r.total_us = extrapolate(o.total_us, r.total_us, L);
    r.mma_min = extrapolate(o.mma_min, r.mma_min, L);
    for (auto& [key, value] : r.counts) value = extrapolate(o.counts.count(key) ? o.counts.at(key) : 0.0, value, L);
    for (Variant& v : r.variants) {
      const auto w = std::find_if(o.variants.begin(), o.variants.end(), [&](const Variant& x) { return same_grid(x.grid, v.grid); });
      v.launches = extrapolate(w == o.variants.end() ? 0.0 : w->launches, v.launches, L);
    }
  }
}

void extrapolate_rows(const std::vector<CallRow>& one, std::vector<CallRow>& two, int L) {
  for (CallRow& r : two) {
    const auto a = std::find_if(one.begin(), one.end(), [&](const CallRow& o) {
      return o.call.name == r.call.name && o.call.m == r.call.m && o.call.n == r.call.n && o.call.k == r.call.k;
    });
    r.launches = extrapolate(a == one.end() ? 0.0 : a->launches, r.launches, L);
  }
}

double ratio_of(const std::map<std::string, double>& c, const char* num, const char* den) {
  return c.at(den) > 0 ? c.at(num) / c.at(den) : 0.0;
}

void print(const std::vector<KernelRow>& rows, const std::vector<CallRow>& calls) {
  std::printf("%-40s %7s %9s %9s %-9s %4s %5s %6s %6s %7s %9s %9s %9s %9s %9s %5s  %s\n", "kernel", "launch",
              "pred_us", "total_ms", "bound", "b/SM", "tail", "sec/rq", "ideal", "rq/dist", "dram_MB", "shared_wf",
              "wf_ideal", "mma", "mma_min", "fp64", "worst line (sectors/request)");
  for (const KernelRow& r : rows) {
    const simt::GlobalSite* worst = r.heaviest.worst_site();
    std::printf("%-40s %7.0f %9.1f %9.3f %-9s %4d %5.2f %6.2f %6.2f %7.2f %9.1f %9.3g %9.3g %9.3g %9.3g %5.0g  %s (%.1f)%s\n",
                r.dialect_name.c_str(), r.launches, r.total_us / r.launches, r.total_us / 1e3,
                simt::resource_name(r.heaviest_time.bound), r.heaviest_time.blocks_per_sm, r.heaviest_time.tail,
                ratio_of(r.counts, "sectors", "requests"), ratio_of(r.counts, "ideal_sectors", "requests"),
                ratio_of(r.counts, "requested_bytes", "distinct_bytes"), r.counts.at("dram_bytes") / 1e6,
                r.counts.at("shared_wavefronts"), r.counts.at("shared_wavefronts_ideal"), r.counts.at("mma"), r.mma_min,
                r.counts.at("fp64"), worst ? worst->where.c_str() : "-", worst ? worst->traffic.sectors_per_request() : 0.0,
                r.heaviest.sampled_blocks ? " sampled" : "");
  }
  for (const CallRow& c : calls)
    std::printf("%-40s %7.0f %9.1f %9.3f %-9s (%lld x %lld x %lld)\n", c.call.name.c_str(), c.launches, c.us,
                c.us * c.launches / 1e3, c.call.k > 0 ? "roofline" : "dram", static_cast<long long>(c.call.m),
                static_cast<long long>(c.call.n), static_cast<long long>(c.call.k));
}

// Each resource's time before the tail, µs, by its name.
json resource_json(const simt::KernelTime& time) {
  json out = json::object();
  for (int i = 0; i < simt::kResources; i++) out[simt::resource_name(static_cast<simt::Resource>(i))] = time.us[i];
  return out;
}

// Each grid's launches, its time and each resource's before the tail: what a calibration refits.
json variants_json(const std::vector<Variant>& variants) {
  json out = json::array();
  for (const Variant& v : variants)
    out.push_back({{"grid", {v.grid.x, v.grid.y, v.grid.z}}, {"launches", v.launches},
                   {"predicted_us", v.time.predicted_us}, {"resource_us", resource_json(v.time)}, {"tail", v.time.tail}});
  return out;
}

json as_json(const std::vector<KernelRow>& rows, const std::vector<CallRow>& calls) {
  json kernels = json::array(), library = json::array();
  for (const KernelRow& r : rows) {
    const simt::GlobalSite* worst = r.heaviest.worst_site();
    const auto per_launch = [&](const char* key) { return r.counts.at(key) / r.launches; };
    kernels.push_back({
        {"name", r.name},
        {"dialect_name", r.dialect_name},
        {"launches", r.launches},
        {"predicted_us", r.total_us / r.launches},
        {"bound", simt::resource_name(r.heaviest_time.bound)},
        {"resource_us", resource_json(r.heaviest_time)},  // of the heaviest launch
        {"dram_bytes", per_launch("dram_bytes")},
        {"distinct_bytes", per_launch("distinct_bytes")},
        {"requested_bytes", per_launch("requested_bytes")},
        {"requests", per_launch("requests")},
        {"sectors_per_request", ratio_of(r.counts, "sectors", "requests")},
        {"ideal_sectors_per_request", ratio_of(r.counts, "ideal_sectors", "requests")},
        {"shared_wavefronts", per_launch("shared_wavefronts")},
        {"shared_wavefronts_ideal", per_launch("shared_wavefronts_ideal")},
        {"mma", per_launch("mma")},
        {"mma_min", r.mma_min / r.launches},
        {"sfu", per_launch("sfu")},
        {"fp64", per_launch("fp64")},
        {"atomics", per_launch("atomics")},
        {"barriers", per_launch("barriers")},
        {"grid", {r.heaviest.grid.x, r.heaviest.grid.y, r.heaviest.grid.z}},
        {"block", {r.heaviest.block.x, r.heaviest.block.y, r.heaviest.block.z}},
        {"shared_bytes", r.heaviest.shared_bytes},
        {"sampled_blocks", r.heaviest.sampled_blocks},
        {"blocks_per_sm", r.heaviest_time.blocks_per_sm},
        {"registers", r.registers},
        {"tail", r.heaviest_time.tail},
        {"worst_line", worst ? worst->where : ""},
        {"worst_sectors_per_request", worst ? worst->traffic.sectors_per_request() : 0.0},
        {"variants", variants_json(r.variants)},
    });
  }
  for (const CallRow& c : calls)
    library.push_back({{"name", c.call.name}, {"m", c.call.m}, {"n", c.call.n}, {"k", c.call.k},
                       {"launches", c.launches}, {"predicted_us", c.us}, {"bound", c.call.k > 0 ? "roofline" : "dram"}});
  return {{"kernels", kernels}, {"library_calls", library}};
}

}  // namespace

int main(int argc, char** argv) {
  std::string model_path = "inputs/models/gpt2-124m.yaml", precision_name = "bf16", gpu_name = "H200", ptxas_path,
              json_path;
  int B = 1, T = 1024;
  uint64_t sample_blocks = 256;
  po::options_description options("kernel_profile");
  options.add_options()("help,h", "this text")("model", po::value(&model_path),
                                               "model YAML or Hugging Face config.json")(
      "precision", po::value(&precision_name), "fp32, bf16 or fp16 (the GPU path's kernels; default bf16)")(
      "batch", po::value(&B), "B, the micro-batch (default 1)")("seq-len", po::value(&T), "T (default 1024)")(
      "gpu", po::value(&gpu_name), ("the GPU of the time model: " + eth::kernels::gpu_models()).c_str())(
      "ptxas", po::value(&ptxas_path),
      "nvcc -Xptxas -v's output for the kernels' .cu files: registers per thread, for blocks per SM")(
      "sample-blocks", po::value(&sample_blocks), "the most blocks of a launch the interpreter counts (default 256)")(
      "json", po::value(&json_path), "also write the rows to this file as JSON");
  try {
    if (!eth::parse_command_line(argc, argv, options, true)) return 0;
    const double load_at_start = eth::bench::load_now();
    const eth::kernels::GpuPeak* gpu = eth::kernels::find_gpu_model(gpu_name);
    if (gpu == nullptr)
      eth::fail_input("command line", "--gpu", "a GPU of the catalog: " + eth::kernels::gpu_models(), gpu_name);
    using eth::kernels::Precision;
    const Precision precision = precision_name == "fp32"   ? Precision::fp32
                                : precision_name == "bf16" ? Precision::bf16
                                : precision_name == "fp16" ? Precision::fp16
                                                           : Precision::automatic;
    if (precision == Precision::automatic)
      eth::fail_input("command line", "--precision", "fp32, bf16 or fp16", precision_name);
    if (B < 1 || T < 1) eth::fail_input("command line", "--batch and --seq-len", "at least 1", std::to_string(B < 1 ? B : T));
    if (sample_blocks < 1) eth::fail_input("command line", "--sample-blocks", "at least 1", "0");
    const eth::ModelConfig model = eth::load_model_config(model_path);
    if (T > model.max_seq_len)
      eth::fail_input("command line", "--seq-len", "at most the model's max_seq_len " + std::to_string(model.max_seq_len),
                      std::to_string(T));
    std::map<std::string, int> registers;
    if (!ptxas_path.empty()) {
      try {
        registers = ptxas_registers(ptxas_path, gpu->sm.compute_capability);
      } catch (const std::exception& e) {
        eth::fail_input(ptxas_path, "--ptxas", "nvcc -Xptxas -v's output", e.what());
      }
    }

    // The steps of 1 and 2 layers, extrapolated to the model's; a model of 1 or 2 layers as it is.
    const int L = model.num_layers;
    eth::ModelConfig shallow = model;
    shallow.num_layers = std::min(L, 2);
    StepProfile step = profile_step(shallow, B, T, precision, sample_blocks);
    std::vector<KernelRow> rows;
    std::vector<CallRow> calls;
    if (L > 2) {
      shallow.num_layers = 1;
      StepProfile one = profile_step(shallow, B, T, precision, sample_blocks);
      extrapolate_resized_launches(one, step, L);
      rows = kernel_rows(step, *gpu, registers, model, B, T);
      calls = call_rows(step, *gpu);
      extrapolate_rows(kernel_rows(one, *gpu, registers, model, B, T), rows, L);
      extrapolate_rows(call_rows(one, *gpu), calls, L);
    } else {
      rows = kernel_rows(step, *gpu, registers, model, B, T);
      calls = call_rows(step, *gpu);
    }
    double kernels_us = 0, calls_us = 0;
    for (const KernelRow& r : rows) kernels_us += r.total_us;
    for (const CallRow& c : calls) calls_us += c.us * c.launches;

    // The device memory of the whole model on one GPU, in the backend's storage and attention path.
    const std::unique_ptr<eth::kernels::Backend> backend = gpu_backend(precision);
    const eth::JobMemoryOptions memory_options{backend->attention_path(T), backend->storage(), false, true,
                                               backend->arithmetic(), backend->ops_device()};
    const double memory = eth::stage_memory(model, {0, L}, B, T, 1, eth::Recompute::none, memory_options).total();
    const double capacity = gpu->sm.memory_gb * 1e9;
    const int head_samples = eth::Stage::head_samples(model, B);

    std::printf("%s, %s, B %d, T %d, %d layers (profiled at %s, each launch at most %llu blocks) on %s\n",
                model.name.c_str(), precision_name.c_str(), B, T, L, L > 2 ? "1 and 2, extrapolated" : "all",
                static_cast<unsigned long long>(sample_blocks), gpu->sm.model);
    print(rows, calls);
    std::printf("head in chunks of %d of the %d samples\n", head_samples, B);
    std::printf("predicted step on %s: %.2f ms (%.2f ms of interpreted kernels, %.2f ms of library calls)\n",
                gpu->sm.model, (kernels_us + calls_us) / 1e3, kernels_us / 1e3, calls_us / 1e3);
    std::printf("device memory: %.2f GB of the %s's %.0f GB\n", memory / 1e9, gpu->sm.model, gpu->sm.memory_gb);
    if (memory > capacity)
      std::printf("does not fit: the step needs %.2f GB, %.2f GB more than the %s's %.0f GB (predicted anyway)\n",
                  memory / 1e9, (memory - capacity) / 1e9, gpu->sm.model, gpu->sm.memory_gb);
    if (!json_path.empty()) {
      json out = as_json(rows, calls);
      out.update({{"model", model.name},
                  {"precision", precision_name},
                  {"batch", B},
                  {"seq_len", T},
                  {"layers", L},
                  {"profiled_layers", L > 2 ? json::array({1, 2}) : json::array({L})},
                  {"sample_blocks", sample_blocks},
                  {"head_samples", head_samples},
                  {"gpu", gpu->sm.model},
                  {"constants",
                   {{"dram_fraction", simt::TimeModelConstants{}.dram_fraction},
                    {"mma_fraction", simt::TimeModelConstants{}.mma_fraction},
                    {"l2_fraction", simt::TimeModelConstants{}.l2_fraction},
                    {"launch_us", simt::TimeModelConstants{}.launch_us},
                    {"gemm_efficiency", simt::TimeModelConstants{}.gemm_efficiency}}},
                  {"predicted_step_ms", (kernels_us + calls_us) / 1e3},
                  {"predicted_kernels_ms", kernels_us / 1e3},
                  {"predicted_library_ms", calls_us / 1e3},
                  {"memory_bytes", memory},
                  {"gpu_memory_bytes", capacity},
                  {"fits", memory <= capacity}});
      eth::bench::write_stamped(json_path, out, load_at_start);
    }
  } catch (const eth::InputError& e) {
    std::cerr << "kernel_profile: error: " << e.what() << "\n";
    return 2;
  } catch (const std::bad_alloc&) {
    // The profiled stage (1 and 2 layers at --batch x --seq-len) is allocated on this host.
    std::cerr << "kernel_profile: error: command line: --batch " << B << " --seq-len " << T
              << ": expected a micro-batch whose 2-layer stage fits this host's memory\n";
    return 2;
  }
  return 0;
}
