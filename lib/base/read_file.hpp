// A whole file read into memory, or an InputError naming it, what it should have been and the
// system's reason (no such file, a directory, a read error).
#pragma once

#include <string>

namespace eth {

std::string read_file(const std::string& path, const std::string& expected);

}  // namespace eth
