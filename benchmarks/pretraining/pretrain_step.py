"""One training step of ExLM (k=2) vs its MLM twin on the same molecules and masks.

Prints, per preset and objective, the step time, tokens/s, model FLOPs utilisation (on a
GPU), peak memory and the ratio of step times ExLM / MLM, as a markdown table (target:
ratio <= 1.5; the paper reports 1.9 at k=4 on GPUs).

    python benchmarks/pretraining/pretrain_step.py [--presets small base] [--tokens 4096] \\
        [--repeats 3]
    python benchmarks/pretraining/pretrain_step.py --prepared prepared/moses_chembl --device cuda \\
        --tokens 65536 --repeats 20 --json step.json

The batch is a typical token-budget batch (``--tokens`` padded, unexpanded tokens) of a
SMILES file or of a prepared corpus (``--prepared``, no RDKit). On CUDA the step runs like
pre-training does (bf16 autocast, TF32, fused AdamW) and is timed with synchronisation;
peak memory is the CUDA allocator's peak during the warm-up steps above what was allocated
before them (the optimizer state is created there, so it counts).

FLOPs per step (for MFU) are counted from the config, not the modules:
``6 * n_layers * (4 d^2 + 2 d d_ffn) * P`` (the blocks' matrix products over all P padded
positions, forward + backward) ``+ 12 * n_layers * d * sum_b X_b^2`` (attention scores and
values over the padded length X) ``+ 6 * (d^2 + d V) * H`` (LM head on the H positions it
sees: the states for ExLM, the masked tokens for MLM). Embedding lookups, norms, the
transition head (S x S per sample, small) and the DAG loss are not counted.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np
import torch

from exlm_chem.data.batching import token_budget_batches
from exlm_chem.data.collate import SpecialIds, collate_exlm, collate_mlm, mask_tokens
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.model import ExLMConfig, ExLMModel
from exlm_chem.provenance import git_commit
from exlm_chem.train.pretrain import ObjectiveModule

DEFAULT_CORPUS = Path(__file__).resolve().parents[3] / "shared/data/pretrain/moses_train.smi.gz"
H100_BF16_DENSE_TFLOPS = 989.0  # H100 SXM datasheet, dense (no sparsity)


def molecule_ids(args: argparse.Namespace, tok: SmilesTokenizer) -> list[np.ndarray]:
    """Token ids of a typical token-budget batch (as pre-training batches the corpus): of
    the first epoch's batches, the one of median padded length."""
    if args.prepared:
        from exlm_chem.data.corpus_prepare import load_prepared

        train = load_prepared(args.prepared, tok.tokens).train
        rows = [train.get(i) for i in range(min(len(train), 200_000))]
    else:
        from exlm_chem.data.corpus import read_smiles_file

        rows = [np.asarray(tok.encode(s)) for s in read_smiles_file(args.corpus, limit=20_000)]
    lengths = np.array([len(r) for r in rows])
    batches = token_budget_batches(lengths, args.tokens, np.random.default_rng([0, 0]))
    padded = [int(lengths[b].max()) for b in batches]
    typical = batches[int(np.argsort(padded, kind="stable")[len(padded) // 2])]
    return [np.asarray(rows[int(i)], dtype=np.int64) for i in typical]


def step_flops(config: ExLMConfig, batch) -> float:
    """Model FLOPs of one forward + backward pass (formula in the module docstring)."""
    d, layers = config.d_model, config.n_layers
    B, X = batch.input_ids.shape  # [B, X] padded (expanded for ExLM)
    blocks = 6 * layers * (4 * d * d + 2 * d * config.d_ffn) * B * X
    attention = 12 * layers * d * B * X * X
    if hasattr(batch, "state_lengths"):
        head_positions = int(batch.state_lengths.sum())
    else:
        head_positions = int((batch.labels >= 0).sum())
    head = 6 * (d * d + d * config.vocab_size) * head_positions
    return float(blocks + attention + head)


def make_step(module, batch, device: torch.device):
    """A closure running one optimizer step of ``module`` on ``batch``; returns seconds."""
    cuda = device.type == "cuda"
    optimizer = torch.optim.AdamW(  # as pre-training: weight decay 0, fused on CUDA
        module.parameters(), lr=1e-4, betas=(0.9, 0.98), weight_decay=0.0, fused=cuda or None
    )
    autocast = torch.autocast("cuda", dtype=torch.bfloat16, enabled=cuda)

    def step() -> float:
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        with autocast:
            out = module(batch)
        optimizer.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(module.parameters(), 1.0)
        optimizer.step()
        if cuda:
            torch.cuda.synchronize()
        return time.perf_counter() - start

    return step


def variants(args: argparse.Namespace) -> list[tuple[str, str, bool]]:
    """(row name, objective, compiled) of each model timed: eager, then compiled ones."""
    rows = [(o, o, False) for o in ("mlm", "exlm")]
    return rows + ([(f"{o}+compile", o, True) for o in ("mlm", "exlm")] if args.compile else [])


def measure(preset: str, samples, tok, special, args, device) -> dict[str, dict]:
    """Median step time, FLOPs and peak memory per variant, stepped in turn."""
    steps, info = {}, {}
    for name, objective, compiled in variants(args):
        config = ExLMConfig.preset(preset, vocab_size=len(tok), objective=objective)
        torch.manual_seed(0)
        module = ObjectiveModule(ExLMModel(config).to(device), objective)
        if compiled:  # as `pretrain --compile` does: the encoder, in place, dynamic shapes
            module.model.encoder.compile(dynamic=True, backend=args.compile_backend)
        if objective == "exlm":
            batch = collate_exlm(samples, config.k_states, special)
        else:
            batch = collate_mlm(samples, special)
        batch = type(batch)(*(t.to(device) for t in batch))
        steps[name] = make_step(module, batch, device)
        info[name] = {"objective": objective, "compiled": compiled,
                      "flops": step_flops(config, batch), "positions": batch.input_ids.numel()}
    timings: dict[str, list[float]] = {name: [] for name in steps}
    peaks = {}
    for name, step in steps.items():  # warm-up: allocators, caches, kernel compilation
        start = time.perf_counter()
        if device.type == "cuda":  # peak above what is held already (both models' weights)
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            held = torch.cuda.memory_allocated()
        for _ in range(args.warmup):
            step()
        if device.type == "cuda":
            peaks[name] = (torch.cuda.max_memory_allocated() - held) / 2**30
        info[name]["warmup_s"] = time.perf_counter() - start  # compilation included
    for _ in range(args.repeats):  # in turn, so that drift hits both
        for name, step in steps.items():
            timings[name].append(step())
    return {
        name: {**info[name], "seconds": float(np.median(t)), "peak_gib": peaks.get(name)}
        for name, t in timings.items()
    }


def exlm_over_mlm(rows: list[dict], row: dict) -> str:
    """ExLM's step time over its MLM twin's (same preset, both eager or both compiled)."""
    if row["objective"] != "exlm":
        return ""
    twin = next(r for r in rows if r["preset"] == row["preset"] and r["objective"] == "mlm"
                and r["compiled"] == row["compiled"])
    return f"{row['seconds'] / twin['seconds']:.2f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=DEFAULT_CORPUS)
    parser.add_argument("--prepared", type=Path, help="prepared corpus folder (no RDKit)")
    parser.add_argument("--presets", nargs="+", default=["small", "base"])
    parser.add_argument("--tokens", type=int, default=4096, help="padded unexpanded tokens")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--warmup", type=int, default=1, help="untimed steps per objective")
    parser.add_argument("--device", default="cpu", help="cpu | cuda | auto")
    parser.add_argument("--peak-tflops", type=float, default=H100_BF16_DENSE_TFLOPS)
    parser.add_argument("--compile", action="store_true",
                        help="also time each objective with its encoder torch.compile'd "
                             "(as `pretrain --compile`), side by side with eager")
    parser.add_argument("--compile-backend", default="inductor",
                        help="torch.compile's backend (the GPU's: inductor; the CPU dry run "
                             "of scripts/gpu: aot_eager, dynamo's capture and AOTAutograd's "
                             "graphs without a C++ build the GPU would not use)")
    parser.add_argument("--json", type=Path, help="also write the rows here")
    args = parser.parse_args()
    if args.device == "auto":
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = True

    tok = SmilesTokenizer()
    special = SpecialIds(tok.bos_id, tok.pad_id, tok.eos_id, tok.mask_id)
    rng = np.random.default_rng(0)
    ids = molecule_ids(args, tok)
    n_tokens = int(sum(len(x) for x in ids))
    samples = [mask_tokens(x, 0.15, rng, special) for x in ids]
    rows = []
    for preset in args.presets:
        for name, r in measure(preset, samples, tok, special, args, device).items():
            tflops = r["flops"] / r["seconds"] / 1e12
            mfu = tflops / args.peak_tflops if device.type == "cuda" else None
            rows.append(
                {
                    "preset": preset,
                    "variant": name,
                    "tokens": n_tokens,
                    "molecules": len(samples),
                    "tokens_per_s": n_tokens / r["seconds"],
                    "model_tflops_per_s": tflops,
                    "mfu": mfu,
                    **r,
                }
            )

    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else "none"
    env = {
        "machine": f"{platform.machine()}, {os.cpu_count()} cores, GPU {gpu}",
        "torch": torch.__version__,
        "threads": torch.get_num_threads(),
        "commit": git_commit(),
        "peak_tflops": args.peak_tflops,
    }
    print(
        f"machine: {env['machine']}, torch {env['torch']} ({env['threads']} threads), "
        f"commit {env['commit']}"
    )
    print(
        f"batch: {len(samples)} molecules, {n_tokens} tokens (typical token-budget batch of "
        f"{args.prepared or args.corpus}); median of {args.repeats} steps (forward + backward"
        f" + AdamW{', bf16 autocast' if device.type == 'cuda' else ''}), objectives stepped "
        f"in turn after {args.warmup} warm-up step(s) each; MFU against "
        f"{args.peak_tflops:g} TFLOP/s\n"
    )
    print(
        "| preset | variant | step (ms) | tokens/s | padded positions | model TFLOP/s | "
        "MFU | peak mem (GiB) | ExLM / MLM time | warm-up (s) |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        ratio = exlm_over_mlm(rows, r)
        mfu = f"{100 * r['mfu']:.1f}%" if r["mfu"] is not None else "n/a (CPU)"
        peak = f"{r['peak_gib']:.2f}" if r["peak_gib"] is not None else "n/a"
        print(
            f"| {r['preset']} | {r['variant']} | {1e3 * r['seconds']:.1f} | "
            f"{r['tokens_per_s']:.0f} | {r['positions']} | {r['model_tflops_per_s']:.2f} | "
            f"{mfu} | {peak} | {ratio} | {r['warmup_s']:.1f} |"
        )
    if args.json:
        args.json.write_text(json.dumps({"env": env, "rows": rows}, indent=2) + "\n")


if __name__ == "__main__":
    main()
