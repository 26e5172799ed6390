"""Benchmark the DAG states-alignment loss: torch reference vs the Triton kernels.

For each workload it first checks that the Triton result (log P and both gradients) equals
the reference on fresh random inputs, then times forward, backward and forward+backward
in milliseconds and measures their peak memory. The table (with device name, torch and
triton versions and the git commit) is printed and written to
``benchmarks/results/dag_loss_<device>.md``.

Workloads: SMILES-shaped batches (B=256, k in {2, 4}, T in {5, 10, 20, 40}, S = k*T,
target lengths drawn in [T/2, T] with L_b = k*T_b, one sample at full size) and the paper's
text workload (B=64, T=77, S=308, appendix I.4).

Usage::

    python benchmarks/pretraining/dag_loss.py                   # CUDA, full workloads
    python benchmarks/pretraining/dag_loss.py --dtype bf16
    python benchmarks/pretraining/dag_loss.py --device cpu --quick  # interpreter: runs only
    python benchmarks/pretraining/dag_loss.py --device cpu --tiny   # GPU script's dry run
    python benchmarks/pretraining/dag_loss.py --ptxas           # sm_90 registers, no GPU
    python benchmarks/pretraining/dag_loss.py --peer /path/to/DA-Transformer

On CUDA, times come from ``triton.testing.do_bench`` (median, after warm-up) and memory
from ``torch.cuda.max_memory_allocated`` above what the inputs already hold. On CPU the
Triton kernels run in Triton's interpreter (``TRITON_INTERPRET=1``, set here before triton
is imported), which says nothing about GPU speed; times are wall-clock medians and memory
is the peak-RSS increase (Linux ``/proc/self/clear_refs``), else "n/a".

``--peer PATH`` also times DA-Transformer's CUDA ``dag_loss`` loaded from PATH (a checkout
outside this repository; nothing of it is copied here): PATH is the repository root or its
``fs_plugins/custom_ops/dag_loss.py``. Its links are relative (``links[b, i, j]`` is the
edge i -> i+j), so the absolute log-transitions are converted before timing.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import re
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

from exlm_chem.provenance import cpu_model, git_commit

REPO = Path(__file__).resolve().parents[2]  # benchmarks/<group>/NAME.py


class Workload(NamedTuple):
    name: str
    batch: int
    targets: int  # T
    states: int  # S
    k: int


class Row(NamedTuple):
    workload: Workload
    impl: str
    fwd_ms: float
    bwd_ms: float
    full_ms: float
    fwd_mem: str
    full_mem: str


def workloads(quick: bool) -> list[Workload]:
    """SMILES-shaped batches and the paper's text batch (small ones with ``quick``)."""
    if quick:
        smiles = [Workload(f"smiles k={k} T={t}", 4, t, k * t, k) for k in (2, 4) for t in (5, 10)]
        return [*smiles, Workload("text-like (tiled path)", 2, 8, 100, 4)]
    smiles = [
        Workload(f"smiles k={k} T={t}", 256, t, k * t, k) for k in (2, 4) for t in (5, 10, 20, 40)
    ]
    return [*smiles, Workload("text (paper I.4)", 64, 77, 308, 4)]


def make_inputs(w: Workload, device: Any, dtype: Any, seed: int):
    """Log-softmaxed emissions/transitions and mixed lengths for one workload."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    B, T, S = w.batch, w.targets, w.states
    emissions = torch.randn(B, T, S, generator=gen).mul(2.0).log_softmax(-1)
    # non-edges (v <= u) keep their values: both implementations must mask them
    log_e = torch.randn(B, S, S, generator=gen).mul(2.0).log_softmax(-1)
    low = max(2, T // 2)
    tlen = torch.randint(low, T + 1, (B,), generator=gen)
    tlen[0] = T
    slen = torch.clamp(tlen * w.k, max=S)
    slen[0] = S
    return (
        emissions.to(device=device, dtype=dtype),
        log_e.to(device=device, dtype=dtype),
        tlen.to(device),
        slen.to(device),
    )


def check_against_reference(fn: Callable, reference: Callable, inputs, bf16: bool) -> float:
    """Max abs difference of log P and both gradients; raises if out of tolerance."""
    import torch

    results = []
    for f in (fn, reference):
        emis = inputs[0].detach().clone().requires_grad_()
        log_e = inputs[1].detach().clone().requires_grad_()
        out = f(emis, log_e, inputs[2], inputs[3])
        upstream = torch.linspace(0.5, 1.5, out.numel(), device=out.device)
        grads = torch.autograd.grad(out, (emis, log_e), upstream)
        results.append((out.detach(), *grads))
    rtol, atol = (2e-2, 2e-3) if bf16 else (1e-4, 1e-4)
    worst = 0.0
    for name, a, b in zip(("logP", "d_emis", "d_logE"), *results, strict=True):
        torch.testing.assert_close(a, b, rtol=rtol, atol=atol, msg=lambda m, n=name: f"{n}: {m}")
        finite = torch.isfinite(b)
        worst = max(worst, (a.float() - b.float())[finite].abs().max().item())
    return worst


def _relative_links(log_e):
    """[B, S, S] absolute log E[u, v] -> DA-Transformer's relative links[b, u, v - u]."""
    import torch

    B, S, _ = log_e.shape
    u = torch.arange(S, device=log_e.device)[:, None]
    j = torch.arange(S, device=log_e.device)[None, :]
    target = (u + j).clamp(max=S - 1)  # [S, S]
    links = log_e.gather(2, target.expand(B, S, S))
    return links.masked_fill(((u + j) >= S) | (j == 0), float("-inf"))


def load_peer(path: str) -> Callable | None:
    """DA-Transformer's CUDA dag_loss as ``f(emissions, log_e, tlen, slen)``, or None."""
    root = Path(path).expanduser().resolve()
    if root.is_relative_to(REPO):
        raise SystemExit("--peer must point outside this repository")
    file = root if root.suffix == ".py" else root / "fs_plugins" / "custom_ops" / "dag_loss.py"
    try:
        spec = importlib.util.spec_from_file_location("peer_dag_loss", file)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        module.get_dag_kernel()  # compiles its CUDA extension (needs nvcc)
    except Exception as err:  # the peer is optional: report and go on without it
        print(f"peer not usable from {file}: {err}", file=sys.stderr)
        return None

    def peer(emissions, log_e, tlen, slen):
        links = _relative_links(log_e.detach()).requires_grad_(log_e.requires_grad)
        return module.dag_loss(emissions, links, slen.long(), tlen.long())

    return peer


def _cpu_peak_rss_delta(fn: Callable[[], Any]) -> str:
    status = Path("/proc/self/status")
    try:
        Path("/proc/self/clear_refs").write_text("5")  # resets the peak-RSS mark (Linux)

        def kib(field: str) -> int:
            return int(re.search(rf"{field}:\s+(\d+)", status.read_text()).group(1))

        base = kib("VmRSS")
        fn()
        return f"{(kib('VmHWM') - base) / 1024:.1f} MiB"
    except (OSError, AttributeError, ValueError):
        return "n/a"


def measure(fn: Callable, inputs, device: str, repeats: int) -> tuple:
    """(fwd_ms, bwd_ms, full_ms, fwd_mem, full_mem) of ``fn`` on ``inputs``."""
    import torch

    emis = inputs[0].detach().clone().requires_grad_()
    log_e = inputs[1].detach().clone().requires_grad_()
    tlen, slen = inputs[2], inputs[3]
    params = [emis, log_e]

    def forward():
        return fn(emis, log_e, tlen, slen)

    def full():
        forward().sum().backward()

    graph = forward()
    upstream = torch.ones_like(graph)

    def backward():
        graph.backward(upstream, retain_graph=True)

    if device == "cuda":
        from triton.testing import do_bench

        times = [
            do_bench(f, warmup=25, rep=100, grad_to_none=params, return_mode="median")
            for f in (forward, backward, full)
        ]
        mems = []
        for f in (forward, full):
            for p in params:
                p.grad = None
            torch.cuda.synchronize()
            base = torch.cuda.memory_allocated()
            torch.cuda.reset_peak_memory_stats()
            f()
            torch.cuda.synchronize()
            mems.append(f"{(torch.cuda.max_memory_allocated() - base) / 2**20:.1f} MiB")
        return (*times, *mems)

    def cpu_time(f: Callable) -> float:
        f()  # warm-up
        samples = []
        for _ in range(repeats):
            for p in params:
                p.grad = None
            start = time.perf_counter()
            f()
            samples.append((time.perf_counter() - start) * 1e3)
        return statistics.median(samples)

    times = [cpu_time(f) for f in (forward, backward, full)]
    mems = [_cpu_peak_rss_delta(f) for f in (forward, full)]
    return (*times, *mems)


def environment(device: str) -> dict[str, str]:
    import torch
    import triton

    if device == "cuda":
        name = torch.cuda.get_device_name()
    else:
        name = f"CPU ({cpu_model()}, {os.cpu_count()} cores), Triton interpreter"
    commit = git_commit()
    return {
        "device": name,
        "torch": torch.__version__,
        "triton": triton.__version__,
        "commit": commit,
        "python": platform.python_version(),
    }


def render(rows: list[Row], env: dict[str, str], args: argparse.Namespace, checks: dict) -> str:
    lines = [
        "# DAG states-alignment loss: reference vs Triton",
        "",
        f"- device: {env['device']}",
        f"- torch {env['torch']}, triton {env['triton']}, python {env['python']}",
        f"- commit: {env['commit']}",
        f"- dtype: {args.dtype}; timings: "
        + (
            "triton.testing.do_bench median after warm-up"
            if args.device == "cuda"
            else f"wall-clock median of {args.repeats} runs after one warm-up"
        ),
        "- memory: peak above the inputs ("
        + ("torch.cuda.max_memory_allocated" if args.device == "cuda" else "peak-RSS increase")
        + "); full = forward + backward",
        "- before timing, Triton == reference on fresh inputs (max abs diff of log P and "
        "gradients in the last column)",
        "",
    ]
    if args.device == "cpu":
        lines += [
            "**CPU: the Triton numbers time Triton's interpreter, not a GPU kernel; they only "
            "show that the script and kernels run.**",
            "",
        ]
    lines += [
        "| workload | B | T | S | impl | fwd ms | bwd ms | full ms | fwd mem | full mem "
        "| speed-up (full) | check |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    by_workload: dict[str, float] = {}
    for r in rows:
        if r.impl == "reference":
            by_workload[r.workload.name] = r.full_ms
    for r in rows:
        w = r.workload
        ref = by_workload.get(w.name)
        speedup = f"{ref / r.full_ms:.3g}x" if ref and r.impl != "reference" else ""
        check = checks.get((w.name, r.impl), "")
        lines.append(
            f"| {w.name} | {w.batch} | {w.targets} | {w.states} | {r.impl} | {r.fwd_ms:.3f} "
            f"| {r.bwd_ms:.3f} | {r.full_ms:.3f} | {r.fwd_mem} | {r.full_mem} | {speedup} "
            f"| {check} |"
        )
    return "\n".join(lines) + "\n"


def ptxas_report() -> str:
    """Registers and spills of every kernel configuration, compiled for sm_90 here."""
    from exlm_chem.dag.triton_compile import compile_for_gpu
    from exlm_chem.dag.triton_kernels import kernel_config

    lines = [
        "| S | path | BLOCK_S | BLOCK_U | dtype | kernel | warps | regs | spill bytes |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for states in (16, 32, 64, 128, 256, 512, 1024):
        cfg = kernel_config(states)
        for dtype in ("fp32", "bf16"):
            for r in compile_for_gpu(states, dtype):
                lines.append(
                    f"| {states} | {'tiled' if cfg.tiled else 'single tile'} | {cfg.block_s} "
                    f"| {cfg.block_u} | {dtype} | {r.kernel} | {r.num_warps} | {r.registers} "
                    f"| {r.stack_bytes} |"
                )
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--dtype", choices=("fp32", "bf16"), default="fp32")
    parser.add_argument("--quick", action="store_true", help="tiny shapes (for the CPU)")
    parser.add_argument("--repeats", type=int, default=3, help="CPU timing repeats")
    parser.add_argument("--peer", help="DA-Transformer checkout (outside the repo) to time too")
    parser.add_argument("--out", type=Path, help="markdown output (default benchmarks/results)")
    parser.add_argument("--json", type=Path, help="also write the rows and environment here")
    parser.add_argument("--tiny", action="store_true", help="two tiny workloads (CI dry runs)")
    parser.add_argument(
        "--ptxas", action="store_true", help="only report registers/spills for sm_90"
    )
    args = parser.parse_args(argv)

    if args.ptxas:
        os.environ.pop("TRITON_INTERPRET", None)
        print(ptxas_report())
        return 0
    if args.device == "cpu":
        # must precede the first import of triton
        os.environ.setdefault("TRITON_INTERPRET", "1")
    import torch

    if args.device == "cuda" and not torch.cuda.is_available():
        raise SystemExit("no CUDA device; use --device cpu --quick")
    from exlm_chem.dag.reference import dag_logprob_reference
    from exlm_chem.dag.triton_kernels import dag_logprob_triton

    dtype = torch.bfloat16 if args.dtype == "bf16" else torch.float32
    impls: dict[str, Callable] = {
        "reference": dag_logprob_reference,
        "triton": dag_logprob_triton,
    }
    if args.peer:
        if args.device != "cuda":
            raise SystemExit("--peer needs --device cuda")
        peer = load_peer(args.peer)
        if peer is not None:
            impls["DA-Transformer CUDA"] = peer

    rows: list[Row] = []
    checks: dict[tuple[str, str], str] = {}
    chosen = workloads(args.quick or args.tiny)
    if args.tiny:
        chosen = [chosen[0], chosen[-1]]  # one single-tile and one tiled shape
    for i, w in enumerate(chosen):
        fresh = make_inputs(w, args.device, dtype, seed=10_000 + i)
        inputs = make_inputs(w, args.device, dtype, seed=i)
        for name, fn in impls.items():
            try:
                if name != "reference":
                    diff = check_against_reference(
                        fn, dag_logprob_reference, fresh, args.dtype == "bf16"
                    )
                    checks[(w.name, name)] = f"ok ({diff:.1e})"
                rows.append(Row(w, name, *measure(fn, inputs, args.device, args.repeats)))
            except Exception:
                if name in ("reference", "triton"):
                    raise  # a mismatch of our own kernel must stop the benchmark
                print(f"{name} failed on {w.name}; left out", file=sys.stderr)
                continue
            print(f"{w.name:26s} {name:20s} full {rows[-1].full_ms:9.3f} ms", file=sys.stderr)

    env = environment(args.device)
    table = render(rows, env, args, checks)
    if args.out is None:
        slug = "cpu" if args.device == "cpu" else re.sub(r"[^a-z0-9]+", "_", env["device"].lower())
        suffix = "" if args.dtype == "fp32" else f"_{args.dtype}"
        args.out = REPO / "benchmarks" / "results" / f"dag_loss_{slug.strip('_')}{suffix}.md"
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(table)
    if args.json:
        records = [{**r._asdict(), "workload": r.workload._asdict(),
                    "check": checks.get((r.workload.name, r.impl), "")} for r in rows]  # fmt: skip
        args.json.write_text(json.dumps({"env": env, "dtype": args.dtype, "rows": records}))
    print(table)
    print(f"written to {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
