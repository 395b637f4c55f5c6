"""The report's figures: each function draws one PNG from a Run (run_data.py), or returns why
it cannot (a sentence), so that the page says what is missing instead of failing."""
import matplotlib

matplotlib.use("Agg")  # no display: files only
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.patches import Patch  # noqa: E402

# The time split, in the order bars stack; the same colours in every figure.
PARTS = [("compute", "#3182bd"), ("bubble", "#d9d9d9"), ("transfer", "#9e9ac8"),
         ("reduction", "#a50f15"), ("optimizer", "#74c476")]
# What each part holds: a wait for a neighbour's activations or gradients is pipeline bubble
# and transfer at once, and a reduction includes waiting for its slowest owner.
LABELS = {"compute": "compute (forward, backward)", "bubble": "idle (the rest of the step)",
          "transfer": "send/recv wait (transfer, pipeline bubble)", "reduction": "gradient reduction (exposed)",
          "optimizer": "optimizer"}


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def mark_rebalances(ax, run, x_of_step):
    for i, r in enumerate(run.rebalances):
        ax.axvline(x_of_step(r["rebalance"]["after_step"]), color="#e15759", ls="--", lw=1,
                   label="re-balance" if i == 0 else None)


def loss(run, path):
    if not run.steps:
        return "no training steps recorded yet"
    tokens = run.tokens_per_step()
    fig, ax = plt.subplots(figsize=(9, 4.5))
    ax.plot([s["step"] * tokens for s in run.steps], [s["loss"] for s in run.steps], label="training loss", lw=1.2)
    if run.evals:
        ax.plot([e["step"] * tokens for e in run.evals], [e["val_loss"] for e in run.evals], "o-",
                label="validation loss", color="#e6550d")
    ax.set_xlabel(f"tokens ({tokens} per step)")
    ax.set_ylabel("loss (mean per sample)")
    ax.set_title("Loss" + ("" if run.evals else " (no validation recorded)"))
    ax.grid(alpha=0.3)
    ax.legend()
    save(fig, path)


def split_from_metrics(run):
    """Per rank, mean ms per step of each part; the first step (start-up) left out when others exist."""
    steps = run.steps[1:] if len(run.steps) > 1 else run.steps
    ranks = len(steps[0]["ranks"])
    keys = {"compute": "compute_ms", "bubble": "idle_ms", "transfer": "comm_wait_ms",
            "reduction": "reduce_ms", "optimizer": "optimizer_ms"}
    return [{part: sum(s["ranks"][r][k] for s in steps) / len(steps) for part, k in keys.items()}
            for r in range(ranks)], len(steps)


def split_from_trace(run):
    """Per rank, mean ms per step of each part from the trace's spans; the bubble is the rest of
    the mean measured step (metrics.jsonl's ms)."""
    kinds = {"forward": "compute", "backward": "compute", "send/recv wait": "transfer",
             "gradient reduction": "reduction", "optimizer": "optimizer"}
    rows = {}
    for e in run.trace:
        if e.get("ph") == "X" and e.get("cat") in kinds:
            row = rows.setdefault(e["tid"], {p: 0.0 for p, _ in PARTS})
            row[kinds[e["cat"]]] += e["dur"] / 1e3
    n = len(run.steps)
    mean_ms = sum(s["ms"] for s in run.steps) / n
    split = []
    for r in range(max(rows) + 1 if rows else 0):
        row = {p: v / n for p, v in rows.get(r, {p: 0.0 for p, _ in PARTS}).items()}
        row["bubble"] = max(0.0, mean_ms - sum(row.values()))
        split.append(row)
    return split, n


def step_split(run, path):
    if not run.steps:
        return "no training steps recorded yet"
    if run.trace:
        split, n = split_from_trace(run)
        source = f"trace.json, mean of {n} steps"
    else:
        split, n = split_from_metrics(run)
        source = f"metrics.jsonl, mean of {n} step(s)" + (", the first left out" if len(run.steps) > 1 else "")
    fig, ax = plt.subplots(figsize=(10, 1.6 + 0.45 * len(split)))
    left = [0.0] * len(split)
    for part, colour in PARTS:
        widths = [row[part] for row in split]
        ax.barh(range(len(split)), widths, left=left, color=colour, label=LABELS[part], edgecolor="white")
        left = [a + b for a, b in zip(left, widths)]
    ax.set_yticks(range(len(split)), [f"rank {r}" for r in range(len(split))])
    ax.invert_yaxis()
    ax.set_xlabel("ms per step")
    ax.set_title(f"Where each rank's step goes ({source})")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1), frameon=False)
    save(fig, path)


def throughput(run, path):
    if not run.steps:
        return "no training steps recorded yet"
    steps = [s["step"] for s in run.steps]
    has_mfu = any("mfu" in s for s in run.steps)
    has_eta = any("eta_s" in s for s in run.steps)
    panels = 1 + has_mfu + has_eta
    fig, axes = plt.subplots(panels, 1, figsize=(9, 2.6 * panels + 0.6), sharex=True, squeeze=False)
    axes = [a[0] for a in axes]
    axes[0].plot(steps, [s["tokens_per_s"] for s in run.steps], lw=1.2)
    axes[0].set_ylabel("tokens/s")
    axes[0].set_title("Throughput" + ("" if has_mfu else " (MFU not recorded in metrics.jsonl)"))
    k = 1
    if has_mfu:
        xs = [s["step"] for s in run.steps if "mfu" in s]
        axes[k].plot(xs, [run.mfu_percent(s) for s in run.steps if "mfu" in s], color="#31a354", lw=1.2)
        axes[k].set_ylabel("MFU (%)")
        k += 1
    if has_eta:
        xs = [s["step"] for s in run.steps if "eta_s" in s]
        axes[k].plot(xs, [s["eta_s"] / 60 for s in run.steps if "eta_s" in s], color="#756bb1", lw=1.2)
        axes[k].set_ylabel("time left (min)")
    for ax in axes:
        mark_rebalances(ax, run, lambda step: step + 0.5)
        ax.set_ylim(bottom=0)
        ax.grid(alpha=0.3)
    if run.rebalances:
        axes[0].legend()
    axes[-1].set_xlabel("step")
    save(fig, path)


def step_time(run, path):
    """Measured step and pipeline times against the planner's prediction, where the plan has one."""
    if not run.steps:
        return "no training steps recorded yet"
    predicted = (run.plan or {}).get("predicted") or {}
    fig, ax = plt.subplots(figsize=(9, 4.5))
    steps = [s["step"] for s in run.steps]
    ax.plot(steps, [s["ms"] for s in run.steps], color="black", lw=1.4, label="measured step")
    for p in range(len(run.steps[0].get("pipelines", []))):
        line = ax.plot(steps, [s["pipelines"][p]["ms"] for s in run.steps], lw=0.9, alpha=0.8,
                       label=f"measured pipeline {p}")
        if p < len(predicted.get("pipeline_ms", [])):
            ax.axhline(predicted["pipeline_ms"][p], color=line[0].get_color(), ls=":", lw=1.2,
                       label=f"predicted pipeline {p}")
    if "iteration_ms" in predicted:
        ax.axhline(predicted["iteration_ms"], color="black", ls="--", lw=1.2, label="predicted step")
    mark_rebalances(ax, run, lambda step: step + 0.5)
    ax.set_xlabel("step")
    ax.set_ylabel("ms")
    ax.set_ylim(bottom=0)
    ax.set_title("Step time, measured" + (" against the plan's prediction" if predicted else
                                         " (the plan has no prediction)"))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=2)
    save(fig, path)


def memory(run, path):
    if not run.steps:
        return "no training steps recorded yet"
    ranks = run.steps[-1]["ranks"]
    if not any("peak_bytes" in r for r in ranks):
        return "metrics.jsonl records no peak_bytes per rank"
    predicted = ((run.plan or {}).get("predicted") or {}).get("memory_gb", [])
    series = [("peak (allocator)", [r.get("peak_bytes", 0) / 1e9 for r in ranks], "#3182bd"),
              ("planned (runtime's model)", [r.get("planned_bytes", 0) / 1e9 for r in ranks], "#9ecae1")]
    if len(predicted) == len(ranks):
        series.append(("predicted (planner)", predicted, "#fd8d3c"))
    width = 0.8 / len(series)
    fig, ax = plt.subplots(figsize=(9, 4))
    for i, (name, values, colour) in enumerate(series):
        ax.bar([r + (i - (len(series) - 1) / 2) * width for r in range(len(ranks))], values, width, label=name,
               color=colour)
    ax.set_xticks(range(len(ranks)), [f"rank {r}" for r in range(len(ranks))])
    ax.set_ylabel("GB")
    peak_note = "" if any(r.get("peak_bytes", 0) for r in ranks) else " (peak not tracked on this backend)"
    ax.set_title(f"Memory per rank at step {run.steps[-1]['step']}{peak_note}")
    ax.set_ylim(0, 1.3 * max(max(values) for _, values, _ in series) or 1)  # room for the legend above the bars
    ax.grid(alpha=0.3, axis="y")
    ax.legend(ncol=len(series), loc="upper center")
    save(fig, path)


def measured_timeline(run, path):
    """The last step of the trace on every rank: what the plan drawing's simulated timeline predicts."""
    if not run.trace:
        return "no trace.json: no measured timeline"
    spans = [e for e in run.trace if e.get("ph") == "X"]
    if not spans:
        return "trace.json holds no spans"
    # A rank's last step begins where its previous optimizer span ended (each step ends with one).
    optimizer_ends = {}
    for e in spans:
        if e["cat"] == "optimizer":
            optimizer_ends.setdefault(e["tid"], []).append(e["ts"] + e["dur"])
    previous = {r: sorted(ends)[-2] if len(ends) > 1 else 0.0 for r, ends in optimizer_ends.items()}
    begin = min(previous.values(), default=0.0)
    ranks = sorted({e["tid"] for e in run.trace if e.get("ph") in ("X", "M")})
    colours = {"forward": "#9ecae1", "backward": "#3182bd", "send/recv wait": "#d9d9d9",
               "gradient reduction": "#a50f15", "optimizer": "#74c476"}
    fig, ax = plt.subplots(figsize=(10, 1.4 + 0.5 * len(ranks)))
    for e in spans:
        if e["ts"] >= previous.get(e["tid"], 0.0):
            ax.barh(e["tid"], e["dur"] / 1e3, left=(e["ts"] - begin) / 1e3, color=colours.get(e["cat"], "#000"),
                    edgecolor="white", linewidth=0.3)
    ax.set_xlim(left=0)
    ax.set_yticks(ranks, [f"rank {r}" for r in ranks])
    ax.invert_yaxis()
    ax.set_xlabel("ms since the step began")
    ax.set_title("The last traced step, measured")
    ax.legend(handles=[Patch(color=colour, label=cat) for cat, colour in colours.items()], loc="upper left",
              bbox_to_anchor=(1.01, 1), frameon=False, fontsize=8)
    save(fig, path)
