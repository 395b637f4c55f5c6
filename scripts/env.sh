# Sourced by the scripts: lets Open MPI run as root (CI and containers run as root) and more
# ranks than cores (tests run 4-8 ranks on 2 cores); and the test suites' parallelism.
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1
# ctest's parallelism for the suites: twice the cores. A multi-rank test (PROCESSORS 2: it
# oversubscribes both cores) keeps a core busy 30-140% of its time (measured: equivalence 70%,
# fault_injection 30%, eth_train_cli 43%, slurm_job 5%: they wait on mpirun, the watchdog, Slurm),
# so two run at once: the suite took 283 s instead of 407 s here, the sanitized MPI tests 221 s
# instead of 335 s, with the same results.
ctest_jobs=$((2 * $(nproc)))
