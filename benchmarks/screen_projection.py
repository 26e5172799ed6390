"""The 1B-molecule projection of ``screen_scaling.py``: FLOPs per molecule and the tables.

Everything here is arithmetic on measured inputs (per-worker rate, driver feed rate,
per-core preparation rate, real token lengths) plus the stated GPU assumptions; the
section it writes is labelled a projection, not a measurement.
"""

from __future__ import annotations

import json
from pathlib import Path

LIBRARY = 1_000_000_000
H100_BF16_DENSE = 989e12  # FLOP/s, NVIDIA's H100 SXM datasheet figure without sparsity
MFU = (0.05, 0.20)  # assumed share of that peak a 7M-parameter encoder on ~45 tokens reaches
CORES_PER_GPU = 8  # CPU cores assumed beside each GPU for RDKit checks and tokenising


def flops_per_molecule(model: Path, smiles: list[str]) -> dict:
    """Forward FLOPs of the encoder per molecule on these SMILES (no padding counted).

    Per layer and token: Q, K, V, O projections ``2 * 4 d^2`` and the FFN ``2 * 2 d f``;
    per layer: scores and weighted sum ``2 * 2 L^2 d``. RoPE, norms, softmax and the
    head are left out (a few percent at these sizes).
    """
    import numpy as np

    from exlm_chem.tokenizer import SmilesTokenizer

    config = json.loads((model / "config.json").read_text())
    d, f, layers, k = config["d_model"], config["d_ffn"], config["n_layers"], config["k_states"]
    lengths = SmilesTokenizer.from_file(model / "vocab.txt").batch_encode(
        smiles, max_length=256).lengths
    expanded = np.asarray(lengths, dtype=np.float64) + 2 * (k - 1)  # k copies of BOS and EOS
    per_token = layers * 2 * (4 * d * d + 2 * d * f)
    attention = layers * 4 * d * expanded**2
    return {"flops": float(np.mean(per_token * expanded + attention)),
            "mean_tokens": float(expanded.mean()), "d_model": d, "layers": layers}


def _hours(seconds: float) -> str:
    return f"{seconds / 3600:,.1f}" if seconds < 3600 * 1000 else f"{seconds / 3600:,.0f}"


def projection_section(runs: list[dict], extra: dict) -> list[str]:
    """Markdown lines: what 1B molecules cost on N CPU workers and on N GPUs."""
    one = next((r for r in runs if r["workers"] == 1), runs[0])
    # rows per CPU second of the 1-worker run: what a worker does on a core of its own
    cpu_seconds = sum(r / m for r, m in zip(one["worker_rows"], one["worker_mol_cpu_s"],
                                            strict=True))
    rate = sum(one["worker_rows"]) / cpu_seconds
    flops = extra["flops"]["flops"]
    feed, prep = extra["feed_mol_s"], extra["prep_mol_s"]
    lines = [
        "### Projection to 1B molecules (arithmetic on the figures above, not a measurement)",
        "",
        f"Measured inputs: {rate:.1f} mol per CPU second for a single-threaded worker (the "
        f"1-worker run), driver feed {feed:,.0f} mol/s, RDKit check + tokenising "
        f"{prep:,.0f} mol/s per core (all per CPU second), "
        f"{flops / 1e9:.3f} GFLOP per molecule forward ({extra['flops']['mean_tokens']:.1f} "
        "expanded tokens on average, from the model's shape and the library's token lengths)."
        f" So a CPU worker reaches {rate * flops / 1e9:.1f} GFLOP/s.",
        "",
        "Assumptions: each worker has a core of its own, so it runs at its measured CPU-second "
        "rate, and workers scale linearly (they share nothing but the driver; the 1 vs 2 "
        "worker runs above are the only check, on a shared machine); one driver feeds all "
        f"workers, so the total rate is capped at its feed rate ({feed:,.0f} mol/s; above "
        "that, split the library across several `screen` runs); cluster start-up and model "
        "loading (seconds per worker) are ignored.",
        "",
        "| CPU workers (1 core each) | wall hours | core-hours |",
        "|---|---|---|",
    ]
    for n in (1, 64, 512, 4096):
        total = min(n * rate, feed)
        lines.append(f"| {n} | {_hours(LIBRARY / total)} | {_hours(LIBRARY / rate)} |")
    gpu = [u * H100_BF16_DENSE / flops for u in MFU]
    fed = CORES_PER_GPU * prep
    lines += [
        "",
        f"GPU (projection from FLOPs): H100 SXM BF16 dense peak {H100_BF16_DENSE / 1e12:.0f} "
        f"TFLOP/s at an assumed {MFU[0]:.0%}-{MFU[1]:.0%} utilisation (a 256-wide, 9-layer "
        "encoder on ~45-token sequences keeps the tensor cores far from full) gives "
        f"{gpu[0]:,.0f}-{gpu[1]:,.0f} mol/s per GPU for the forward pass alone. Each "
        "molecule must also be checked by RDKit and tokenised on a CPU core: with "
        f"{CORES_PER_GPU} cores per GPU that is {fed:,.0f} mol/s, so the CPU side, not the "
        "GPU, sets the pace unless more cores (or a prepared, pre-tokenised library) feed "
        "each GPU. The project's GPU machine has no RDKit at all: there, a library would be "
        "validated and tokenised on CPUs first.",
        "",
        "| GPUs | forward-only mol/s per GPU | wall hours, pre-tokenised input | wall hours, "
        f"{CORES_PER_GPU} cores/GPU check + tokenise | GPU-hours, pre-tokenised |",
        "|---|---|---|---|---|",
    ]
    for n in (1, 8, 64):
        bare = [LIBRARY / min(n * g, feed) for g in gpu]  # [slow, fast]
        fed_walls = [LIBRARY / min(n * min(g, fed), feed) for g in gpu]
        lines.append(f"| {n} | {gpu[0]:,.0f}-{gpu[1]:,.0f} | {_hours(bare[0])}-"
                     f"{_hours(bare[1])} | {_hours(fed_walls[0])}-{_hours(fed_walls[1])} | "
                     f"{_hours(n * bare[0])}-{_hours(n * bare[1])} |")
    lines += ["", "Wall times at 64 GPUs hit the single driver's feed rate; GPU-hours there "
              "include GPUs waiting on it."]
    return lines
