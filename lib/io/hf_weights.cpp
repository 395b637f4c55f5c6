#include "lib/io/hf_weights.hpp"

#include <fstream>

#include <nlohmann/json.hpp>

#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"

namespace eth {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;

const char* const kSingle = "model.safetensors";
const char* const kIndex = "model.safetensors.index.json";

size_t numel(const std::vector<size_t>& shape) {
  size_t n = 1;
  for (size_t d : shape) n *= d;
  return n;
}

// The index's weight_map: tensor name -> shard file name (a plain name within the folder).
std::map<std::string, std::string> read_index(const std::string& path) {
  std::ifstream in(path);
  if (!in) fail_input(path, "file", "a readable index", "none");
  json index;
  try {
    index = json::parse(in);
  } catch (const json::exception& e) {
    fail_input(path, "file", "a JSON index", e.what());
  }
  const auto map = index.is_object() ? index.find("weight_map") : index.end();
  if (map == index.end() || !map->is_object() || map->empty())
    fail_input(path, "weight_map", "an object of tensor names to shard files", map == index.end() ? "none" : map->dump());
  std::map<std::string, std::string> out;
  for (const auto& [name, file] : map->items()) {
    if (!file.is_string() || file.get<std::string>().empty() ||
        fs::path(file.get<std::string>()).filename() != file.get<std::string>())
      fail_input(path, "weight_map: \"" + name + "\"", "a shard file name in the folder", file.dump());
    out[name] = file.get<std::string>();
  }
  return out;
}

}  // namespace

StagedFiles::~StagedFiles() {
  if (committed_) return;
  std::error_code ignored;
  for (const std::string& name : names_) fs::remove(dir_ / ("." + name + ".partial"), ignored);
}

std::string StagedFiles::path(const std::string& name) {
  names_.push_back(name);
  return (dir_ / ("." + name + ".partial")).string();
}

void StagedFiles::commit() {
  for (const std::string& name : names_) {
    std::error_code ec;
    fs::rename(dir_ / ("." + name + ".partial"), dir_ / name, ec);
    if (ec) fail_input((dir_ / name).string(), "--out", "a file that can be renamed into place", ec.message());
  }
  committed_ = true;
  for (const std::string& name : stale_) {
    std::error_code ec;
    fs::remove(dir_ / name, ec);
    if (ec) fail_input((dir_ / name).string(), "--out", "a stale file that can be removed", ec.message());
  }
}

HfWeights::HfWeights(const std::string& dir) {
  const fs::path index = fs::path(dir) / kIndex;
  if (!fs::exists(index)) {
    listing_ = (fs::path(dir) / kSingle).string();
    files_.push_back(std::make_unique<SafetensorsReader>(listing_));
    for (const auto& [name, entry] : files_.back()->entries()) owner_[name] = files_.back().get();
    return;
  }
  listing_ = index.string();
  std::map<std::string, SafetensorsReader*> shards;
  for (const auto& [name, file] : read_index(listing_)) {
    SafetensorsReader*& shard = shards[file];
    if (shard == nullptr) {
      const fs::path path = fs::path(dir) / file;
      if (!fs::exists(path)) fail_input(listing_, "shard \"" + file + "\"", "a file beside the index", "none");
      files_.push_back(std::make_unique<SafetensorsReader>(path.string()));
      shard = files_.back().get();
    }
    owner_[name] = shard;
  }
  // A shard's tensor the index does not list would be silently left out: refused.
  for (const auto& file : files_)
    for (const auto& [name, entry] : file->entries())
      if (owner_.count(name) == 0 || owner_.at(name) != file.get())
        fail_input(file->path(), "tensor \"" + name + "\"", "listed for this shard in " + listing_, "not listed");
}

const std::string& HfWeights::path_of(const std::string& name) const {
  const auto it = owner_.find(name);
  return it == owner_.end() ? listing_ : it->second->path();
}

std::vector<std::pair<std::string, std::string>> HfWeights::names() const {
  std::vector<std::pair<std::string, std::string>> out;
  for (const auto& [name, file] : owner_) out.emplace_back(name, file->path());
  return out;
}

std::vector<float> HfWeights::read(const std::string& name, const std::vector<size_t>& shape) {
  const auto it = owner_.find(name);
  if (it == owner_.end()) fail_input(listing_, "tensor \"" + name + "\"", "present, of shape " + shape_string(shape), "no such tensor");
  return it->second->read(name, shape);
}

void write_hf_weights(StagedFiles& files, const std::vector<SafetensorsTensor>& tensors, SafetensorsDtype dtype,
                      size_t max_shard_bytes) {
  const std::map<std::string, std::string> metadata = {{"format", "pt"}};  // transformers loads only PyTorch's
  std::vector<std::vector<SafetensorsTensor>> shards(1);
  size_t in_shard = 0, total = 0;
  for (const SafetensorsTensor& t : tensors) {
    const size_t bytes = numel(t.shape) * dtype_size(dtype);
    if (!shards.back().empty() && in_shard + bytes > max_shard_bytes) {
      shards.emplace_back();
      in_shard = 0;
    }
    shards.back().push_back(t);
    in_shard += bytes;
    total += bytes;
  }
  if (shards.size() == 1) {
    write_safetensors(files.path(kSingle), tensors, metadata, dtype);
    files.remove_on_commit(kIndex);
    return;
  }
  files.remove_on_commit(kSingle);
  json weight_map = json::object();
  for (size_t s = 0; s < shards.size(); s++) {
    const std::string name = strprintf("model-%05zu-of-%05zu.safetensors", s + 1, shards.size());
    write_safetensors(files.path(name), shards[s], metadata, dtype);
    for (const SafetensorsTensor& t : shards[s]) weight_map[t.name] = name;
  }
  const std::string index = files.path(kIndex);
  std::ofstream out(index);
  out << json{{"metadata", {{"total_size", total}}}, {"weight_map", weight_map}}.dump(2) << '\n';
  if (!out.flush()) fail_input(index, "--out", "a file that can be written in full", "a write error");
}

}  // namespace eth
