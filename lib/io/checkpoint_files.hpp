// Where checkpoints live and how one becomes visible only once complete (docs/formats.md,
// "Checkpoint files"). In OUTPUT_DIR/checkpoints:
//   step_N.h5.tmp   being written by every rank (lib/io/checkpoint.hpp)
//   step_N.h5       complete: renamed from .tmp by rank 0 after every rank finished and the file
//                   reached the disk, so a crash mid-write never damages a complete checkpoint
//   step_N.h5.checksum  the whole file's checksum (hex), written before the rename: a file is
//                   handed to HDF5 only once it matches, because HDF5 itself can crash on a
//                   damaged file (fuzzing found a heap overflow in libhdf5 1.10.8's H5Aexists)
//   latest          one line, the file name of the newest complete checkpoint, replaced last
//                   (written beside and renamed over, so it is never half-written)
// The oldest complete checkpoints beyond `keep` are deleted after each publication.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "lib/model/model_config.hpp"

namespace eth {

class CheckpointFiles {
 public:
  explicit CheckpointFiles(const std::string& output_dir);

  const std::string& dir() const { return dir_; }
  std::string complete_path(int step) const;   // DIR/step_N.h5
  std::string writing_path(int step) const;    // DIR/step_N.h5.tmp
  std::string latest_pointer() const;          // DIR/latest

  // Creates the directory; an InputError naming it when it cannot.
  void create() const;
  // Rank 0, after every rank finished writing writing_path(step): flushes it to disk, renames it
  // to complete_path(step), points `latest` at it and deletes the oldest complete checkpoints
  // beyond `keep` (0: keep all). An InputError naming the file when a step fails.
  void publish(int step, int keep) const;
  // The complete checkpoints' steps, newest first.
  std::vector<int> complete_steps() const;

 private:
  std::string dir_;
};

// Writes PATH.checksum for the file at PATH (flushed to disk, replaced by rename).
void seal_checkpoint(const std::string& path);

// Empty when PATH matches PATH.checksum and then every dataset matches its own checksum, else
// the reason (one line naming the file). Only a file that matches its seal reaches HDF5.
std::string verify_sealed_checkpoint(const std::string& path, const ModelConfig& model);

// `--resume latest`: the newest checkpoint of OUTPUT_DIR that verifies, trying `latest`'s target
// first, then every other complete one, newest first. Each damaged one is named on `log` with
// its reason and the fallback. An InputError when there is none.
std::string resolve_latest_checkpoint(const std::string& output_dir, const ModelConfig& model, std::ostream& log);

}  // namespace eth
