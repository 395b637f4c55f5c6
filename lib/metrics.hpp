// Metrics as JSON lines: one object per line, appended and flushed as the run goes, so a
// crashed or running job can be read at any time.
#pragma once

#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

namespace eth {

class MetricsWriter {
 public:
  explicit MetricsWriter(const std::string& path);
  void write(const nlohmann::json& record);

 private:
  std::string path_;
  std::ofstream out_;
};

}  // namespace eth
