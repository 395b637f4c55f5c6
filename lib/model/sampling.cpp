#include "lib/model/sampling.hpp"

#include <algorithm>
#include <cassert>
#include <cmath>
#include <numeric>
#include <vector>

#include "lib/base/random.hpp"

namespace eth {

Sampler::Sampler(const SamplingOptions& options, int vocab_size) : options_(options), vocab_size_(vocab_size) {
  assert(vocab_size > 0 && options.temperature >= 0 && options.top_k >= 0 && options.top_p > 0 && options.top_p <= 1);
}

int32_t Sampler::next(const float* logits) {
  const int V = vocab_size_;
  if (options_.temperature == 0) return static_cast<int32_t>(std::max_element(logits, logits + V) - logits);
  // Candidates by falling logit (ties: lower id first), the first top_k of them.
  std::vector<int32_t> ids(static_cast<size_t>(V));
  std::iota(ids.begin(), ids.end(), 0);
  const auto before = [logits](int32_t a, int32_t b) { return logits[a] > logits[b] || (logits[a] == logits[b] && a < b); };
  const size_t k = options_.top_k > 0 ? std::min<size_t>(static_cast<size_t>(options_.top_k), ids.size()) : ids.size();
  std::partial_sort(ids.begin(), ids.begin() + static_cast<std::ptrdiff_t>(k), ids.end(), before);
  ids.resize(k);
  // softmax(logits / temperature) over them, in double, from the largest.
  std::vector<double> p(k);
  double sum = 0;
  for (size_t i = 0; i < k; i++) sum += p[i] = std::exp((double(logits[ids[i]]) - logits[ids[0]]) / options_.temperature);
  // The nucleus: the shortest prefix whose probability reaches top_p.
  size_t kept = k;
  if (options_.top_p < 1) {
    double mass = 0;
    for (kept = 0; kept < k && mass < options_.top_p * sum; kept++) mass += p[kept];
  }
  double total = 0;
  for (size_t i = 0; i < kept; i++) total += p[i];
  const double u = uniform_at(options_.seed, draws_++) * total;
  double cumulative = 0;
  for (size_t i = 0; i < kept; i++) {
    cumulative += p[i];
    if (u < cumulative) return ids[i];
  }
  return ids[kept - 1];  // u within rounding of total
}

}  // namespace eth
