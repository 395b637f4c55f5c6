"""What bench/lib_mode_runs.sh leaves in its folder, read back for the benchmarks' summaries."""
import json
import re


def steps(tmp, arm, r):
    """The step records of metrics.jsonl of arm's run in round r."""
    records = [json.loads(line) for line in open(f"{tmp}/{arm}-{r}/metrics.jsonl")]
    return [x for x in records if "ms" in x]


def evaluate(tmp, arm):
    return open(f"{tmp}/evaluate-{arm}.txt").read()


def planner_gb(text):
    """eth_plan --evaluate's plan table: "memory GB / device GB" of each stage's fullest rank."""
    return [float(m.group(1)) for m in re.finditer(r"\s([0-9.]+)/[0-9.]+\s*$", text, re.M)]


def planner_ms(text):
    """Its simulated iteration."""
    return float(re.search(r"iteration: simulated ([0-9.]+) ms", text).group(1))


def planner_memory(text):
    """Its per-rank table ("0-1" rows expanded): GB by kind, per rank."""
    kinds = ["parameters", "gradients", "optimizer", "activations", "workspace", "total"]
    table = text.split("predicted peak memory per rank")[1]
    out = {}
    for m in re.finditer(r"^(\d+)(?:-(\d+))?\s+\S+\s+" + r"\s+".join([r"([0-9.]+)"] * len(kinds)), table, re.M):
        first, last = int(m.group(1)), int(m.group(2) or m.group(1))
        for r in range(first, last + 1):
            out[r] = {k: float(v) for k, v in zip(kinds, m.groups()[2:])}
    return [out[r] for r in sorted(out)]


def load(tmp, name):
    """The 1-, 5- and 15-minute load averages saved before a run ("load-ARM-ROUND") or at the end."""
    return [float(x) for x in open(f"{tmp}/load-{name}").read().split()]


def print_table(columns, rows):
    """columns: (header, format spec) pairs, each column as wide as its header; rows: value tuples."""
    print(" ".join(header for header, _ in columns))
    for row in rows:
        print(" ".join(f"{value:>{len(header)}{spec}}" for (header, spec), value in zip(columns, row)))
