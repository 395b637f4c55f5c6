// Shared by the fuzz targets (docs/design.md, "Fuzzing"): each hands libFuzzer's bytes to one
// parser, as text or as a file, the way users hand it their files. An InputError (one clear line
// naming file and field) is the expected outcome of bad input; anything else, a crash, a
// sanitizer report or another exception escaping, is a finding.
#pragma once

#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "lib/base/input_error.hpp"

namespace eth::fuzz {

inline std::string as_text(const uint8_t* data, size_t size) { return std::string(reinterpret_cast<const char*>(data), size); }

// Runs parse(path) on a file holding the bytes (one file per process, rewritten per input).
template <typename Parse>
int parse_file(const uint8_t* data, size_t size, Parse&& parse) {
  static const std::string path = "/tmp/eth_fuzz_input_" + std::to_string(getpid());
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  try {
    parse(path);
  } catch (const InputError&) {
  }
  return 0;
}

template <typename Parse>
int parse_text(const uint8_t* data, size_t size, Parse&& parse) {
  try {
    parse(as_text(data, size));
  } catch (const InputError&) {
  }
  return 0;
}

}  // namespace eth::fuzz
