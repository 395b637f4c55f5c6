// HDF5 checkpoints (docs/formats.md, "Checkpoint"): after a step, the whole model's parameters
// and both AdamW moments, by global tensor name ("layer3.qkv_w"), not by stage, so that any plan
// of the same model can resume from any checkpoint: each rank reads the tensors its stage holds.
//
// Writing is collective with parallel HDF5 (MPI-IO): every rank creates every dataset, in one
// order, then one rank per tensor writes it, independently, and records its checksum; finish()
// gathers the checksums into the file. Reading needs no coordination: each rank opens the file
// on its own, read-only, reads its tensors and checks each against its checksum. Where the files
// go and how a checkpoint becomes visible only once complete: lib/io/checkpoint_files.hpp.
#pragma once

#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "lib/model/loss_scale.hpp"
#include "lib/model/model_config.hpp"
#include "lib/model/param_layout.hpp"

namespace eth {

// The per-parameter state a checkpoint holds: one group of datasets each.
enum class CheckpointGroup { params, adam_m, adam_v };

struct CheckpointHeader {
  int step = 0;           // optimizer steps taken; the run resumes at step + 1
  int global_batch = 0;   // samples per step: the data stream resumes at sample step * global_batch
  uint64_t seed = 0;      // of parameters and data order
  std::string plan_yaml;  // the plan with the batch split in use (lib/plan/plan.hpp's YAML); may be empty
  std::optional<LossScaleState> loss_scale;  // dynamic loss scaling's state, where the run had it (fp16)
};

class CheckpointWriter {
 public:
  // Collective over `comm`: creates `path` (an InputError when it cannot) with the header, the
  // model's dimensions and a dataset for every tensor of the whole model in every group.
  CheckpointWriter(const std::string& path, const ModelConfig& model, const CheckpointHeader& header, MPI_Comm comm);
  ~CheckpointWriter();  // closes what finish() did not (an error path)
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Independent: one tensor's values, t.size floats on the host, into `group`.
  void write(CheckpointGroup group, const ParamTensor& t, const float* host);
  // Collective: writes every tensor's checksum (each written by exactly one rank) and closes.
  void finish();

 private:
  MPI_Comm comm_;
  hid_t file_ = -1;
  // Open from creation to close: opening a dataset to write it would be collective.
  std::map<std::string, hid_t> datasets_;  // by "group/tensor"
  std::map<std::string, size_t> index_;    // checksum slot by "group/tensor"
  std::vector<uint64_t> checksums_;        // (3, tensors); 0 where another rank writes
};

class CheckpointReader {
 public:
  // Opens `path` on this rank alone; an InputError naming the file and field unless it is an
  // ETH checkpoint of a model with `model`'s dimensions.
  CheckpointReader(const std::string& path, const ModelConfig& model);
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  const CheckpointHeader& header() const { return header_; }
  // One tensor's values into `host` (t.size floats); an InputError when it is missing, has
  // another shape or does not match its checksum.
  void read(CheckpointGroup group, const ParamTensor& t, float* host);

 private:
  void read_checksums(const ModelConfig& model);

  std::string path_;
  hid_t file_ = -1;
  CheckpointHeader header_;
  std::map<std::string, uint64_t> checksums_;  // by "group/tensor"
};

// Reads every tensor of `path` and checks it against its checksum: empty when the checkpoint is
// complete and undamaged, else the reason (one line naming file and dataset).
std::string verify_checkpoint(const std::string& path, const ModelConfig& model);

}  // namespace eth
