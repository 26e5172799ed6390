"""Run benchmark cells one by one and append each result as soon as it exists.

A cell is (method, task, seed). Cells already in ``results.jsonl`` with the same key
(method, model hash, mode, task, seed, split, budget and protocol: input expansion,
pooling, max length, settings, data checksum, protocol version; see
:mod:`exlm_chem.benchmark.records`) are skipped, so rerunning the same command resumes an
interrupted run where it stopped, and a changed protocol reruns the cell.
"""

from __future__ import annotations

import datetime
import logging
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple, Protocol

import numpy as np

from exlm_chem.benchmark.records import (
    RESULTS_FILE,
    Budget,
    CellRecord,
    MethodOutput,
    ResultsFile,
    cell_key,
    cell_protocol,
)
from exlm_chem.benchmark.scoring import score_cell, score_intervals, score_regression
from exlm_chem.benchmark.tasks import TaskData, load_task, task_sha256
from exlm_chem.benchmark.tdc import score_tdc
from exlm_chem.data.process_map import worker_cpu_seconds
from exlm_chem.data.split_modes import split_depends_on_seed
from exlm_chem.uncertainty.scores import calibration_scores

logger = logging.getLogger(__name__)

MethodFn = Callable[[TaskData, int, Budget, bool], MethodOutput]
#: (task, budget) -> (encoder input protocol or None, settings or None), known before a run
ProtocolFn = Callable[[str, Budget], tuple[dict | None, dict | None]]


class MethodSpec(NamedTuple):
    """A row of the benchmark: what it is called and how it scores a cell."""

    method: str  # "exlm" | "twin" | "rf_ecfp4" | "attentivefp" | "chemprop"
    label: str  # row name in the report
    model: str | None  # checkpoint id for encoders
    mode: str  # "probe" | "finetune" | "supervised"
    run: MethodFn
    uses_budget: bool  # False: the budget is not recorded as part of the cell
    protocol: ProtocolFn | None = None  # what the cell key records besides the data checksum


def _rounded(values: np.ndarray) -> list[float | None]:
    return [None if np.isnan(v) else round(float(v), 6) for v in values]


def _cpu_seconds() -> float:
    """CPU seconds so far of this process, its ended subprocesses and the map workers'
    chunks: a cell's CPU time is the difference across it."""
    times = os.times()
    return (times.user + times.system + times.children_user + times.children_system
            + worker_cpu_seconds())


def _cell_budget(spec: MethodSpec, budget: Budget) -> dict:
    return budget._asdict() if spec.uses_budget else Budget()._asdict()


def spec_protocol(spec: MethodSpec, task: str, budget: Budget, data_sha256: str) -> dict:
    """The protocol part of a cell's key (see :func:`~exlm_chem.benchmark.records.
    cell_protocol`), from the method's declaration and the data file's checksum."""
    cell_budget = Budget(**_cell_budget(spec, budget))
    inputs, settings = spec.protocol(task, cell_budget) if spec.protocol else (None, None)
    return cell_protocol(data_sha256, inputs, settings)


class Cell(NamedTuple):
    """One cell still to run, with the protocol its key was computed from."""

    task: str
    spec: MethodSpec
    seed: int
    protocol: dict


class TaskSource(Protocol):
    """Where cells get their data: MoleculeNet files, or prepared split files."""

    def sha256(self, task: str) -> str: ...

    def load(self, task: str, split: str, seed: int) -> TaskData: ...


class MoleculeNetSource(NamedTuple):
    """MoleculeNet files parsed and split with RDKit (``path``: as ``--data``);
    ``held_out_valid``: every method fits on the train part alone and the valid part is
    scored beside the test part (``--fit-on train``: the check a default change passes
    before it is read on a test part)."""

    path: str | os.PathLike[str] | None = None
    held_out_valid: bool = False

    def sha256(self, task: str) -> str:
        return task_sha256(task, self.path)

    def load(self, task: str, split: str, seed: int) -> TaskData:
        return load_task(task, split, seed, self.path)._replace(
            held_out_valid=self.held_out_valid)


#: what a cell's protocol records when the source holds its valid part out of every fit
#: and the suite's own default does not (MoleculeNet's ``--fit-on train``)
HELD_OUT_VALID = {"valid_part": "held out"}


def pending_cells(methods: Sequence[MethodSpec], tasks: Sequence[str], seeds: Sequence[int],
                  split: str, budget: Budget, source: TaskSource, done: set[tuple]
                  ) -> list[Cell]:
    """Cells whose key is not in ``done``, task by task, then method, then seed."""
    pending = []
    for task in tasks:
        sha = source.sha256(task)
        for spec in methods:
            protocol = spec_protocol(spec, task, budget, sha)
            if isinstance(source, MoleculeNetSource) and source.held_out_valid:
                protocol = {**protocol, **HELD_OUT_VALID}
                spec = spec._replace(label=f"{spec.label} [valid held out]")
            pending += [Cell(task, spec, seed, protocol) for seed in seeds
                        if cell_key(spec.method, spec.model, spec.mode, task, seed, split,
                                    _cell_budget(spec, budget), protocol) not in done]
    return pending


def run_cell(cell: Cell, data: TaskData, split: str, budget: Budget, commit: str, host: str,
             progress: bool = False) -> CellRecord:
    """Run and score one cell on its loaded data; the record is not written here."""
    if data.data_sha256 != cell.protocol["data_sha256"]:
        raise RuntimeError(f"{cell.task}: the data file changed while the benchmark ran "
                           f"(sha256 {cell.protocol['data_sha256']} -> {data.data_sha256})")
    spec, started, cpu_started = cell.spec, time.monotonic(), _cpu_seconds()
    output = spec.run(data, cell.seed, budget, progress)
    if data.task_type == "regression":
        scores = score_regression(data, output)
        roc = prc = float("nan")
        per_task = scores.per_task_rmse
        extra = {"task_type": "regression", "rmse": scores.rmse, "mae": scores.mae,
                 "per_task_rmse": _rounded(per_task)}  # predictions: no calibration
        intervals = score_intervals(data, output)
        if intervals is not None:
            extra.update(interval_coverage=intervals.coverage, interval_width=intervals.width)
    else:
        roc, prc, per_task = score_cell(data, output)
        calibration = calibration_scores(data.labels[data.test], output.test_scores)
        extra = {"brier": calibration.brier, "ece": calibration.ece}
    if data.metric:
        tdc = score_tdc(data, output.test_scores, output.valid_scores)
        extra.update(metric=tdc.metric, score=tdc.test, valid_score=tdc.valid)
    elif data.held_out_valid:  # MoleculeNet's valid mode: its main figure on both parts
        extra.update(_held_out_scores(data, output))
    return CellRecord(
        method=spec.method, label=spec.label, model=spec.model, mode=spec.mode,
        task=cell.task, seed=int(cell.seed), split=split, roc_auc=roc, prc_auc=prc,
        n_tasks_scored=int(np.isfinite(per_task).sum()),
        per_task_roc_auc=([None] * len(per_task) if data.task_type == "regression"
                          else _rounded(per_task)),
        n_train=len(data.train), n_valid=len(data.valid), n_test=len(data.test),
        epochs=output.epochs, best_epoch=output.best_epoch,
        stopped_early=bool(output.stopped_early), budget=_cell_budget(spec, budget),
        settings=dict(output.settings or {}), wall_s=round(time.monotonic() - started, 2),
        cpu_s=round(_cpu_seconds() - cpu_started, 1),
        commit=commit, machine=host,
        finished_at=datetime.datetime.now(datetime.UTC).isoformat(timespec="seconds"),
        protocol=cell.protocol, **extra,
    )


def _held_out_scores(data: TaskData, output: MethodOutput) -> dict:
    """A MoleculeNet cell's main figure (mean ROC-AUC; regression: RMSE) as ``metric``,
    on the test part (``score``) and on the held-out valid part (``valid_score``)."""
    regression = data.task_type == "regression"
    metric = "rmse" if regression else "roc_auc"

    def figure(part: np.ndarray, scores: np.ndarray) -> float:
        cell = (data._replace(test=part), output._replace(test_scores=scores))
        return score_regression(*cell).rmse if regression else score_cell(*cell)[0]

    valid = None
    if output.valid_scores is not None and len(data.valid):
        valid = figure(data.valid, output.valid_scores)
    return {"metric": metric, "score": figure(data.test, output.test_scores),
            "valid_score": valid}


def describe(record: CellRecord) -> str:
    if record.metric:
        valid = "" if record.valid_score is None else f" (valid {record.valid_score:.4f})"
        scores = f"{record.metric} {record.score:.4f}{valid}"
    elif record.task_type == "regression":
        scores = f"RMSE {record.rmse:.4f}, MAE {record.mae:.4f}"
    else:
        scores = f"ROC-AUC {record.roc_auc:.4f}, PRC-AUC {record.prc_auc:.4f}"
    cpu = "" if record.cpu_s is None else f" ({record.cpu_s:.0f} CPU-s)"
    return (f"{record.label} | {record.task} | seed {record.seed}: {scores}, "
            f"{record.wall_s:.0f} s{cpu}")


def run_benchmark(
    methods: Sequence[MethodSpec],
    tasks: Sequence[str],
    seeds: Sequence[int],
    split: str,
    budget: Budget,
    out_dir: str | os.PathLike[str],
    data_path: str | os.PathLike[str] | None = None,
    progress: bool = True,
    on_cell: Callable[[CellRecord], None] | None = None,
    source: TaskSource | None = None,
) -> list[CellRecord]:
    """Run every missing cell; returns the records written by this call.

    Cells run task by task (each dataset is loaded and split once per seed-independent
    split), then method by method, then seed by seed. ``source`` replaces the MoleculeNet
    files under ``data_path`` (e.g. :class:`~exlm_chem.benchmark.prepared.PreparedSplits`).
    """
    from exlm_chem.provenance import git_commit, machine

    source = source if source is not None else MoleculeNetSource(data_path)
    results = ResultsFile(Path(out_dir) / RESULTS_FILE)
    commit, host = git_commit(), machine()
    pending = pending_cells(methods, tasks, seeds, split, budget, source, results.done())
    skipped = len(tasks) * len(methods) * len(seeds) - len(pending)
    if skipped:
        logger.info("resuming: %d of %d cells already in %s", skipped,
                    skipped + len(pending), results.path)
    bar = None
    if progress:
        from tqdm.auto import tqdm

        bar = tqdm(total=len(pending), desc="benchmark cells", unit="cell")
    written, loaded = [], {}
    for cell in pending:
        split_seed = cell.seed if split_depends_on_seed(split) else 0
        if (cell.task, split_seed) not in loaded:
            loaded = {(cell.task, split_seed): source.load(cell.task, split, split_seed)}
        if bar is not None:
            bar.set_postfix_str(f"{cell.spec.label} | {cell.task} | seed {cell.seed}")
        record = run_cell(cell, loaded[(cell.task, split_seed)], split, budget, commit, host,
                          progress)
        results.append(record)
        written.append(record)
        if bar is not None:
            bar.write(describe(record))
            bar.update(1)
        else:
            logger.info(describe(record))
        if on_cell is not None:
            on_cell(record)
    if bar is not None:
        bar.close()
    return written
