// Samples while training (eth_train --sample-every N --sample-tokens K [--sample-prompt TEXT]):
// after every N steps rank 0 gathers the whole model from the ranks that own its parts
// (RankRuntime::gather_parameters, the gather the final --save-params uses), generates K tokens
// on its own device with a key/value cache and a fixed seed, so that the samples of two runs
// compare, prints them and records them in metrics.jsonl ({"step", "sample", "sample_prompt"}).
// A model whose generator does not fit rank 0's free device memory gets one line, once, and
// training goes on without samples.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <vector>

#include "kernels/backend.hpp"
#include "lib/io/metrics.hpp"
#include "lib/io/text_tokenizer.hpp"
#include "lib/job/train_options.hpp"
#include "lib/model/model_config.hpp"
#include "lib/runtime/rank_runtime.hpp"

namespace eth {

class TrainSamples {
 public:
  static constexpr uint64_t kSeed = 1337;  // the same draws in every run and at every step

  // Collective when sampling is on: rank 0 reads the tokenizer and encodes the prompt; either
  // failing is an AgreedError on every rank.
  TrainSamples(const TrainOptions& options, const ModelConfig& model, int rank);

  bool due(int step) const;  // after 0-based step `step`
  // Collective: the sample after step `step`, from the runtime's current parameters.
  void sample(int step, RankRuntime& runtime, kernels::Backend& backend, std::ostream& log,
              std::optional<MetricsWriter>& metrics);

 private:
  const TrainOptions& options_;
  ModelConfig model_;
  int rank_;
  bool off_ = false;            // the model did not fit: said once, no more samples
  std::optional<TextTokenizer> tokenizer_;  // rank 0's
  std::vector<int32_t> prompt_;
};

}  // namespace eth
