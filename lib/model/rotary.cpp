#include "lib/model/rotary.hpp"

#include <cmath>
#include <numbers>

namespace eth {

std::vector<float> rotary_inverse_frequencies(const ModelConfig& c) {
  const int half = c.head_dim / 2;
  const RopeScaling& s = c.rope_scaling;
  const double low_freq_wavelen = s.original_max_position / s.low_freq_factor;
  const double high_freq_wavelen = s.original_max_position / s.high_freq_factor;
  std::vector<float> out(static_cast<size_t>(half));
  for (int i = 0; i < half; i++) {
    double f = 1.0 / std::pow(c.rope_theta, 2.0 * i / c.head_dim);
    if (s.enabled()) {
      const double wavelen = 2 * std::numbers::pi / f;
      if (wavelen > low_freq_wavelen) {
        f /= s.factor;  // low frequencies: stretched
      } else if (wavelen >= high_freq_wavelen) {  // between: blended
        const double smooth = (s.original_max_position / wavelen - s.low_freq_factor) /
                              (s.high_freq_factor - s.low_freq_factor);
        f = (1 - smooth) * f / s.factor + smooth * f;
      }
    }
    out[static_cast<size_t>(i)] = static_cast<float>(f);
  }
  return out;
}

}  // namespace eth
