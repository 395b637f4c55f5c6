# Sourced by the scripts: lets Open MPI run as root (CI and containers run as root) and more
# ranks than cores (tests run 4-8 ranks on 2 cores).
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMPI_MCA_rmaps_base_oversubscribe=1
