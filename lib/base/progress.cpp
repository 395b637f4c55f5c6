#include "lib/base/progress.hpp"

#include <unistd.h>

#include <algorithm>

namespace eth {
namespace {

std::string duration(double seconds) {
  const auto s = static_cast<long>(seconds + 0.5);
  char text[32];
  std::snprintf(text, sizeof(text), "%ld:%02ld:%02ld", s / 3600, s / 60 % 60, s % 60);
  return text;
}

}  // namespace

Progress::Progress(std::string what, double total_bytes, FILE* out)
    : what_(std::move(what)), total_bytes_(std::max(total_bytes, 1.0)), out_(out), tty_(isatty(fileno(out))) {}

Progress::~Progress() {
  if (open_line_) std::fputc('\n', out_);
}

void Progress::add(double bytes, uint64_t tokens) {
  std::lock_guard<std::mutex> lock(mutex_);
  bytes_ += bytes;
  tokens_ += tokens;
  // A terminal redraws ten times a second; a log gets a line every ten seconds.
  const auto interval = tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(10000);
  if (Clock::now() - last_print_ >= interval) print(false);
}

void Progress::finish() {
  std::lock_guard<std::mutex> lock(mutex_);
  print(true);
}

void Progress::print(bool last) {
  last_print_ = Clock::now();
  const double seconds = std::chrono::duration<double>(last_print_ - start_).count();
  const double fraction = std::min(bytes_ / total_bytes_, 1.0);
  const double rate = seconds > 0 ? bytes_ / seconds : 0;
  char line[256];
  std::snprintf(line, sizeof(line), "%s: %5.1f%% %.1f of %.1f MB, %.2f MB/s, %.2f M tokens/s, %s %s", what_.c_str(),
                100 * fraction, bytes_ / 1e6, total_bytes_ / 1e6, rate / 1e6, seconds > 0 ? tokens_ / seconds / 1e6 : 0.0,
                last ? "took" : "ETA", duration(last ? seconds : rate > 0 ? (total_bytes_ - bytes_) / rate : 0).c_str());
  if (!tty_) {
    std::fprintf(out_, "%s\n", line);
  } else {
    constexpr int kWidth = 30;
    const int filled = static_cast<int>(fraction * kWidth);
    std::fprintf(out_, "\r[%s%s] %s\033[K%s", std::string(filled, '#').c_str(), std::string(kWidth - filled, '.').c_str(),
                 line, last ? "\n" : "");
    open_line_ = !last;
  }
  std::fflush(out_);
}

}  // namespace eth
