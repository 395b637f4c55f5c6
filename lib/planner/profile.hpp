// Profiles: what one micro-batch costs on one device type, per block kind, for one model and
// sequence length. Measured by eth_profile on this machine's backend, or estimated from a
// device type's peak rates (roofline) where nothing was measured; an estimate says so.
// docs/planner.md has the YAML and how every estimate number is derived.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "lib/model/model_config.hpp"
#include "lib/plan/topology.hpp"

namespace eth::planner {

// One block kind at one micro-batch size.
struct BlockCost {
  double forward_ms = 0;
  double backward_ms = 0;
  double activation_bytes = 0;  // kept for backward, per micro-batch
  double param_bytes = 0;
};

struct ProfileEntry {
  int micro_batch = 1;
  BlockCost embedding;          // wte + wpe lookup
  BlockCost layer;              // one transformer layer
  BlockCost head;               // final layernorm + tied LM head + softmax/cross-entropy
};

struct Profile {
  std::string source;           // file it was read from, or "roofline estimate"
  std::string device_type;
  std::string model;            // the model's name
  int seq_len = 0;
  bool estimate = false;        // true: roofline, not measured
  double optimizer_ms_per_mparam = 0;  // per step, per 10^6 parameters: zero gradients, norm, AdamW
  std::vector<ProfileEntry> entries;   // ascending micro_batch

  // Costs at micro-batch size b: exact where profiled, else linear between the nearest two
  // profiled sizes (or through the origin and the largest, beyond it).
  ProfileEntry at(int b) const;
};

Profile load_profile(const std::string& path);
void save_profile(const Profile& profile, const std::string& path);

// Roofline estimate for `type`: matmul FLOPs at a fixed fraction of the best dense peak the
// fp32 kernels can use (TF32 where the device has it), other traffic at a fraction of memory
// bandwidth. Fails (InputError naming `where`) when the type has no positive peak rates.
Profile roofline_profile(const DeviceType& type, const GptConfig& model, int seq_len,
                         const std::vector<int>& micro_batches, const std::string& where);

// The profile of each device type of `topology` (indexed like topology.device_types): the
// given profiles matching the model and sequence length, else a roofline estimate.
std::vector<Profile> profiles_for(const Topology& topology, const GptConfig& model, int seq_len,
                                  const std::vector<Profile>& available,
                                  const std::vector<int>& micro_batches);

// Every *.yaml profile in a directory, in file-name order.
std::vector<Profile> load_profile_dir(const std::string& dir);

// eth_plan's and eth_profile's --micro-batches: positive sizes, strictly ascending (as a
// profile's entries are); else an InputError naming the option.
void check_micro_batches(const std::vector<int>& sizes);

}  // namespace eth::planner
