#include "lib/plan/batch_balance.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

namespace eth {

std::vector<int> split_by_speed(int b, const std::vector<double>& speeds) {
  const int n = static_cast<int>(speeds.size());
  const double total = std::accumulate(speeds.begin(), speeds.end(), 0.0);
  std::vector<int> split(n, 1);
  std::vector<double> remainder(n, 0);
  int left = b - n;
  const int base_left = left;
  for (int i = 0; i < n; i++) {
    const double want = base_left * speeds[i] / total;
    split[i] += static_cast<int>(want);
    left -= static_cast<int>(want);
    remainder[i] = want - static_cast<int>(want);
  }
  std::vector<int> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int a, int c) { return remainder[a] > remainder[c]; });
  for (int i = 0; left > 0; i = (i + 1) % n, left--) split[order[i]]++;
  return split;
}

std::optional<std::vector<int>> balance_samples(const std::vector<PipelineRate>& pipes, int global_batch, double* ms) {
  const int P = static_cast<int>(pipes.size());
  long long one_each = 0;
  for (const PipelineRate& p : pipes) one_each += p.micro_batch;
  if (one_each > global_batch) return std::nullopt;
  // Micro-batches pipeline p finishes by time T (at least one).
  auto count = [](const PipelineRate& p, double T) {
    return T < p.sum_stage_ms ? 1 : std::max(1, int(std::floor((T - p.sum_stage_ms) / p.max_stage_ms)) + 1);
  };
  auto cap = [&](const PipelineRate& p) { return global_batch / p.micro_batch; };  // whole micro-batches at most
  double lo = 0, hi = 0;
  for (const PipelineRate& p : pipes) hi = std::max(hi, p.ms(cap(p)));
  auto covered = [&](double T) {
    long long samples = 0;
    for (const PipelineRate& p : pipes) samples += static_cast<long long>(std::min(cap(p), count(p, T))) * p.micro_batch;
    return samples;
  };
  // The first time by which whole micro-batches leave fewer samples than the smallest one over.
  int smallest = pipes[0].micro_batch;
  for (const PipelineRate& p : pipes) smallest = std::min(smallest, p.micro_batch);
  for (int it = 0; it < 100 && hi - lo > 1e-9 * hi; it++) {
    const double mid = (lo + hi) / 2;
    (covered(mid) > global_batch - smallest ? hi : lo) = mid;
  }
  std::vector<int> c(P);
  long long total = 0;  // samples in whole micro-batches
  for (int k = 0; k < P; k++) total += static_cast<long long>(c[k] = std::min(cap(pipes[k]), count(pipes[k], hi))) * pipes[k].micro_batch;
  while (total > global_batch) {  // drop the excess from the slowest pipelines
    int worst = -1;
    for (int k = 0; k < P; k++)
      if (c[k] > 1 && (worst < 0 || pipes[k].ms(c[k]) > pipes[worst].ms(c[worst]))) worst = k;
    c[worst]--;
    total -= pipes[worst].micro_batch;
  }
  // What is left goes where it costs least: whole micro-batches while they fit (rounding in
  // count() can leave some over), then fewer than a micro-batch as a smaller last one.
  std::vector<int> last(P, 0);
  while (total < global_batch) {
    const long long left = global_batch - total;
    int best = -1;
    for (int k = 0; k < P; k++)
      if (last[k] == 0 && left >= pipes[k].min_last && (best < 0 || pipes[k].ms(c[k] + 1) < pipes[best].ms(c[best] + 1)))
        best = k;
    if (best < 0) return std::nullopt;
    if (left >= pipes[best].micro_batch) {
      c[best]++;
      total += pipes[best].micro_batch;
    } else {
      last[best] = static_cast<int>(left);
      total = global_batch;
    }
  }
  std::vector<int> samples(P);
  double slowest = 0;
  for (int k = 0; k < P; k++) {
    samples[k] = c[k] * pipes[k].micro_batch + last[k];
    slowest = std::max(slowest, pipes[k].ms(c[k] + (last[k] > 0 ? 1 : 0)));
  }
  if (ms) *ms = slowest;
  return samples;
}

}  // namespace eth
