#include "lib/plan/plan.hpp"

#include <algorithm>
#include <cassert>
#include <fstream>
#include <numeric>
#include <optional>

#include <yaml-cpp/yaml.h>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/base/yaml_fields.hpp"

namespace eth {
namespace {

constexpr long long kMax = 1LL << 30;

YAML::Node flow(YAML::Node n) {
  n.SetStyle(YAML::EmitterStyle::Flow);
  return n;
}

}  // namespace

int Plan::first_sample(int pipeline) const {
  int first = 0;
  for (int k = 0; k < pipeline; k++) first += pipelines[k].samples();
  return first;
}

namespace {

Plan read_plan(const yaml::Field& root, const std::string& source) {
  Plan plan;
  plan.source = source;
  plan.global_batch = root.child("global_batch").as_int(1, kMax);
  const yaml::Field pipelines = root.child("pipelines");
  for (size_t p = 0; p < pipelines.size(); p++) {
    const yaml::Field pf = pipelines.at(p);
    PlanPipeline pipe;
    pipe.micro_batch = pf.child("micro_batch").as_int(1, kMax);
    pipe.micro_batches = pf.child("micro_batches").as_int(1, kMax);
    if (pf.has("last_micro_batch")) pipe.last_micro_batch = pf.child("last_micro_batch").as_int(0, kMax);
    const yaml::Field stages = pf.child("stages");
    for (size_t s = 0; s < stages.size(); s++) {
      const yaml::Field sf = stages.at(s);
      PlanStage stage;
      stage.ranks = sf.child("ranks").as_ints(0, kMax);
      const yaml::Field layers = sf.child("layers");
      if (layers.size() != 2) layers.fail("[begin, end)", std::to_string(layers.size()) + " numbers");
      stage.layers = {layers.at(0).as_int(0, kMax), layers.at(1).as_int(0, kMax)};
      if (sf.has("split")) stage.split = sf.child("split").as_ints(0, kMax);
      if (sf.has("last_split")) stage.last_split = sf.child("last_split").as_ints(0, kMax);
      if (sf.has("recompute")) {
        const yaml::Field f = sf.child("recompute");
        const std::optional<Recompute> mode = parse_recompute(f.as_string());
        if (!mode) f.fail("none, selective or full", f.text());
        stage.recompute = *mode;
      }
      pipe.stages.push_back(std::move(stage));
    }
    plan.pipelines.push_back(std::move(pipe));
  }
  if (root.has("idle")) plan.idle = root.child("idle").as_ints(0, kMax);
  if (root.has("sharded_blocks")) plan.sharded_blocks = root.child("sharded_blocks").as_ints(0, kMax);
  if (root.has("predicted")) {
    const yaml::Field pred = root.child("predicted");
    if (pred.has("iteration_ms")) plan.predicted.iteration_ms = pred.child("iteration_ms").as_double(0);
    if (pred.has("pipeline_ms")) {
      const yaml::Field f = pred.child("pipeline_ms");
      for (size_t i = 0; i < f.size(); i++) plan.predicted.pipeline_ms.push_back(f.at(i).as_double(0));
    }
    if (pred.has("memory_gb")) {
      const yaml::Field f = pred.child("memory_gb");
      for (size_t i = 0; i < f.size(); i++) plan.predicted.memory_gb.push_back(f.at(i).as_double(0));
    }
  }
  return plan;
}

}  // namespace

Plan load_plan(const std::string& path) { return read_plan(yaml::load_file(path, "plan"), path); }

Plan plan_from_yaml(const std::string& text, const std::string& source) {
  return read_plan(yaml::load_text(text, source), source);
}

void save_plan(const Plan& plan, const std::string& path) {
  std::ofstream out(path);
  if (!out) fail_input(path, "file", "a writable plan path", "a path that cannot be opened");
  out << plan_yaml(plan);
}

std::string plan_yaml(const Plan& plan) {
  YAML::Node root;
  root["global_batch"] = plan.global_batch;
  for (const PlanPipeline& pipe : plan.pipelines) {
    YAML::Node p;
    p["micro_batch"] = pipe.micro_batch;
    p["micro_batches"] = pipe.micro_batches;
    if (pipe.short_last()) p["last_micro_batch"] = pipe.last_micro_batch;
    for (const PlanStage& stage : pipe.stages) {
      YAML::Node s;
      s["ranks"] = flow(YAML::Node(stage.ranks));
      s["layers"] = flow(YAML::Node(std::vector<int>{stage.layers.begin, stage.layers.end}));
      if (stage.ranks.size() > 1) s["split"] = flow(YAML::Node(stage.split));
      if (stage.ranks.size() > 1 && pipe.short_last()) s["last_split"] = flow(YAML::Node(stage.last_split));
      if (stage.recompute != Recompute::none) s["recompute"] = to_string(stage.recompute);
      p["stages"].push_back(s);
    }
    root["pipelines"].push_back(p);
  }
  if (!plan.idle.empty()) root["idle"] = flow(YAML::Node(plan.idle));
  if (!plan.sharded_blocks.empty()) root["sharded_blocks"] = flow(YAML::Node(plan.sharded_blocks));
  const PlanPrediction& pred = plan.predicted;
  if (pred.iteration_ms > 0) root["predicted"]["iteration_ms"] = pred.iteration_ms;
  if (!pred.pipeline_ms.empty()) root["predicted"]["pipeline_ms"] = flow(YAML::Node(pred.pipeline_ms));
  if (!pred.memory_gb.empty()) root["predicted"]["memory_gb"] = flow(YAML::Node(pred.memory_gb));
  return "# ETH plan: pipelines, stages (ranks, layers [begin, end), per-rank sample split, recomputation), sharded optimizer-state blocks.\n" + yaml::emit(root) + '\n';
}

std::vector<RankRole> rank_roles(const Plan& plan, int world_size) {
  std::vector<RankRole> roles(static_cast<size_t>(world_size));
  for (size_t p = 0; p < plan.pipelines.size(); p++) {
    const PlanPipeline& pipe = plan.pipelines[p];
    for (size_t s = 0; s < pipe.stages.size(); s++) {
      const PlanStage& stage = pipe.stages[s];
      int offset = 0, last_offset = 0;
      for (size_t i = 0; i < stage.ranks.size(); i++) {
        const int n = stage.split.empty() ? pipe.micro_batch : stage.split[i];
        const int last = !pipe.short_last() ? n : stage.last_split.empty() ? pipe.last_micro_batch : stage.last_split[i];
        roles[stage.ranks[i]] = {static_cast<int>(p), static_cast<int>(s), static_cast<int>(i), offset, n, last_offset, last};
        offset += n;
        last_offset += last;
      }
    }
  }
  for (int r : plan.idle) roles[r] = RankRole{};
  return roles;
}

}  // namespace eth
