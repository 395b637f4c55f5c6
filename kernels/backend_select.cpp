#include "kernels/backend_select.hpp"

#include <cstdlib>
#include <stdexcept>

#ifdef ETH_HAVE_CUDA
#include "kernels/cuda/cuda_backend.hpp"
#include "kernels/cuda/cuda_probe.hpp"
#endif

namespace eth::kernels {
namespace {

// ETH_BACKEND: unset or "cpu" for the CPU backend, "cuda" to ask for the CUDA backend.
bool cuda_requested() {
  const char* env = std::getenv("ETH_BACKEND");
  if (env == nullptr || std::string(env).empty() || std::string(env) == "cpu") return false;
  if (std::string(env) == "cuda") return true;
  throw std::invalid_argument(std::string("ETH_BACKEND: expected cpu or cuda, got '") + env + "'");
}

#ifdef ETH_HAVE_CUDA
// ETH_CUDA_DEVICE, default 0, until devices are chosen by node-local rank.
int cuda_device(int gpus) {
  const char* env = std::getenv("ETH_CUDA_DEVICE");
  if (env == nullptr || std::string(env).empty()) return 0;
  char* end = nullptr;
  const long device = std::strtol(env, &end, 10);
  if (*end != '\0' || device < 0 || device >= gpus)
    throw std::invalid_argument(std::string("ETH_CUDA_DEVICE: expected a device number in [0, ") +
                                std::to_string(gpus) + "), got '" + env + "'");
  return static_cast<int>(device);
}
#endif

}  // namespace

// The CUDA backend is opt-in (ETH_BACKEND=cuda) for now: the pipeline runtime hands stage buffers
// straight to MPI and to host code, which is right for CPU memory only; with device memory it
// needs CUDA-aware MPI or staging through the host, which it does not do yet.
BackendChoice select_backend() {
  const bool want_cuda = cuda_requested();
#ifdef ETH_HAVE_CUDA
  std::string why;
  const int gpus = usable_cuda_devices(&why);
  if (gpus == 0) return {make_cpu_backend(), "no usable GPU (" + why + "): running on the CPU backend"};
  if (!want_cuda) {
    return {make_cpu_backend(), std::to_string(gpus) +
                                    " GPU(s) found; running on the CPU backend (the CUDA backend is opt-in, "
                                    "ETH_BACKEND=cuda, until the runtime moves device buffers through MPI)"};
  }
  const int device = cuda_device(gpus);
  return {make_cuda_backend(device), "running on the CUDA backend, device " + std::to_string(device) + " of " +
                                         std::to_string(gpus)};
#else
  return {make_cpu_backend(), want_cuda ? "ETH_BACKEND=cuda, but built without CUDA: running on the CPU backend"
                                        : "built without CUDA: running on the CPU backend"};
#endif
}

}  // namespace eth::kernels
