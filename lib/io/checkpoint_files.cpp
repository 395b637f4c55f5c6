#include "lib/io/checkpoint_files.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>
#include <regex>
#include <vector>

#include "lib/base/checksum.hpp"
#include "lib/base/input_error.hpp"
#include "lib/base/strprintf.hpp"
#include "lib/io/checkpoint.hpp"

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

// `text` into `path` so that a reader sees the old content or all of the new: written beside,
// flushed, renamed over.
void replace_file(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << text;
    if (!out.flush()) fail_input(tmp, "checkpoint", "a writable file", "one that cannot be written");
  }
  flush_to_disk(tmp);
  rename_over(tmp, path);
}

// The checksum of a whole file, 1 MiB at a time; nothing when it cannot be read.
std::optional<uint64_t> file_checksum(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  std::vector<char> chunk(1 << 20);
  uint64_t sum = 0;
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    sum = checksum64(&sum, sizeof sum) ^ checksum64(chunk.data(), static_cast<size_t>(in.gcount()));
  }
  return sum;
}

std::string seal_path(const std::string& path) { return path + ".checksum"; }

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
  const std::optional<uint64_t> sum = file_checksum(writing_path(step));
  if (!sum) fail_input(writing_path(step), "checkpoint", "a readable file", "one that cannot be read");
  replace_file(seal_path(complete_path(step)), strprintf("%016llx\n", static_cast<unsigned long long>(*sum)));
  rename_over(writing_path(step), complete_path(step));
  replace_file(latest_pointer(), fs::path(complete_path(step)).filename().string() + "\n");
  flush_to_disk(dir_);
  if (keep <= 0) return;
  const std::vector<int> steps = complete_steps();
  for (size_t i = static_cast<size_t>(keep); i < steps.size(); i++) {
    std::error_code ec;  // a leftover file costs disk, not correctness
    fs::remove(complete_path(steps[i]), ec);
    fs::remove(seal_path(complete_path(steps[i])), ec);
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

void seal_checkpoint(const std::string& path) {
  flush_to_disk(path);
  const std::optional<uint64_t> sum = file_checksum(path);
  if (!sum) fail_input(path, "checkpoint", "a readable file", "one that cannot be read");
  replace_file(seal_path(path), strprintf("%016llx\n", static_cast<unsigned long long>(*sum)));
}

std::string verify_sealed_checkpoint(const std::string& path, const ModelConfig& model) {
  const std::optional<uint64_t> sum = fs::is_regular_file(path) ? file_checksum(path) : std::nullopt;
  if (!sum) return path + ": checkpoint: expected a checkpoint file written by eth_train, got a missing or unreadable file";
  std::ifstream seal(seal_path(path));
  unsigned long long expected = 0;
  if (!(seal >> std::hex >> expected))
    return strprintf("%s: checksum: expected %s beside it (eth_train and eth_convert write one with every checkpoint), "
                     "got none", path.c_str(), seal_path(path).c_str());
  if (*sum != expected)
    return strprintf("%s: checksum: expected the file %s records, got a file that differs (damaged or truncated)",
                     path.c_str(), seal_path(path).c_str());
  return verify_checkpoint(path, model);
}

std::string resolve_latest_checkpoint(const std::string& output_dir, const ModelConfig& model, std::ostream& log) {
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
    const std::string damage = verify_sealed_checkpoint(candidates[i], model);
    if (damage.empty()) return candidates[i];
    log << "eth_train: checkpoint " << candidates[i] << " is damaged: " << damage
        << (i + 1 < candidates.size() ? "; trying " + candidates[i + 1] : std::string()) << '\n';
  }
  fail_input("--resume", "latest", "an undamaged checkpoint in " + files.dir(),
             strprintf("%zu damaged one(s)", candidates.size()));
}

}  // namespace eth
