// Metrics as JSON lines: one object per line, appended and flushed as the run goes, so a
// crashed or running job can be read at any time.
#pragma once

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace eth {

class MetricsWriter {
 public:
  // Starts `path` afresh; a run resumed after `resumed_step` > 0 steps keeps the records of steps
  // up to it (later ones were not checkpointed and run again) and appends.
  explicit MetricsWriter(const std::string& path, int resumed_step = 0);
  // Strings that are no valid UTF-8 (a generated sample cut inside a character, or an untrained
  // model's stray byte tokens) are written with U+FFFD in place of each bad byte: the record
  // stays one line of valid JSON, and the run goes on.
  void write(const nlohmann::json& record);

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace eth
