#include "lib/metrics.hpp"

#include "lib/input_error.hpp"

namespace eth {

MetricsWriter::MetricsWriter(const std::string& path) : path_(path), out_(path, std::ios::trunc) {
  if (!out_) fail_input(path, "file", "a writable metrics file", "a path that cannot be opened for writing");
}

void MetricsWriter::write(const nlohmann::json& record) {
  out_ << record.dump() << '\n';
  out_.flush();
}

}  // namespace eth
