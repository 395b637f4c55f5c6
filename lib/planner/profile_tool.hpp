// The eth_profile flow (measure this machine's kernels, or write roofline estimates for a
// topology), so that app/eth_profile.cpp only parses options.
#pragma once

#include <mpi.h>

#include <ostream>
#include <string>
#include <vector>

#include "kernels/device_settings.hpp"
#include "kernels/precision.hpp"
#include "lib/planner/micro_batches.hpp"

namespace eth::planner {

struct ProfileToolOptions {
  std::string model;
  std::string device_type = "cpu-rank";
  std::string out;
  std::vector<int> micro_batches = kDefaultMicroBatches;
  int seq_len = 64;
  int repetitions = 5;
  std::string estimate_topology;        // set: write roofline estimates for its device types
  std::string out_dir = "inputs/profiles";
  int local_rank = 0, local_ranks = 1;  // this rank among the job's ranks on its host: its GPU
  kernels::Precision precision = kernels::Precision::automatic;  // measured at, as eth_train would run
  kernels::DeviceSettings device;       // the environment's (app/environment.hpp): its backend and GPU
};
// Every rank of `ranks` measures in lockstep (measure.hpp); rank 0 writes the profile and `out`.
void run_profile_tool(const ProfileToolOptions& options, MPI_Comm ranks, std::ostream& out);

}  // namespace eth::planner
