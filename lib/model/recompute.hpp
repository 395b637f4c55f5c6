// Activation recomputation of one stage, a plan field (docs/design.md, "Activation
// recomputation"): what a stage keeps per in-flight micro-batch, and what its backward
// recomputes from that with the same kernels (so the numbers do not change, bit for bit).
//   none:      every layer's activations, per micro-batch in flight;
//   selective: the MLP half of each layer (res2, ln2 and its statistics, fch, fch_gelu, res3);
//              the attention half (ln1 and its statistics, qkv, attention's saved state, atty)
//              is recomputed from the layer's input, one layer at a time, into one shared set;
//   full:      only the stage's input and output; the backward re-runs the stage's forward
//              into one shared set of every layer's activations (unless that set still holds
//              this micro-batch, as when its backward directly follows its forward).
#pragma once

#include <optional>
#include <string>

namespace eth {

enum class Recompute { none, selective, full };

std::string to_string(Recompute mode);
// "none", "selective" or "full"; nothing for any other text.
std::optional<Recompute> parse_recompute(const std::string& text);

}  // namespace eth
