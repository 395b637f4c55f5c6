// The one line of the LaunchError a launch in the kernel interpreter throws, for tests of what it
// reports.
#pragma once

#include <string>

#include "kernels/simt/host_thread.hpp"

// The message of the LaunchError `launch` throws ("" when it throws none).
template <typename F>
std::string launch_error(F&& launch) {
  try {
    launch();
  } catch (const eth::kernels::simt::LaunchError& e) {
    return e.what();
  }
  return "";
}
