"""Reads what a run directory holds (docs/formats.md): metrics.jsonl, the Chrome trace, the plan.

Every reader tolerates a run in progress or one that ended early: a missing file or a cut last
line becomes a note saying what is missing, never an exception.
"""
import json
import os
from dataclasses import dataclass, field

import yaml


@dataclass
class Run:
    directory: str
    steps: list = field(default_factory=list)       # metrics records with "loss"
    evals: list = field(default_factory=list)       # records with "val_loss"
    rebalances: list = field(default_factory=list)  # records with "rebalance"
    trace: list = None                              # Chrome trace events, or None
    plan: dict = None                               # the plan YAML, or None
    plan_path: str = None
    notes: list = field(default_factory=list)       # what is missing, in words

    def mfu_percent(self, record):
        """metrics.jsonl's `mfu` (a fraction of the ranks' summed peak, docs/formats.md) in percent."""
        return record["mfu"] * 100

    def tokens_per_step(self):
        """From the first step: tokens_per_s is tokens_per_step / ms * 1e3 (lib/job/trainer.cpp)."""
        s = self.steps[0]
        return round(s["tokens_per_s"] * s["ms"] / 1e3)


def read_metrics(run, path):
    if not os.path.exists(path):
        run.notes.append(f"no {path}: the run has not logged a step yet")
        return
    with open(path) as f:
        lines = f.read().split("\n")
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            run.notes.append(f"{path} line {number} is not complete JSON (a run still writing it?): skipped")
            continue
        if "rebalance" in record:
            run.rebalances.append(record)
        elif "val_loss" in record:
            run.evals.append(record)
        elif "loss" in record:
            run.steps.append(record)
    # A resumed run appends: keep the newest record of each step.
    run.steps = list({s["step"]: s for s in run.steps}.values())
    run.steps.sort(key=lambda s: s["step"])
    if not run.steps:
        run.notes.append(f"{path} holds no step yet")


def read_trace(run, path):
    if not os.path.exists(path):
        run.notes.append("no trace.json (eth_train --trace; written when the run ends): "
                         "the time split comes from metrics.jsonl, and there is no measured timeline")
        return
    try:
        with open(path) as f:
            run.trace = json.load(f)["traceEvents"]
    except (json.JSONDecodeError, KeyError) as e:
        run.notes.append(f"{path} is not a complete Chrome trace ({e}): left out")


def read_plan(run, path):
    if path is None:
        run.notes.append("no plan.yaml in the run directory (give --plan FILE): no predicted times or memory")
        return
    try:
        with open(path) as f:
            run.plan = yaml.safe_load(f)
        run.plan_path = path
    except (OSError, yaml.YAMLError) as e:
        run.notes.append(f"the plan {path} cannot be read ({e})")
        return
    if not (run.plan or {}).get("predicted"):
        run.notes.append(f"the plan {path} has no predicted section (written by hand, not by eth_plan): "
                         "no predicted step time or memory")


def load_run(directory, plan_path=None, trace_path=None):
    run = Run(directory)
    read_metrics(run, os.path.join(directory, "metrics.jsonl"))
    read_trace(run, trace_path or os.path.join(directory, "trace.json"))
    default_plan = os.path.join(directory, "plan.yaml")
    read_plan(run, plan_path or (default_plan if os.path.exists(default_plan) else None))
    return run
