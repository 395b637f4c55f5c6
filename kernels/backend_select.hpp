// Chooses the backend a process computes with, once, at start-up.
#pragma once

#include <memory>
#include <string>

#include "kernels/backend.hpp"

namespace eth::kernels {

struct BackendChoice {
  std::unique_ptr<Backend> backend;
  std::string note;  // one line for the log: what was chosen and why
};

BackendChoice select_backend();

}  // namespace eth::kernels
