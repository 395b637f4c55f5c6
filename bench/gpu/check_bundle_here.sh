#!/usr/bin/env bash
# Checks .device-bundle/ on THIS machine (Debian 12, no GPU) as the device would use it: in a
# private mount namespace, every file of every carried Debian package (Open MPI, PMIx, HDF5,
# yaml-cpp, Boost, OpenBLAS, their libraries) and ssh are covered by an empty file, so the system
# copies are unusable and only the prefix that device_env.sh unpacks can satisfy them. Then it
# sources device_env.sh and shows: where every library of the binaries and Open MPI's plugins
# resolves (the prefix, glibc/libstdc++/libgcc/zlib, CUDA), that mpirun finds its plugins under
# the prefix, and runs eth_train (2 ranks; without a GPU it falls back to the CPU backend),
# test_communicators (4 ranks), the GPU test binaries (they skip without a GPU) and the MPI
# equivalence test. Run as root after bench/gpu/make_bundle.sh.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
manifest=.device-bundle/debs/manifest.txt
[ -f "$manifest" ] || { echo "check_bundle_here.sh: run bench/gpu/make_bundle.sh first" >&2; exit 1; }

# The part inside the namespace, as a string for bash -c (not on stdin, where mpirun, which
# forwards stdin to rank 0, would eat the rest of it).
inner=$(cat <<'INNER'
set -euo pipefail
root=$1
cd "$root"
empty=$(mktemp)
hidden=0
# Not the libraries dpkg-deb itself loads (libzstd): the device has dpkg, so it has those too,
# and hiding them would only stop device_env.sh from unpacking anything here.
dpkg_libs=$(ldd "$(command -v dpkg-deb)" | awk '/=>/ { print $1 }')
while read -r deb mode sonames; do
  for s in $sonames; do
    if grep -qxF "$s" <<<"$dpkg_libs"; then echo "   not hiding ${deb%%_*} ($s: dpkg-deb needs it)"; continue 2; fi
  done
  while read -r f; do
    case $f in /usr/share/doc/*|/usr/share/man/*|/usr/share/lintian/*) continue ;; esac
    # Files only: directories stay, and a symlink's target is covered through its own entry.
    [ -f "$f" ] && [ ! -L "$f" ] || continue
    mount --bind "$empty" "$f" && hidden=$((hidden + 1))
  done < <(dpkg -L "${deb%%_*}")
done <.device-bundle/debs/manifest.txt
# Open MPI's and PMIx's own trees, and /etc/openmpi (which OPAL_PREFIX does not move), absent
# altogether as on the device, not just emptied.
emptydir=$(mktemp -d)
for d in /etc/openmpi /usr/share/openmpi /usr/lib/x86_64-linux-gnu/openmpi /usr/lib/x86_64-linux-gnu/pmix2; do
  mount --bind "$emptydir" "$d"
done
mount --bind "$empty" /usr/bin/ssh 2>/dev/null || true   # the device has no ssh
echo "== hid $hidden files of $(wc -l <.device-bundle/debs/manifest.txt) packages, ssh, and emptied Open MPI's and PMIx's dirs"
echo "   e.g. $(ls -l /usr/lib/x86_64-linux-gnu/libmpi.so.40.30.4 | awk '{print $5, $NF}') bytes"

export ETH_PREFIX=/tmp/eth-prefix-check
rm -rf "$ETH_PREFIX"
export PYTHON=/usr/bin/python3   # Debian's, with numpy and torch (the first python3 on PATH has neither)
source bench/gpu/device_env.sh
echo "== prefix $ETH_PREFIX: $(du -sh "$ETH_PREFIX" | cut -f1)"

echo "== where libraries resolve (ELF files of the bundle and of the prefix's Open MPI/PMIx)"
# Allowed outside the prefix: what an Ubuntu 24.04 + CUDA image has (glibc, libstdc++, libgcc,
# zlib, the vdso), the libraries of its dpkg (not hidden above) and CUDA's own libraries.
allowed=$(dpkg -L libc6 libstdc++6 libgcc-s1 zlib1g | grep -E '\.so' | xargs -n1 basename | sort -u; echo "$dpkg_libs")
bad=0
declare -A seen=()
while read -r elf; do
  while read -r line; do
    lib=$(awk '{print ($2 == "=>") ? $3 : $1}' <<<"$line")
    name=$(awk '{print $1}' <<<"$line")
    case $lib in
      "$ETH_PREFIX"/*) seen[prefix]=$((${seen[prefix]:-0} + 1)) ;;
      /usr/local/cuda/*) seen["cuda $name"]=1 ;;
      linux-vdso*) ;;
      *) if grep -qxF "$(basename "$lib")" <<<"$allowed"; then seen["base $name"]=1
         else echo "  NOT ALLOWED: $elf -> $line"; bad=1; fi ;;
    esac
  done < <(ldd "$elf" | grep -v 'statically linked')
done < <(find .device-bundle/build "$ETH_PREFIX/usr/bin/orterun" "$ETH_PREFIX/usr/bin/orted" \
           "$ETH_PREFIX/usr/lib/x86_64-linux-gnu/openmpi/lib/openmpi3" \
           "$ETH_PREFIX/usr/lib/x86_64-linux-gnu/pmix2/lib/pmix" -type f \( -perm -u+x -o -name '*.so' \))
echo "   ${seen[prefix]:-0} resolutions into the prefix; outside it:"
unset "seen[prefix]"
printf '   %s\n' "${!seen[@]}" | sort
[ "$bad" -eq 0 ] && echo "   every library resolves to the prefix, the base or CUDA"

echo "== mpirun: $(command -v mpirun) -> $(readlink -f "$(command -v mpirun)")"
ompi_info --path all | grep -E 'Prefix|Pkglibdir|Pkgdatadir' | sort -u
ompi_info | grep -E 'MCA (btl|pml|plm):' | head -20

work=$(mktemp -d)
/usr/bin/python3 - "$work/data.bin" <<'PY'
import sys, numpy as np
h = np.zeros(256, dtype=np.int32); h[0], h[1], h[2] = 20240520, 1, 20000
t = np.random.default_rng(7).integers(0, 97, 20000).astype(np.uint16)
open(sys.argv[1], "wb").write(h.tobytes() + t.tobytes())
PY
echo "== mpirun -np 2 eth_topo, then eth_train (tiny-4l, a two-stage pipeline, 3 steps)"
OMP_NUM_THREADS=1 timeout 120 mpirun -np 2 "$ETH_BUILD/app/eth_topo" -o "$work/topo.yaml"
OMP_NUM_THREADS=1 timeout 300 mpirun -np 2 "$ETH_BUILD/app/eth_train" --model inputs/models/tiny-4l.yaml \
  --topology inputs/topologies/workstation-2cpu.yaml --plan inputs/plans/workstation-2cpu-demo-depth2.yaml \
  --train-data "$work/data.bin" --seq-len 16 --steps 3 --lr 1e-2 --warmup 1 --seed 42 --output-dir "$work/run"
echo "== mpirun -np 4 test_communicators"
OMP_NUM_THREADS=1 timeout 300 mpirun -np 4 "$ETH_BUILD/tests/mpi/test_communicators" --gtest_brief=1 2>&1 | tail -5
echo "== GPU test binaries (load and skip without a GPU)"
timeout 120 "$ETH_BUILD/tests/gpu/test_cuda_backend" --gtest_brief=1 2>&1 | tail -3 || true
status=0; timeout 120 "$ETH_BUILD/tests/gpu/gpu_checks" >"$work/gpu_checks.log" 2>&1 || status=$?
tail -2 "$work/gpu_checks.log"; echo "   gpu_checks exit $status (77: no GPU)"
echo "== tests/mpi/equivalence.sh two-depths-4 with the bundle's build"
timeout 600 tests/mpi/equivalence.sh "$ETH_BUILD" "$root" 4 tests/mpi/plans/cpu-2nodes-4.yaml \
  tests/mpi/plans/two-depths-4.yaml 2>&1 | tail -6
rm -rf "$work"
echo "== check done (bad libraries: $bad)"
exit "$bad"
INNER
)
exec unshare --mount --propagation private bash -c "$inner" inner "$root"
