# Sourced on the device (one H200, Ubuntu 24.04-like, CUDA 13, no Open MPI/HDF5/yaml-cpp/Boost/
# OpenBLAS) to run the full ETH built here by bench/gpu/make_bundle.sh:
#   source bench/gpu/device_env.sh && mpirun -np 2 "$ETH_BUILD/app/eth_train" ...
# Unpacks .device-bundle/debs (Debian 12 runtime packages) into $ETH_PREFIX (default
# /tmp/eth-prefix; never /, where they could break the system's own packages) once per bundle,
# and sets PATH, LD_LIBRARY_PATH and Open MPI's variables so that mpirun, its plugins and the
# binaries in $ETH_BUILD (.device-bundle/build) find everything under the prefix.
# Environment it reads: ETH_BUNDLE (default: .device-bundle beside this repo), ETH_PREFIX.

_eth_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
export ETH_BUNDLE=${ETH_BUNDLE:-$_eth_root/.device-bundle}
export ETH_PREFIX=${ETH_PREFIX:-/tmp/eth-prefix}
export ETH_BUILD=$ETH_BUNDLE/build

# _eth_system_has SONAME: the system's loader cache names a real (non-empty) file for SONAME.
_eth_system_has() {
  local path
  path=$(/sbin/ldconfig -p 2>/dev/null | awk -v s="$1" '$1 == s && /x86-64/ { print $NF; exit }')
  [ -n "$path" ] && [ -s "$path" ]
}

# Unpack once per bundle: the manifest copied into the prefix says which bundle it holds.
_eth_unpack() {
  local manifest=$ETH_BUNDLE/debs/manifest.txt deb mode sonames s need system=""
  if [ ! -f "$manifest" ]; then
    echo "device_env.sh: error: no $manifest (run bench/gpu/make_bundle.sh, carry .device-bundle)" >&2
    return 1
  fi
  cmp -s "$manifest" "$ETH_PREFIX/.manifest" && return 0
  command -v dpkg >/dev/null || { echo "device_env.sh: error: dpkg not found" >&2; return 1; }
  rm -rf "$ETH_PREFIX" && mkdir -p "$ETH_PREFIX" || return 1
  while read -r deb mode sonames; do
    need=1
    if [ "$mode" = if-missing ] && [ -n "$sonames" ]; then
      # A common library (libcurl, libssl, libgfortran, ...) the device may have too: its own
      # Ubuntu 24.04 copy is newer with the same soname, and keeping ours off LD_LIBRARY_PATH
      # keeps it from replacing the system's under python3 and other programs.
      need=0
      for s in $sonames; do _eth_system_has "$s" || need=1; done
    fi
    if [ "$need" -eq 1 ]; then
      dpkg -x "$ETH_BUNDLE/debs/$deb" "$ETH_PREFIX" || return 1
    else
      system+=" ${deb%%_*}"
    fi
  done <"$manifest"
  [ -z "$system" ] || echo "device_env.sh: the system's own copies of:$system"
  # What Debian's update-alternatives would link (dpkg -x runs no maintainer scripts): mpirun and
  # mpiexec (openmpi-bin ships only mpirun.openmpi and orterun), and PSM's library, which
  # libpsm-infinipath1 keeps under usr/lib/libpsm1 with no soname link.
  ln -sf orterun "$ETH_PREFIX/usr/bin/mpirun" && ln -sf orterun "$ETH_PREFIX/usr/bin/mpiexec" || return 1
  for s in "$ETH_PREFIX"/usr/lib/libpsm1/libpsm_infinipath.so.1.*; do
    [ -e "$s" ] && ln -sf "$s" "$ETH_PREFIX/usr/lib/x86_64-linux-gnu/libpsm_infinipath.so.1"
  done
  cp "$manifest" "$ETH_PREFIX/.manifest"
}

if _eth_unpack; then
  _eth_lib=$ETH_PREFIX/usr/lib/x86_64-linux-gnu
  export PATH=$ETH_PREFIX/usr/bin:$PATH
  # Libraries: the common dir, then the private dirs Debian's packages use (Open MPI's
  # libmca_common_*, OpenBLAS's OpenMP flavour, which Debian exposes only through
  # update-alternatives symlinks that dpkg -x does not create, parallel HDF5, PMIx).
  _eth_ld=$_eth_lib:$ETH_PREFIX/lib/x86_64-linux-gnu:$_eth_lib/openmpi/lib:$_eth_lib/openblas-openmp:$_eth_lib/hdf5/openmpi:$_eth_lib/pmix2/lib
  # CUDA: the binaries need libcublas.so.13 and libcublasLt.so.13 (cudart is static), and NCCL
  # (libnccl.so.2) should the build link it; their RUNPATH names /usr/local/cuda/lib, the build
  # machine's layout. First the pip nvidia-* wheels beside the device's PyTorch (nvidia/cu13/lib,
  # nvidia/nccl/lib from nvidia-nccl-cu13, ...): the very libraries its torch loads, so python3
  # in this shell keeps its own consistent set; then the toolkit's dirs.
  _eth_pip=$("${PYTHON:-python3}" - 2>/dev/null <<'PY'
import glob, os
try:
    import nvidia
except ImportError:
    raise SystemExit
# Not stubs/: a stub libcuda there would shadow the real driver.
dirs = {os.path.dirname(f) for base in nvidia.__path__
        for f in glob.glob(os.path.join(base, "**", "lib*.so*"), recursive=True)
        if "stubs" not in f.split(os.sep)}
print(":".join(sorted(dirs)))
PY
) || true
  [ -n "$_eth_pip" ] && _eth_ld=$_eth_ld:$_eth_pip
  for _eth_d in /usr/local/cuda/lib64 /usr/local/cuda/lib /usr/local/cuda/targets/x86_64-linux/lib; do
    [ -d "$_eth_d" ] && _eth_ld=$_eth_ld:$_eth_d
  done
  export LD_LIBRARY_PATH=$_eth_ld${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}

  # Open MPI 4.1.4 (Debian) is relocatable: every install dir but sysconfdir (/etc/openmpi)
  # follows OPAL_PREFIX, so plugins come from $_eth_lib/openmpi/lib/openmpi3 and help texts from
  # usr/share/openmpi. PMIx 4 reads PMIX_PREFIX, but Debian configured its plugin and help dirs
  # as absolute paths, so those are named one by one (else: "couldn't open the help file").
  export OPAL_PREFIX=$ETH_PREFIX/usr
  export PMIX_PREFIX=$_eth_lib/pmix2 PMIX_LIBDIR=$_eth_lib/pmix2/lib PMIX_DATADIR=$_eth_lib/pmix2/share
  export PMIX_PKGLIBDIR=$_eth_lib/pmix2/lib/pmix PMIX_PKGDATADIR=$_eth_lib/pmix2/share/pmix
  # Root (the device runs commands as root) and more ranks than cores.
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
  export OMPI_MCA_rmaps_base_oversubscribe=1
  # One node in a sandbox: shared memory between ranks (ob1 over self + vader) and nothing that
  # probes networks (UCX, libfabric/OFI, PSM, verbs), as Debian's /etc/openmpi/openmpi-mca-
  # params.conf, which the device lacks, would mostly do too. Loopback for mpirun's own out-of-band channel, which works
  # whatever network interfaces the sandbox has. No CMA single copy (process_vm_readv, refused
  # by gVisor-like sandboxes), no process binding (may be refused in a VM; ranks share 16 cores).
  export OMPI_MCA_pml=ob1 OMPI_MCA_btl=self,vader OMPI_MCA_mtl=^ofi,psm,psm2 OMPI_MCA_osc=^ucx,pt2pt
  export OMPI_MCA_oob_tcp_if_include=lo
  export OMPI_MCA_btl_vader_single_copy_mechanism=none
  export OMPI_MCA_hwloc_base_binding_policy=none
  export OMPI_MCA_btl_base_warn_component_unused=0
  # Ranks on this one node only, started by mpirun itself: the default launcher (rsh) aborts
  # mpirun when neither ssh nor rsh exists, as on the device.
  export OMPI_MCA_plm=isolated
  export PYTHON=${PYTHON:-python3}
fi
unset _eth_root _eth_lib _eth_ld _eth_d _eth_pip
unset -f _eth_system_has _eth_unpack
