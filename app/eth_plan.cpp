// eth_plan: topology + model + profiles + global batch -> plan.yaml and a summary table; see
// docs/planner.md.
#include <boost/program_options.hpp>

#include <iostream>
#include <stdexcept>

#include "lib/base/command_line.hpp"
#include "lib/base/input_error.hpp"
#include "lib/planner/plan_tool.hpp"

namespace po = boost::program_options;

int main(int argc, char** argv) {
  eth::planner::PlanToolOptions o;
  std::string precision = "auto";
  po::options_description desc("eth_plan options");
  desc.add_options()
      ("help,h", "print this help")
      ("scenario", po::value(&o.scenario), "scenario YAML (inputs/scenarios/*.yaml): topology, model, batch, seq len")
      ("topology", po::value(&o.topology), "topology YAML")
      ("model", po::value(&o.model), "model YAML")
      ("batch", po::value(&o.global_batch), "global batch, samples per step")
      ("seq-len", po::value(&o.seq_len)->default_value(64), "tokens per sample, T")
      ("micro-batches", po::value(&o.micro_batches)->multitoken(), "micro-batch sizes to try (default 1 2 4 8)")
      ("profiles", po::value(&o.profiles_dir)->default_value(o.profiles_dir), "directory of profile YAML files")
      ("profile", po::value(&o.profile_files)->multitoken(), "profile files, preferred over the directory's")
      ("out", po::value(&o.out)->default_value(o.out), "where the plan is written")
      ("baseline", po::value(&o.baseline), "plan a baseline instead: uniform | layer-balanced | metis")
      ("evaluate", po::value(&o.evaluate), "simulate this plan instead of searching")
      ("shard-optimizer", po::bool_switch(&o.shard_optimizer),
       "with --evaluate: AdamW moments sharded among each block's owners (eth_train --shard-optimizer)")
      ("memory-savers", po::value(&o.memory_savers)->default_value(o.memory_savers),
       "what the search may trade for memory: all (activation recomputation per stage, AdamW moments sharded "
       "per block) | recompute | none")
      ("draw", po::value(&o.draw), "also draw the chosen (or evaluated) plan and its simulated step as an SVG here")
      ("top", po::value(&o.top)->default_value(o.top), "print the K best plans (the best is written)")
      ("max-stage-width", po::value(&o.max_stage_width)->default_value(0),
       "ranks per stage at most (0: no limit; 1: one rank per stage)")
      ("precision", po::value(&precision)->default_value(precision),
       "what the job trains in, as eth_train --precision: the GEMMs' rate each device is priced at, and the "
       "profiles taken (docs/planner.md)");
  try {
    if (!eth::parse_command_line(argc, argv, desc)) return 0;
    try {
      o.precision = eth::kernels::parse_precision(precision);
    } catch (const std::invalid_argument& e) {
      throw eth::InputError(std::string("--precision: value: ") + e.what());
    }
    eth::planner::run_plan_tool(o, std::cout);
  } catch (const eth::InputError& e) {
    std::cerr << "eth_plan: error: " << e.what() << '\n';
    return 1;
  }
  return 0;
}
