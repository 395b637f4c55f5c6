#include "lib/planner/scenario.hpp"

#include <filesystem>

#include "lib/base/yaml_fields.hpp"

namespace eth::planner {
namespace fs = std::filesystem;

Scenario load_scenario(const std::string& path) {
  const yaml::Field root = yaml::load_file(path, "scenario");
  Scenario s;
  s.source = path;
  const fs::path dir = fs::path(path).parent_path();
  s.name = root.child("name").as_string();
  s.topology_path = (dir / root.child("topology").as_string()).lexically_normal().string();
  s.model_path = (dir / root.child("model").as_string()).lexically_normal().string();
  s.global_batch = root.child("global_batch").as_int(1, 1 << 24);
  s.seq_len = root.child("seq_len").as_int(1, 1 << 24);
  if (root.has("micro_batches")) s.micro_batches = root.child("micro_batches").as_ints(1, 1 << 16);
  if (s.micro_batches.empty()) root.child("micro_batches").fail("at least one micro-batch size", "an empty list");
  return s;
}

}  // namespace eth::planner
