#!/usr/bin/env python
"""SMILES tokenizer throughput: exlm_chem's SmilesTokenizer vs deepchem's BasicSmilesTokenizer.

Loads the first 100k SMILES of MOSES train and times, in one process and interleaved
(so that load from other processes hits every contestant alike), best of 3 repeats:

- deepchem ``BasicSmilesTokenizer().tokenize`` per SMILES (token strings);
- ours ``SmilesTokenizer.tokenize`` per SMILES (token strings): like for like;
- deepchem tokenize + a dict lookup of our vocabulary, with BOS/EOS (id lists): what
  deepchem's basic tokenizer needs to produce ids;
- ours ``encode`` per SMILES (id lists, BOS/EOS);
- ours ``batch_encode`` over the whole list, and in batches of 256 (padded int64 matrix
  plus lengths: strictly more work than id lists).

Nothing is cached between repeats (the tokenizer keeps no cache). The garbage collector
is paused while a contestant runs, for all contestants (as ``timeit`` does).

Usage::

    python benchmarks/tokenizer_throughput.py [path/to/moses_train.smi.gz] [--n 100000]

Exit status 2 if deepchem's tokenizer cannot be imported (deepchem's
``smiles_tokenizer`` module imports ``transformers`` at the top).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import gzip
import io
import os
import platform
import sys
import time
from collections.abc import Callable
from itertools import islice
from pathlib import Path
from typing import Any, NamedTuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))  # run from a checkout without installing

import numpy as np  # noqa: E402
from _provenance import git_commit, load_average  # noqa: E402

import exlm_chem  # noqa: E402
from exlm_chem.data.tokenizer import SmilesTokenizer  # noqa: E402


class Contestant(NamedTuple):
    """One timed way of tokenising the whole list."""

    name: str
    output: str
    run: Callable[[], Any]
    baseline: str  # name of the deepchem contestant producing the same kind of output


def default_corpus() -> Path:
    env = os.environ.get("EXLM_CHEM_DATA")
    data = Path(env).resolve().parent if env else REPO.parent / "shared" / "data"
    return data / "pretrain" / "moses_train.smi.gz"


def load_smiles(path: Path, count: int) -> list[str]:
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        return [line.rstrip("\n") for line in islice(handle, count)]


def import_deepchem_tokenizer() -> Any:
    """deepchem's BasicSmilesTokenizer, its import chatter silenced; exit 2 if missing."""
    chatter = io.StringIO()
    try:
        with contextlib.redirect_stdout(chatter), contextlib.redirect_stderr(chatter):
            from deepchem.feat.smiles_tokenizer import BasicSmilesTokenizer
    except Exception as error:  # any import failure means there is nothing to compare to
        print(
            f"cannot import deepchem.feat.smiles_tokenizer.BasicSmilesTokenizer: "
            f"{type(error).__name__}: {error}\n(deepchem's smiles_tokenizer module imports "
            f"transformers at the top; install deepchem and transformers to run this benchmark)",
            file=sys.stderr,
        )
        sys.exit(2)
    return BasicSmilesTokenizer()


def best_time(run: Callable[[], Any]) -> float:
    gc.collect()
    gc.disable()
    try:
        start = time.perf_counter()
        run()
        return time.perf_counter() - start
    finally:
        gc.enable()


def machine_info() -> list[str]:
    import deepchem

    commit = git_commit()
    usable = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else "n/a"
    load = load_average()
    return [
        f"- platform: {platform.platform()} ({platform.machine()}, {platform.processor() or '?'})",
        f"- CPUs: {os.cpu_count()} (usable by this process: {usable}); load average {load}",
        f"- Python {platform.python_version()} ({platform.python_implementation()}), "
        f"numpy {np.__version__}, deepchem {deepchem.__version__}, "
        f"exlm_chem {exlm_chem.__version__}",
        f"- git commit: {commit}",
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("corpus", nargs="?", type=Path, default=default_corpus())
    parser.add_argument("--n", type=int, default=100_000, help="number of SMILES (first lines)")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)

    deepchem_tok = import_deepchem_tokenizer()
    smiles = load_smiles(args.corpus, args.n)
    ours = SmilesTokenizer()
    vocab_get = dict(ours.token_to_id).get
    unk, bos, eos = ours.unk_id, ours.bos_id, ours.eos_id

    # the comparison is only meaningful if both produce the same tokens
    same = all(ours.tokenize(s) == deepchem_tok.tokenize(s) for s in smiles)
    n_tokens = sum(len(ours.tokenize(s)) for s in smiles)

    def deepchem_ids() -> list[list[int]]:
        return [[bos, *(vocab_get(t, unk) for t in deepchem_tok.tokenize(s)), eos] for s in smiles]

    def batches_of(size: int) -> Callable[[], list[Any]]:
        return lambda: [
            ours.batch_encode(smiles[i : i + size]) for i in range(0, len(smiles), size)
        ]

    dc_str, dc_ids = "deepchem tokenize", "deepchem tokenize + dict ids"
    contestants = [
        Contestant(
            dc_str, "token strings", lambda: [deepchem_tok.tokenize(s) for s in smiles], dc_str
        ),
        Contestant(
            "ours tokenize", "token strings", lambda: [ours.tokenize(s) for s in smiles], dc_str
        ),
        Contestant(dc_ids, "id lists + BOS/EOS", deepchem_ids, dc_ids),
        Contestant(
            "ours encode (loop)",
            "id lists + BOS/EOS",
            lambda: [ours.encode(s) for s in smiles],
            dc_ids,
        ),
        Contestant(
            "ours batch_encode (all at once)",
            "padded int64 [B, N] + lengths",
            lambda: ours.batch_encode(smiles),
            dc_ids,
        ),
        Contestant(
            "ours batch_encode (batches of 256)",
            "padded int64 [B, N] + lengths",
            batches_of(256),
            dc_ids,
        ),
    ]

    best = {c.name: float("inf") for c in contestants}
    for _ in range(args.repeats):
        for contestant in contestants:  # interleaved so background load hits all alike
            best[contestant.name] = min(best[contestant.name], best_time(contestant.run))

    rate = {name: len(smiles) / seconds for name, seconds in best.items()}
    print(
        f"## SMILES tokenizer throughput ({len(smiles):,} MOSES SMILES, {n_tokens:,} tokens, "
        f"best of {args.repeats}, one process)\n"
    )
    print(f"Identical token streams (ours vs deepchem) on all {len(smiles):,} SMILES: {same}\n")
    print(
        "| method | output | molecules/s | µs/molecule | vs deepchem, same output | "
        "vs deepchem tokenize |"
    )
    print("|---|---|---:|---:|---:|---:|")
    for c in contestants:
        print(
            f"| {c.name} | {c.output} | {rate[c.name]:,.0f} | {1e6 / rate[c.name]:.2f} | "
            f"{rate[c.name] / rate[c.baseline]:.2f}x | {rate[c.name] / rate[dc_str]:.2f}x |"
        )
    print()
    print("\n".join(machine_info()))
    return 0 if same else 1


if __name__ == "__main__":
    sys.exit(main())
