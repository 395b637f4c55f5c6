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

// An error every rank of a job raised together, with the same message (agreed collectively):
// rank 0 prints it, every rank exits non-zero, none hangs and none aborts the others.
class AgreedError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// "<where>: <field>: expected <expected>, got <got>"
[[noreturn]] inline void fail_input(const std::string& where, const std::string& field,
                                    const std::string& expected, const std::string& got) {
  throw InputError(where + ": " + field + ": expected " + expected + ", got " + got);
}

}  // namespace eth
