#include "lib/io/metrics.hpp"

#include <vector>

#include "lib/base/input_error.hpp"

namespace eth {

MetricsWriter::MetricsWriter(const std::string& path, int resumed_step) : path_(path) {
  std::vector<std::string> kept;
  std::ifstream previous(resumed_step > 0 ? path : std::string());
  for (std::string line; previous && std::getline(previous, line);) {
    const nlohmann::json record = nlohmann::json::parse(line, nullptr, false);
    if (record.is_object() && record.value("step", 0) <= resumed_step) kept.push_back(line);  // a damaged line goes
  }
  out_.open(path, std::ios::trunc);
  if (!out_) fail_input(path, "file", "a writable metrics file", "a path that cannot be opened for writing");
  for (const std::string& line : kept) out_ << line << '\n';
  out_.flush();
}

void MetricsWriter::write(const nlohmann::json& record) {
  out_ << record.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << '\n';
  out_.flush();
}

}  // namespace eth
