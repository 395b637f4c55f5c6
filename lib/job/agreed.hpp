// The one way a job turns a user's mistake on some rank into an error on every rank.
#pragma once

#include <string>

#include "lib/base/input_error.hpp"
#include "mpi_topology/mpi_session.hpp"

namespace eth {

// Collective over every rank of the job: runs `work`; if it threw InputError on any rank, the
// lowest failing rank's message becomes an AgreedError on every rank, so that none is left
// waiting in a later collective.
template <class Work>
void agreed(Work&& work) {
  std::string error;
  try {
    work();
  } catch (const InputError& e) {
    error = e.what();
  }
  if (const std::string agreed = agreed_error(error); !agreed.empty()) throw AgreedError(agreed);
}

}  // namespace eth
