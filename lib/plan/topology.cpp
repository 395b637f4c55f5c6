#include "lib/plan/topology.hpp"

#include <fstream>
#include <map>

#include <yaml-cpp/yaml.h>

#include "lib/base/input_error.hpp"
#include "lib/base/yaml_fields.hpp"

namespace eth {
namespace {

constexpr int kMaxCount = 1 << 20;

Link read_link(const yaml::Field& f) {
  return {f.child("kind").as_string(), f.child("bandwidth_gbs").as_double(1e-9), f.child("latency_us").as_double(0)};
}

DeviceType read_device_type(const yaml::Field& f) {
  DeviceType t;
  t.name = f.child("name").as_string();
  t.memory_gb = f.child("memory_gb").as_double(1e-9);
  const yaml::Field peak = f.child("peak_tflops");
  t.peak_tflops_fp32 = peak.child("fp32").as_double(1e-9);
  t.peak_tflops_tf32 = peak.has("tf32") ? peak.child("tf32").as_double(0) : 0;
  t.peak_tflops_bf16 = peak.has("bf16") ? peak.child("bf16").as_double(0) : 0;
  t.peak_tflops_fp16 = peak.has("fp16") ? peak.child("fp16").as_double(0) : 0;
  t.memory_bandwidth_gbs = f.child("memory_bandwidth_gbs").as_double(1e-9);
  return t;
}

YAML::Node link_yaml(const Link& l) {
  YAML::Node n;
  n["kind"] = l.kind;
  n["bandwidth_gbs"] = l.bandwidth_gbs;
  n["latency_us"] = l.latency_us;
  n.SetStyle(YAML::EmitterStyle::Flow);
  return n;
}

}  // namespace

namespace {

Topology read_topology(const yaml::Field& root, const std::string& source) {
  Topology topo;
  topo.source = source;

  const yaml::Field types = root.child("device_types");
  std::map<std::string, int> type_index;
  for (size_t i = 0; i < types.size(); i++) {
    DeviceType t = read_device_type(types.at(i));
    if (type_index.count(t.name))
      types.at(i).child("name").fail("a device type name not used before", "'" + t.name + "' again");
    type_index[t.name] = static_cast<int>(i);
    topo.device_types.push_back(std::move(t));
  }
  if (topo.device_types.empty()) types.fail("at least one device type", "an empty list");

  topo.network = read_link(root.child("network"));

  // A node entry may stand for `count` identical nodes, named name0, name1, ...
  const yaml::Field nodes = root.child("nodes");
  for (size_t i = 0; i < nodes.size(); i++) {
    const yaml::Field n = nodes.at(i);
    const int copies = n.has("count") ? n.child("count").as_int(1, kMaxCount) : 1;
    Node node;
    node.name = n.child("name").as_string();
    node.link = read_link(n.child("link"));
    const yaml::Field devices = n.child("devices");
    for (size_t d = 0; d < devices.size(); d++) {
      const yaml::Field dev = devices.at(d);
      const yaml::Field type = dev.node.IsScalar() ? dev : dev.child("type");
      const int count = dev.node.IsScalar() ? 1 : dev.child("count").as_int(1, kMaxCount);
      const auto it = type_index.find(type.as_string());
      if (it == type_index.end()) type.fail("a name listed under device_types", type.text());
      node.devices.insert(node.devices.end(), static_cast<size_t>(count), it->second);
    }
    if (node.devices.empty()) devices.fail("at least one device", "an empty list");
    for (int c = 0; c < copies; c++) {
      Node copy = node;
      if (copies > 1) copy.name += std::to_string(c);
      copy.first_rank = static_cast<int>(topo.ranks.size());
      for (size_t d = 0; d < copy.devices.size(); d++)
        topo.ranks.push_back({static_cast<int>(topo.nodes.size()), static_cast<int>(d), copy.devices[d]});
      topo.nodes.push_back(std::move(copy));
    }
  }
  if (topo.nodes.empty()) nodes.fail("at least one node", "an empty list");
  return topo;
}

}  // namespace

Topology load_topology(const std::string& path) { return read_topology(yaml::load_file(path, "topology"), path); }

Topology topology_from_yaml(const std::string& text, const std::string& source) {
  return read_topology(yaml::load_text(text, source), source);
}

void save_topology(const Topology& topo, const std::string& path) {
  std::ofstream out(path);
  if (!out) fail_input(path, "file", "a writable topology path", "a path that cannot be opened");
  out << topology_yaml(topo);
}

std::string topology_yaml(const Topology& topo) {
  YAML::Node root;
  for (const DeviceType& t : topo.device_types) {
    YAML::Node n;
    n["name"] = t.name;
    n["memory_gb"] = t.memory_gb;
    n["peak_tflops"]["fp32"] = t.peak_tflops_fp32;
    if (t.peak_tflops_tf32 > 0) n["peak_tflops"]["tf32"] = t.peak_tflops_tf32;
    if (t.peak_tflops_bf16 > 0) n["peak_tflops"]["bf16"] = t.peak_tflops_bf16;
    if (t.peak_tflops_fp16 > 0) n["peak_tflops"]["fp16"] = t.peak_tflops_fp16;
    n["peak_tflops"].SetStyle(YAML::EmitterStyle::Flow);
    n["memory_bandwidth_gbs"] = t.memory_bandwidth_gbs;
    root["device_types"].push_back(n);
  }
  root["network"] = link_yaml(topo.network);
  for (const Node& node : topo.nodes) {
    YAML::Node n;
    n["name"] = node.name;
    n["link"] = link_yaml(node.link);
    for (size_t d = 0; d < node.devices.size();) {  // runs of one type as {type, count}
      size_t end = d;
      while (end < node.devices.size() && node.devices[end] == node.devices[d]) end++;
      YAML::Node run;
      run["type"] = topo.device_types[node.devices[d]].name;
      run["count"] = end - d;
      run.SetStyle(YAML::EmitterStyle::Flow);
      n["devices"].push_back(run);
      d = end;
    }
    root["nodes"].push_back(n);
  }
  return "# ETH topology: rank r is the r-th device listed.\n" + yaml::emit(root) + '\n';
}

}  // namespace eth
