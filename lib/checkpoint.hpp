// HDF5 checkpoints (docs/formats.md, "Checkpoint"): after a step, the whole model's parameters
// and both AdamW moments, by global tensor name ("layer3.qkv_w"), not by stage, so that any plan
// of the same model can resume from any checkpoint: each rank reads the tensors its stage holds.
//
// Writing is collective with parallel HDF5 (MPI-IO): every rank creates every dataset, in one
// order, then one rank per tensor writes it, independently. Reading needs no coordination: each
// rank opens the file on its own, read-only, and reads its tensors.
#pragma once

#include <hdf5.h>
#include <mpi.h>

#include <cstdint>
#include <map>
#include <string>

#include "lib/model_config.hpp"
#include "lib/param_layout.hpp"

namespace eth {

// The per-parameter state a checkpoint holds: one group of datasets each.
enum class CheckpointGroup { params, adam_m, adam_v };

struct CheckpointHeader {
  int step = 0;           // optimizer steps taken; the run resumes at step + 1
  int global_batch = 0;   // samples per step: the data stream resumes at sample step * global_batch
  uint64_t seed = 0;      // of parameters and data order
  std::string plan_yaml;  // the plan with the batch split in use (lib/plan.hpp's YAML); may be empty
};

class CheckpointWriter {
 public:
  // Collective over `comm`: creates `path` (an InputError when it cannot) with the header, the
  // model's dimensions and a dataset for every tensor of the whole model in every group.
  CheckpointWriter(const std::string& path, const GptConfig& model, const CheckpointHeader& header, MPI_Comm comm);
  ~CheckpointWriter();  // collective: closes the file
  CheckpointWriter(const CheckpointWriter&) = delete;
  CheckpointWriter& operator=(const CheckpointWriter&) = delete;

  // Independent: one tensor's values, t.size floats on the host, into `group`.
  void write(CheckpointGroup group, const ParamTensor& t, const float* host);

 private:
  hid_t file_ = -1;
  // Open from creation to close: opening a dataset to write it would be collective.
  std::map<std::string, hid_t> datasets_;  // by "group/tensor"
};

class CheckpointReader {
 public:
  // Opens `path` on this rank alone; an InputError naming the file and field unless it is an
  // ETH checkpoint of a model with `model`'s dimensions.
  CheckpointReader(const std::string& path, const GptConfig& model);
  ~CheckpointReader();
  CheckpointReader(const CheckpointReader&) = delete;
  CheckpointReader& operator=(const CheckpointReader&) = delete;

  const CheckpointHeader& header() const { return header_; }
  // One tensor's values into `host` (t.size floats); an InputError when it is missing or has
  // another shape.
  void read(CheckpointGroup group, const ParamTensor& t, float* host);

 private:
  std::string path_;
  hid_t file_ = -1;
  CheckpointHeader header_;
};

}  // namespace eth
