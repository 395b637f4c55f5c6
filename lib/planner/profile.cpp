#include "lib/planner/profile.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include <yaml-cpp/yaml.h>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/base/yaml_fields.hpp"
#include "lib/model/model_tensors.hpp"

namespace eth::planner {
namespace {

constexpr double kMatmulEfficiency = 0.5;   // of the dense peak the GEMMs run at (PrecisionPath::peak_tflops)
constexpr double kMemoryEfficiency = 0.7;   // of the memory bandwidth, for the other kernels
constexpr const char* kKinds[] = {"embedding", "layer", "head"};

BlockCost* kind_of(ProfileEntry& e, int k) { return k == 0 ? &e.embedding : k == 1 ? &e.layer : &e.head; }
const BlockCost* kind_of(const ProfileEntry& e, int k) { return kind_of(const_cast<ProfileEntry&>(e), k); }

BlockCost read_block(const yaml::Field& f) {
  // yaml::Field::child of a missing key throws yaml-cpp's own error; name the field instead.
  if (!f.node || !f.node.IsMap()) f.fail("a mapping {forward_ms, backward_ms, activation_bytes, param_bytes}", f.text());
  return {f.child("forward_ms").as_double(0), f.child("backward_ms").as_double(0),
          f.child("activation_bytes").as_double(0), f.child("param_bytes").as_double(0)};
}

BlockCost lerp(const BlockCost& a, const BlockCost& b, double t) {
  auto mix = [t](double x, double y) { return std::max(0.0, x + (y - x) * t); };
  return {mix(a.forward_ms, b.forward_ms), mix(a.backward_ms, b.backward_ms),
          mix(a.activation_bytes, b.activation_bytes), a.param_bytes};
}

}  // namespace

ProfileEntry Profile::at(int b) const {
  // Entries are ascending and non-empty (load_profile and roofline_profile guarantee it).
  auto hi = std::lower_bound(entries.begin(), entries.end(), b,
                             [](const ProfileEntry& e, int v) { return e.micro_batch < v; });
  if (hi != entries.end() && hi->micro_batch == b) return *hi;
  ProfileEntry lo_e{}, hi_e{};
  if (hi == entries.end() || hi == entries.begin()) {  // outside the profiled sizes: proportional to b
    hi_e = hi == entries.end() ? entries.back() : *hi;
    lo_e = hi_e;
    for (int k = 0; k < 3; k++) *kind_of(lo_e, k) = {0, 0, 0, kind_of(hi_e, k)->param_bytes};
    lo_e.micro_batch = 0;
  } else {
    hi_e = *hi;
    lo_e = *std::prev(hi);
  }
  const double t = double(b - lo_e.micro_batch) / double(hi_e.micro_batch - lo_e.micro_batch);
  ProfileEntry out;
  out.micro_batch = b;
  for (int k = 0; k < 3; k++) *kind_of(out, k) = lerp(*kind_of(lo_e, k), *kind_of(hi_e, k), t);
  return out;
}

Profile load_profile(const std::string& path) {
  const yaml::Field root = yaml::load_file(path, "profile");
  Profile p;
  p.source = path;
  p.device_type = root.child("device_type").as_string();
  p.model = root.child("model").as_string();
  p.seq_len = root.child("seq_len").as_int(1, 1 << 24);
  const yaml::Field method = root.child("method");
  const std::string m = method.as_string();
  if (m != "measured" && m != "roofline-estimate") method.fail("'measured' or 'roofline-estimate'", method.text());
  p.estimate = m == "roofline-estimate";
  // Profiles from before --precision existed were measured at fp32 (nothing turned TF32 on);
  // those from before the path was recorded were measured in their precision's own arithmetic (a
  // device without bf16 units was profiled at fp32), but estimated in fp32 arithmetic whatever
  // the precision (the roofline priced bf16 at the fp32 peak then).
  if (root.has("precision")) {
    const yaml::Field precision = root.child("precision");
    const std::string text = precision.as_string();
    if (text != "fp32" && text != "tf32" && text != "bf16" && text != "fp16")
      precision.fail("fp32, tf32, bf16 or fp16", text);
    p.precision = kernels::parse_precision(text);
  }
  p.arithmetic = p.precision == kernels::Precision::bf16 && !p.estimate ? kernels::Arithmetic::bf16
                 : p.precision == kernels::Precision::tf32                ? kernels::Arithmetic::tf32
                                                                          : kernels::Arithmetic::fp32;
  if (root.has("arithmetic")) {
    const yaml::Field arithmetic = root.child("arithmetic");
    const std::string text = arithmetic.as_string();
    const bool fits = text == "fp32" || (text == "tf32" && p.precision == kernels::Precision::tf32) ||
                      (text == "bf16" && p.precision == kernels::Precision::bf16) ||
                      (text == "fp16" && p.precision == kernels::Precision::fp16);
    if (!fits)
      arithmetic.fail(strprintf("fp32 or the precision's own (%s)", kernels::precision_name(p.precision)), text);
    p.arithmetic = kernels::parse_arithmetic(text);
  }
  p.optimizer_ms_per_mparam = root.child("optimizer_ms_per_mparam").as_double(0);
  const yaml::Field entries = root.child("entries");
  if (entries.size() == 0) entries.fail("at least one micro-batch entry", "an empty list");
  for (size_t i = 0; i < entries.size(); i++) {
    const yaml::Field e = entries.at(i);
    ProfileEntry entry;
    entry.micro_batch = e.child("micro_batch").as_int(1, 1 << 20);
    if (!p.entries.empty() && entry.micro_batch <= p.entries.back().micro_batch)
      e.child("micro_batch").fail(strprintf("a micro_batch above the previous entry's %d", p.entries.back().micro_batch),
                                  std::to_string(entry.micro_batch));
    for (int k = 0; k < 3; k++) *kind_of(entry, k) = read_block(e.child(kKinds[k]));
    p.entries.push_back(entry);
  }
  return p;
}

void save_profile(const Profile& p, const std::string& path) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "device_type" << YAML::Value << p.device_type;
  out << YAML::Key << "model" << YAML::Value << p.model;
  out << YAML::Key << "seq_len" << YAML::Value << p.seq_len;
  out << YAML::Key << "method" << YAML::Value << (p.estimate ? "roofline-estimate" : "measured");
  out << YAML::Key << "precision" << YAML::Value << kernels::precision_name(p.precision);
  out << YAML::Key << "arithmetic" << YAML::Value << kernels::arithmetic_name(p.arithmetic);
  out << YAML::Key << "optimizer_ms_per_mparam" << YAML::Value << p.optimizer_ms_per_mparam;
  out << YAML::Key << "entries" << YAML::Value << YAML::BeginSeq;
  for (const ProfileEntry& e : p.entries) {
    out << YAML::BeginMap << YAML::Key << "micro_batch" << YAML::Value << e.micro_batch;
    for (int k = 0; k < 3; k++) {
      const BlockCost& c = *kind_of(e, k);
      out << YAML::Key << kKinds[k] << YAML::Value << YAML::Flow << YAML::BeginMap
          << YAML::Key << "forward_ms" << YAML::Value << c.forward_ms
          << YAML::Key << "backward_ms" << YAML::Value << c.backward_ms
          << YAML::Key << "activation_bytes" << YAML::Value << c.activation_bytes
          << YAML::Key << "param_bytes" << YAML::Value << c.param_bytes << YAML::EndMap;
    }
    out << YAML::EndMap;
  }
  out << YAML::EndSeq << YAML::EndMap;
  std::ofstream file(path);
  if (!file) fail_input(path, "file", "a writable profile path", "a path that cannot be opened");
  file << "# ETH profile (docs/planner.md): per micro-batch size, per block kind, one micro-batch's cost.\n"
       << out.c_str() << '\n';
}

PrecisionPaths figures_paths(const Topology& topology) {
  PrecisionPaths paths{kernels::Precision::tf32, kernels::Precision::tf32, {}};
  for (const DeviceType& type : topology.device_types)
    paths.by_type.push_back(kernels::precision_path(type.peak_tflops_tf32 > 0 ? kernels::Precision::tf32 : kernels::Precision::fp32,
                                                    type.rates()));
  return paths;
}

void check_profile_path(const Profile& profile, const Topology& topology, const PrecisionPaths& paths) {
  for (size_t t = 0; t < topology.device_types.size(); t++) {
    const DeviceType& type = topology.device_types[t];
    if (type.name != profile.device_type || profile.on_path(paths.by_type[t])) continue;
    fail_input(profile.source, "precision",
               "a profile on the job's path (" + paths.by_type[t].name() + " for " + type.name + ", --precision " +
                   kernels::precision_name(paths.requested) + ")",
               profile.path_name());
  }
}

Profile roofline_profile(const DeviceType& type, const ModelConfig& model, int T,
                         const std::vector<int>& micro_batches, const std::string& where,
                         const kernels::PrecisionPath& path) {
  const double rate_tflops = path.peak_tflops;
  if (!(rate_tflops > 0) || !(type.memory_bandwidth_gbs > 0))
    fail_input(where, "device_types." + type.name + ".peak_tflops",
               "positive peak rates and memory bandwidth for a device type without a profile", "none");
  const double flop_per_ms = rate_tflops * 1e9 * kMatmulEfficiency;
  const double byte_per_ms = type.memory_bandwidth_gbs * 1e6 * kMemoryEfficiency;
  auto ms = [&](double flops, double bytes) { return flops / flop_per_ms + bytes / byte_per_ms; };
  const double C = model.channels, Vp = model.padded_vocab_size;
  const double NH = model.num_heads;
  const double tables = model.positions == PositionKind::learned ? 2 : 1;  // wte, and wpe where learned
  // Bytes of an activation or a parameter copy on this path; gradients, optimizer state and
  // logits are fp32 on every path. The recorded activation_bytes and param_bytes stay fp32's, as
  // eth_profile records them.
  const double w = static_cast<double>(kernels::element_bytes(path.storage()));

  Profile p;
  p.source = "roofline estimate";
  p.device_type = type.name;
  p.model = model.name;
  p.seq_len = T;
  p.estimate = true;
  p.precision = path.precision;
  p.arithmetic = path.arithmetic;
  p.optimizer_ms_per_mparam = ms(0, 36e6);  // zero g; norm reads g; AdamW reads p, g, m, v, writes p, m, v
  for (int b : micro_batches) {
    const double BT = double(b) * T;
    ProfileEntry e;
    e.micro_batch = b;
    // Embedding: gather a row of each table, write (B, T, C); backward reads its gradient and
    // adds it into the fp32 gradients of each table (a read and a write).
    e.embedding = {ms(0, (tables + 1) * w * BT * C), ms(0, (w + 6 * tables) * BT * C), 4 * BT * (C + 1),
                   4 * double(embedding_params(model))};
    // Layer: its GEMMs (GPT-2: 24 B T C^2 FLOPs) + attention's 4 B T^2 NH hs; activations written
    // and read once each forward, twice backward; weights read once, their fp32 gradients written once.
    const double layer_act_elements = BT * (double(layer_widths(model).kept(model.channels)) + 4 + NH);  // + norm and
                                                                                   // attention (B, NH, T) statistics
    const double layer_param_elements = double(layer_params(model));
    const double layer_flops = BT * (layer_matmul_flops(model) + attention_score_flops(model, T));
    e.layer = {ms(layer_flops, 2 * w * layer_act_elements + w * layer_param_elements),
               ms(2 * layer_flops, 4 * w * layer_act_elements + (w + 4) * layer_param_elements), 4 * layer_act_elements,
               4 * layer_param_elements};
    // Head: final norm, logits GEMM 2 B T C Vp, softmax + cross-entropy over the fp32
    // (B, T, Vp) logits (read, write dlogits); backward is the GEMM's two products.
    const double logits = 4 * BT * Vp;
    e.head = {ms(2 * BT * C * Vp, 3 * logits + 3 * w * BT * C), ms(4 * BT * C * Vp, 2 * logits + 4 * w * BT * C),
              4 * BT * (C + 2), 4 * double(head_params(model) + final_norm_params(model))};
    p.entries.push_back(e);
  }
  return p;
}

std::vector<Profile> profiles_for(const Topology& topology, const ModelConfig& model, int seq_len,
                                  const std::vector<Profile>& available, const std::vector<int>& micro_batches,
                                  const PrecisionPaths& paths) {
  std::vector<Profile> out;
  for (size_t t = 0; t < topology.device_types.size(); t++) {
    const DeviceType& type = topology.device_types[t];
    auto it = std::find_if(available.begin(), available.end(), [&](const Profile& p) {
      return p.device_type == type.name && p.model == model.name && p.seq_len == seq_len && p.on_path(paths.by_type[t]);
    });
    out.push_back(it != available.end()
                      ? *it
                      : roofline_profile(type, model, seq_len, micro_batches, topology.source, paths.by_type[t]));
  }
  return out;
}

std::vector<Profile> job_profiles(const Topology& topology, const ModelConfig& model, int seq_len, const std::string& dir,
                                  const std::vector<std::string>& files, const std::vector<int>& micro_batches,
                                  const PrecisionPaths& paths, std::ostream* log) {
  std::vector<Profile> available;
  if (!dir.empty() && std::filesystem::is_directory(dir)) available = load_profile_dir(dir);
  for (const std::string& f : files) {
    available.insert(available.begin(), load_profile(f));
    check_profile_path(available.front(), topology, paths);
  }
  std::vector<Profile> profiles = profiles_for(topology, model, seq_len, available, micro_batches, paths);
  if (log != nullptr)
    for (const Profile& p : profiles)
      *log << strprintf("profile %-14s %s %s (%s)\n", p.device_type.c_str(), p.estimate ? "ESTIMATE" : "measured",
                        p.path_name().c_str(), p.source.c_str());
  return profiles;
}

std::vector<Profile> load_profile_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  if (!fs::is_directory(dir)) fail_input(dir, "directory", "a directory of profile YAML files", "no such directory");
  std::vector<std::string> files;
  for (const auto& entry : fs::directory_iterator(dir))
    if (entry.path().extension() == ".yaml") files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  std::vector<Profile> out;
  for (const std::string& f : files) out.push_back(load_profile(f));
  return out;
}

void check_micro_batches(const std::vector<int>& sizes) {
  std::string given;
  for (int b : sizes) given += strprintf("%s%d", given.empty() ? "" : " ", b);
  for (size_t i = 0; i < sizes.size(); i++)
    if (sizes[i] < 1 || (i > 0 && sizes[i] <= sizes[i - 1]))
      fail_input("command line", "--micro-batches", "positive sample counts in ascending order", given);
}

}  // namespace eth::planner
