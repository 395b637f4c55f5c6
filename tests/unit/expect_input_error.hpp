// Expecting a user-input error: one line that contains every given fragment.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "lib/base/input_error.hpp"

namespace eth::test {

// Runs `action`, expecting an InputError whose message contains every fragment.
template <typename Action>
void expect_input_error(Action action, const std::vector<std::string>& fragments) {
  try {
    action();
    ADD_FAILURE() << "no InputError was thrown";
  } catch (const InputError& e) {
    const std::string message = e.what();
    EXPECT_EQ(message.find('\n'), std::string::npos) << "not one line: " << message;
    for (const std::string& f : fragments)
      EXPECT_NE(message.find(f), std::string::npos) << "message lacks '" << f << "': " << message;
  }
}

}  // namespace eth::test
