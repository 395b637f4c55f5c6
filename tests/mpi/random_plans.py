"""Random valid (topology, plan) pairs for tiny-4l (4 layers), for the random-plan property test
(tests/mpi/random_plans.sh).

    random_plans.py OUT_DIR COUNT SEED

Writes OUT_DIR/planNN.yaml and OUT_DIR/topoNN.yaml (NN = 00 .. COUNT-1), OUT_DIR/list.tsv (one
line per pair: index, ranks, global batch, a one-line shape, its features) and prints a summary
of how many pairs have each feature. Deterministic for a seed.

Each pair: 4 to 8 ranks; a topology declaring 2 to 4 nodes of cpu-rank devices (random node
sizes, the device-type block of tests/mpi/plans/cpu-2nodes-4.yaml); a plan of 1 to 3 pipelines,
each of 1 to 4 stages cutting layers [0, 4) at random points, stage widths 1 to 3, a random
micro-batch (1 to 6, at least the widest stage) and count (1 to 4), a random positive split per
stage of several ranks; ranks are a random permutation of 0..n-1, so stages and pipelines fall
across the declared nodes in any way. Every pair satisfies lib/plan/plan.cpp's validate_plan.

Features are forced in turn so that any 4 consecutive pairs cover them all:
  i % 4 == 0  a split stage feeding a split stage of another width (m:n exchange, m != n, both > 1)
  i % 4 == 1  a split middle stage (neither first nor last of a pipeline of depth >= 3)
  i % 4 == 2  a depth-1 pipeline beside at least one deeper pipeline
  i % 4 == 3  three pipelines
and every pair has its ranks shuffled (not the identity permutation, at least one stage or
pipeline spanning two declared nodes).
"""
import os
import sys

import numpy as np

NUM_LAYERS = 4
MIN_RANKS, MAX_RANKS = 4, 8

TOPOLOGY_HEAD = """\
# Random topology {index} of tests/mpi/random_plans.py (seed {seed}): {n} CPU ranks declared as
# {k} nodes of sizes {sizes}.
device_types:
  - {{name: cpu-rank, memory_gb: 5, peak_tflops: {{fp32: 0.093}}, memory_bandwidth_gbs: 20}}
network: {{kind: ethernet, bandwidth_gbs: 1.25, latency_us: 20}}
nodes:
"""


def cuts(rng, depth):
    """Layer boundaries [0, ..., 4] of `depth` stages, random interior cuts."""
    inner = sorted(rng.choice(np.arange(1, NUM_LAYERS), size=depth - 1, replace=False).tolist())
    return [0] + inner + [NUM_LAYERS]


def random_split(rng, total, parts):
    """`parts` positive ints adding up to `total` (total >= parts), uniformly over compositions."""
    bars = sorted(rng.choice(np.arange(1, total), size=parts - 1, replace=False).tolist()) if parts > 1 else []
    edges = [0] + bars + [total]
    return [edges[i + 1] - edges[i] for i in range(parts)]


def random_pipeline(rng, force=None):
    """{micro_batch, micro_batches, widths, bounds}; `force` in {None, 'm2n', 'split_middle', 'depth1'}."""
    if force == "depth1":
        depth = 1
    elif force == "split_middle":
        depth = int(rng.integers(3, NUM_LAYERS + 1))
    elif force == "m2n":
        depth = int(rng.integers(2, NUM_LAYERS + 1))
    else:
        depth = int(rng.integers(1, NUM_LAYERS + 1))
    if force == "m2n":
        micro_batch = int(rng.integers(3, 7))  # widths 2 and 3 need micro_batch >= 3
    elif force == "split_middle":
        micro_batch = int(rng.integers(2, 7))
    else:
        micro_batch = int(rng.integers(1, 7))
    wmax = min(3, micro_batch)
    widths = [int(rng.integers(1, wmax + 1)) for _ in range(depth)]
    if force == "m2n":
        s = int(rng.integers(0, depth - 1))
        a, b = (2, 3) if rng.random() < 0.5 else (3, 2)
        widths[s], widths[s + 1] = a, b
    elif force == "split_middle":
        widths[int(rng.integers(1, depth - 1))] = int(rng.integers(2, wmax + 1))
    return {"micro_batch": micro_batch, "micro_batches": int(rng.integers(1, 5)), "widths": widths,
            "bounds": cuts(rng, depth)}


def features(pipes, node_of):
    """Names of the features this plan has (see the module docstring)."""
    f = set()
    for p in pipes:
        w, st = p["widths"], p["stages"]
        if len(w) == 1:
            f.add("depth-1 pipeline")
        if any(x > 1 for x in w):
            f.add("split stage")
        if any(w[i] > 1 and w[i + 1] > 1 and w[i] != w[i + 1] for i in range(len(w) - 1)):
            f.add("split->split of another width")
        if any(w[i] > 1 and w[i + 1] > 1 and w[i] == w[i + 1] for i in range(len(w) - 1)):
            f.add("split->split of the same width")
        if any(w[i] > 1 and (w[i + 1] == 1) for i in range(len(w) - 1)):
            f.add("split->single")
        if any(w[i] == 1 and (w[i + 1] > 1) for i in range(len(w) - 1)):
            f.add("single->split")
        if any(w[i] > 1 for i in range(1, len(w) - 1)):
            f.add("split middle stage")
        if len(w) == 4:
            f.add("depth-4 pipeline")
        if len(w) == 1 and w[0] > 1:
            f.add("split stage in a depth-1 pipeline")
        if len(w) > 1 and w[0] > 1:
            f.add("split first stage")
        if len(w) > 1 and w[-1] > 1:
            f.add("split last stage")
        if any(x == 3 for x in w):
            f.add("stage of width 3")
        if any(len({node_of[r] for r in s["ranks"]}) > 1 for s in st):
            f.add("stage across nodes")
        if len({node_of[r] for s in st for r in s["ranks"]}) > 1:
            f.add("pipeline across nodes")
        if any(s["ranks"] != sorted(s["ranks"]) for s in st):
            f.add("stage ranks unsorted")
        if any(len(s["ranks"]) == 1 and "split" in s for s in st):
            f.add("width-1 stage with split")
        if any(len(s["ranks"]) > 1 and len(set(s["split"])) > 1 for s in st):
            f.add("uneven split")
    depths = {len(p["widths"]) for p in pipes}
    if len(pipes) > 1 and len(depths) > 1:
        f.add("pipelines of different depth")
    if len(pipes) > 1 and len({p["micro_batch"] for p in pipes}) > 1:
        f.add("pipelines of different micro-batch")
    f.add(f"{len(pipes)} pipeline" + ("s" if len(pipes) > 1 else ""))
    nodes_shared = [len({pi for pi, p in enumerate(pipes) for s in p["stages"] for r in s["ranks"] if node_of[r] == nd})
                    for nd in set(node_of)]
    if max(nodes_shared) > 1:
        f.add("node shared by pipelines")
    return f


def make_pair(rng, force):
    """One (pipelines, node sizes, node_of) satisfying the forced feature; rejection-sampled."""
    while True:
        npipes = int(rng.integers(1, 4))
        if force == "depth1":
            npipes = max(npipes, 2)
        if force == "three":
            npipes = 3
        forced_at = int(rng.integers(0, npipes))
        pipes = []
        for k in range(npipes):
            f = force if k == forced_at and force != "three" else None
            if force == "depth1" and k != forced_at:
                f = "deeper"
            p = random_pipeline(rng, None if f == "deeper" else f)
            if f == "deeper" and len(p["widths"]) == 1:
                break
            pipes.append(p)
        if len(pipes) != npipes:
            continue
        n = sum(sum(p["widths"]) for p in pipes)
        if not MIN_RANKS <= n <= MAX_RANKS:
            continue
        # Ranks: a random permutation, dealt to the stages in plan order.
        perm = rng.permutation(n).tolist()
        k = int(rng.integers(2, min(4, n) + 1))
        sizes = random_split(rng, n, k)
        node_of = [i for i, s in enumerate(sizes) for _ in range(s)]
        at = 0
        for p in pipes:
            p["stages"] = []
            for s, w in enumerate(p["widths"]):
                ranks = perm[at:at + w]
                at += w
                # Mostly ascending (as eth_plan writes them); sometimes in permutation order.
                if w > 1 and rng.random() < 0.7:
                    ranks = sorted(ranks)
                stage = {"ranks": ranks, "layers": [p["bounds"][s], p["bounds"][s + 1]]}
                if w > 1:
                    stage["split"] = random_split(rng, p["micro_batch"], w)
                elif rng.random() < 0.15:
                    stage["split"] = [p["micro_batch"]]  # allowed: one count equal to micro_batch
                p["stages"].append(stage)
        f = features(pipes, node_of)
        if perm == sorted(perm) or not ({"stage across nodes", "pipeline across nodes"} & f):
            continue
        want = {"m2n": "split->split of another width", "split_middle": "split middle stage",
                "depth1": "depth-1 pipeline"}.get(force)
        if want and want not in f:
            continue
        return pipes, sizes, node_of, f


def validate(pipes, n):
    """The rules of lib/plan/plan.cpp's validate_plan (plus this generator's ranges)."""
    seen = []
    for p in pipes:
        assert 1 <= p["micro_batch"] <= 6 and 1 <= p["micro_batches"] <= 4
        assert 1 <= len(p["stages"]) <= 4
        nxt = 0
        for s in p["stages"]:
            assert 1 <= len(s["ranks"]) <= 3
            seen += s["ranks"]
            b, e = s["layers"]
            assert b == nxt and e > b
            nxt = e
            if len(s["ranks"]) > 1 or "split" in s:
                assert len(s["split"]) == len(s["ranks"]) and min(s["split"]) >= 1
                assert sum(s["split"]) == p["micro_batch"]
        assert nxt == NUM_LAYERS
    assert sorted(seen) == list(range(n)), seen


def flow(xs):
    return "[" + ", ".join(str(x) for x in xs) + "]"


def write_pair(out, i, seed, pipes, sizes, node_of, feats):
    n = len(node_of)
    g = sum(p["micro_batch"] * p["micro_batches"] for p in pipes)
    with open(os.path.join(out, f"topo{i:02d}.yaml"), "w") as t:
        t.write(TOPOLOGY_HEAD.format(index=i, seed=seed, n=n, k=len(sizes), sizes=sizes))
        for j, s in enumerate(sizes):
            t.write(f"  - {{name: n{j}, link: {{kind: shared-memory, bandwidth_gbs: 10, latency_us: 1}}, "
                    f"devices: [{{type: cpu-rank, count: {s}}}]}}\n")
    lines = [f"# Random plan {i} of tests/mpi/random_plans.py (seed {seed}) on topo{i:02d}.yaml;",
             "# rank -> node: " + ", ".join(f"{r}:n{node_of[r]}" for r in range(n)),
             "# features: " + "; ".join(sorted(feats)),
             f"global_batch: {g}", "pipelines:"]
    for p in pipes:
        lines += [f"  - micro_batch: {p['micro_batch']}", f"    micro_batches: {p['micro_batches']}", "    stages:"]
        for s in p["stages"]:
            extra = f", split: {flow(s['split'])}" if "split" in s else ""
            lines.append(f"      - {{ranks: {flow(s['ranks'])}, layers: {flow(s['layers'])}{extra}}}")
    with open(os.path.join(out, f"plan{i:02d}.yaml"), "w") as f:
        f.write("\n".join(lines) + "\n")
    shape = " | ".join(
        f"mb{p['micro_batch']}x{p['micro_batches']}: " + " -> ".join(
            (flow(s["ranks"]) + (flow(s["split"]) if len(s["ranks"]) > 1 else "")) + f"L{s['layers'][0]}-{s['layers'][1]}"
            for s in p["stages"]) for p in pipes)
    return n, g, shape


def main():
    out, count, seed = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
    os.makedirs(out, exist_ok=True)
    rng = np.random.default_rng(seed)
    forces = ["m2n", "split_middle", "depth1", "three"]
    tally = {}
    with open(os.path.join(out, "list.tsv"), "w") as lst:
        for i in range(count):
            pipes, sizes, node_of, feats = make_pair(rng, forces[i % 4])
            validate(pipes, len(node_of))
            n, g, shape = write_pair(out, i, seed, pipes, sizes, node_of, feats)
            lst.write(f"{i:02d}\t{n}\t{g}\t{shape}\t{'; '.join(sorted(feats))}\n")
            for f in feats:
                tally[f] = tally.get(f, 0) + 1
    print(f"{count} random plans (seed {seed}); plans with each feature:")
    for f in sorted(tally):
        print(f"  {tally[f]:3d}  {f}")


if __name__ == "__main__":
    main()
