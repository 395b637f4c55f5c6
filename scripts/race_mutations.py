#!/usr/bin/env python3
"""Plants the races the interpreter's detector exists for and shows which CI test catches each.

Each mutation edits one attention kernel in place (a barrier deleted, or a prefetch moved into
the tile the warps are reading), rebuilds the interpreted test of that family, runs it, and
restores the file; it prints the tests that failed and the first line of the launch's report.
A mutation no test catches is a hole in the detector or in the tests' shapes: the script exits 1.

  python3 scripts/race_mutations.py [--build build]      (about a minute per mutation here)
"""
import argparse
import pathlib
import re
import subprocess
import sys

FLASH = "kernels/gpu_ops/flash_attention_bf16.hpp"
FP32 = "kernels/gpu_ops/attention.hpp"
FLASH_TEST = "test_gpu_flash_bf16_interpreted"
FP32_TEST = "test_gpu_attention_interpreted"

FWD_BARRIER = "      t.sync();  // tile j has landed, and every warp is done with tile j - 1's buffer\n"
FWD_PREFETCH = """      if (j + 1 < tiles) {
        load_tile<kCols, H>(t, s.k[1 - buffer], k_src, C3, j0 + kCols, T);
        load_tile<kCols, H>(t, s.v[1 - buffer], v_src, C3, j0 + kCols, T);
        t.cp_async_commit();
      }
"""

# (name, file, old text, new text, occurrence of old (0 = first), test binary)
MUTATIONS = [
    ("flash forward: its barrier deleted", FLASH, FWD_BARRIER, "", 0, FLASH_TEST),
    ("flash forward: the prefetch of K into the tile being read", FLASH,
     "s.k[1 - buffer], k_src, C3, j0 + kCols", "s.k[buffer], k_src, C3, j0 + kCols", 0, FLASH_TEST),
    ("flash forward: the prefetch moved before the barrier", FLASH, FWD_BARRIER + FWD_PREFETCH,
     FWD_PREFETCH + FWD_BARRIER, 0, FLASH_TEST),
    ("flash dK/dV: its barrier deleted", FLASH,
     "      t.sync();  // this step's queries have landed, and every warp is done with the last step's\n", "", 0,
     FLASH_TEST),
    ("flash dK/dV: the prefetch of Q and dO into the tile being read", FLASH,
     "load_queries(t, s, 1 - buffer, at, r0 + kStep)", "load_queries(t, s, buffer, at, r0 + kStep)", 0, FLASH_TEST),
    ("flash dQ: its barrier deleted", FLASH,
     "      t.sync();  // this step's keys have landed, and every warp is done with the last step's\n", "", 0,
     FLASH_TEST),
    ("flash dQ: the prefetch of K into the tile being read", FLASH,
     "s.k[1 - buffer], k_src, C3, c0 + kStep", "s.k[buffer], k_src, C3, c0 + kStep", 0, FLASH_TEST),
    ("fp32 forward: the barrier before the tile's load deleted", FP32,
     "      t.sync();  // the previous tile is no longer read\n", "", 0, FP32_TEST),
    ("fp32 forward: the barrier after the tile's load deleted", FP32, "      t.sync();\n", "", 0, FP32_TEST),
    ("fp32 dK/dV: the barrier before the rows' load deleted", FP32,
     "      t.sync();  // the previous rows are no longer read; also orders k_own's load before its reads\n", "", 0,
     FP32_TEST),
    ("fp32 dK/dV: the barrier after the rows' load deleted", FP32, "      t.sync();\n", "", 1, FP32_TEST),
    ("fp32 dQ: the barrier before the rows' load deleted", FP32,
     "      t.sync();  // the previous rows are no longer read; also orders do_own's load before its reads\n", "", 0,
     FP32_TEST),
    ("fp32 dQ: the barrier after the rows' load deleted", FP32, "      t.sync();\n", "", 2, FP32_TEST),
]


def replace_nth(text, old, new, n):
    starts = [m.start() for m in re.finditer(re.escape(old), text)]
    if len(starts) <= n:
        sys.exit(f"race_mutations: the text to mutate is not in the kernel any more: {old!r}")
    i = starts[n]
    return text[:i] + new + text[i + len(old):]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    args = parser.parse_args()
    root = pathlib.Path(__file__).resolve().parent.parent
    missed = 0
    for name, rel, old, new, nth, test in MUTATIONS:
        path = root / rel
        original = path.read_text()
        try:
            path.write_text(replace_nth(original, old, new, nth))
            subprocess.run(["ninja", "-C", args.build, test], check=True, stdout=subprocess.DEVNULL)
            run = subprocess.run([str(root / args.build / "tests/unit" / test)], cwd=root, capture_output=True,
                                 text=True)
        finally:
            path.write_text(original)
        failed = sorted(set(re.findall(r"^\[  FAILED  \] (\S+\.\S+)", run.stdout, re.M)))
        report = next((line.strip() for line in run.stdout.splitlines() if "shared-memory race" in line), "")
        if run.returncode == 0 or not report:
            missed += 1
            print(f"MISSED  {name}: {test} " + ("passed" if run.returncode == 0 else "failed without a race report"))
            continue
        print(f"caught  {name}: {len(failed)} tests of {test} fail, first {failed[0]}")
        print(f"        {report[report.find('kernel '):]}")
    subprocess.run(["ninja", "-C", args.build, FLASH_TEST, FP32_TEST], check=True, stdout=subprocess.DEVNULL)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
