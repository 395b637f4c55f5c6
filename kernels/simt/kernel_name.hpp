// A kernel's name as Nsight Compute prints it, so that the interpreter's profiles and ncu's
// measurements (../shared/measured/*.csv) name the same kernel alike. kernels/cuda/cuda_launch.cuh
// launches a kernel of the dialect as simt_entry<Kernel>, or as simt_entry_bounded<Kernel> when
// the kernel names kMinBlocksPerSm (compiled under __launch_bounds__); ncu prints the demangled
// function template with its parameter as T1: "void eth::kernels::cuda::simt_entry<K>(T1)".
#pragma once

#include <cxxabi.h>

#include <cstdlib>
#include <memory>
#include <string>
#include <typeinfo>

namespace eth::kernels::simt {

// The demangled name of a type ("eth::kernels::gpu_ops::flash::DeltaKernel").
inline std::string demangled(const std::type_info& type) {
  int status = 0;
  const std::unique_ptr<char, void (*)(void*)> name(abi::__cxa_demangle(type.name(), nullptr, nullptr, &status),
                                                    std::free);
  return status == 0 && name ? std::string(name.get()) : std::string(type.name());
}

template <typename Kernel>
std::string profile_name() {
  constexpr bool bounded = requires { Kernel::kMinBlocksPerSm; };
  return std::string("void eth::kernels::cuda::") + (bounded ? "simt_entry_bounded<" : "simt_entry<") +
         demangled(typeid(Kernel)) + ">(T1)";
}

}  // namespace eth::kernels::simt
