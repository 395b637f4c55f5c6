// Profiles: what one micro-batch costs on one device type, per block kind, for one model and
// sequence length. Measured by eth_profile on this machine's backend, or estimated from a
// device type's peak rates (roofline) where nothing was measured; an estimate says so.
// docs/planner.md has the YAML and how every estimate number is derived.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kernels/precision.hpp"
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
  std::string precision = "fp32";  // what it was measured (or priced) at: fp32, tf32 or bf16
  double optimizer_ms_per_mparam = 0;  // per step, per 10^6 parameters: zero gradients, norm, AdamW
  std::vector<ProfileEntry> entries;   // ascending micro_batch

  // Costs at micro-batch size b: exact where profiled, else linear between the nearest two
  // profiled sizes (or through the origin and the largest, beyond it).
  ProfileEntry at(int b) const;
};

Profile load_profile(const std::string& path);
void save_profile(const Profile& profile, const std::string& path);

// The dense peak the GEMMs of `type` run at in `precision`, as the backends deliver it today:
// fp32 on CUDA cores; tf32 on tensor cores where the device has them (fp32 where it does not:
// eth_train refuses tf32 there); bf16 through the fp32 kernels with rounding at the bf16 storage
// points (kernels/bf16_rounding_backend.hpp), on every device, until tensor-core bf16 kernels
// land (issue 24), so at the fp32 rate; automatic as bf16 (GPUs) or fp32 (CPUs), the same rate.
double gemm_peak_tflops(const DeviceType& type, kernels::Precision precision);
// What the planner's tests, benchmarks and documented figures (docs/results.md) price GPUs at:
// TF32, at which the search was tuned; a job's own plans are priced at its --precision.
inline constexpr kernels::Precision kFiguresPrecision = kernels::Precision::tf32;
// The precision a profile of `type` has for a job at `precision`: automatic is bf16 on a device
// type with bf16 units (a GPU's), else fp32.
std::string profile_precision(const DeviceType& type, kernels::Precision precision);
// A profile given by name (--profile) of another precision than the job's: an InputError naming
// the profile file, its precision and the job's. Types the topology does not have are not checked.
void check_profile_precision(const Profile& profile, const Topology& topology, kernels::Precision precision);

// Roofline estimate for `type` at `precision`: matmul FLOPs at a fixed fraction of
// gemm_peak_tflops, other traffic at a fraction of memory bandwidth. Fails (InputError naming
// `where`) when the type has no positive peak rates.
Profile roofline_profile(const DeviceType& type, const GptConfig& model, int seq_len,
                         const std::vector<int>& micro_batches, const std::string& where,
                         kernels::Precision precision = kernels::Precision::automatic);

// The profile of each device type of `topology` (indexed like topology.device_types): the
// given profiles matching the model and sequence length, else a roofline estimate.
// A given profile is taken only at the job's precision (profile_precision), as only at its model
// and sequence length.
std::vector<Profile> profiles_for(const Topology& topology, const GptConfig& model, int seq_len,
                                  const std::vector<Profile>& available,
                                  const std::vector<int>& micro_batches,
                                  kernels::Precision precision = kernels::Precision::automatic);

// Every *.yaml profile in a directory, in file-name order.
std::vector<Profile> load_profile_dir(const std::string& dir);

// eth_plan's and eth_profile's --micro-batches: positive sizes, strictly ascending (as a
// profile's entries are); else an InputError naming the option.
void check_micro_batches(const std::vector<int>& sizes);

}  // namespace eth::planner
