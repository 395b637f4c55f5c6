#!/usr/bin/env python3
"""Register spills of the build's CUDA kernels, at sm_80 and sm_90.

  python3 scripts/check_spills.py BUILD_DIR [--jobs N] [--require-mma FILE...]

Reads ptxas' report of every kernels/cuda/*.cu of BUILD_DIR/compile_commands.json: the build's
own, OBJECT.ptxas beside each object (scripts/nvcc_ptxas_report.sh writes it), where it is at
least as new as the object and covers sm_80 and sm_90 (or names no kernel: a host-only file);
else recompiles the file (the build's own
command, its targets replaced by sm_80 and sm_90, device code only: --fatbin into a temporary
folder, nothing of the build touched) with -Xptxas -v. Prints one row per kernel entry and target
(name demangled by c++filt, registers, spill store and load bytes, static shared memory, stack
frame) and exits 1 naming each kernel that spills, or when a compile fails or reports no kernel
at all. Shared memory is ptxas's static count: the dialect's kernels take theirs dynamically
(LaunchShape::shared_bytes), so they show 0. CUB's kernels are checked too but summed up in one
line, not listed. At most 2 compiles run at once (CI has 2 cores).

--require-mma FILE...: also compiles each FILE (a kernels/cuda/*.cu of the build) to PTX for
compute_80 alone and fails unless the PTX holds `mma.sync`: a file whose kernels are meant for
the tensor cores fails when no matrix instruction reaches its device code.
"""
import argparse
import concurrent.futures
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time

TARGETS = ("80", "90")
ENTRY = re.compile(r"Compiling entry function '([^']+)' for 'sm_(\d+)'")
SPILLS = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")
USED = re.compile(r"Used (\d+) registers")
SMEM = re.compile(r"(\d+) bytes smem")


def device_args(entry):
    """The build's nvcc command for one file without its output and its targets."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    kept, skip = [], False
    for a in args:
        if skip:
            skip = False
            continue
        if a in ("-o", "-gencode", "-arch", "--gpu-architecture", "-code", "--gpu-code"):
            skip = True  # the option and its value
            continue
        if a == "-c" or a.startswith(("--generate-code", "-gencode=", "-arch=", "--gpu-architecture=", "-code=",
                                      "--gpu-code=")):
            continue
        kept.append(a)
    return kept


def device_command(entry, out_path):
    """The build's nvcc command for one file, compiling device code only for TARGETS."""
    kept = device_args(entry)
    for t in TARGETS:
        kept += ["-gencode", f"arch=compute_{t},code=sm_{t}"]
    return kept + ["--fatbin", "-o", out_path, "-Xptxas", "-v"]


def missing_mma(entry, out_dir):
    """None when the file's PTX for compute_80 holds mma.sync, else why not."""
    out_path = os.path.join(out_dir, "require_mma.ptx")
    cmd = device_args(entry) + ["-arch=compute_80", "--ptx", "-o", out_path]
    p = subprocess.run(cmd, cwd=entry.get("directory", "."), capture_output=True, text=True)
    if p.returncode != 0:
        return f"does not compile to PTX (exit {p.returncode}):\n{(p.stdout + p.stderr).strip()}"
    with open(out_path) as f:
        return None if "mma.sync" in f.read() else "has no mma.sync in its PTX for compute_80"


def build_report(entry):
    """The build's ptxas report of the entry's object when current and covering TARGETS (or the
    file has no kernel), else None."""
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    if "-o" not in args[:-1]:
        return None
    obj = os.path.join(entry.get("directory", "."), args[args.index("-o") + 1])
    report = obj + ".ptxas"
    try:
        if os.path.getmtime(report) < os.path.getmtime(obj):
            return None
        with open(report) as f:
            text = f.read()
    except OSError:
        return None
    targets = {r["target"] for r in parse(text)}  # none: a file without kernels
    return text if not targets or targets == {"sm_" + t for t in TARGETS} else None


def compile_one(entry, out_dir, index):
    """(file, exit status, ptxas' report, seconds): the build's report if it has one, else a compile."""
    text = build_report(entry)
    if text is not None:
        return entry["file"], 0, text, None
    cmd = device_command(entry, os.path.join(out_dir, f"{index}.fatbin"))
    start = time.monotonic()
    p = subprocess.run(cmd, cwd=entry.get("directory", "."), capture_output=True, text=True)
    return entry["file"], p.returncode, p.stdout + p.stderr, time.monotonic() - start


def parse(text):
    """Kernel entries in ptxas -v output: (mangled name, target, registers, stores, loads, smem, stack)."""
    rows, current = [], None
    for line in text.splitlines():
        m = ENTRY.search(line)
        if m:
            current = {"name": m.group(1), "target": "sm_" + m.group(2)}
            continue
        if current is None:
            continue
        m = SPILLS.search(line)
        if m and "stack" not in current:
            current["stack"], current["stores"], current["loads"] = map(int, m.groups())
        m = USED.search(line)
        if m:
            current["registers"] = int(m.group(1))
            s = SMEM.search(line)
            current["smem"] = int(s.group(1)) if s else 0
            current.setdefault("stack", 0), current.setdefault("stores", 0), current.setdefault("loads", 0)
            rows.append(current)
            current = None
    return rows


def demangle(names):
    try:
        p = subprocess.run(["c++filt"], input="\n".join(names), capture_output=True, text=True, check=True)
        out = p.stdout.splitlines()
        if len(out) == len(names):
            return out
    except (OSError, subprocess.CalledProcessError):
        pass
    return list(names)


def short(name):
    """`void ns::f<...>(args)` as `f<...>`-ish: the return type, the arguments and eth::kernels:: dropped."""
    name = re.sub(r"^void ", "", name)
    depth = 0
    for i in range(len(name) - 1, -1, -1):  # the top-level argument list at the end
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0 and name[i] == "(":
            name = name[:i]
            break
    return name.replace("eth::kernels::", "").replace("(anonymous namespace)::", "")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("build_dir")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--require-mma", nargs="+", default=[], metavar="FILE")
    opt = ap.parse_args()
    db_path = os.path.join(opt.build_dir, "compile_commands.json")
    try:
        with open(db_path) as f:
            db = json.load(f)
    except (OSError, ValueError) as e:
        print(f"check_spills: cannot read {db_path}: {e}")
        return 1
    entries = [e for e in db if re.search(r"(^|/)kernels/cuda/[^/]+\.cu$", e["file"])]
    if not entries:
        print(f"check_spills: {db_path} has no kernels/cuda/*.cu (a build without CUDA?)")
        return 1

    failures, rows = [], []
    by_path = {os.path.realpath(os.path.join(e.get("directory", "."), e["file"])): e for e in entries}
    with tempfile.TemporaryDirectory() as out_dir:
        with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, min(opt.jobs, 2))) as pool:
            results = list(pool.map(lambda ie: compile_one(ie[1], out_dir, ie[0]), enumerate(entries)))
        for file in opt.require_mma:
            entry = by_path.get(os.path.realpath(file))
            why = missing_mma(entry, out_dir) if entry else f"is not a kernels/cuda/*.cu of {db_path}"
            if why:
                failures.append(f"{file} {why}")
            else:
                print(f"{os.path.basename(file)}: mma.sync in its PTX")
    reported = [os.path.basename(f) for f, _, _, t in results if t is None]
    compiled = [f"{os.path.basename(f)} {t:.1f}" for f, _, _, t in results if t is not None]
    print(f"the build's ptxas reports: {len(reported)} files" +
          (f"; compiled again (no current report), seconds: {', '.join(compiled)}" if compiled else ""))
    for file, rc, text, _ in results:
        if rc != 0:
            failures.append(f"{file} does not compile (exit {rc}):\n{text.strip()}")
            continue
        for r in parse(text):
            r["file"] = os.path.basename(file)
            rows.append(r)
    if not rows and not failures:
        failures.append("ptxas reported no kernel entry in any file: -Xptxas -v was not honoured")

    for r, d in zip(rows, demangle([r["name"] for r in rows])):
        r["demangled"] = short(d)
    ours = [r for r in rows if not r["demangled"].startswith("cub::")]
    cub = [r for r in rows if r["demangled"].startswith("cub::")]
    ours.sort(key=lambda r: (r["file"], r["demangled"], r["target"]))
    width = max([len(r["demangled"]) for r in ours] + [6])
    print(f"{'kernel':<{width}}  {'file':<18} target  regs  spill st  spill ld  smem B  stack B")
    for r in ours:
        print(f"{r['demangled']:<{width}}  {r['file']:<18} {r['target']:<6}  {r['registers']:>4}  {r['stores']:>8}  "
              f"{r['loads']:>8}  {r['smem']:>6}  {r['stack']:>7}")
    if cub:
        spilling = sum(1 for r in cub if r["stores"] or r["loads"])
        print(f"(and {len(cub)} CUB kernel entries, not listed: {spilling} of them spill)")

    for r in rows:
        if r["stores"] or r["loads"]:
            failures.append(f"{r['demangled']} ({r['file']}) spills at {r['target']}: {r['stores']} bytes spill "
                            f"stores, {r['loads']} bytes spill loads, {r['registers']} registers")
    for f in failures:
        print("FAIL: " + f)
    print(f"check_spills: {len(rows)} kernel entries in {len(entries)} files, "
          f"{'none spills' if not failures else str(len(failures)) + ' failures'}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
