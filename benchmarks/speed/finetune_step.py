"""One fine-tuning step per benchmark task on CPU, and what 42 GPU cells should cost.

For each prepared task and checkpoint: a micro-batch of ``--micro`` random training
molecules (seed 0) through forward + backward + clip + AdamW, timed on CPU (median of
``--repeats`` after one warm-up step), with its FLOPs (``FlopCounterMode``) and its aten
operator count (each one CUDA kernel launch or more on a GPU). Time and FLOPs are scaled
to the task's Table 8 batch size (linear in the batch; a full batch of 256 long SMILES
needs several GB on CPU); the operator count does not depend on the batch size. The GPU
estimate per step is ``max(FLOPs / (peak * MFU), ops * t_op / workers)``: compute-bound or
launch-bound, with the assumptions printed beside it. Writes a markdown table.

    python benchmarks/speed/finetune_step.py --prepared runs/splits \\
        --models models/exlm-small models/mlm-small --out benchmarks/results/finetune_step_cpu.md
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

import numpy as np
import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils.flop_counter import FlopCounterMode

from exlm_chem.benchmark.prepared import PreparedSplits
from exlm_chem.model.molecule_model import build_model
from exlm_chem.model.pretrained import load_backbone
from exlm_chem.presets import finetune_preset
from exlm_chem.provenance import git_commit, load_average, machine
from exlm_chem.train.finetune import make_optimizer, masked_mean_loss

PEAK_BF16 = 989e12  # H100 SXM dense bf16 FLOP/s (H200: the same chip)
MFU = 0.25  # assumed for d=256 matmuls of a few thousand rows
T_OP = 10e-6  # assumed eager PyTorch host cost per operator (dispatch + launch), s
T_KERNEL = 3e-6  # assumed smallest GPU time per kernel when launches overlap, s
CUDA_UPDATE_OPS = 20  # assumed: foreach grad norm, clip multiply, fused AdamW, zero_grad


class _OpCounter(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.ops = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        self.ops += 1
        return func(*args, **(kwargs or {}))


def measure(model: Path, source: PreparedSplits, task: str, repeats: int, micro: int) -> dict:
    settings = finetune_preset(task)
    data = source.load(task, source.manifest["split"], 0)
    torch.manual_seed(0)
    backbone = load_backbone(model, preset="", dropout=settings.dropout)
    net = build_model(backbone.config, backbone.tokenizer, data.labels.shape[1],
                      backbone.encoder_state, settings.pooler_dropout)
    size = min(micro, settings.batch_size)
    rows = np.random.default_rng(0).choice(data.train, size, replace=False)
    inputs = net.encode([data.smiles[i] for i in rows])[:4]  # [B, X] each
    targets = torch.as_tensor(data.labels[rows], dtype=torch.float32)
    optimizer, _ = make_optimizer(net, settings, total_steps=100)
    net.train()

    def forward_backward() -> None:
        loss = masked_mean_loss(net(*inputs), targets, "classification")
        optimizer.zero_grad(set_to_none=True)
        loss.backward()

    def update() -> None:
        torch.nn.utils.clip_grad_norm_(net.parameters(), settings.clip_norm)
        optimizer.step()

    def step() -> None:
        forward_backward()
        update()

    step()  # warm-up
    flops, ops, update_ops = FlopCounterMode(display=False), _OpCounter(), _OpCounter()
    with flops:
        step()
    with ops:
        forward_backward()
    with update_ops:
        update()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        step()
        times.append(time.perf_counter() - start)
    n_train, scale = len(data.train), settings.batch_size / size
    return {"task": task, "model": model.name, "batch": settings.batch_size,
            "micro": size, "width": int(inputs[0].shape[1]),
            "steps": settings.epochs * math.ceil(n_train / settings.batch_size),
            "epochs": settings.epochs, "flops": flops.get_total_flops() * scale,
            "ops": ops.ops, "update_ops": update_ops.ops,
            "cpu_s": statistics.median(times) * scale}


def cuda_ops(row: dict) -> int:
    """Operators of a CUDA step: forward + backward as on CPU, the clip and the update as
    a fused AdamW plus a foreach norm (the CPU count of the update is per parameter)."""
    return row["ops"] + CUDA_UPDATE_OPS


def gpu_seconds(row: dict, workers: int) -> float:
    """Expected GPU time of the row's cell's training steps (see the module docstring)."""
    compute = row["flops"] / (PEAK_BF16 * MFU)
    launch = cuda_ops(row) * max(T_OP / workers, T_KERNEL)
    return row["steps"] * max(compute, launch)


def report(rows: list[dict], seeds: int, workers: int, command: str) -> str:
    lines = [
        "# One fine-tuning step per task on CPU, and the expected GPU time of the cells", "",
        f"Command: `{command}`", "",
        f"machine: {machine()}, torch {torch.__version__}, commit {git_commit()}, "
        f"load average at the end {load_average()}", "",
        "Measured on a micro-batch of random training molecules (seed 0), padded to its "
        "widest; a step is forward + backward + clip + AdamW (fp32 on CPU), median of the "
        "timed repeats; CPU time and FLOPs are scaled linearly to the Table 8 batch size. "
        "FLOPs: `torch.utils.flop_counter` (matmuls and attention); ops: aten operators "
        "dispatched by forward + backward, and by clip + AdamW on CPU (per parameter there; "
        f"counted as {CUDA_UPDATE_OPS} on CUDA, where AdamW is fused).", "",
        "| task | model | batch (micro) | width | FLOPs/step (G) | ops fwd+bwd / update "
        "| CPU s/step "
        "| steps/cell "
        f"| CPU h/cell | GPU s/cell, 1 worker | GPU s/cell, {workers} workers |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        lines.append(
            f"| {r['task']} | {r['model']} | {r['batch']} ({r['micro']}) | {r['width']} | "
            f"{r['flops'] / 1e9:.1f} | {r['ops']} / {r['update_ops']} | {r['cpu_s']:.2f} | "
            f"{r['steps']} | "
            f"{r['steps'] * r['cpu_s'] / 3600:.1f} | {gpu_seconds(r, 1):.0f} | "
            f"{gpu_seconds(r, workers):.0f} |")
    serial = seeds * sum(gpu_seconds(r, 1) for r in rows)
    shared = seeds * sum(gpu_seconds(r, workers) for r in rows)
    cpu_h = seeds * sum(r["steps"] * r["cpu_s"] for r in rows) / 3600
    lines += [
        "", f"**{seeds * len(rows)} cells** ({len(rows)} task x model rows x {seeds} seeds): "
        f"{cpu_h:.0f} CPU-hours at these rates; expected GPU time of the training steps "
        f"{serial / 60:.0f} min in one process, {shared / 60:.0f} min with {workers} workers "
        "on one GPU (validation passes add about 10%).", "",
        f"Assumptions (not measured here): peak bf16 {PEAK_BF16 / 1e12:.0f} TFLOP/s at MFU "
        f"{MFU:.0%}; {T_OP * 1e6:.0f} us of host time per operator in eager PyTorch, "
        f"overlapping across worker processes down to {T_KERNEL * 1e6:.0f} us of GPU time "
        "per kernel. At these sizes every step is launch-bound, not compute-bound: "
        "CUDA graphs or `torch.compile` would be the lever, not a faster GPU.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prepared", required=True)
    parser.add_argument("--models", nargs="+", default=["models/exlm-small",
                                                        "models/mlm-small"])
    parser.add_argument("--tasks", nargs="+", default=None)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--micro", type=int, default=32, help="molecules actually run")
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", default=None, help="also write the markdown here")
    parser.add_argument("--rows", default=None,
                        help="JSON-lines file of measured rows: appended to, and rows "
                             "already there are not measured again (resume)")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    source = PreparedSplits(args.prepared)
    rows_file = Path(args.rows) if args.rows else None
    done = {}
    if rows_file is not None and rows_file.is_file():
        done = {(r["task"], r["model"]): r for r in map(json.loads, rows_file.open())}
    rows = []
    for task in args.tasks or source.tasks:
        for model in args.models:
            row = done.get((task, Path(model).name))
            if row is None:
                row = measure(Path(model), source, task, args.repeats, args.micro)
                if rows_file is not None:
                    with rows_file.open("a") as handle:
                        handle.write(json.dumps(row) + "\n")
            rows.append(row)
            print(row, flush=True)
    command = "python benchmarks/speed/finetune_step.py " + " ".join(
        f"--{k.replace('_', '-')} {' '.join(map(str, v)) if isinstance(v, list) else v}"
        for k, v in vars(args).items() if v is not None)
    text = report(rows, args.seeds, args.workers, command)
    print(text)
    if args.out:
        Path(args.out).write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
