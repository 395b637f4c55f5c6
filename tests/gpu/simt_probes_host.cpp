// The probes in the kernel interpreter, and what both sides share.
#include <numeric>

#include "kernels/simt/interpreter.hpp"
#include "tests/gpu/simt_probes.hpp"
#include "tests/gpu/simt_probes_run.hpp"

namespace eth::test::simt_probes {

std::vector<std::string> probe_names() {
  return {"shuffles and votes", "mma.m16n8k16 bf16", "ldmatrix", "cp.async", "mma.m16n8k16 fp16"};
}

std::vector<uint32_t> copy_source() {
  std::vector<uint32_t> src(32 * 8);
  for (size_t i = 0; i < src.size(); i++) src[i] = 0x9e3779b9u * static_cast<uint32_t>(i + 1);
  return src;
}

std::vector<std::vector<uint32_t>> run_in_interpreter() {
  simt::Interpreter interpreter;
  const simt::LaunchShape warp{simt::Dim3(1), simt::Dim3(32), 0};
  std::vector<std::vector<uint32_t>> out(kProbes, std::vector<uint32_t>(32 * kSlots, 0xdeadbeefu));
  const std::vector<uint32_t> src = copy_source();
  interpreter.launch(ShuffleProbe{out[0].data()}, warp);
  interpreter.launch(MmaProbe<kernels::bf16>{out[1].data()}, warp);
  interpreter.launch(LdmatrixProbe{out[2].data()}, {simt::Dim3(1), simt::Dim3(32), sizeof(LdmatrixProbe::Smem)});
  interpreter.launch(CpAsyncProbe{out[3].data(), src.data()}, {simt::Dim3(1), simt::Dim3(32), sizeof(CpAsyncProbe::Smem)});
  interpreter.launch(MmaProbe<kernels::fp16>{out[4].data()}, warp);
  return out;
}

}  // namespace eth::test::simt_probes
