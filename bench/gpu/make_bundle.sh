#!/usr/bin/env bash
# Builds the full ETH (MPI, parallel HDF5, CUDA backend, GoogleTest binaries) on this Debian 12
# machine for the device (one H200, Ubuntu 24.04-like, CUDA 13, no Open MPI/HDF5/yaml-cpp/Boost/
# OpenBLAS, no network), and packs what the device lacks into .device-bundle/ (git-ignored;
# pass ".device-bundle" in the device tool's carry list). On the device:
#   source bench/gpu/device_env.sh && mpirun -np 2 "$ETH_BUILD/app/eth_train" ...
#
#   bench/gpu/make_bundle.sh      environment: BUILD (default build-device), TARGETS (default
#                                 below: the programs and the gpu/mpi/oracle test binaries)
#
# .device-bundle/
#   build/    the TARGETS' binaries, stripped, at their paths in the build tree (app/eth_train,
#             tests/gpu/test_cuda_backend, ...), so test scripts that take a BUILD_DIR accept it
#   debs/     the Debian runtime packages they and Open MPI's mpirun/plugins need, as .debs
#             (compact; device_env.sh unpacks them with dpkg -x into /tmp/eth-prefix, never /)
#   debs/manifest.txt   one line per .deb: FILE MODE SONAMES..., MODE `always` (the MPI/HDF5/
#             project stack: must be ours) or `if-missing` (common system libraries: the device's
#             own, newer Ubuntu copy is used when it has that soname)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
build=${BUILD:-build-device}
bundle=.device-bundle
read -r -a targets <<<"${TARGETS:-eth_train eth_topo eth_plan eth_profile eth_convert eth_tokenize test_cuda_backend gpu_checks simt_hardware_check kernel16_check test_communicators oracle_dump bench_gpu_step}"
# What every Ubuntu 24.04 + CUDA image has, at a newer version with the same soname: never carried.
base_packages="libc6 libstdc++6 libgcc-s1 zlib1g"
# Packages whose copy must be ours even where the device has the soname (a system libpmix or
# libhdf5_openmpi there would belong to another Open MPI).
always_regex='^(openmpi-|libopenmpi|libpmix|libhwloc|libevent|libhdf5|libyaml-cpp|libboost|libopenblas)'

# Both build trees ignored by git, so that neither travels nor gets committed by accident.
exclude=$(git rev-parse --git-path info/exclude)
mkdir -p "$(dirname "$exclude")"
for p in "/$build/" "/$bundle/"; do grep -qxF "$p" "$exclude" 2>/dev/null || echo "$p" >>"$exclude"; done

echo "== configure and build $build (Release, CUDA on, sm_90): ${targets[*]}"
nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
cmake -S . -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release -DETH_CUDA=ON \
  -DCMAKE_CUDA_ARCHITECTURES=90 -DCMAKE_CUDA_COMPILER="$nvcc" -DETH_MARCH=x86-64-v3 >/dev/null
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"

echo "== binaries"
rm -rf "$bundle"
mkdir -p "$bundle/build" "$bundle/debs"
bins=()
for t in "${targets[@]}"; do
  f=$(find "$build" -type f -name "$t" -perm -u+x -not -path '*/CMakeFiles/*' | head -1)
  [ -n "$f" ] || { echo "make_bundle.sh: error: no binary $t in $build" >&2; exit 1; }
  dest=$bundle/build/${f#"$build"/}
  mkdir -p "$(dirname "$dest")"
  strip --strip-unneeded -o "$dest" "$f"   # symbols only; the sm_90 fatbin stays
  bins+=("$dest")
done

# owner FILE: sets pkg to the Debian package that ships FILE (empty: none). Debian 12 is
# usr-merged: ldd says /lib/... where the package may list /usr/lib/... (or the reverse), and a
# symlink's target is owned too. Cached, and not run in a $(...) subshell that would lose the
# cache: dpkg -S takes a fraction of a second, and the same libraries come up thousands of times.
declare -A owner_of=()
owner() {
  local c
  if [ -z "${owner_of[$1]+set}" ]; then
    owner_of[$1]=""
    for c in "$1" "/usr${1#/usr}" "${1#/usr}" "$(realpath "$1")"; do
      owner_of[$1]=$(dpkg -S "$c" 2>/dev/null | head -1 | cut -d: -f1) && break
    done
  fi
  pkg=${owner_of[$1]}
}

echo "== runtime packages (ldd of the binaries, of mpirun/orted and of every Open MPI/PMIx plugin)"
# Open MPI loads its plugins (and PMIx its own) with dlopen, so ldd of the binaries alone misses
# their libraries (libfabric, libucx, libibverbs, ...): ldd every .so those packages ship.
mpi_files=(/usr/bin/orterun /usr/bin/orted)
mapfile -t -O ${#mpi_files[@]} mpi_files < <(dpkg -L libopenmpi3 libpmix2 | grep '\.so$')
declare -A sonames=()   # package -> its sonames the binaries need
declare -A foreign=()   # libraries no package ships (CUDA's): the device must have them
missing=0
for f in "${bins[@]}" "${mpi_files[@]}"; do
  while read -r name arrow path _; do
    [ "$arrow" = "=>" ] || continue
    if [ "$path" = not ]; then echo "  $f: $name not found" >&2; missing=1; continue; fi
    owner "$path"
    if [ -n "$pkg" ]; then sonames[$pkg]+=" $name"; else foreign[$path]=1; fi
  done < <(ldd "$f")
done
[ "$missing" -eq 0 ] || { echo "make_bundle.sh: error: unresolved libraries here" >&2; exit 1; }
# mpirun itself, its helpers, help texts and plugins (packages no ldd line names).
for f in /usr/bin/orterun /usr/share/openmpi/help-orterun.txt "${mpi_files[@]}"; do
  owner "$f"
  [ -n "$pkg" ] || { echo "make_bundle.sh: error: no package ships $f" >&2; exit 1; }
  sonames[$pkg]+=""
done
for p in $base_packages; do unset "sonames[$p]"; done

echo "== .debs into $bundle/debs"
arch=$(dpkg --print-architecture)
for p in $(printf '%s\n' "${!sonames[@]}" | sort); do
  v=$(dpkg-query -W -f='${Version}' "$p")
  a=$(dpkg-query -W -f='${Architecture}' "$p")
  deb=${p}_${v//:/%3a}_${a}.deb
  # The exact installed version: from apt's cache when setup.sh left it there, else downloaded;
  # a package of the base image whose version left the archive: its current Debian 12 version
  # (a point release: same soname and ABI). Sandbox user root: _apt may not write here.
  if [ -f "/var/cache/apt/archives/$deb" ]; then
    cp "/var/cache/apt/archives/$deb" "$bundle/debs/"
  elif ! (cd "$bundle/debs" && apt-get download -qq -o APT::Sandbox::User=root "$p=$v" 2>/dev/null); then
    (cd "$bundle/debs" && apt-get download -qq -o APT::Sandbox::User=root "$p")
    deb=$(cd "$bundle/debs" && ls "${p}_"*"_${a}.deb")
    echo "   $p $v is no longer in the archive: carrying $deb"
  fi
  [ -f "$bundle/debs/$deb" ] || { echo "make_bundle.sh: error: no $deb" >&2; exit 1; }
  mode=if-missing
  [[ $p =~ $always_regex ]] && mode=always
  # shellcheck disable=SC2086  # word-splitting the soname list on purpose
  echo "$deb $mode $(printf '%s\n' ${sonames[$p]} | sort -u | tr '\n' ' ')" >>"$bundle/debs/manifest.txt"
done
[ "$arch" = amd64 ] || echo "make_bundle.sh: warning: built on $arch; the device is amd64" >&2

echo "== expected on the device, not carried: glibc, libstdc++, libgcc, zlib ($base_packages) and"
printf '   %s\n' "${!foreign[@]}" | sort
echo "== $bundle: $(wc -l <"$bundle/debs/manifest.txt") packages, $(find "$bundle/build" -type f | wc -l) binaries"
du -sh "$bundle/debs"; du -sh "$bundle/build"; du -sh "$bundle"   # separately: du counts a dir once
