"""Timing two models side by side in one process, for the throughput benchmarks.

On a shared CPU the load drifts by tens of percent within minutes, so two models timed in
separate runs are not comparable. Here both are built in one process and timed in
alternating rounds over the same batches (A B, then B A, ...): a round's ratio compares
two timings taken seconds apart, and the median over rounds is reported. Peak memory is
the one thing that needs a process of its own: :func:`peak_rss_in_subprocess` runs one
model alone and reads ``ru_maxrss``.

Imported by ``embed_throughput.py`` and ``finetune_throughput.py`` (this folder is on
``sys.path`` when they run).
"""

from __future__ import annotations

import gzip
import json
import os
import resource
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from _provenance import REPO, cpu_model, load_average

SCRIPTS = Path(__file__).resolve().parent


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
    """Peak resident memory of this process so far, MiB (ru_maxrss: KiB on Linux)."""
    scale = 1 if sys.platform == "darwin" else 1024
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
            "benchmark_script_commit": _commit_of(SCRIPTS.parent), "machine": cpu_model(),
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
