#!/usr/bin/env python3
"""Plants the races the interpreter's detector exists for and shows which CI test catches each.

Each mutation edits one attention kernel in place (a barrier deleted, or a prefetch moved into
the tile the warps are reading), rebuilds the interpreted test of that family, runs it, and
restores the file; it prints the tests that failed and the first line of the launch's report.
A mutation no test catches is a hole in the detector or in the tests' shapes: the script exits 1.
So is one that no grouped-query test catches (a shape with fewer K/V heads than query heads,
whose dK/dV blocks run on from one query head to the next): each must be caught there too.

  python3 scripts/race_mutations.py [--build build] [--only TEXT]   (about a minute per mutation here)
"""
import argparse
import pathlib
import re
import subprocess
import sys

FLASH = "kernels/gpu_ops/flash_attention16.hpp"
FP32 = "kernels/gpu_ops/attention.hpp"
FLASH_TEST = "test_gpu_flash16_interpreted"
FP32_TEST = "test_gpu_attention_interpreted"

FWD_BARRIER = "      t.sync();              // for every thread; and every warp is done with tile j - 1\n"
FWD_PREFETCH_K = """      if (more) {
        load_tile<kCols, H>(t, s.k[1 - buffer], k_src, C3, j0 + kCols, T);
        t.cp_async_commit();
      }
"""
FWD_PREFETCH_V = """      if (more) {
        load_tile<kCols, H>(t, s.v[1 - buffer], v_src, C3, j0 + kCols, T);
        t.cp_async_commit();
      }
"""
FWD_WAIT_K = "      t.cp_async_wait<1>();  // K_j (and Q) landed; V_j may still be in flight\n"
FWD_V_BARRIER = "      else t.cp_async_wait<0>();\n      t.sync();\n"
STAGED = "\n    t.sync();\n    store_tile<H>("
PRE_STAGE_KV = "    t.sync();  // every lane is done reading K and V (ldmatrix reads rows other lanes write here)\n"
PRE_STAGE_Q = "    t.sync();  // every lane is done reading Q (ldmatrix reads rows other lanes write here)\n"

# (name, file, old text, new text, occurrence of old (0 = first), test binary[, then a second
# replacement: old text, new text])
MUTATIONS = [
    ("flash forward: the barrier after K's wait deleted", FLASH, FWD_BARRIER, "", 0, FLASH_TEST),
    ("flash forward: the barrier after V's wait deleted", FLASH, FWD_V_BARRIER, "      else t.cp_async_wait<0>();\n", 0,
     FLASH_TEST),
    ("flash forward: the barrier before the staged store deleted", FLASH, STAGED, "\n    store_tile<H>(", 0,
     FLASH_TEST),
    ("flash forward: the prefetch of K into the tile being read", FLASH,
     "s.k[1 - buffer], k_src, C3, j0 + kCols", "s.k[buffer], k_src, C3, j0 + kCols", 0, FLASH_TEST),
    ("flash forward: the prefetch of V into the tile being read", FLASH,
     "s.v[1 - buffer], v_src, C3, j0 + kCols", "s.v[buffer], v_src, C3, j0 + kCols", 0, FLASH_TEST),
    # (K's prefetch moved above the loop's first barrier is no race: the second barrier of the
    # previous iteration already follows the last read of that buffer; the detector passes it.)
    ("flash forward: the prefetch of V moved above the loop's first barrier", FLASH, FWD_PREFETCH_V, "", 0,
     FLASH_TEST, FWD_WAIT_K, FWD_PREFETCH_V + FWD_WAIT_K),
    ("flash dK/dV: the loop's barrier deleted", FLASH,
     "      t.sync();  // this step's queries have landed, and every warp is done with the last step's\n", "", 0,
     FLASH_TEST),
    ("flash dK/dV: the barrier before staging dK and dV deleted", FLASH, PRE_STAGE_KV, "", 0, FLASH_TEST),
    ("flash dK/dV: the barrier before the staged store deleted", FLASH,
     "stage_rows<H, E>(t, s.v, w0 - j0, dv, 1.f);\n    t.sync();\n", "stage_rows<H, E>(t, s.v, w0 - j0, dv, 1.f);\n", 0,
     FLASH_TEST),
    ("flash dK/dV: the prefetch of Q, dO, lse and D into the tile being read", FLASH,
     "load_queries(t, s, 1 - buffer, b, ", "load_queries(t, s, buffer, b, ", 0, FLASH_TEST),
    ("flash dQ: the loop's barrier deleted", FLASH,
     "      t.sync();  // this step's keys have landed, and every warp is done with the last step's\n", "", 0,
     FLASH_TEST),
    ("flash dQ: the barrier before staging dQ deleted", FLASH, PRE_STAGE_Q, "", 0, FLASH_TEST),
    ("flash dQ: the barrier before the staged store deleted", FLASH, STAGED, "\n    store_tile<H>(", 1, FLASH_TEST),
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


# The tests of grouped-query shapes, by name.
GROUPED = re.compile(r"NKV|GroupedQuery")


def raced_tests(stdout):
    """The tests whose output holds a race report: gtest prints each between RUN and its result."""
    raced, current, seen = set(), None, False
    for line in stdout.splitlines():
        run = re.match(r"^\[ RUN      \] (\S+)", line)
        if run:
            current, seen = run.group(1), False
        elif current and "shared-memory race" in line:
            seen = True
        elif current and re.match(r"^\[ +(FAILED|OK) +\] " + re.escape(current), line):
            if seen:
                raced.add(current)
            current = None
    return raced


def replace_nth(text, old, new, n):
    starts = [m.start() for m in re.finditer(re.escape(old), text)]
    if len(starts) <= n:
        sys.exit(f"race_mutations: the text to mutate is not in the kernel any more: {old!r}")
    i = starts[n]
    return text[:i] + new + text[i + len(old):]


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build", default="build")
    parser.add_argument("--only", default="", help="run the mutations whose name holds this text")
    args = parser.parse_args()
    root = pathlib.Path(__file__).resolve().parent.parent
    missed = 0
    for name, rel, old, new, nth, test, *then in MUTATIONS:
        if args.only and args.only not in name:
            continue
        path = root / rel
        original = path.read_text()
        try:
            mutated = replace_nth(original, old, new, nth)
            if then:
                mutated = replace_nth(mutated, then[0], then[1], 0)
            path.write_text(mutated)
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
        grouped = sorted(t for t in raced_tests(run.stdout) if GROUPED.search(t))
        if not grouped:
            missed += 1
            print(f"MISSED  {name}: no grouped-query test of {test} reports a race")
            continue
        print(f"caught  {name}: {len(failed)} tests of {test} fail, first {failed[0]}; "
              f"{len(grouped)} grouped-query, first {grouped[0]}")
        print(f"        {report[report.find('kernel '):]}")
    subprocess.run(["ninja", "-C", args.build, FLASH_TEST, FP32_TEST], check=True, stdout=subprocess.DEVNULL)
    return 1 if missed else 0


if __name__ == "__main__":
    sys.exit(main())
