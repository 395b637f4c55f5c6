#include "kernels/backend_select.hpp"

#ifdef ETH_HAVE_CUDA
#include "kernels/cuda/cuda_probe.hpp"
#endif

namespace eth::kernels {

BackendChoice select_backend() {
#ifdef ETH_HAVE_CUDA
  std::string why;
  const int gpus = usable_cuda_devices(&why);
  if (gpus == 0) return {make_cpu_backend(), "no usable GPU (" + why + "): running on the CPU backend"};
  return {make_cpu_backend(), std::to_string(gpus) +
                                  " GPU(s) found, but the CUDA backend is not built yet: "
                                  "running on the CPU backend"};
#else
  return {make_cpu_backend(), "built without CUDA: running on the CPU backend"};
#endif
}

}  // namespace eth::kernels
