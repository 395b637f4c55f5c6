// Errors a user can cause: a bad file, a bad option, missing data. Each carries one line that
// names the file (or option), the field and what was expected; programs print it and exit
// non-zero. Internal invariants use assert, not this.
#pragma once

#include <stdexcept>
#include <string>

namespace eth {

class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "<where>: <field>: expected <expected>, got <got>"
[[noreturn]] inline void fail_input(const std::string& where, const std::string& field,
                                    const std::string& expected, const std::string& got) {
  throw InputError(where + ": " + field + ": expected " + expected + ", got " + got);
}

}  // namespace eth
