"""Fine-tuning cells in several worker processes at once, from prepared split files.

The GPU machine has no RDKit and little time: :func:`run_parallel` reads tasks from
:class:`~exlm_chem.benchmark.prepared.PreparedSplits`, skips every cell whose key is already
in the output folder, spreads the rest over ``workers`` processes (longest cells first,
each to the least loaded worker) and has each worker append its records to its own file
``parts/worker-<i>.jsonl``, so that workers never write the same file and a killed run
loses at most the cells in flight. :func:`merge_parts` then appends the new records to
``results.jsonl``, in the runner's format and with the runner's keys, ready to be merged
into ``benchmarks/results/``.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any, NamedTuple

from exlm_chem.benchmark.records import RESULTS_FILE, Budget, CellRecord, ResultsFile
from exlm_chem.benchmark.runner import Cell, MethodSpec, describe, pending_cells, run_cell
from exlm_chem.benchmark.tasks import TaskData

__all__ = ["CellsJob", "DryRun", "all_records", "merge_parts", "plan", "run_parallel"]

logger = logging.getLogger(__name__)
PARTS = "parts"


class DryRun(NamedTuple):
    """Rows kept per part of every task in a dry run (the cell key records the cut)."""

    train: int = 48
    valid: int = 16
    test: int = 16


class CellsJob(NamedTuple):
    """Everything a worker needs to rebuild the cells (plain data: workers are spawned)."""

    prepared: str  # PreparedSplits directory
    out: str  # output folder
    model: str | None  # ExLM checkpoint (method "exlm")
    twin: str | None  # MLM twin checkpoint (method "twin")
    methods: tuple[str, ...]  # "exlm" and/or "twin"
    budget: Budget
    device: str
    threads: int  # torch threads per worker
    commit: str
    dry_run: DryRun | None = None


def build_specs(job: CellsJob) -> list[MethodSpec]:
    """The benchmark's fine-tune rows for the job's checkpoints (as ``exlm-chem benchmark``
    builds them); in a dry run the key also records the cut."""
    from exlm_chem.benchmark.methods import build_methods

    specs = build_methods(job.methods, job.model, job.twin, "finetune", cache_dir=None,
                          device=job.device, budget=job.budget)
    if job.dry_run is None:
        return specs
    cut = job.dry_run._asdict()

    def with_cut(protocol):
        return lambda task, budget: (protocol(task, budget)[0],
                                     {**protocol(task, budget)[1], "dry_run_rows": cut})

    return [s._replace(label=f"{s.label} [dry run]", protocol=with_cut(s.protocol))
            for s in specs]


def cut_rows(data: TaskData, dry_run: DryRun | None) -> TaskData:
    if dry_run is None:
        return data
    return data._replace(train=data.train[: dry_run.train], valid=data.valid[: dry_run.valid],
                         test=data.test[: dry_run.test])


def all_records(out: str | os.PathLike[str]) -> list[CellRecord]:
    """Records in ``results.jsonl`` and in every worker's part file."""
    out = Path(out)
    files = [out / RESULTS_FILE, *sorted((out / PARTS).glob("worker-*.jsonl"))]
    return [record for path in files for record in ResultsFile(path)]


def plan(pending: Sequence[Cell], workers: int, cost: dict[str, float]) -> list[list[Cell]]:
    """Longest cells first, each to the least loaded worker (``cost``: per task)."""
    shares: list[list[Cell]] = [[] for _ in range(workers)]
    loads = [0.0] * workers
    for cell in sorted(pending, key=lambda c: -cost[c.task]):
        i = loads.index(min(loads))
        shares[i].append(cell)
        loads[i] += cost[cell.task]
    return [share for share in shares if share]


def _task_cost(source: Any, task: str, spec: MethodSpec, budget: Budget) -> float:
    """Training molecule-passes of a cell: epochs x training rows (a proxy for time)."""
    settings = spec.protocol(task, budget)[1] if spec.protocol else {}
    n_train = source.manifest["tasks"][task]["n_train_valid_test"][0]
    return float(settings.get("epochs", 1)) * n_train


def worker(index: int, job: CellsJob, cells: list[tuple[str, str, int, dict]]) -> None:
    """Run ``cells`` ((task, method, seed, protocol) each) and append their records."""
    import torch

    from exlm_chem.benchmark.prepared import PreparedSplits
    from exlm_chem.data.split_modes import split_depends_on_seed
    from exlm_chem.provenance import machine

    torch.set_num_threads(job.threads)
    logging.basicConfig(level=logging.INFO, format=f"%(asctime)s worker {index}: %(message)s",
                        filename=Path(job.out) / f"worker-{index}.log")
    source, specs = PreparedSplits(job.prepared), {s.method: s for s in build_specs(job)}
    results = ResultsFile(Path(job.out) / PARTS / f"worker-{index}.jsonl")
    split = source.manifest["split"]
    loaded: dict[tuple[str, int], TaskData] = {}
    for task, method, seed, protocol in cells:
        key = (task, seed if split_depends_on_seed(split) else 0)
        if key not in loaded:  # one task in memory at a time
            loaded = {key: cut_rows(source.load(task, split, key[1]), job.dry_run)}
        cell = Cell(task, specs[method], seed, protocol)
        record = run_cell(cell, loaded[key], split, job.budget, job.commit, machine())
        results.append(record)
        logging.info(describe(record))


def run_parallel(job: CellsJob, tasks: Sequence[str], seeds: Sequence[int],
                 workers: int) -> int:
    """Run the job's missing cells in ``workers`` spawned processes; returns how many
    workers failed (0 when every cell was written)."""
    import multiprocessing

    from exlm_chem.benchmark.prepared import PreparedSplits

    source = PreparedSplits(job.prepared)
    for path in (job.model, job.twin):
        if path is not None:
            source.check_vocabulary(Path(path) / "vocab.txt")
    specs = build_specs(job)
    done = {record.key() for record in all_records(job.out)}
    pending = pending_cells(specs, tasks, seeds, source.manifest["split"], job.budget,
                            source, done)
    logger.info("%d cells pending, %d already done", len(pending),
                len(tasks) * len(specs) * len(seeds) - len(pending))
    if not pending:
        return 0
    cost = {t: max(_task_cost(source, t, s, job.budget) for s in specs) for t in tasks}
    context = multiprocessing.get_context("spawn")  # CUDA cannot be forked
    processes = []
    for i, share in enumerate(plan(pending, workers, cost)):
        cells = [(c.task, c.spec.method, c.seed, c.protocol) for c in share]
        process = context.Process(target=worker, args=(i, job, cells), name=f"worker-{i}")
        process.start()
        processes.append(process)
    for process in processes:
        process.join()
    failed = [p.name for p in processes if p.exitcode != 0]
    if failed:
        logger.error("worker(s) %s failed; see their logs in %s", failed, job.out)
    return len(failed)


def merge_parts(out: str | os.PathLike[str]) -> list[CellRecord]:
    """Append the workers' records that ``results.jsonl`` lacks; returns those records."""
    results = ResultsFile(Path(out) / RESULTS_FILE)
    have = results.done()
    new = []
    for path in sorted((Path(out) / PARTS).glob("worker-*.jsonl")):
        for record in ResultsFile(path):
            if record.key() not in have:
                results.append(record)
                have.add(record.key())
                new.append(record)
    return new
