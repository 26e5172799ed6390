"""The 1B-molecule projection of ``screen_scaling.py``: FLOPs per molecule and the tables.

Everything here is arithmetic on measured inputs (per-worker rate, driver feed rate,
per-core preparation rate, real token lengths) plus the stated GPU assumptions; the
section it writes is labelled a projection, not a measurement.
"""

from __future__ import annotations

import json
from pathlib import Path

LIBRARY = 1_000_000_000
# H100 SXM datasheet peaks (dense, no sparsity) and the share of each assumed reachable by
# a 256-wide, 9-layer encoder on ~40-token sequences in large length-sorted batches
GPU_SCENARIOS = (
    # the inference code as it is: float32 matmuls, TF32 off (PyTorch's default)
    ("fp32 (the code today)", 67e12, (0.30, 0.60)),
    # bf16 autocast, which inference does not use yet (pre-training does)
    ("bf16 autocast (not implemented for inference)", 989e12, (0.05, 0.20)),
)
CORES_PER_GPU = 8  # CPU cores assumed beside each GPU for RDKit checks and tokenising


def flops_per_molecule(model: Path, smiles: list[str]) -> dict:
    """Forward FLOPs of the encoder per molecule on these SMILES (no padding counted).

    Per layer and token: Q, K, V, O projections ``2 * 4 d^2`` and the FFN ``2 * 2 d f``;
    per layer: scores and weighted sum ``2 * 2 L^2 d``. RoPE, norms, softmax and the
    head are left out (a few percent at these sizes).
    """
    import numpy as np

    from exlm_chem.data.tokenizer import SmilesTokenizer

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
    hours = seconds / 3600
    return f"{hours:,.2f}" if hours < 1 else f"{hours:,.1f}" if hours < 1000 else f"{hours:,.0f}"


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
    fed = CORES_PER_GPU * prep
    lines += [
        "",
        "GPU (projection from FLOPs, one H100 SXM per worker): forward rate = peak x assumed "
        "utilisation / FLOPs per molecule. Each molecule must also be checked by RDKit and "
        f"tokenised on a CPU core: with {CORES_PER_GPU} cores per GPU at the measured rate "
        f"that is {fed:,.0f} mol/s per GPU, which caps the fed column. The project's GPU "
        "machine has no RDKit at all: there, a library would be validated and tokenised on "
        "CPUs first (the pre-tokenised column).",
        "",
        "| precision | peak TFLOP/s x assumed use | forward mol/s per GPU | GPUs | wall hours, "
        f"pre-tokenised | wall hours, {CORES_PER_GPU} cores/GPU check + tokenise | "
        "GPU-hours, pre-tokenised |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, peak, (low, high) in GPU_SCENARIOS:
        gpu = [low * peak / flops, high * peak / flops]  # [slow, fast] mol/s per GPU
        for n in (1, 8, 64):
            bare = [LIBRARY / min(n * g, feed) for g in gpu]
            fed_walls = [LIBRARY / min(n * min(g, fed), feed) for g in gpu]
            lines.append(
                f"| {name} | {peak / 1e12:.0f} x {low:.0%}-{high:.0%} | "
                f"{gpu[0]:,.0f}-{gpu[1]:,.0f} | {n} | {_hours(bare[0])}-{_hours(bare[1])} | "
                f"{_hours(fed_walls[0])}-{_hours(fed_walls[1])} | "
                f"{_hours(n * bare[0])}-{_hours(n * bare[1])} |")
    lines += ["", f"Where N GPUs would exceed the single driver's feed ({feed:,.0f} mol/s), "
              "the wall time is the driver's and GPU-hours include GPUs waiting on it; split "
              "the library across several `screen` runs instead."]
    return lines


def main() -> int:
    """Print the projection from a ``screen_scaling.py --json`` file."""
    import sys

    figures = json.loads(Path(sys.argv[1]).read_text())
    print("\n".join(projection_section(figures["runs"], figures)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
