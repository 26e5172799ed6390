"""CPU pre-training throughput: today's step against each lever, side by side in one run.

Every variant steps the same typical token-budget batch of a prepared corpus (ExLM, k=2,
the small preset unless a variant changes the width); the variants are stepped in turn,
``--repeats`` times, after ``--warmup`` untimed steps each, so that drift and background
load hit all of them alike. Reported per variant: median step time, tokens/s, process
CPU-seconds per step, model FLOP/s (formula of ``benchmarks/pretraining/pretrain_step.py``)
and that as a share of the machine's fp32 peak (``--peak-gflops``, default: cores x GHz x
32 FLOP/cycle, i.e. two 256-bit FMA units per core), and the speed-up over ``today``.

    python benchmarks/pretraining/pretrain_cpu_throughput.py --prepared PREPARED [--threads 1 2]

Levers: ``fused`` (one fused AdamW kernel instead of the per-parameter loop),
``nodrop`` (dropout 0: the Bernoulli masks cost about 8% of a CPU step, and a CPU run sees
well under one epoch), ``tok4k``/``tok8k`` (bigger token batches), ``compile``
(``torch.compile`` of the encoder; optional, ``--compile``), and the widths d192 / d128.
"""

from __future__ import annotations

import argparse
import itertools
import os
import time
from pathlib import Path

import numpy as np
import torch
from pretrain_step import step_flops

from exlm_chem.data.batching import BatchStream
from exlm_chem.data.collate import SpecialIds
from exlm_chem.data.corpus_prepare import load_prepared
from exlm_chem.data.tokenizer import SmilesTokenizer
from exlm_chem.model import ExLMConfig, ExLMModel
from exlm_chem.provenance import git_commit, load_average, machine
from exlm_chem.train.pretrain import ObjectiveModule
from exlm_chem.train.pretrain_args import PretrainArgs
from exlm_chem.train.pretrain_data import BatchMaker

#: name -> (tokens per step, d_model, dropout, fused AdamW, compile)
VARIANTS = {
    "today": (2048, 256, 0.1, False, False),
    "fused": (2048, 256, 0.1, True, False),
    "fused+nodrop": (2048, 256, 0.0, True, False),
    "fused+nodrop+tok4k": (4096, 256, 0.0, True, False),
    "fused+nodrop+tok8k": (8192, 256, 0.0, True, False),
    "fused+nodrop, d192": (2048, 192, 0.0, True, False),
    "fused+nodrop, d128": (2048, 128, 0.0, True, False),
}


def peak_gflops(threads: int) -> float:
    """fp32 peak of ``threads`` cores: GHz x 2 FMA units x 8 lanes x 2 FLOP."""
    mhz = [float(line.split(":")[1]) for line in Path("/proc/cpuinfo").read_text().splitlines()
           if line.startswith("cpu MHz")]
    return threads * (max(mhz) / 1e3 if mhz else 2.5) * 32


def typical_batch(prepared, tokens: int) -> np.ndarray:
    """Of the first 200 batches of the stream, the one of median padded length."""
    stream = BatchStream(prepared.train.lengths(), tokens, 0)
    batches = [idx for _, _, idx in itertools.islice(stream.iterate(), 200)]
    padded = [int(prepared.train.lengths()[b].max()) for b in batches]
    return batches[int(np.argsort(padded, kind="stable")[len(padded) // 2])]


def make_variant(name: str, prepared, tok, special):
    tokens, d, dropout, fused, compiled = VARIANTS[name]
    config = ExLMConfig.preset("small", vocab_size=len(tok), objective="exlm", d_model=d,
                               n_heads=d // 64, d_ffn=4 * d, dropout=dropout,
                               attention_dropout=dropout)
    torch.manual_seed(0)
    model = ExLMModel(config)
    if compiled:
        model.encoder.compile(dynamic=True)
    module = ObjectiveModule(model, "exlm")
    optimizer = torch.optim.AdamW(model.parameters(), lr=1e-4, betas=(0.9, 0.98),
                                  weight_decay=0.0, fused=fused or None)
    args = PretrainArgs(prepared="-", out="-", objective="exlm")
    indices = typical_batch(prepared, tokens)
    batch = BatchMaker(prepared.train, special, args, 2, tok)(indices, np.random.default_rng(0))
    n_tokens = int(prepared.train.lengths()[indices].sum())

    def step() -> tuple[float, float]:
        wall, cpu = time.perf_counter(), time.process_time()
        out = module(batch)
        optimizer.zero_grad(set_to_none=True)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        return time.perf_counter() - wall, time.process_time() - cpu

    return step, n_tokens, step_flops(config, batch)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prepared", type=Path, required=True)
    parser.add_argument("--threads", nargs="+", type=int, default=[1, 2])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--warmup", type=int, default=2)
    parser.add_argument("--compile", action="store_true", help="add a torch.compile variant")
    parser.add_argument("--variants", nargs="+", default=None, help="default: all")
    args = parser.parse_args()
    if args.compile:
        VARIANTS["fused+nodrop+compile"] = (2048, 256, 0.0, True, True)
    names = args.variants or list(VARIANTS)
    tok = SmilesTokenizer()
    special = SpecialIds(tok.bos_id, tok.pad_id, tok.eos_id, tok.mask_id)
    prepared = load_prepared(args.prepared, tok.tokens)
    print(f"machine: {machine()}; torch {torch.__version__}; commit {git_commit()}; "
          f"load average at start {load_average()}")
    print(f"ExLM k=2, 9 layers; median of {args.repeats} steps after {args.warmup} warm-up "
          "steps, variants stepped in turn\n")
    print("| threads | variant | tokens/step | step (s) | tokens/s | CPU-s/step | "
          "model GFLOP/s | share of fp32 peak | speed-up (tokens/s) |")
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|")
    for threads in args.threads:
        torch.set_num_threads(threads)
        peak = peak_gflops(threads)
        steps = {name: make_variant(name, prepared, tok, special) for name in names}
        for step, _, _ in steps.values():
            for _ in range(args.warmup):
                step()
        walls: dict[str, list[float]] = {n: [] for n in names}
        cpus: dict[str, list[float]] = {n: [] for n in names}
        for _ in range(args.repeats):
            for name, (step, _, _) in steps.items():
                wall, cpu = step()
                walls[name].append(wall)
                cpus[name].append(cpu)
        base = None
        for name, (_, n_tokens, flops) in steps.items():
            seconds = float(np.median(walls[name]))
            rate = n_tokens / seconds
            base = base or rate
            gflops = flops / seconds / 1e9
            print(f"| {threads} | {name} | {n_tokens} | {seconds:.3f} | {rate:.0f} | "
                  f"{np.median(cpus[name]):.3f} | {gflops:.1f} | {100 * gflops / peak:.0f}% "
                  f"| {rate / base:.2f} |", flush=True)
    print(f"\nload average at the end {load_average()}; fp32 peak per core "
          f"{peak_gflops(1):.0f} GFLOP/s (from /proc/cpuinfo); {os.cpu_count()} cores")


if __name__ == "__main__":
    main()
