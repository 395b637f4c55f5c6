#include "lib/runtime/slowdown.hpp"

#include <cstdio>

#include "lib/base/input_error.hpp"

namespace eth {

SlowdownRule parse_slowdown(const std::string& text) {
  SlowdownRule rule;
  char tail = 0;
  if (std::sscanf(text.c_str(), "%d:%lf:%d%c", &rule.rank, &rule.factor, &rule.from_step, &tail) != 3 ||
      rule.rank < 0 || !(rule.factor >= 1.0) || rule.from_step < 1)
    fail_input("--slowdown", "value", "RANK:FACTOR:STEP with RANK >= 0, FACTOR >= 1, STEP >= 1", text);
  return rule;
}

double slowdown_factor(const std::vector<SlowdownRule>& rules, int rank, int step) {
  double factor = 1.0;
  int since = 0;
  for (const SlowdownRule& r : rules)
    if (r.rank == rank && r.from_step <= step + 1 && r.from_step >= since) {
      factor = r.factor;
      since = r.from_step;
    }
  return factor;
}

std::vector<double> modelled_compute_ms(const std::vector<SlowdownRule>& rules, const std::vector<int>& samples,
                                        int step, double ms_per_sample) {
  std::vector<double> ms(samples.size());
  for (size_t r = 0; r < samples.size(); r++)
    ms[r] = samples[r] * ms_per_sample * slowdown_factor(rules, static_cast<int>(r), step);
  return ms;
}

}  // namespace eth
