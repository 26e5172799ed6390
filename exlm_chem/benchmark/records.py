"""The records a benchmark cell reads and writes, and the append-only results file.

Every finished (method, task, seed) cell is one JSON line in ``results.jsonl``, written
and flushed as soon as the cell ends, so an interrupted run loses at most the cell it was
in; a rerun skips every cell whose :func:`cell_key` is already in the file.

A key holds what the cell measured, not only its name: besides method, model hash, mode,
task, seed, split and budget, the record's ``protocol`` (:func:`cell_protocol`) names the
input protocol of an encoder (expansion k, pooling, max length), the method's settings
(fine-tuning after the budget cap), the data file's sha256 and :data:`PROTOCOL_VERSION`.
Change any of them and the cell runs again; a record written before protocols existed
(no ``protocol``) matches nothing.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

RESULTS_FILE = "results.jsonl"

#: Bump when a code change alters what a cell measures with unchanged settings, so that
#: older records stop counting as done. 2: MLM twins are fed unexpanded inputs.
PROTOCOL_VERSION = 2


class Budget(NamedTuple):
    """What one trained cell may spend; None = no limit (the paper's protocol)."""

    max_epochs: int | None = None  # caps the preset's epochs (the LR schedule is fitted to it)
    max_minutes: float | None = None  # wall-time cap per cell, training only

    def describe(self) -> str:
        epochs = "preset" if self.max_epochs is None else str(self.max_epochs)
        minutes = "none" if self.max_minutes is None else f"{self.max_minutes:g}"
        return f"max epochs {epochs}, max minutes {minutes}"

    def tag(self) -> str:
        """Short form for row labels ("" without limits), e.g. "<=5 ep, <=3 min"."""
        parts = ([f"<={self.max_epochs} ep"] if self.max_epochs is not None else []) + (
            [f"<={self.max_minutes:g} min"] if self.max_minutes is not None else [])
        return ", ".join(parts)


class MethodOutput(NamedTuple):
    """What a method returns for one cell."""

    # [len(test), T] scores (higher = positive; regression: predicted values); NaN = task
    # not fitted
    test_scores: np.ndarray
    epochs: int | None = None  # epochs trained (None: not an epoch-based method)
    best_epoch: int | None = None  # epoch whose weights scored the test set
    stopped_early: bool = False  # the max_minutes budget ran out
    settings: dict[str, Any] | None = None  # hyper-parameters actually used
    # [len(valid), T] predictions on the validation rows (regression: calibrates the
    # split-conformal intervals); None = the method does not return them
    valid_scores: np.ndarray | None = None


class CellRecord(NamedTuple):
    """One line of ``results.jsonl``."""

    method: str  # "exlm" | "twin" | "rf_ecfp4" | "attentivefp"
    label: str  # row name in the report, e.g. "ExLM exlm-small (probe)"
    model: str | None  # checkpoint id "name@sha12" for encoder methods, else None
    mode: str  # "probe" | "finetune" | "supervised" (baselines)
    task: str
    seed: int
    split: str  # "scaffold" | "deepchem_scaffold" | "scaffold_balanced"
    roc_auc: float  # unweighted mean over scored test tasks
    prc_auc: float  # same, area under precision-recall (trapezoid)
    n_tasks_scored: int
    per_task_roc_auc: list[float | None]  # None where a task was not scored
    n_train: int
    n_valid: int
    n_test: int
    epochs: int | None
    best_epoch: int | None
    stopped_early: bool
    budget: dict[str, Any]  # Budget._asdict()
    settings: dict[str, Any]
    wall_s: float  # the whole cell: features/embeddings, training, scoring
    commit: str
    machine: str
    finished_at: str  # ISO 8601, UTC
    protocol: dict[str, Any] | None = None  # cell_protocol(); None in records before v2
    brier: float | None = None  # mean Brier score of test probabilities; None: not probabilities
    ece: float | None = None  # mean expected calibration error (10 bins), likewise
    # regression cells: roc_auc/prc_auc are NaN and per_task_roc_auc holds None
    task_type: str = "classification"  # "classification" | "regression"
    rmse: float | None = None  # regression: mean over tasks of the test RMSE
    mae: float | None = None  # regression: mean over tasks of the test MAE
    per_task_rmse: list[float | None] | None = None  # regression: [T]
    # regression: 90 % split-conformal intervals calibrated on the validation rows, mean
    # over tasks of the test coverage and width (2q); None: no validation predictions
    interval_coverage: float | None = None
    interval_width: float | None = None
    # suites with their own metric (TDC ADMET): its name, its value on the test part and on
    # the held-out valid part (None: no validation predictions)
    metric: str | None = None
    score: float | None = None
    valid_score: float | None = None
    # CPU seconds of the cell (user + system): this process, the map workers' chunks
    # (exlm_chem.data.process_map) and the subprocesses that ended during it; None in
    # records written before it was kept
    cpu_s: float | None = None

    def key(self) -> tuple:
        return cell_key(self.method, self.model, self.mode, self.task, self.seed, self.split,
                        self.budget, self.protocol)

    def identity(self) -> tuple:
        """The cell's name without its protocol, and its row: a rerun under a new protocol
        replaces it, a row of another label (the estimator's defaults of another package
        version) stands beside it."""
        return (*self.key()[:-1], self.label)


def cell_protocol(data_sha256: str, inputs: dict[str, Any] | None = None,
                  settings: dict[str, Any] | None = None) -> dict[str, Any]:
    """The part of a cell's key that says how it was measured.

    Parameters
    ----------
    data_sha256 : str
        sha256 of the data file's content (:attr:`TaskData.data_sha256`).
    inputs : dict, optional
        An encoder's input protocol: ``{"expansion_k", "pooling", "max_length"}``.
    settings : dict, optional
        The method's hyper-parameters as run (fine-tuning: after the budget cap).
    """
    return {"version": PROTOCOL_VERSION, "data_sha256": data_sha256,
            "inputs": _jsonable(inputs), "settings": _jsonable(settings)}


def cell_key(method: str, model: str | None, mode: str, task: str, seed: int, split: str,
             budget: dict[str, Any], protocol: dict[str, Any] | None) -> tuple:
    """What makes two cells the same experiment (used to skip finished cells)."""
    return (method, model, mode, task, int(seed), split,
            budget.get("max_epochs"), budget.get("max_minutes"),
            json.dumps(protocol, sort_keys=True))


def _jsonable(value: Any) -> Any:
    if isinstance(value, float | np.floating):
        return None if not math.isfinite(float(value)) else float(value)
    if isinstance(value, np.integer):
        return int(value)
    if isinstance(value, dict):
        return {k: _jsonable(v) for k, v in value.items()}
    if isinstance(value, list | tuple | np.ndarray):
        return [_jsonable(v) for v in value]
    return value


def _from_json(row: dict[str, Any]) -> CellRecord:
    # fields with defaults came after the first records; a line without them takes the
    # default (no protocol: the record matches no key)
    row = {**CellRecord._field_defaults, **row}
    for name in ("roc_auc", "prc_auc"):
        row[name] = float("nan") if row[name] is None else row[name]
    return CellRecord(**{f: row[f] for f in CellRecord._fields})


class ResultsFile:
    """Append-only JSON-lines file of :class:`CellRecord` rows."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        self.path = Path(path)

    def __iter__(self) -> Iterator[CellRecord]:
        if not self.path.is_file():
            return
        with self.path.open(encoding="utf-8") as handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                try:
                    yield _from_json(json.loads(line))
                except (json.JSONDecodeError, KeyError, TypeError) as error:
                    # a run killed mid-write leaves a torn last line; anything else is damage
                    if handle.readline() == "":
                        return
                    raise ValueError(f"{self.path}: line {number} is not a cell record "
                                     f"({error})") from None

    def records(self) -> list[CellRecord]:
        return list(self)

    def done(self) -> set[tuple]:
        return {record.key() for record in self}

    def latest(self) -> list[CellRecord]:
        """One record per cell :meth:`~CellRecord.identity`: the last one written (a cell
        rerun under a new protocol supersedes its older records), in file order.

        A checkpoint name (``exlm-small`` in ``exlm-small@<sha>``) keeps only the records
        of its newest weights: report rows are labelled by name, so a retrained
        checkpoint's rows must not average with, or stand beside, its predecessor's."""
        records = list(self)
        newest = {_checkpoint_name(r.model): r.model for r in records if r.model}
        last = {record.identity(): i for i, record in enumerate(records)}
        keep = set(last.values())
        return [record for i, record in enumerate(records) if i in keep
                and (not record.model or newest[_checkpoint_name(record.model)] == record.model)]

    def append(self, record: CellRecord) -> None:
        """Write one line and fsync it, so a crash right after loses nothing."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._drop_torn_tail()
        line = json.dumps(_jsonable(record._asdict()), allow_nan=False)
        with self.path.open("a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())

    def _drop_torn_tail(self) -> None:
        if not self.path.is_file():
            return
        data = self.path.read_bytes()
        if data and not data.endswith(b"\n"):
            self.path.write_bytes(data[: data.rfind(b"\n") + 1])


def _checkpoint_name(model_id: str) -> str:
    """``exlm-small`` of ``exlm-small@3baebce4e322`` (:func:`~exlm_chem.benchmark.encoders.
    checkpoint_id`)."""
    return model_id.rsplit("@", 1)[0]
