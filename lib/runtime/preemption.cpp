#include "lib/runtime/preemption.hpp"

#include <mpi.h>

#include <csignal>

#include "mpi_topology/mpi_session.hpp"
#include "mpi_topology/watchdog.hpp"

namespace eth {
namespace {

volatile std::sig_atomic_t received = 0;

extern "C" void record_signal(int signal) { received = signal; }

}  // namespace

void install_preemption_handlers() {
  struct sigaction action {};
  action.sa_handler = record_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;  // a blocking call the signal interrupts carries on
  sigaction(SIGUSR1, &action, nullptr);
  sigaction(SIGTERM, &action, nullptr);
  // SIGINT reaches a rank only without mpirun (Ctrl-C on eth_train itself): the first stops the
  // job like SIGUSR1, a second one interrupts at once.
  action.sa_flags |= SA_RESETHAND;
  sigaction(SIGINT, &action, nullptr);
}

int agreed_preemption_signal() {
  int signal = received;
  MPI_Request request;
  MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, &signal, 1, MPI_INT, MPI_MAX, world_comm(), &request));
  watched_wait_one(request, {"the agreement on preemption signals", {}});
  return signal;
}

}  // namespace eth
