// gpu_checks: the CUDA-vs-CPU checks (cuda_checks.hpp) as a plain program, for GPU machines
// without GoogleTest (bench/gpu/run.sh runs it). Prints one line per compared tensor.
//
//   gpu_checks [CHECK...]               all checks when none is named
//   gpu_checks --self-test [CHECK...]   the checks with a second CPU backend in the GPU's place:
//                                       tests the checks themselves, needs no GPU (label unit)
//   gpu_checks --emulated [CHECK...]    the checks of the CUDA backend's kernels in the kernel
//                                       interpreter (ETH_BACKEND=cuda-emulated): no GPU (label unit)
//
// Exit status: 0 all passed, 1 a check failed, 77 no usable GPU (ctest's and automake's "skipped").
#include <exception>
#include <iostream>
#include <memory>
#include <set>
#include <string>

#include "tests/gpu/cuda_checks.hpp"
#ifdef ETH_HAVE_CUDA
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_probe.hpp"
#endif
#ifdef ETH_HAVE_SIMT_INTERPRETER
#include "kernels/emulated/cuda_emulated_backend.hpp"
#endif

namespace {

// The backend in the GPU's place: a second CPU backend, the interpreted CUDA kernels, or the GPU.
std::unique_ptr<eth::kernels::Backend> backend_under_test(const std::string& mode) {
  if (mode == "--self-test") return eth::kernels::make_cpu_backend();
#ifdef ETH_HAVE_SIMT_INTERPRETER
  if (mode == "--emulated") return eth::kernels::make_cuda_emulated_backend();
#endif
#ifdef ETH_HAVE_CUDA
  if (mode.empty()) return eth::kernels::make_cuda_backend(0);
#endif
  return nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  namespace gpu = eth::test::gpu;
  const std::string first = argc > 1 ? argv[1] : "";
  const std::string mode = first == "--self-test" || first == "--emulated" ? first : "";
  const std::set<std::string> wanted(argv + 1 + (mode.empty() ? 0 : 1), argv + argc);
#ifdef ETH_HAVE_CUDA
  std::string why;
  if (mode.empty() && eth::kernels::usable_cuda_devices(&why) == 0) {
    std::cout << "gpu_checks: skipped: no usable GPU (" << why << ")\n";
    return 77;
  }
#endif
  const std::unique_ptr<eth::kernels::Backend> cuda = backend_under_test(mode);
  if (cuda == nullptr) {
    std::cout << "gpu_checks: error: " << (mode.empty() ? "a build without CUDA" : "a build without the kernel interpreter")
              << " cannot run " << (mode.empty() ? "the GPU checks" : mode) << "\n";
    return 1;
  }
  const std::unique_ptr<eth::kernels::Backend> cpu = eth::kernels::make_cpu_backend();
  const int device = mode.empty() ? 0 : -1;
  if (mode == "--self-test") {
    std::cout << "gpu_checks: self-test, the CPU backend against itself\n";
  } else if (mode == "--emulated") {
    std::cout << "gpu_checks: the CUDA backend's kernels in the kernel interpreter against the CPU backend\n";
  } else {
#ifdef ETH_HAVE_CUDA
    std::cout << "gpu_checks: CUDA backend on " << eth::kernels::cuda_device_props(0).name
              << " against the CPU backend\n";
#endif
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
