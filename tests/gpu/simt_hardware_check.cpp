// simt_hardware_check: the kernel interpreter against the GPU it stands in for (bench/gpu/run.sh).
//   1. each warp-level instruction of the dialect (shuffles, votes, mma.m16n8k16 on bf16 and on
//      fp16, ldmatrix x1/x2/x4 .trans, cp.async) on exactly representable inputs: every lane's
//      every register bit for bit, or the first lane and register that differ;
//   2. the custom kernels one training step of a 2-layer stage launches on the CUDA backend and on
//      ETH_BACKEND=cuda-emulated: the same kernels, the same number of times.
// Exit status: 0 both hold, 1 one does not, 77 no usable GPU.
#include <cstdio>
#include <iostream>
#include <map>
#include <string>

#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_probe.hpp"
#include "kernels/emulated/cuda_emulated_backend.hpp"
#include "tests/gpu/simt_probes.hpp"
#include "tests/gpu/simt_probes_run.hpp"
#include "tests/gpu/cuda_checks.hpp"

namespace probes = eth::test::simt_probes;

namespace {

bool instructions_agree() {
  const auto gpu = probes::run_on_gpu();
  const auto host = probes::run_in_interpreter();
  const auto names = probes::probe_names();
  bool all = true;
  for (size_t p = 0; p < names.size(); p++) {
    size_t differ = 0, first = 0;
    for (size_t i = 0; i < gpu[p].size(); i++)
      if (gpu[p][i] != host[p][i] && differ++ == 0) first = i;
    if (differ == 0) {
      std::printf("PASS %s: 32 lanes x %d registers bit for bit\n", names[p].c_str(), probes::kSlots);
      continue;
    }
    all = false;
    std::printf("FAIL %s: %zu words differ; first lane %zu register %zu: GPU 0x%08x, interpreter 0x%08x\n",
                names[p].c_str(), differ, first / probes::kSlots, first % probes::kSlots, gpu[p][first], host[p][first]);
  }
  return all;
}

bool launches_agree() {
  const auto cuda = eth::kernels::make_cuda_backend(0);
  const auto emulated = eth::kernels::make_cuda_emulated_backend();
  eth::test::gpu::run_stage_step(*cuda);
  eth::test::gpu::run_stage_step(*emulated);
  const std::map<std::string, uint64_t> on_gpu = eth::kernels::cuda_kernel_launches(*cuda);
  std::map<std::string, uint64_t> interpreted;
  for (const auto& [name, c] : eth::kernels::cuda_emulated_launch(*emulated)->kernel_counts()) interpreted[name] = c.launches;
  bool same = on_gpu == interpreted && !on_gpu.empty();
  for (const auto& [name, n] : on_gpu) {
    const uint64_t m = interpreted.count(name) ? interpreted.at(name) : 0;
    std::printf("  %-32s GPU %6llu  interpreter %6llu%s\n", name.c_str(), (unsigned long long)n, (unsigned long long)m,
                n == m ? "" : "  <- differ");
  }
  for (const auto& [name, m] : interpreted)
    if (!on_gpu.count(name)) std::printf("  %-32s GPU      0  interpreter %6llu  <- differ\n", name.c_str(), (unsigned long long)m);
  std::printf("%s kernel launches of one stage step: GPU and interpreter %s\n", same ? "PASS" : "FAIL",
              same ? "agree" : "differ");
  return same;
}

}  // namespace

int main() {
  std::string why;
  if (eth::kernels::usable_cuda_devices(&why) == 0) {
    std::cout << "simt_hardware_check: skipped: no usable GPU (" << why << ")\n";
    return 77;
  }
  const bool instructions = instructions_agree();
  const bool launches = launches_agree();
  return instructions && launches ? 0 : 1;
}
