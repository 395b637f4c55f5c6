#include "lib/job/train_samples.hpp"

#include <mpi.h>

#include <chrono>

#include "lib/base/strprintf.hpp"
#include "lib/io/text_generation.hpp"
#include "lib/job/agreed.hpp"
#include "lib/model/generator.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace eth {

TrainSamples::TrainSamples(const TrainOptions& o, const ModelConfig& model, int rank)
    : options_(o), model_(model), rank_(rank) {
  if (o.sample_every == 0) return;
  agreed([&] {
    if (rank != 0) return;
    tokenizer_.emplace(o.tokenizer_dir);
    const PromptTokens prompt = encode_prompt(*tokenizer_, o.sample_prompt, model, "--sample-prompt");
    prompt_ = prompt.tokens;
    // The context must leave room for at least one new token without a restart.
    if (prompt.dropped > 0 || static_cast<int>(prompt_.size()) >= model.max_seq_len)
      fail_input("--sample-prompt", "tokens", strprintf("fewer than max_seq_len %d of %s", model.max_seq_len,
                                                        model.name.c_str()),
                 std::to_string(prompt_.size() + prompt.dropped));
  });
}

bool TrainSamples::due(int step) const {
  return !off_ && options_.sample_every > 0 && (step + 1) % options_.sample_every == 0;
}

void TrainSamples::sample(int step, RankRuntime& runtime, kernels::Backend& backend, std::ostream& log,
                          std::optional<MetricsWriter>& metrics) {
  // Rank 0 decides whether the generator fits beside its stage's state; every rank learns it.
  const size_t needed = Generator::device_bytes(model_, backend.storage());
  const size_t free_bytes = backend.free_memory_bytes();  // 0: not known (no limit)
  int fits = free_bytes == 0 || needed <= free_bytes;
  MPI_CHECK(MPI_Bcast(&fits, 1, MPI_INT, 0, world_comm()));
  if (!fits) {
    off_ = true;
    if (rank_ == 0)
      log << strprintf("step %5d | no samples: generating with the whole model takes %.2f GiB on rank 0's device, "
                       "%.2f GiB are free beside its stage; training goes on without them\n",
                       step + 1, needed / 1073741824.0, free_bytes / 1073741824.0);
    return;
  }
  std::vector<float> whole(rank_ == 0 ? ParamLayout(model_, {0, model_.num_layers}).size() : 0);
  runtime.gather_parameters(whole.data());
  if (rank_ != 0) return;
  const auto t0 = std::chrono::steady_clock::now();
  std::string text;
  {
    Generator generator(model_, backend, whole.data());
    SamplingOptions sampling;
    sampling.seed = kSeed;
    text = generate_text(generator, *tokenizer_, prompt_, options_.sample_tokens, sampling);
  }  // the generator's device memory goes back before the next step
  const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  log << strprintf("step %5d | sample (%d tokens, %.0f ms): %s%s\n", step + 1, options_.sample_tokens, ms,
                   options_.sample_prompt.c_str(), text.c_str());
  metrics->write({{"step", step + 1}, {"sample", text}, {"sample_prompt", options_.sample_prompt}, {"sample_ms", ms}});
}

}  // namespace eth
