// The segment table of the one-launch AdamW (lib/model/optimizer.hpp: adamw_segments): over any
// updated spans of a stage it names every updated parameter exactly once and no other, with the
// moment the optimizer keeps for it (packed in span order), its tensor's weight decay, and runs
// of at most kAdamWSegmentFloats; and the memory model counts the table's bytes exactly.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/adamw_segments.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/optimizer.hpp"
#include "lib/model/param_layout.hpp"
#include "lib/plan/memory_model.hpp"

namespace eth::test {
namespace {

// Checks the table against the spans, float by float (counting mismatches: a stage of GPT-2 is
// tens of millions of floats).
void expect_covers(const ParamLayout& layout, const std::vector<FloatRange>& spans, const std::string& what) {
  const std::vector<kernels::AdamWSegment> table = adamw_segments(layout, spans);
  constexpr size_t kNone = ~size_t{0};
  std::vector<size_t> moment_of(layout.size(), kNone);  // per parameter, the moment the table gives it
  std::vector<int8_t> decay_of(layout.size(), -1);
  size_t twice = 0, oversized = 0;
  for (const kernels::AdamWSegment& s : table) {
    if (s.size < 1 || s.size > kernels::kAdamWSegmentFloats) oversized++;
    ASSERT_LE(s.param_offset + s.size, layout.size()) << what;
    for (size_t j = 0; j < s.size; j++) {
      if (moment_of[s.param_offset + j] != kNone) twice++;
      moment_of[s.param_offset + j] = s.moment_offset + j;
      decay_of[s.param_offset + j] = static_cast<int8_t>(s.decay);
    }
  }
  EXPECT_EQ(oversized, 0u) << what << ": segments of 0 or more than kAdamWSegmentFloats floats";
  EXPECT_EQ(twice, 0u) << what << ": parameters in two segments";
  // The optimizer's packing: the spans' floats one after another.
  std::vector<bool> updated(layout.size(), false);
  size_t moment = 0, wrong_moment = 0, stray = 0, wrong_decay = 0;
  for (const FloatRange& span : spans)
    for (size_t i = span.offset; i < span.end(); i++, moment++) {
      updated[i] = true;
      if (moment_of[i] != moment) wrong_moment++;
    }
  for (size_t i = 0; i < layout.size(); i++)
    if (!updated[i] && moment_of[i] != kNone) stray++;
  for (const ParamTensor& t : layout.tensors())
    for (size_t i = t.offset; i < t.offset + t.size; i++)
      if (updated[i] && decay_of[i] != (t.weight_decay ? 1 : 0)) wrong_decay++;
  EXPECT_EQ(wrong_moment, 0u) << what << ": updated parameters without their moment";
  EXPECT_EQ(stray, 0u) << what << ": parameters outside the spans updated";
  EXPECT_EQ(wrong_decay, 0u) << what << ": parameters with another tensor's weight decay";
}

ModelConfig segmented_model() {
  return gpt2_config("segmented", 1000, 1024, 100, 4, 3, 192);
}

TEST(AdamWSegments, CoverTheUpdatedSpansOnceWithTheirMomentsAndDecay) {
  // Matrices and wte of several segments each (C * C = 36,864 floats), layernorms and biases of
  // one, a stage boundary and a shard cut inside segments.
  const ModelConfig model = segmented_model();
  for (LayerRange layers : {LayerRange{0, 1}, LayerRange{1, 3}, LayerRange{3, 4}, LayerRange{0, 4}}) {
    const ParamLayout layout(model, layers);
    const std::string what = "layers [" + std::to_string(layers.begin) + ", " + std::to_string(layers.end) + ")";
    expect_covers(layout, {{0, layout.size()}}, what + " whole");
    // Spans cutting tensors at odd places, as the other owners' shards do.
    const size_t n = layout.size();
    expect_covers(layout, {{0, n / 3 + 7}, {n / 2 + 1, n / 4}}, what + " sharded");
    expect_covers(layout, {{n / 5, n - n / 5 - 3}}, what + " middle");
  }
}

TEST(AdamWSegments, TheMemoryModelCountsTheTable) {
  for (const char* file : {"inputs/models/gpt2-124m.yaml", "inputs/models/tiny-4l.yaml", ""}) {
    const ModelConfig model = *file ? load_model_config(file) : segmented_model();
    const int L = model.num_layers;
    for (LayerRange layers : {LayerRange{0, L}, LayerRange{0, 1}, LayerRange{1, L - 1}, LayerRange{L - 1, L}}) {
      const ParamLayout layout(model, layers);
      const MemoryBytes bytes = stage_memory(model, layers, 1, 64, 1, Recompute::none, {});
      const double table = double(sizeof(kernels::AdamWSegment) * adamw_segments(layout, {{0, layout.size()}}).size());
      EXPECT_EQ(bytes.optimizer, 8.0 * double(layout.size()) + table)
          << file << " layers [" << layers.begin << ", " << layers.end << ")";
    }
  }
}

}  // namespace
}  // namespace eth::test
