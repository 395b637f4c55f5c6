#!/usr/bin/env python3
"""Every JSON file under bench/results/ carries the stamp bench/stamp.py describes: commit, host,
load {start, end} and date. Prints each file that lacks one, with what is missing, and exits 1
if any does. Usage: scripts/check_bench_stamps.py [REPO_ROOT]"""
import json
import pathlib
import sys

UNKNOWN = "unknown (recorded before stamping)"


def problems(result):
    if not isinstance(result, dict):
        return ["not a JSON object"]
    out = []
    for field in ("commit", "host", "date"):
        if not isinstance(result.get(field), str) or not result[field]:
            out.append(f"{field}: a non-empty string")
    load = result.get("load")
    if not isinstance(load, dict):
        out.append("load: an object {start, end}")
    else:
        for end in ("start", "end"):
            value = load.get(end)
            if not (isinstance(value, (int, float)) and not isinstance(value, bool) or value == UNKNOWN):
                out.append(f"load.{end}: the 1-minute load average, or '{UNKNOWN}'")
    return out


def main():
    root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
    files = sorted((root / "bench" / "results").rglob("*.json"))
    bad = 0
    for path in files:
        try:
            found = problems(json.loads(path.read_text()))
        except ValueError as e:
            found = [f"not JSON ({e})"]
        if found:
            bad += 1
            print(f"{path.relative_to(root)}: expected {'; '.join(found)}")
    print(f"{len(files) - bad} of {len(files)} result files stamped")
    return 1 if bad or not files else 0


if __name__ == "__main__":
    sys.exit(main())
