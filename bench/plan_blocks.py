"""A plan's gradient blocks and tied-embedding group, derived exactly as lib/plan/grad_blocks.cpp does
(units: 0 = wpe, 1..L = layers, L+1 = final layernorm; wte outside them), for the benchmark
summaries (bench/summarize_grad_sync*.py)."""


def unit_params(model, u):
    L, C = model["num_layers"], model["channels"]
    if u == 0:
        return model["max_seq_len"] * C              # wpe
    if u == L + 1:
        return 2 * C                                 # final layernorm
    return 12 * C * C + 13 * C                       # one transformer layer


def stage_units(model, layers):
    L = model["num_layers"]
    b, e = layers
    return (0 if b == 0 else b + 1, L + 2 if e == L else e + 1)


def plan_blocks(plan, model):
    """(blocks, tied): blocks as {units: [b, e), owners, params}; tied as {owners, params}."""
    L = model["num_layers"]
    stages = [s for p in plan["pipelines"] for s in p["stages"]]
    cuts = sorted({0, L + 2} | {stage_units(model, s["layers"])[0] for s in stages})
    blocks = []
    for b, e in zip(cuts, cuts[1:]):
        owners = sorted(r for s in stages for r in s["ranks"]
                        if stage_units(model, s["layers"])[0] <= b < stage_units(model, s["layers"])[1])
        blocks.append({"units": [b, e], "owners": owners, "params": sum(unit_params(model, u) for u in range(b, e))})
    tied = sorted({r for p in plan["pipelines"] for s in (p["stages"][0], p["stages"][-1]) for r in s["ranks"]})
    return blocks, {"owners": tied, "params": model["padded_vocab_size"] * model["channels"]}


def model_params(model):
    return model["padded_vocab_size"] * model["channels"] + sum(
        unit_params(model, u) for u in range(model["num_layers"] + 2))
