"""Finished benchmark cells summarised per (label, task), and the paper's quoted Table 1.

:func:`summarize` is the table every report output starts from (the markdown report, the
CSV tables and the chart of :mod:`exlm_chem.benchmark.report`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from importlib import resources
from typing import Any

import numpy as np

from exlm_chem.benchmark.records import Budget, CellRecord

__all__ = ["SUMMARY_COLUMNS", "TASKS", "joined", "paper_table", "summarize"]

# Column order of the paper's Table 1, so our table reads side by side with it
TASKS: tuple[str, ...] = ("bace", "bbbp", "tox21", "sider", "muv", "clintox", "toxcast")
_PAPER_FILE = "data/paper_table1.json"

SUMMARY_COLUMNS = [
    "label", "method", "mode", "model", "task", "split", "n_seeds", "seeds",
    "roc_auc_mean", "roc_auc_std", "prc_auc_mean", "prc_auc_std",
    "rmse_mean", "rmse_std", "mae_mean", "mae_std",  # regression tasks only (else NaN)
    # the main figure (ROC-AUC; regression RMSE) on held-out valid parts (``--fit-on
    # train``; else NaN)
    "valid_mean", "valid_std",
    "wall_s_mean", "wall_s_max", "epochs_mean", "n_stopped_early", "budget",
    "commit", "machine",
]


def paper_table() -> dict[str, Any]:
    """The ExLM paper's Table 1, quoted (ROC-AUC in percent as printed).

    Returns
    -------
    dict
        ``{"_source": {...}, "rows": {name: {task: float | None, ..., "mean": ...}}}``;
        row names as printed (``"EXLM"``, ``"SMILES-BERT*"``, ...), task keys lower case,
        ``None`` where the paper prints "-".
    """
    text = resources.files("exlm_chem").joinpath(_PAPER_FILE).read_text("utf-8")
    return json.loads(text)


def joined(values: Sequence[Any]) -> str:
    """Unique non-empty values, first-appearance order, comma separated."""
    return ", ".join(dict.fromkeys(str(v) for v in values if v is not None and v != ""))


def _budget_text(budget: dict[str, Any]) -> str:
    limits = Budget(max_epochs=budget.get("max_epochs"), max_minutes=budget.get("max_minutes"))
    if limits.max_epochs is None and limits.max_minutes is None:
        return "none"
    return limits.describe()


def _mean_std(values: Sequence[float]) -> tuple[float, float, int]:
    """Mean and sample std of the finite values; std is NaN below two values."""
    finite = np.asarray([v for v in values if v is not None and math.isfinite(v)], float)
    if finite.size == 0:
        return math.nan, math.nan, 0
    std = float(np.std(finite, ddof=1)) if finite.size > 1 else math.nan
    return float(np.mean(finite)), std, int(finite.size)


def _groups(records: Sequence[CellRecord]) -> dict[tuple[str, str], list[CellRecord]]:
    """(label, task) -> records; labels in first-appearance order, tasks in Table 1 order."""
    labels: dict[str, None] = {}
    by_key: dict[tuple[str, str], list[CellRecord]] = {}
    for record in records:
        labels.setdefault(record.label, None)
        by_key.setdefault((record.label, record.task), []).append(record)

    def task_rank(task: str) -> int:
        return TASKS.index(task) if task in TASKS else len(TASKS)

    ordered: dict[tuple[str, str], list[CellRecord]] = {}
    for label in labels:
        tasks = [task for (lab, task) in by_key if lab == label]
        for task in sorted(tasks, key=task_rank):  # stable: unknown tasks keep their order
            ordered[(label, task)] = by_key[(label, task)]
    return ordered


def summarize(records: Sequence[CellRecord]) -> Any:
    """One row per (label, task), aggregated over seeds.

    Parameters
    ----------
    records
        Finished cells, e.g. ``ResultsFile(path).records()``.

    Returns
    -------
    pandas.DataFrame
        Columns :data:`SUMMARY_COLUMNS`. Metrics stay fractions (0-1); ``*_std`` is the
        sample std (ddof=1) over seeds, NaN for a single seed; non-finite metrics are left
        out of mean and std. ``n_seeds`` counts cells, ``seeds`` lists them ("0 1 2").

    Raises
    ------
    ValueError
        If one (label, task) mixes splits, or holds the same seed twice (e.g. two budgets
        under one label): such a group is not one experiment.
    """
    import pandas as pd

    rows = []
    for (label, task), group in _groups(records).items():
        splits = sorted({r.split for r in group})
        if len(splits) > 1:
            raise ValueError(f"label {label!r}, task {task!r}: cells use different splits "
                             f"{splits}; a report compares one split")
        seeds = [int(r.seed) for r in group]
        repeated = sorted({s for s in seeds if seeds.count(s) > 1})
        if repeated:
            raise ValueError(f"label {label!r}, task {task!r}: seed(s) {repeated} appear "
                             "more than once (different budgets or models under one "
                             "label?); filter the records or give them distinct labels")
        walls = np.asarray([r.wall_s for r in group], float)
        epochs = [r.epochs for r in group if r.epochs is not None]
        row = {"label": label, "task": task, "split": splits[0], "n_seeds": len(group),
               "seeds": " ".join(str(s) for s in sorted(seeds)),
               "wall_s_mean": float(walls.mean()), "wall_s_max": float(walls.max()),
               "epochs_mean": float(np.mean(epochs)) if epochs else math.nan,
               "n_stopped_early": sum(bool(r.stopped_early) for r in group),
               "budget": joined([_budget_text(r.budget) for r in group])}
        for name in ("method", "mode", "model", "commit", "machine"):
            row[name] = joined([getattr(r, name) for r in group])
        for metric in ("roc_auc", "prc_auc", "rmse", "mae"):
            row[f"{metric}_mean"], row[f"{metric}_std"], _ = _mean_std(
                [getattr(r, metric) for r in group])
        row["valid_mean"], row["valid_std"], _ = _mean_std([r.valid_score for r in group])
        rows.append(row)
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS)
