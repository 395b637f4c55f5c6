#include "lib/planner/profile_tool.hpp"

#include <filesystem>

#include "kernels/backend.hpp"
#include "kernels/backend_select.hpp"
#include "kernels/device_info.hpp"
#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/model/stage.hpp"
#include "lib/planner/measure.hpp"
#include "lib/planner/profile.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace eth::planner {
namespace fs = std::filesystem;

void run_profile_tool(const ProfileToolOptions& o, MPI_Comm ranks, std::ostream& out) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(ranks, &rank));
  if (o.model.empty()) fail_input("command line", "--model", "a model YAML", "none");
  const ModelConfig model = load_model_config(o.model);
  if (o.seq_len < 1 || o.seq_len > model.max_seq_len)
    fail_input("command line", "--seq-len", strprintf("1 .. %d, the model's max_seq_len", model.max_seq_len), std::to_string(o.seq_len));
  check_micro_batches(o.micro_batches);
  if (o.repetitions < 1)
    fail_input("command line", "--repetitions", "at least 1 timed run per measurement", std::to_string(o.repetitions));
  auto name = [&](const std::string& device) { return strprintf("%s-%s-T%d.yaml", device.c_str(), model.name.c_str(), o.seq_len); };
  if (!o.estimate_topology.empty()) {
    const Topology topo = load_topology(o.estimate_topology);
    const PrecisionPaths paths = precision_paths(topo, o.precision);
    if (rank != 0) return;
    for (size_t t = 0; t < topo.device_types.size(); t++) {
      const std::string path = (fs::path(o.out_dir) / name(topo.device_types[t].name)).string();
      save_profile(roofline_profile(topo.device_types[t], model, o.seq_len, o.micro_batches, topo.source, paths.by_type[t]),
                   path);
      out << "wrote " << path << " (roofline estimate, " << paths.by_type[t].name() << ")\n";
    }
    return;
  }
  Stage::check_computes(model, o.model);  // the measurement runs the stage
  // The backend eth_train would use on this rank: the GPU of its local rank, or the CPU, on the
  // path a job of that device alone takes at --precision.
  kernels::BackendChoice choice;
  kernels::PrecisionPath path;
  std::string error;
  try {
    const kernels::DeviceInfo device = kernels::describe_device(o.local_rank, o.local_ranks, o.device);
    const kernels::DeviceRates rates{device.peak_tflops_fp32, device.peak_tflops_tf32, device.peak_tflops_bf16,
                                     device.peak_tflops_fp16};
    path = kernels::rank_path(kernels::precision_path(kernels::resolve_precision(o.precision, {rates}), rates), rates,
                              o.device);
    choice = kernels::select_backend(o.local_rank, o.local_ranks, path, o.device);
  } catch (const std::invalid_argument& e) {
    error = strprintf("rank %d: %s", rank, e.what());
  }
  if (const std::string agreed = agreed_error(error); !agreed.empty()) throw InputError(agreed);
  if (rank == 0) out << choice.note << '\n';
  const Profile p =
      measure_profile(*choice.backend, path, model, o.device_type, {o.micro_batches, o.seq_len, o.repetitions}, ranks);
  if (rank != 0) return;
  const std::string file = o.out.empty() ? (fs::path(o.out_dir) / name(o.device_type)).string() : o.out;
  save_profile(p, file);
  out << strprintf("%-6s %-22s %-22s %-22s\n", "mb", "embedding fwd/bwd ms", "layer fwd/bwd ms", "head fwd/bwd ms");
  for (const ProfileEntry& e : p.entries)
    out << strprintf("%-6d %9.3f / %-10.3f %9.3f / %-10.3f %9.3f / %-10.3f\n", e.micro_batch, e.embedding.forward_ms,
                     e.embedding.backward_ms, e.layer.forward_ms, e.layer.backward_ms, e.head.forward_ms, e.head.backward_ms);
  out << strprintf("optimizer %.3f ms per million parameters\nwrote %s (%s)\n", p.optimizer_ms_per_mparam, file.c_str(),
                   p.path_name().c_str());
}

}  // namespace eth::planner
