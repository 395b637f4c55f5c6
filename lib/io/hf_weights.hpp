// A Hugging Face folder's tensors as transformers' save_pretrained lays them out: one
// model.safetensors, or shards model-00001-of-0000N.safetensors with model.safetensors.index.json
// ({"metadata": {"total_size": bytes}, "weight_map": {tensor: shard file}}). Which tensors they
// are is the family's business (lib/io/hf_gpt2.hpp, lib/io/hf_llama.hpp).
#pragma once

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lib/io/safetensors.hpp"

namespace eth {

// Files written under temporary names (".NAME.partial" in the folder) and renamed to their names
// only by commit(): a folder gets all of them or none. Uncommitted ones are removed on
// destruction (an error part way leaves nothing behind).
class StagedFiles {
 public:
  explicit StagedFiles(std::filesystem::path dir) : dir_(std::move(dir)) {}
  StagedFiles(const StagedFiles&) = delete;
  StagedFiles& operator=(const StagedFiles&) = delete;
  ~StagedFiles();

  // Where to write the file `name` of the folder until commit().
  std::string path(const std::string& name);
  // A file of the folder that commit() removes (a stale file an earlier export left, which
  // a loader would otherwise read instead of the new ones).
  void remove_on_commit(const std::string& name) { stale_.push_back(name); }
  // Renames every file staged, then removes the stale ones; an InputError naming the file that
  // cannot be renamed.
  void commit();

 private:
  std::filesystem::path dir_;
  std::vector<std::string> names_, stale_;
  bool committed_ = false;
};

// The folder's tensors, from model.safetensors or, when it has model.safetensors.index.json, from
// the shards the index names (each opened and checked up front: a shard missing is an InputError
// naming the index and the shard).
class HfWeights {
 public:
  explicit HfWeights(const std::string& dir);

  // The file a message about tensor `name` names: its shard, or the index or model.safetensors
  // where no file holds it.
  const std::string& path_of(const std::string& name) const;
  bool has(const std::string& name) const { return owner_.count(name) != 0; }
  // Every tensor of every file, with the file holding it.
  std::vector<std::pair<std::string, std::string>> names() const;
  // SafetensorsReader::read of the file holding `name`; an InputError naming the file (above),
  // the tensor and both shapes when it is missing or of another shape.
  std::vector<float> read(const std::string& name, const std::vector<size_t>& shape);

 private:
  std::string listing_;  // model.safetensors, or the index
  std::vector<std::unique_ptr<SafetensorsReader>> files_;
  std::map<std::string, SafetensorsReader*> owner_;
};

// Writes `tensors` as `dtype` into staged files of the folder: model.safetensors when their data
// fit in `max_shard_bytes`, else shards of at most that many bytes of data each (a tensor larger
// than that alone in its shard), in order, with the index. Staged: visible after files.commit(),
// which also removes the other layout's listing (model.safetensors or the index) an earlier
// export may have left.
void write_hf_weights(StagedFiles& files, const std::vector<SafetensorsTensor>& tensors, SafetensorsDtype dtype,
                      size_t max_shard_bytes);

}  // namespace eth
