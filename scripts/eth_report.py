#!/usr/bin/python3
"""eth_report RUN_DIR: RUN_DIR/report.html with PNG figures (RUN_DIR/report/) of a run of
eth_train: loss against tokens, where each rank's step goes, throughput and MFU, re-balances,
memory per rank against the prediction, and measured against predicted step time. It works on a
run in progress or one that ended early, and says what is missing (docs/usage.md, "Run reports").
Needs Debian's python3-matplotlib and python3-yaml: run it with /usr/bin/python3."""
import argparse
import os
import sys

from report import figures
from report.page import write_page
from report.run_data import load_run

SECTIONS = [("Loss", "loss.png", figures.loss),
            ("Where each rank's step goes", "step_split.png", figures.step_split),
            ("Throughput", "throughput.png", figures.throughput),
            ("Step time: measured and predicted", "step_time.png", figures.step_time),
            ("Memory per rank", "memory.png", figures.memory),
            ("Measured timeline", "timeline.png", figures.measured_timeline)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("run_dir", help="eth_train --output-dir")
    parser.add_argument("--plan", help="the plan the run trained (default: RUN_DIR/plan.yaml when present)")
    parser.add_argument("--trace", help="the run's --trace file (default: RUN_DIR/trace.json)")
    args = parser.parse_args()
    if not os.path.isdir(args.run_dir):
        sys.exit(f"eth_report: error: {args.run_dir}: not a directory (expected eth_train's --output-dir)")
    run = load_run(args.run_dir, args.plan, args.trace)
    os.makedirs(os.path.join(args.run_dir, "report"), exist_ok=True)
    sections = []
    for title, name, draw in SECTIONS:
        missing = draw(run, os.path.join(args.run_dir, "report", name))
        sections.append((title, None if missing else f"report/{name}", missing))
    page = os.path.join(args.run_dir, "report.html")
    write_page(run, page, sections)
    drawn = sum(1 for _, image, _ in sections if image)
    print(f"wrote {page} ({drawn} figures; {len(run.notes)} note(s) on what is missing)")


if __name__ == "__main__":
    main()
