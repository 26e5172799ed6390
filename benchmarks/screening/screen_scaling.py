"""``exlm_chem.screen`` on a local Dask cluster: throughput and memory with 1 and 2 workers.

The library is the first ``--n`` SMILES of MOSES train; the model is a classifier on the
shipped ``models/exlm-small`` encoder, fine-tuned for one epoch on 64 BBBP molecules
(its quality is irrelevant here: the cost is the encoder's forward pass), or with
``--preset tiny`` one on a random tiny encoder, which times the pipeline itself (reading,
RDKit checks, Dask, Parquet) at a scale the shared CPUs allow. Each worker
count gets a fresh output directory and a fresh ``LocalCluster`` of single-threaded
worker processes. Also measured, for the projection: how fast the driver alone streams
the input (a ceiling on any cluster's total rate), how fast one core validates (RDKit)
and tokenises SMILES (the CPU work a GPU worker still needs), and the encoder's forward
FLOPs per molecule from the model's shape and the library's real token lengths.

Usage (prints a Markdown section; ``--md`` also writes it to a file)::

    nice python benchmarks/screening/screen_scaling.py --n 200000 --workers 1 2 --projection
    nice python benchmarks/screening/screen_scaling.py --n 200000 --workers 1 2 --preset tiny
"""

from __future__ import annotations

import argparse
import gzip
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

from screen_projection import flops_per_molecule, projection_section

from exlm_chem.provenance import REPO, git_commit, load_average, machine
from exlm_chem.screening.worker import peak_rss_mb

# the shared data folder, found as the tests find it ($EXLM_CHEM_DATA is its moleculenet/)
DATA = Path(os.environ.get("EXLM_CHEM_DATA", REPO.parent / "shared" / "data" / "moleculenet")
            ).parent


def write_library(n: int, path: Path) -> Path:
    """The first ``n`` SMILES of MOSES train as a plain .smi file."""
    with gzip.open(DATA / "pretrain" / "moses_train.smi.gz", "rt") as src, \
            open(path, "w") as dst:
        for i, line in enumerate(src):
            if i == n:
                break
            dst.write(line)
    return path


def fit_model(out: Path, preset: str) -> Path:
    import pandas as pd
    import torch

    from exlm_chem.data.featurize import check_smiles
    from exlm_chem.sklearn.estimator import ExLMMoleculeClassifier

    torch.set_num_threads(1)
    bbbp = pd.read_csv(DATA / "moleculenet" / "bbbp.csv.gz").iloc[:80]
    bbbp = bbbp[check_smiles(bbbp["smiles"].tolist()).valid].iloc[:64]
    # small: the shipped encoder; tiny: a random tiny-preset one, to time the machinery
    pretrained = str(REPO / "models" / "exlm-small") if preset == "small" else None
    clf = ExLMMoleculeClassifier(pretrained=pretrained, preset=preset, epochs=1,
                                 validation_fraction=0.0, device="cpu", random_state=0)
    clf.fit(bbbp["smiles"].tolist(), bbbp["p_np"].to_numpy())
    return clf.save(out)


def feed_rate(library: Path, chunk_rows: int) -> float:
    """Molecules/s the driver streams and cuts into chunks, with no model at all."""
    from exlm_chem.screening.inputs import iter_chunks, resolve_inputs

    began = time.process_time()  # CPU time: the machine is shared
    rows = sum(len(c.smiles) for c in iter_chunks(resolve_inputs([library]), chunk_rows))
    return rows / (time.process_time() - began)


def prep_rate(smiles: list[str], model: Path) -> float:
    """Molecules/s one core validates with RDKit and tokenises (a worker's CPU side)."""
    from exlm_chem.data.featurize import check_smiles
    from exlm_chem.data.tokenizer import SmilesTokenizer

    tokenizer = SmilesTokenizer.from_file(model / "vocab.txt")
    began = time.process_time()
    valid = check_smiles(smiles).valid
    tokenizer.batch_encode([s for s, ok in zip(smiles, valid, strict=True) if ok],
                           max_length=256)
    return len(smiles) / (time.process_time() - began)


def run_screen(model: Path, library: Path, out: Path, workers: int, args) -> dict:
    from exlm_chem import screen

    shutil.rmtree(out, ignore_errors=True)
    load_before = load_average()
    result = screen(model, [library], out, workers=workers, chunk_rows=args.chunk_rows,
                    batch_size=args.batch_size, device="cpu", progress=args.progress)
    s = result.summary
    per_worker = sorted(s.workers.values(), key=lambda w: -w.rows)
    return {"workers": workers, "rows": s.rows, "invalid": s.invalid_rows,
            "seconds": s.seconds, "total_mol_s": s.mol_per_s,
            "worker_mol_s": [w.mol_per_s for w in per_worker],
            "worker_mol_cpu_s": [w.mol_per_cpu_s for w in per_worker],
            "worker_rows": [w.rows for w in per_worker],
            "worker_peak_mb": [w.peak_rss_mb for w in per_worker],
            "load_before": load_before, "load_after": load_average()}


def model_name(args) -> str:
    if args.model is not None:
        return f"`{args.model}`"
    if args.preset == "small":
        return ("classifier on `models/exlm-small` (9 layers, d 256, k 2), one epoch on 64 "
                "BBBP rows")
    return "classifier on a random tiny-preset encoder (2 layers, d 64): the pipeline's cost"


def format_report(runs: list[dict], extra: dict, args) -> str:
    lines = [
        f"## {args.n:,} MOSES molecules, {model_name(args)} (CPU)",
        "",
        f"- command: `nice python benchmarks/screening/screen_scaling.py {' '.join(sys.argv[1:])}`",
        f"- commit {git_commit()}; machine: {machine()}; date {time.strftime('%Y-%m-%d')}",
        f"- model: {model_name(args)}; "
        f"predict mode, chunk rows {args.chunk_rows}, batch "
        f"{args.batch_size or 'default (2 x 32)'}; one single-threaded process per worker",
        "- wall s includes starting the cluster and loading the model in each worker; "
        "total mol/s is rows over that. Per worker: rows over its busy wall time (shared "
        "cores: lowered by every other process) and rows over its CPU time (the rate of a "
        "core of its own)",
        "",
        "| workers | rows | invalid | wall s | total mol/s | per-worker mol/s (wall) | "
        "per-worker mol per CPU s | rows per worker | peak RSS per worker (MB) | "
        "load avg before / after |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in runs:
        lines.append(
            f"| {r['workers']} | {r['rows']} | {r['invalid']} | {r['seconds']:.0f} | "
            f"{r['total_mol_s']:.1f} | {' / '.join(f'{x:.1f}' for x in r['worker_mol_s'])} | "
            f"{' / '.join(f'{x:.1f}' for x in r['worker_mol_cpu_s'])} | "
            f"{' / '.join(map(str, r['worker_rows']))} | "
            f"{' / '.join(f'{x:.0f}' for x in r['worker_peak_mb'])} | "
            f"{r['load_before']} / {r['load_after']} |")
    lines += ["", f"Driver peak RSS (scheduler included): {extra['driver_peak_mb']:.0f} MB. "
              f"Driver feed (read + chunk, no model): {extra['feed_mol_s']:,.0f} mol per CPU "
              f"second. RDKit check + tokenising: {extra['prep_mol_s']:,.0f} mol per CPU "
              "second.", ""]
    if args.projection:
        lines += projection_section(runs, extra)
    return "\n".join(lines) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--chunk-rows", type=int, default=5_000)
    parser.add_argument("--batch-size", type=int, default=None)
    parser.add_argument("--preset", choices=("small", "tiny"), default="small",
                        help="encoder of the throw-away classifier: the shipped exlm-small, "
                             "or a random tiny one (times the pipeline, not the model)")
    parser.add_argument("--model", type=Path, default=None,
                        help="fitted estimator directory (default: fit a throw-away one)")
    parser.add_argument("--projection", action="store_true",
                        help="add the 1B-molecule projection from this run's rates")
    parser.add_argument("--md", type=Path, default=None, help="write the report here")
    parser.add_argument("--json", type=Path, default=None, help="raw figures")
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="screen_scaling_") as tmp:
        work = Path(tmp)
        library = write_library(args.n, work / "library.smi")
        if args.model is None:  # in a child process: the driver's peak memory stays its own
            with multiprocessing.get_context("spawn").Pool(1) as pool:
                model = pool.apply(fit_model, (work / "model", args.preset))
        else:
            model = args.model
        sample = library.read_text().split()[:5000]
        extra = {"feed_mol_s": feed_rate(library, args.chunk_rows),
                 "prep_mol_s": prep_rate(sample, model),
                 "flops": flops_per_molecule(model, sample)}
        runs = [run_screen(model, library, work / f"out_{w}", w, args) for w in args.workers]
    extra["driver_peak_mb"] = peak_rss_mb()
    report = format_report(runs, extra, args)
    print(report)
    if args.md:
        args.md.write_text(report)
    if args.json:
        args.json.write_text(json.dumps({"runs": runs, **extra}, indent=2))
    return 0


if __name__ == "__main__":
    os.environ.setdefault("OMP_NUM_THREADS", "1")
    sys.exit(main())
