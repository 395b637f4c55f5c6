// gpu_checks: the CUDA-vs-CPU checks (cuda_checks.hpp) as a plain program, for GPU machines
// without GoogleTest (bench/gpu/run.sh runs it). Prints one line per compared tensor.
//
//   gpu_checks [CHECK...]               all checks when none is named
//   gpu_checks --self-test [CHECK...]   the checks with a second CPU backend in the GPU's place:
//                                       tests the checks themselves, needs no GPU (label unit)
//
// Exit status: 0 all passed, 1 a check failed, 77 no usable GPU (ctest's and automake's "skipped").
#include <exception>
#include <iostream>
#include <memory>
#include <set>
#include <string>

#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_probe.hpp"
#include "tests/gpu/cuda_checks.hpp"

int main(int argc, char** argv) {
  namespace gpu = eth::test::gpu;
  const bool self_test = argc > 1 && std::string(argv[1]) == "--self-test";
  const std::set<std::string> wanted(argv + 1 + (self_test ? 1 : 0), argv + argc);
  std::string why;
  if (!self_test && eth::kernels::usable_cuda_devices(&why) == 0) {
    std::cout << "gpu_checks: skipped: no usable GPU (" << why << ")\n";
    return 77;
  }
  const std::unique_ptr<eth::kernels::Backend> cuda =
      self_test ? eth::kernels::make_cpu_backend() : eth::kernels::make_cuda_backend(0);
  const std::unique_ptr<eth::kernels::Backend> cpu = eth::kernels::make_cpu_backend();
  const int device = self_test ? -1 : 0;
  if (self_test) {
    std::cout << "gpu_checks: self-test, the CPU backend against itself\n";
  } else {
    std::cout << "gpu_checks: CUDA backend on " << eth::kernels::cuda_device_props(0).name
              << " against the CPU backend\n";
  }
  int checks = 0, failed = 0;
  for (const gpu::Check& check : gpu::all_checks()) {
    if (!wanted.empty() && wanted.count(check.name) == 0) continue;
    checks++;
    bool ok = true;
    try {
      for (const gpu::Comparison& c : check.run(gpu::Backends{*cuda, *cpu, device})) {
        std::cout << "  " << c.describe() << '\n';
        ok = ok && c.passed();
      }
    } catch (const std::exception& e) {
      std::cout << "  FAIL  " << check.name << ": " << e.what() << '\n';
      ok = false;
    }
    std::cout << (ok ? "PASS " : "FAIL ") << check.name << '\n';
    failed += ok ? 0 : 1;
  }
  std::cout << "gpu_checks: " << checks - failed << " of " << checks << " checks passed\n";
  return failed == 0 ? 0 : 1;
}
