#include "bench/bench_stamp.hpp"

#include <unistd.h>

#include <array>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <fstream>

#include "lib/base/input_error.hpp"

namespace eth::bench {
namespace {

// The command's standard output, trailing newline dropped; empty when it fails.
std::string run(const std::string& command) {
  std::string out;
  if (FILE* pipe = popen(command.c_str(), "r")) {
    std::array<char, 256> buffer;
    while (fgets(buffer.data(), buffer.size(), pipe)) out += buffer.data();
    if (pclose(pipe) != 0) out.clear();
  }
  while (!out.empty() && out.back() == '\n') out.pop_back();
  return out;
}

// As bench/stamp.py's commit(): HEAD of the checkout this bench was built from, and whether
// its sources (not its results) are modified.
std::string commit() {
  const std::string git = std::string("git -C '") + ETH_SOURCE_DIR + "' ";
  const std::string head = run(git + "rev-parse HEAD 2>/dev/null");
  if (head.empty()) return "unknown (git rev-parse failed)";
  const std::string dirty =
      run(git + "status --porcelain --untracked-files=no -- lib app kernels mpi_topology bench ':!bench/results' 2>/dev/null");
  return head + (dirty.empty() ? "" : " (with uncommitted changes)");
}

}  // namespace

double load_now() {
  double load[1] = {0};
  return getloadavg(load, 1) == 1 ? load[0] : -1;
}

nlohmann::json stamp(double load_at_start) {
  std::array<char, 256> host{};
  gethostname(host.data(), host.size() - 1);
  const std::time_t now = std::time(nullptr);
  std::array<char, 32> date{};
  std::strftime(date.data(), date.size(), "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  return {{"commit", commit()},
          {"host", host.data()},
          {"load", {{"start", load_at_start}, {"end", load_now()}}},
          {"date", date.data()}};
}

void write_stamped(const std::string& path, nlohmann::json result, double load_at_start) {
  result.update(stamp(load_at_start));
  const std::filesystem::path parent = std::filesystem::path(path).parent_path();
  if (!parent.empty()) std::filesystem::create_directories(parent);
  std::ofstream out(path);
  if (!out) fail_input(path, "file", "a writable path", "a path that cannot be opened");
  out << result.dump(2) << '\n';
}

}  // namespace eth::bench
