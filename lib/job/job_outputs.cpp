#include "lib/job/job_outputs.hpp"

#include <mpi.h>

#include <fstream>
#include <vector>

#include <nlohmann/json.hpp>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/io/checkpoint_files.hpp"
#include "lib/job/agreed.hpp"
#include "lib/job/auto_plan.hpp"
#include "lib/job/job.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/planner/plan_drawing.hpp"
#include "mpi_topology/watchdog.hpp"

namespace eth {

void draw_plan(const Job& job, int rank, std::ostream& log) {
  const std::string path = job.options.output_dir + "/plan.svg";
  agreed([&] {
    if (rank != 0) return;
    const planner::CostModel cost = planner::job_cost_model(job.options, job.model, job.topology, job.precision, nullptr);
    planner::write_plan_drawing(cost, job.plan, path);
  });
  if (rank == 0) log << "plan drawn: " << path << " (stages and the simulated step; docs/usage.md)\n";
}

void save_checkpoint(RankRuntime& runtime, const std::string& output_dir, int keep, const CheckpointHeader& header,
                     int rank, std::ostream& log) {
  const CheckpointFiles files(output_dir);
  agreed([&] {
    if (rank == 0) files.create();
  });
  agreed([&] { runtime.save_checkpoint(files.writing_path(header.step), header); });
  MPI_Request closed;  // every rank has closed the file
  MPI_CHECK(MPI_Ibarrier(world_comm(), &closed));
  watched_wait_one(closed, {"the barrier after the checkpoint write", {}});
  agreed([&] {
    if (rank == 0) files.publish(header.step, keep);
  });
  if (rank == 0) log << "checkpoint " << files.complete_path(header.step) << '\n';
}

void save_parameters(RankRuntime& runtime, const ModelConfig& model, const std::string& path, int rank) {
  const ParamLayout whole(model, {0, model.num_layers});
  std::vector<float> full(rank == 0 ? whole.size() : 0);
  runtime.gather_parameters(full.data());
  if (rank != 0) return;
  std::ofstream out(path, std::ios::binary);
  if (!out) fail_input(path, "--save-params", "a writable path", "a path that cannot be opened");
  out.write(reinterpret_cast<const char*>(full.data()), static_cast<std::streamsize>(full.size() * sizeof(float)));
  nlohmann::json layout;
  layout["model"] = model.name;
  layout["q_channels"] = model.q_channels();
  layout["kv_channels"] = model.kv_channels();
  layout["tensors"] = nlohmann::json::array();
  for (const ParamTensor& t : whole.tensors()) {
    nlohmann::json entry;
    entry["name"] = t.name;
    entry["shape"] = t.shape;
    entry["offset"] = t.offset;
    entry["size"] = t.size;
    layout["tensors"].push_back(entry);
  }
  std::ofstream(path + ".json") << layout.dump(1) << '\n';
}

void write_trace(StepTrace& trace, const Plan& plan, int world, const std::string& path) {
  std::vector<std::string> rows;
  for (const RankRole& role : rank_roles(plan, world))
    rows.push_back(role.idle() ? strprintf("rank %zu: idle", rows.size())
                               : strprintf("rank %zu: pipeline %d stage %d", rows.size(), role.pipeline, role.stage));
  trace.write_chrome_trace(path, rows);
}

}  // namespace eth
