#include "lib/checkpoint_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>

#include "lib/checkpoint.hpp"
#include "lib/input_error.hpp"
#include "lib/strprintf.hpp"

namespace eth {
namespace {

namespace fs = std::filesystem;

// fsync of a file or directory: a rename is durable only once both the file and the directory
// entry have reached the disk.
void flush_to_disk(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  const bool ok = fd >= 0 && ::fsync(fd) == 0;
  const int error = errno;
  if (fd >= 0) ::close(fd);
  if (!ok) fail_input(path, "checkpoint", "a file that can be flushed to disk", std::strerror(error));
}

void rename_over(const std::string& from, const std::string& to) {
  std::error_code ec;
  fs::rename(from, to, ec);
  if (ec) fail_input(from, "checkpoint", "a file that can be renamed to " + to, ec.message());
}

}  // namespace

CheckpointFiles::CheckpointFiles(const std::string& output_dir) : dir_(output_dir + "/checkpoints") {}

std::string CheckpointFiles::complete_path(int step) const { return strprintf("%s/step_%d.h5", dir_.c_str(), step); }
std::string CheckpointFiles::writing_path(int step) const { return complete_path(step) + ".tmp"; }
std::string CheckpointFiles::latest_pointer() const { return dir_ + "/latest"; }

void CheckpointFiles::create() const {
  std::error_code ec;
  fs::create_directories(dir_, ec);
  if (ec) fail_input(dir_, "checkpoint", "a directory that can be created", ec.message());
}

void CheckpointFiles::publish(int step, int keep) const {
  flush_to_disk(writing_path(step));
  rename_over(writing_path(step), complete_path(step));
  const std::string pointer_tmp = latest_pointer() + ".tmp";
  {
    std::ofstream out(pointer_tmp, std::ios::trunc);
    out << fs::path(complete_path(step)).filename().string() << '\n';
    if (!out.flush()) fail_input(pointer_tmp, "checkpoint", "a writable file", "one that cannot be written");
  }
  flush_to_disk(pointer_tmp);
  rename_over(pointer_tmp, latest_pointer());
  flush_to_disk(dir_);
  if (keep <= 0) return;
  const std::vector<int> steps = complete_steps();
  for (size_t i = static_cast<size_t>(keep); i < steps.size(); i++) {
    std::error_code ec;
    fs::remove(complete_path(steps[i]), ec);  // a leftover file costs disk, not correctness
  }
}

std::vector<int> CheckpointFiles::complete_steps() const {
  static const std::regex name("step_([0-9]+)\\.h5");
  std::vector<int> steps;
  std::error_code ec;
  for (const fs::directory_entry& e : fs::directory_iterator(dir_, ec)) {
    std::smatch m;
    const std::string file = e.path().filename().string();
    if (std::regex_match(file, m, name)) steps.push_back(std::stoi(m[1]));
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

std::string resolve_latest_checkpoint(const std::string& output_dir, const GptConfig& model, std::ostream& log) {
  const CheckpointFiles files(output_dir);
  std::vector<std::string> candidates;
  std::ifstream pointer(files.latest_pointer());
  std::string named;
  if (pointer && std::getline(pointer, named) && !named.empty()) candidates.push_back(files.dir() + "/" + named);
  for (int step : files.complete_steps())
    if (std::find(candidates.begin(), candidates.end(), files.complete_path(step)) == candidates.end())
      candidates.push_back(files.complete_path(step));
  if (candidates.empty())
    fail_input("--resume", "latest", "a complete checkpoint in " + files.dir() + " (written by --checkpoint-every)", "none");
  for (size_t i = 0; i < candidates.size(); i++) {
    const std::string damage = verify_checkpoint(candidates[i], model);
    if (damage.empty()) return candidates[i];
    log << "eth_train: checkpoint " << candidates[i] << " is damaged: " << damage
        << (i + 1 < candidates.size() ? "; trying " + candidates[i + 1] : std::string()) << '\n';
  }
  fail_input("--resume", "latest", "an undamaged checkpoint in " + files.dir(),
             strprintf("%zu damaged one(s)", candidates.size()));
}

}  // namespace eth
