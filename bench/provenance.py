"""When, from which commit and on what host a benchmark result was made: the common head of the
JSON files under bench/results/ that the grad-sync summaries write."""
import datetime
import os
import platform
import subprocess


def provenance():
    git = lambda *a: subprocess.run(["git", *a], capture_output=True, text=True).stdout.strip()
    return {
        "date": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
        "git_commit": git("rev-parse", "HEAD"),
        "git_dirty": bool(git("status", "--porcelain", "--", "lib", "app", "kernels", "mpi_topology")),
        "host": {"cpus": os.cpu_count(), "machine": platform.machine(), "loadavg_at_end": os.getloadavg()},
    }
