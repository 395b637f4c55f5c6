// The probes of simt_probes.hpp run on one side: simt_probes_gpu.cu on the GPU, simt_probes_host.cpp
// in the kernel interpreter. Each returns (32, kSlots) words per probe, in probe_names() order.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace eth::test::simt_probes {

constexpr int kProbes = 5;
std::vector<std::string> probe_names();  // kProbes of them
std::vector<std::vector<uint32_t>> run_on_gpu();
std::vector<std::vector<uint32_t>> run_in_interpreter();

// The source words of the cp.async probe: (32, 8), distinct, non-zero.
std::vector<uint32_t> copy_source();

}  // namespace eth::test::simt_probes
