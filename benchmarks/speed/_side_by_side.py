"""Timing two models side by side in one process, for the throughput benchmarks.

On a shared CPU the load drifts by tens of percent within minutes, so two models timed in
separate runs are not comparable. Here both are built in one process and timed in
alternating rounds over the same batches (A B, then B A, ...): a round's ratio compares
two timings taken seconds apart, and the median over rounds is reported. Peak memory is
the one thing that needs a process of its own: :func:`peak_rss_in_subprocess` runs one
model alone and reads ``ru_maxrss``.

Imported by ``embed_throughput.py``, ``embedder_throughput.py`` and
``finetune_throughput.py`` of this folder (``benchmarks/speed/``, on ``sys.path`` when they
run).
"""

from __future__ import annotations

import argparse
import contextlib
import gzip
import json
import os
import resource
import shlex
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

from exlm_chem.provenance import REPO, cpu_model, load_average

# the benchmark scripts' own checkout (this file is benchmarks/speed/_side_by_side.py), which
# may differ from the exlm_chem imported (PYTHONPATH=<old checkout>)
CHECKOUT = Path(__file__).resolve().parents[2]


def shared_data() -> Path:
    """``$EXLM_CHEM_DATA/..`` (the tests' rule), else ``<checkout>/../shared/data``."""
    env = os.environ.get("EXLM_CHEM_DATA")
    return Path(env).parent if env else REPO.parent / "shared" / "data"


def read_smiles(path: str | Path, n: int) -> list[str]:
    """The first ``n`` SMILES of a ``.smi[.gz]`` file (first column, header skipped)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    out: list[str] = []
    with opener(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            s = line.split()[0] if line.strip() else ""
            if s and s.lower() != "smiles":
                out.append(s)
            if len(out) == n:
                break
    return out


def peak_rss_mb() -> float:
    """Peak resident memory of this process so far, MiB.

    Linux: ``VmHWM`` of /proc/self/status. Not ``ru_maxrss``: that survives ``exec``, so
    a worker started from a large parent would report the parent's size.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    scale = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB here
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / 2**20


def roberta_config(config, max_length: int, dropout: float = 0.1,
                   attention_dropout: float = 0.1, num_labels: int = 1):
    """A RoBERTa of ExLM ``config``'s size: layers, width, heads, FFN, vocabulary, LN eps.

    Learned absolute positions and post-LN, as in ChemBERTa; RoBERTa numbers positions
    from ``pad_id + 1``, hence the extra rows.
    """
    from transformers import RobertaConfig

    return RobertaConfig(
        vocab_size=config.vocab_size, hidden_size=config.d_model,
        num_hidden_layers=config.n_layers, num_attention_heads=config.n_heads,
        intermediate_size=config.d_ffn, hidden_act="gelu",
        max_position_embeddings=max_length + config.pad_id + 2, type_vocab_size=1,
        pad_token_id=config.pad_id, bos_token_id=config.bos_id, eos_token_id=config.eos_id,
        layer_norm_eps=config.layer_norm_eps, hidden_dropout_prob=dropout,
        attention_probs_dropout_prob=attention_dropout, num_labels=num_labels,
    )


def alternate(runners: dict[str, Callable[[object], object]], batches: Sequence,
              sizes: Sequence[int], rounds: int) -> dict[str, list[float]]:
    """Molecules per second of each runner, one entry per round; runners alternate.

    Every round runs all ``batches`` with each runner; odd rounds reverse the runner
    order so that neither always goes first after the other warmed the caches.
    """
    names = list(runners)
    rates: dict[str, list[float]] = {name: [] for name in names}
    total = sum(sizes)
    for r in range(rounds):
        for name in (names if r % 2 == 0 else names[::-1]):
            start = time.perf_counter()
            for batch in batches:
                runners[name](batch)
            rates[name].append(total / (time.perf_counter() - start))
    return rates


def summarise(rates: dict[str, list[float]], ours: str, theirs: str) -> dict:
    """Median molecules/s of each, and the median of the per-round ratios ours/theirs."""
    ratios = [a / b for a, b in zip(rates[ours], rates[theirs], strict=True)]
    return {
        f"{ours}_mol_per_s": statistics.median(rates[ours]),
        f"{theirs}_mol_per_s": statistics.median(rates[theirs]),
        "ratio": statistics.median(ratios),
        "ratio_min": min(ratios), "ratio_max": max(ratios),
        "rounds": len(ratios), "rates": rates,
    }


def peak_rss_in_subprocess(script: str, spec: dict) -> dict:
    """Run ``script --worker SPEC`` (one model alone) and return its JSON answer."""
    env = {**os.environ, "OMP_NUM_THREADS": str(spec.get("threads", 1)),
           "TOKENIZERS_PARALLELISM": "false", "TRANSFORMERS_VERBOSITY": "error"}
    proc = subprocess.run([sys.executable, script, "--worker", json.dumps(spec)],
                          capture_output=True, text=True, env=env)
    if proc.returncode != 0:
        raise RuntimeError(f"worker {spec} failed:\n{proc.stderr[-4000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def provenance(command: str) -> dict:
    """Where the figures came from: commit of the exlm_chem imported, machine, load."""
    import torch

    import exlm_chem

    try:
        import transformers

        hf = transformers.__version__
    except ImportError:
        hf = "not installed"
    package = Path(exlm_chem.__file__).resolve().parents[1]
    return {"exlm_chem_checkout": str(package), "commit": _commit_of(package),
            "benchmark_script_commit": _commit_of(CHECKOUT), "machine": cpu_model(),
            "cores": len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity")
            else os.cpu_count(),
            "torch": torch.__version__, "transformers": hf, "command": command,
            "load_average_start": load_average()}


def _commit_of(checkout: Path) -> str:
    """Short HEAD of a checkout, ``+dirty`` when tracked files differ from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", *args], cwd=checkout, capture_output=True, text=True,
                              check=True).stdout.strip()

    try:
        dirty = git("status", "--porcelain", "--untracked-files=no")
        return git("rev-parse", "--short", "HEAD") + ("+dirty" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def markdown(title: str, runs: Sequence[dict], unit: str) -> str:
    """A before/after table: one row per (label, threads); ``runs`` are saved JSON results."""
    lines = [f"# {title}", ""]
    for run in runs:
        p = run["provenance"]
        lines.append(f"- **{run['label']}**: exlm_chem at commit {p['commit']} "
                     f"({p['exlm_chem_checkout']}); benchmark script at "
                     f"{p['benchmark_script_commit']}; {p['machine']}, {p['cores']} cores; "
                     f"torch {p['torch']}, transformers {p['transformers']}; load average "
                     f"{p['load_average_start']} at start, {run['load_average_end']} at end")
        lines.append(f"  - command: `{p['command']}`")
    lines += ["", f"| code | threads | ExLM {unit} | RoBERTa {unit} | ExLM / RoBERTa "
              "(median of rounds; min-max) | rounds | peak RSS ExLM / RoBERTa (MiB) |",
              "|---|---|---|---|---|---|---|"]
    for run in runs:
        for row in run["rows"]:
            lines.append(
                f"| {run['label']} | {row['threads']} | {row['exlm_mol_per_s']:.1f} | "
                f"{row['roberta_mol_per_s']:.1f} | **{row['ratio']:.2f}x** "
                f"({row['ratio_min']:.2f}-{row['ratio_max']:.2f}) | {row['rounds']} | "
                f"{run['rss']['exlm']:.0f} / {run['rss']['roberta']:.0f} |")
    return "\n".join(lines)


# ---- the shared driver --------------------------------------------------------------------
class Bench(NamedTuple):
    script: str  # the benchmark's __file__: re-run alone for peak memory
    build: Callable[[dict], tuple[dict, list, list[int]]]  # spec -> runners, batches, sizes
    inference: bool  # run under torch.inference_mode


def _mode(bench: Bench):
    import torch

    return torch.inference_mode() if bench.inference else contextlib.nullcontext()


def worker(bench: Bench, spec: dict) -> dict:
    """One model (``spec["impl"]``) alone over all batches: its peak RSS and rate."""
    import torch

    torch.set_num_threads(spec["threads"])
    runners, batches, sizes = bench.build(spec)
    (run,) = runners.values()
    with _mode(bench):
        start = time.perf_counter()
        for batch in batches:
            run(batch)
        seconds = time.perf_counter() - start
    return {"peak_rss_mb": peak_rss_mb(), "mol_per_s": sum(sizes) / seconds}


def profile_tables(runners: dict, batches: list, rows: int = 15) -> dict[str, str]:
    """torch.profiler's top ops by self CPU time, one pass over ``batches`` per runner."""
    from torch.profiler import ProfilerActivity, profile

    tables = {}
    for name, run in runners.items():
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            for batch in batches:
                run(batch)
        tables[name] = prof.key_averages().table(sort_by="self_cpu_time_total",
                                                 row_limit=rows)
    return tables


def measure(bench: Bench, spec: dict, threads: Sequence[int], rounds: int,
            profile: bool = False) -> dict:
    """Both models in this process, alternating, per thread count; then each alone for RSS.

    ``profile``: also a torch.profiler table per model at the last thread count.
    """
    import torch

    runners, batches, sizes = bench.build(spec)
    rows, tables = [], {}
    with _mode(bench):
        for n_threads in threads:
            torch.set_num_threads(n_threads)
            for run in runners.values():  # warm-up: allocator, kernels, optimiser state
                run(batches[0])
            rates = alternate(runners, batches, sizes, rounds)
            rows.append({"threads": n_threads, **summarise(rates, "exlm", "roberta")})
            print(f"{n_threads} thread(s): ratio {rows[-1]['ratio']:.2f}", file=sys.stderr)
        if profile:
            tables = profile_tables(runners, batches)
    rss = {impl: peak_rss_in_subprocess(bench.script, {**spec, "impl": impl, "threads": 1})
           ["peak_rss_mb"] for impl in ("exlm", "roberta")}
    return {"rows": rows, "rss": rss, "load_average_end": load_average(),
            "profiles": tables}


def add_common_arguments(parser: argparse.ArgumentParser, n: int, batch_size: int) -> None:
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    parser.add_argument("--n", type=int, default=n, help="molecules per round")
    parser.add_argument("--preset", default="small")
    parser.add_argument("--batch-size", type=int, default=batch_size)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--rounds", type=int, default=5, help="alternating rounds per model")
    parser.add_argument("--max-length", type=int, default=256)
    parser.add_argument("--label", default="this code")
    parser.add_argument("--json", help="save this run (figures and provenance) here")
    parser.add_argument("--compare", nargs="*", default=[],
                        help="saved runs (--json of earlier runs) to put first in the table")
    parser.add_argument("--out", help="write the markdown table here")
    parser.add_argument("--profile", action="store_true",
                        help="add torch.profiler's top ops of each model (last thread count)")


def run_main(bench: Bench, args: argparse.Namespace, spec: dict, title: str,
             argv: Sequence[str] | None) -> int:
    """``--worker``: one model alone; otherwise measure, save (``--json``) and tabulate."""
    if args.worker:
        print(json.dumps(worker(bench, json.loads(args.worker))))
        return 0
    script = Path(bench.script).resolve().relative_to(CHECKOUT).as_posix()
    command = f"python {script} " + shlex.join(
        sys.argv[1:] if argv is None else argv)
    run = {"label": args.label, "provenance": provenance(command),
           **measure(bench, spec, args.threads, args.rounds, args.profile)}
    if args.json:
        Path(args.json).write_text(json.dumps(run, indent=1) + "\n", encoding="utf-8")
    runs = [json.loads(Path(p).read_text(encoding="utf-8")) for p in args.compare] + [run]
    table = markdown(title, runs, "mol/s")
    for name, text in run["profiles"].items():
        table += (f"\n\n## Profile: {name}, {run['label']}, {args.threads[-1]} thread(s), one "
                  f"pass over the batches (top ops by self CPU time)\n\n```\n{text}\n```")
    print(table)
    if args.out:
        Path(args.out).write_text(table + "\n", encoding="utf-8")
    return 0
