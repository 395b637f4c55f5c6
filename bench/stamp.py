#!/usr/bin/env python3
"""The stamp every JSON file under bench/results/ carries, so that a figure can be traced to the
code and the machine state it was measured with (scripts/check_bench_stamps.py checks it;
bench/bench_stamp.hpp writes the same fields for the C++ benchmarks):

    commit  the HEAD commit, with " (with uncommitted changes)" when the sources are modified
    host    the host name
    load    the 1-minute load average when the run started and when it ended: {"start", "end"}
    date    when the stamp was made (the run's end), UTC, ISO 8601

A script reads the load when it starts and stamps its JSON when done:
    Python:  result.update(stamp(load_at_start))       (load_at_start = load_now() at the start)
    shell:   load_at_start=$(cut -d' ' -f1 /proc/loadavg)  ...  bench/stamp.py OUT.json "$load_at_start"
"""
import json
import os
import socket
import subprocess
import sys
import time

FIELDS = ("commit", "host", "load", "date")
# What counts as a modified source: everything that builds or runs a benchmark, not its results.
SOURCES = ["lib", "app", "kernels", "mpi_topology", "bench", ":!bench/results"]
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def load_now():
    return os.getloadavg()[0]


def commit():
    git = lambda *a: subprocess.run(["git", "-C", REPO, *a], capture_output=True, text=True).stdout.strip()
    head = git("rev-parse", "HEAD")
    if not head:
        return "unknown (git rev-parse failed)"
    dirty = git("status", "--porcelain", "--untracked-files=no", "--", *SOURCES)
    return head + (" (with uncommitted changes)" if dirty else "")


def stamp(load_at_start):
    return {"commit": commit(), "host": socket.gethostname(), "load": {"start": load_at_start, "end": load_now()},
            "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}


def stamp_file(path, load_at_start):
    """Adds the stamp to the JSON object in `path`, keeping its indentation."""
    text = open(path).read()
    result = json.loads(text)
    second = text.split("\n", 2)[1] if "\n" in text else ""
    indent = len(second) - len(second.lstrip(" ")) or None
    result.update(stamp(load_at_start))
    with open(path, "w") as f:
        json.dump(result, f, indent=indent, ensure_ascii=False)
        f.write("\n")


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit("usage: bench/stamp.py RESULT.json LOAD_AT_START (the 1-minute load average when the run started)")
    stamp_file(sys.argv[1], float(sys.argv[2]))
