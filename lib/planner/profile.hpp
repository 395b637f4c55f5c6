// Profiles: what one micro-batch costs on one device type, per block kind, for one model and
// sequence length. Measured by eth_profile on this machine's backend, or estimated from a
// device type's peak rates (roofline) where nothing was measured; an estimate says so.
// docs/planner.md has the YAML and how every estimate number is derived.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "kernels/precision.hpp"
#include "lib/model/model_config.hpp"
#include "lib/plan/precision_paths.hpp"
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
  // The path it was measured (or priced) on: the job's precision and the GEMMs' arithmetic.
  kernels::Precision precision = kernels::Precision::fp32;
  kernels::Arithmetic arithmetic = kernels::Arithmetic::fp32;
  double optimizer_ms_per_mparam = 0;  // per step, per 10^6 parameters: zero gradients, norm, AdamW
  std::vector<ProfileEntry> entries;   // ascending micro_batch

  // Costs at micro-batch size b: exact where profiled, else linear between the nearest two
  // profiled sizes (or through the origin and the largest, beyond it).
  ProfileEntry at(int b) const;
  bool on_path(const kernels::PrecisionPath& path) const {
    return precision == path.precision && arithmetic == path.arithmetic;
  }
  // The path it was measured on (its peak not recorded): its storage, its name ("bf16",
  // "bf16 in fp32 arithmetic").
  kernels::PrecisionPath path() const { return {precision, arithmetic, 0}; }
  std::string path_name() const { return path().name(); }
};

Profile load_profile(const std::string& path);
void save_profile(const Profile& profile, const std::string& path);

// What the planner's tests, benchmarks and fp32-era figures (docs/results.md) price devices at:
// TF32 where a device type has it, fp32 where it does not, the rates the search was tuned at.
// No job computes so (a job at tf32 needs TF32 on every device): a job's own plans are priced on
// its paths (lib/plan/precision_paths.hpp).
PrecisionPaths figures_paths(const Topology& topology);
// A profile given by name (--profile) of another path than the one its device type takes in the
// job (`paths`, lib/plan/precision_paths.hpp): an InputError naming the profile file, its path
// and the job's. Types the topology does not have are not checked.
void check_profile_path(const Profile& profile, const Topology& topology, const PrecisionPaths& paths);

// Roofline estimate for `type` on `path`: matmul FLOPs at a fixed fraction of the path's peak
// (bf16 tensor cores, TF32 ones, or fp32), activations and parameter copies moved in the path's
// storage type and the rest of the traffic in fp32, at a fraction of memory bandwidth. Fails
// (InputError naming `where`) when the type has no positive peak rates.
Profile roofline_profile(const DeviceType& type, const ModelConfig& model, int seq_len,
                         const std::vector<int>& micro_batches, const std::string& where,
                         const kernels::PrecisionPath& path);

// The profile of each device type of `topology` (indexed like topology.device_types): the
// given profiles matching the model, the sequence length and the type's path in `paths`, else a
// roofline estimate on that path.
std::vector<Profile> profiles_for(const Topology& topology, const ModelConfig& model, int seq_len,
                                  const std::vector<Profile>& available,
                                  const std::vector<int>& micro_batches, const PrecisionPaths& paths);

// The profiles a job is planned with: each --profile file (`files`, which must be on its device
// type's path: check_profile_path), then `dir`'s (when it is a directory), then roofline
// estimates, as profiles_for chooses; each device type's is printed to `log` when given.
std::vector<Profile> job_profiles(const Topology& topology, const ModelConfig& model, int seq_len, const std::string& dir,
                                  const std::vector<std::string>& files, const std::vector<int>& micro_batches,
                                  const PrecisionPaths& paths, std::ostream* log);

// Every *.yaml profile in a directory, in file-name order.
std::vector<Profile> load_profile_dir(const std::string& dir);

// eth_plan's and eth_profile's --micro-batches: positive sizes, strictly ascending (as a
// profile's entries are); else an InputError naming the option.
void check_micro_batches(const std::vector<int>& sizes);

}  // namespace eth::planner
