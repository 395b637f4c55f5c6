// printf-style formatting into a std::string (GCC 12 has no <format>).
#pragma once

#include <cstdarg>
#include <cstdio>
#include <string>

namespace eth {

[[gnu::format(printf, 1, 2)]] inline std::string strprintf(const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  va_list copy;
  va_copy(copy, args);
  const int n = std::vsnprintf(nullptr, 0, fmt, copy);
  va_end(copy);
  std::string out(static_cast<size_t>(n > 0 ? n : 0), '\0');
  std::vsnprintf(out.data(), out.size() + 1, fmt, args);
  va_end(args);
  return out;
}

}  // namespace eth
