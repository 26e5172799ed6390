"""Fine-tuning cells of the MoleculeNet benchmark on the GPU machine, several at once.

Reads split files prepared on CPU (``exlm-chem data prepare-splits``: token ids, labels,
split indices, data checksums), so it needs no RDKit; runs the missing fine-tune cells of
the ExLM checkpoint and its MLM twin (the paper's Table 8 settings, optionally capped by
``--budget``) in ``--workers`` processes; writes records in the format and with the keys of
``exlm-chem benchmark`` to ``OUT/results.jsonl``. Rerunning the same command resumes.
See ``scripts/gpu/FINETUNE.md``.

    python scripts/gpu/finetune_cells.py --prepared runs/splits --out runs/ft \\
        --model models/exlm-small --twin models/mlm-small --workers 4
    python scripts/gpu/finetune_cells.py --prepared runs/splits --out /tmp/ft --dry-run
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--prepared", required=True, help="prepared split files (a folder)")
    parser.add_argument("--out", required=True, help="results folder (resumes if it exists)")
    parser.add_argument("--model", help="ExLM checkpoint (row 'exlm')")
    parser.add_argument("--twin", help="MLM twin checkpoint (row 'twin')")
    parser.add_argument("--tasks", nargs="+", default=["all"], help="'all': every prepared task")
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2])
    parser.add_argument("--budget", default="none", help="e.g. 'epochs=10,minutes=5'")
    parser.add_argument("--workers", type=int, default=4, help="cells run at once")
    parser.add_argument("--device", default=None, help="auto (default), cuda or cpu")
    parser.add_argument("--commit", default=None,
                        help="commit to record (default: git HEAD, when .git is there)")
    parser.add_argument("--dry-run", action="store_true",
                        help="CPU, 1 epoch, 48/16/16 rows per task; tiny checkpoints are "
                             "pre-trained into OUT/tiny unless --model/--twin are given")
    parser.add_argument("--corpus", default=None,
                        help="SMILES for the dry run's tiny checkpoints (default: "
                             "moses_train.smi.gz in $EXLM_CHEM_PRETRAIN_DATA, or beside "
                             "$EXLM_CHEM_DATA, or ../shared/data/pretrain)")
    parser.add_argument("--merge-only", action="store_true",
                        help="only append the workers' records to OUT/results.jsonl")
    args = parser.parse_args(argv)
    if args.workers < 1:
        parser.error("--workers must be >= 1")
    return args


def tiny_checkpoints(out: Path, corpus: str | None) -> tuple[str, str]:
    """Pre-train the tiny ExLM and its twin for the dry run (seconds on CPU)."""
    sys.path.insert(0, str(REPO / "tests"))
    from tiny_checkpoint import make_tiny_checkpoint

    if corpus is None:  # where the tests look for it (tests/conftest.py)
        data = os.environ.get("EXLM_CHEM_DATA")
        folder = os.environ.get("EXLM_CHEM_PRETRAIN_DATA") or (
            Path(data).parent / "pretrain" if data else REPO.parent / "shared/data/pretrain")
        corpus = str(Path(folder) / "moses_train.smi.gz")
    paths = []
    for objective in ("exlm", "mlm"):
        checkpoint = out / "tiny" / objective / "checkpoint"
        if not (checkpoint / "model.safetensors").is_file():
            make_tiny_checkpoint(checkpoint.parent, corpus, objective=objective)
        paths.append(str(checkpoint))
    return paths[0], paths[1]


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(message)s")
    from exlm_chem.benchmark.parallel import CellsJob, DryRun, merge_parts, run_parallel
    from exlm_chem.benchmark.prepared import PreparedSplits
    from exlm_chem.benchmark.records import ResultsFile
    from exlm_chem.benchmark.report import markdown_report
    from exlm_chem.cli.benchmark import parse_budget
    from exlm_chem.provenance import git_commit

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    if not args.merge_only:
        model, twin = args.model, args.twin
        if args.dry_run and model is None and twin is None:
            model, twin = tiny_checkpoints(out, args.corpus)
        methods = tuple(name for name, path in (("exlm", model), ("twin", twin)) if path)
        if not methods:
            raise SystemExit("give --model and/or --twin (or --dry-run)")
        source = PreparedSplits(args.prepared)
        tasks = source.tasks if args.tasks == ["all"] else [t.lower() for t in args.tasks]
        budget = parse_budget("epochs=1" if args.dry_run else args.budget)
        device = args.device or ("cpu" if args.dry_run else "auto")
        threads = max(1, (os.cpu_count() or 1) // args.workers)
        job = CellsJob(args.prepared, str(out), model, twin, methods, budget, device, threads,
                       args.commit or git_commit(), DryRun() if args.dry_run else None)
        failed = run_parallel(job, tasks, args.seeds, args.workers)
    else:
        failed = 0
    new = merge_parts(out)
    logging.info("%d new records appended to %s", len(new), out / "results.jsonl")
    records = ResultsFile(out / "results.jsonl").latest()
    if records:
        print(markdown_report(records, title="Fine-tuning cells"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
