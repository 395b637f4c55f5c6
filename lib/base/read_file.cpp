#include "lib/base/read_file.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>

#include "lib/base/input_error.hpp"

namespace eth {

std::string read_file(const std::string& path, const std::string& expected) {
  const auto fail = [&](int error) { fail_input(path, "file", expected, std::strerror(error)); };
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) fail(errno);
  std::string text;
  char buffer[1 << 16];
  size_t n;
  while ((n = std::fread(buffer, 1, sizeof(buffer), f)) > 0) text.append(buffer, n);
  const int error = std::ferror(f) ? errno : 0;
  std::fclose(f);
  if (error) fail(error);
  return text;
}

}  // namespace eth
