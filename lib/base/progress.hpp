// Progress of a long job over a known amount of input: on a terminal a bar redrawn in place with
// rate and time left; otherwise (a log file, a pipe) a plain line now and then. Thread-safe.
#pragma once

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <string>

namespace eth {

class Progress {
 public:
  // Writes to `out` (a terminal or not, as isatty says); total_bytes is the input to get through.
  Progress(std::string what, double total_bytes, FILE* out = stderr);
  ~Progress();  // ends a bar left half-drawn by an error, so the error gets a line of its own

  void add(double bytes, uint64_t tokens);
  void finish();  // the last line, with the totals

 private:
  using Clock = std::chrono::steady_clock;
  void print(bool last);

  std::string what_;
  double total_bytes_;
  FILE* out_;
  bool tty_;
  bool open_line_ = false;  // a bar drawn on the terminal's current line
  std::mutex mutex_;
  double bytes_ = 0;
  uint64_t tokens_ = 0;
  Clock::time_point start_ = Clock::now(), last_print_ = start_;
};

}  // namespace eth
