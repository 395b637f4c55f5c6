// Preemption (docs/usage.md, "Preemption and time limits", "Ctrl-C"): SIGUSR1 and SIGTERM (and
// SIGINT once) ask the job to stop after the current step with a checkpoint, and exit 0. SIGUSR1
// is the one to send through mpirun (it forwards SIGUSR1 to every rank and waits for them; on
// SIGINT or SIGTERM it sends the ranks SIGTERM after a second and SIGKILL after another) and
// what `sbatch --signal=B:USR1@SECONDS` makes Slurm send before a time limit; SIGTERM is what
// Slurm sends to srun's tasks on scancel or preemption.
#pragma once

namespace eth {

// Installs the handlers; each only records the signal.
void install_preemption_handlers();

// Collective over every rank of the job (world_comm()): the signal (a number) that any rank received, 0 if none. The
// ranks agree once per step, so that every rank stops after the same step.
int agreed_preemption_signal();

}  // namespace eth
