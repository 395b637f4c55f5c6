// A rank the plan leaves idle (Plan::idle): no layers, no data. It adds zeros to the step's loss
// and norm, evaluates and checkpoints with the others and writes nothing into the checkpoints:
// it takes part in every collective the ranks with stages make.
#pragma once

#include <string>
#include <vector>

#include "lib/model/param_layout.hpp"
#include "lib/runtime/rank_runtime.hpp"

namespace eth {

class IdleRank final : public RankRuntime {
 public:
  // `training_path`: how the training ranks sum their gradients, for the log of an idle rank 0.
  IdleRank(const ModelConfig& model, const Plan& plan, const ParallelContext& ctx, std::string training_path);

  StepResult step(int step, SampleStream& train, float lr, float loss_scale, StepTrace& trace) override;
  Evaluation evaluate(SampleStream& val, int samples) override;
  void gather_parameters(float* full) override;
  void save_checkpoint(const std::string& path, const CheckpointHeader& header) override;
  CheckpointHeader load_checkpoint(const std::string& path) override;
  int collectives_per_step() const override { return 0; }
  std::string reduction_path() const override { return "idle; the training ranks: " + training_path_; }

 private:
  const ModelConfig& model_;
  const Plan& plan_;
  ParamLayout whole_;        // the one-stage layout rank 0 gathers into
  std::vector<int> owners_;  // tensor_owners: none of them this rank
  int rank_;
  std::string training_path_;
};

}  // namespace eth
