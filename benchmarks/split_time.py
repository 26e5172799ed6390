"""Time our scaffold_split against DeepChem's ScaffoldSplitter on MUV (93k molecules).

Both run in one process, alternating (deepchem, ours, ours with workers, then the reverse
order in the next round), best of ``--repeats``; the indices must be equal. Prints a
markdown table plus the machine it ran on. Usage::

    python benchmarks/split_time.py [--data DIR] [--repeats 3] [--n-jobs 2] [--out FILE]

The work per molecule is the same in both (RDKit parse, Murcko scaffold, canonical
SMILES), so in one process the ratio is about 1; ``n_jobs`` workers are the real lever.
Other processes on the machine skew wall-clock times: the load average is printed.
"""

from __future__ import annotations

import argparse
import logging
import os
import platform
import sys
import time
from pathlib import Path

import numpy as np
from _provenance import cpu_model, git_commit, load_average

REPO = Path(__file__).resolve().parents[1]


def _cpu_seconds() -> float:
    """CPU time of this process plus its finished children (the n_jobs workers)."""
    try:
        import resource
    except ImportError:  # not POSIX: own CPU time only
        return time.process_time()
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default_data = os.environ.get("EXLM_CHEM_DATA", str(REPO.parent / "shared/data/moleculenet"))
    parser.add_argument("--data", default=default_data, help="folder holding muv.csv.gz")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--n-jobs", type=int, default=2, help="workers for the extra row")
    parser.add_argument("--out", type=Path, help="also write the table to this file")
    args = parser.parse_args(argv)

    import deepchem as dc
    import rdkit

    from exlm_chem.data.moleculenet import load_moleculenet
    from exlm_chem.data.splits import scaffold_split

    logging.getLogger("deepchem").setLevel(logging.WARNING)
    data = load_moleculenet("muv", path=Path(args.data) / "muv.csv.gz")
    smiles = data.smiles
    dataset = dc.data.NumpyDataset(X=np.zeros((len(smiles), 1)), ids=np.array(smiles))
    splitter = dc.splits.ScaffoldSplitter()
    load_before = load_average()

    def run_deepchem():
        return splitter.split(dataset, frac_train=0.8, frac_valid=0.1, frac_test=0.1)

    def run_ours():
        return scaffold_split(smiles, include_chirality=False)

    def run_ours_jobs():
        return scaffold_split(smiles, include_chirality=False, n_jobs=args.n_jobs)

    methods = {
        "deepchem ScaffoldSplitter.split": run_deepchem,
        "exlm_chem scaffold_split (n_jobs=1)": run_ours,
        f"exlm_chem scaffold_split (n_jobs={args.n_jobs})": run_ours_jobs,
    }
    times: dict[str, list[float]] = {name: [] for name in methods}
    cpu: dict[str, list[float]] = {name: [] for name in methods}
    results: dict[str, list[list[int]]] = {}
    for round_ in range(args.repeats):
        order = list(methods) if round_ % 2 == 0 else list(reversed(methods))
        for name in order:
            cpu_start, start = _cpu_seconds(), time.perf_counter()
            parts = methods[name]()
            times[name].append(time.perf_counter() - start)
            cpu[name].append(_cpu_seconds() - cpu_start)
            results[name] = [list(map(int, p)) for p in parts]
            print(
                f"round {round_ + 1} {name}: {times[name][-1]:.2f} s wall, "
                f"{cpu[name][-1]:.2f} s CPU",
                file=sys.stderr,
            )

    reference = results["deepchem ScaffoldSplitter.split"]
    equal = all(r == reference for r in results.values())
    base = min(times["deepchem ScaffoldSplitter.split"])
    base_cpu = min(cpu["deepchem ScaffoldSplitter.split"])
    lines = [
        f"Scaffold split of MUV ({len(smiles)} valid SMILES, 80/10/10, include_chirality="
        f"False), best of {args.repeats}, one process, alternating order. CPU = this "
        "process plus its worker processes (less sensitive to other load than wall time).",
        "",
        "| method | best wall (s) | all wall runs (s) | wall ratio to deepchem "
        "| best CPU (s) | CPU ratio |",
        "|---|---|---|---|---|---|",
    ]
    for name, ts in times.items():
        runs = ", ".join(f"{t:.2f}" for t in ts)
        best_cpu = min(cpu[name])
        lines.append(
            f"| {name} | {min(ts):.2f} | {runs} | {min(ts) / base:.2f} "
            f"| {best_cpu:.2f} | {best_cpu / base_cpu:.2f} |"
        )
    lines += [
        "",
        f"- indices identical to deepchem (order included): {equal}",
        f"- sizes train/valid/test: {[len(p) for p in reference]}",
        f"- machine: {cpu_model()}, {os.cpu_count()} logical CPUs, {platform.platform()}",
        f"- load average before / after: {load_before} / {load_average()}",
        f"- python {platform.python_version()}, rdkit {rdkit.__version__}, "
        f"deepchem {dc.__version__}, numpy {np.__version__}",
        f"- git HEAD: {git_commit()}",
    ]
    table = "\n".join(lines)
    print(table)
    if args.out:
        args.out.write_text(table + "\n")
    return 0 if equal else 1


if __name__ == "__main__":
    raise SystemExit(main())
