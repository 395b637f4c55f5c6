"""report.html: the figures (PNG files beside it), the re-balance events, and what is missing."""
import html
import os


def rebalance_table(run):
    if not run.rebalances:
        return "<p>No re-balance events (eth_train --rebalance-every; none recorded).</p>"
    rows = []
    for r in run.rebalances:
        e = r["rebalance"]
        samples = lambda split: " / ".join(str(p["samples"]) for p in split)  # noqa: E731
        rows.append(f"<tr><td>{e['after_step']}</td><td>{samples(e['old'])}</td><td>{samples(e['new'])}</td>"
                    f"<td>{e['predicted_old_ms']:.1f} &rarr; {e['predicted_new_ms']:.1f}</td>"
                    f"<td>{100 * e['predicted_gain']:.1f}%</td><td>{e['switch_ms']:.1f}</td></tr>")
    return ("<table><tr><th>after step</th><th>samples per pipeline, before</th><th>after</th>"
            "<th>predicted ms (compute)</th><th>predicted gain</th><th>switch ms</th></tr>"
            + "".join(rows) + "</table>")


def summary(run):
    if not run.steps:
        return "<p>No step recorded yet.</p>"
    last = run.steps[-1]
    items = [f"steps recorded: {len(run.steps)} (last: step {last['step']})",
             f"last loss: {last['loss']:.4f}",
             f"last step: {last['ms']:.1f} ms, {last['tokens_per_s']:.0f} tokens/s"]
    if run.evals:
        items.append(f"last validation loss: {run.evals[-1]['val_loss']:.4f} (step {run.evals[-1]['step']})")
    items.append(f"MFU at the last step: {run.mfu_percent(last):.2f}% of the ranks' summed peak" if "mfu" in last else "MFU: not recorded")
    items.append(f"time left: {last['eta_s'] / 60:.1f} min" if "eta_s" in last else "time left: not recorded")
    if run.plan_path:
        items.append(f"plan: {html.escape(run.plan_path)}")
    return "<ul>" + "".join(f"<li>{i}</li>" for i in items) + "</ul>"


def write_page(run, path, sections):
    """`sections`: (title, PNG file name relative to the page, or None, and the reason it is missing)."""
    parts = [f"<h1>Run report: {html.escape(os.path.abspath(run.directory))}</h1>", summary(run)]
    if run.notes:
        parts.append("<h2>Missing</h2><ul>" + "".join(f"<li>{html.escape(n)}</li>" for n in run.notes) + "</ul>")
    if os.path.exists(os.path.join(run.directory, "plan.svg")):
        parts.append('<h2>Plan</h2><a href="plan.svg"><img src="plan.svg" alt="the plan and its simulated step"></a>')
    for title, image, missing in sections:
        parts.append(f"<h2>{html.escape(title)}</h2>")
        parts.append(f'<img src="{html.escape(image)}" alt="{html.escape(title)}">' if image else
                     f"<p class=missing>Not drawn: {html.escape(missing)}.</p>")
        if title == "Throughput":
            parts.append("<h2>Re-balance events</h2>" + rebalance_table(run))
    style = ("body{font-family:DejaVu Sans,Arial,sans-serif;max-width:1100px;margin:1em auto;color:#222}"
             "img{max-width:100%;border:1px solid #ddd}table{border-collapse:collapse}"
             "td,th{border:1px solid #ccc;padding:3px 8px;text-align:right}.missing{color:#a33}")
    with open(path, "w") as f:
        f.write(f"<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>ETH run report</title>"
                f"<style>{style}</style></head><body>\n" + "\n".join(parts) + "\n</body></html>\n")
