// Choosing the next token from a logits row: greedy (temperature 0), or a draw from the softmax
// of logits / temperature, cut to the top_k most likely ids and then to the smallest set of
// them whose probability reaches top_p. Only ids [0, V) are candidates: the padded vocabulary
// V..Vp-1 is never chosen. Draws come from a counter-based stream (lib/base/random.hpp), so the
// same seed gives the same choices on any machine.
#pragma once

#include <cstdint>

namespace eth {

struct SamplingOptions {
  float temperature = 1.0f;  // 0: greedy (the first id of the largest logit)
  int top_k = 0;             // 0: all V ids
  float top_p = 1.0f;        // (0, 1]; 1: no nucleus cut
  uint64_t seed = 1337;
};

class Sampler {
 public:
  Sampler(const SamplingOptions& options, int vocab_size);

  int32_t next(const float* logits /* (Vp): only [0, V) read */);

 private:
  SamplingOptions options_;
  int vocab_size_;
  uint64_t draws_ = 0;  // the stream's counter
};

}  // namespace eth
