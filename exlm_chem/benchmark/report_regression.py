"""The regression part of the benchmark report: RMSE/MAE tables and a chart.

Regression cells (``CellRecord.task_type == "regression"``: ESOL, FreeSolv,
Lipophilicity) are scored by test RMSE (the headline) and MAE, in the labels' units;
lower is better, and the tables and chart say so. Each (label, task) is averaged over
its seeds like the ROC-AUC table. Cells whose method returned validation predictions also
carry 90 % split-conformal interval coverage and width
(:func:`~exlm_chem.benchmark.scoring.score_intervals`), shown in their own table.
matplotlib is imported inside :func:`plot_regression`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from exlm_chem.benchmark.records import CellRecord
from exlm_chem.files.safe_write import atomic_path

__all__ = ["REGRESSION_TASKS", "RegressionRow", "plot_regression", "regression_markdown",
           "regression_records", "regression_rows"]

REGRESSION_TASKS: tuple[str, ...] = ("esol", "freesolv", "lipo")
TITLES = {"esol": "ESOL (log mol/L)", "freesolv": "FreeSolv (kcal/mol)",
          "lipo": "Lipophilicity (log D)"}
_MISSING = "–"


class RegressionRow(NamedTuple):
    """One (label, task) over its seeds; NaN where not measured."""

    label: str
    task: str
    n_seeds: int
    rmse_mean: float
    rmse_std: float  # sample std (ddof=1); NaN for one seed
    mae_mean: float
    mae_std: float
    coverage_mean: float = math.nan  # 90 % split-conformal test coverage, mean over seeds
    width_mean: float = math.nan  # its interval width (2q), labels' units
    n_interval_seeds: int = 0  # seeds whose record carries the interval figures


def regression_records(records: Sequence[CellRecord]) -> list[CellRecord]:
    return [r for r in records if r.task_type == "regression"]


def _mean_std(values: Sequence[float | None]) -> tuple[float, float]:
    finite = np.asarray([v for v in values if v is not None and math.isfinite(v)], float)
    if finite.size == 0:
        return math.nan, math.nan
    return float(finite.mean()), float(finite.std(ddof=1)) if finite.size > 1 else math.nan


def regression_rows(records: Sequence[CellRecord]) -> list[RegressionRow]:
    """One row per (label, task) of the regression cells, labels in first-seen order."""
    groups: dict[tuple[str, str], list[CellRecord]] = {}
    for record in regression_records(records):
        groups.setdefault((record.label, record.task), []).append(record)
    labels = list(dict.fromkeys(label for label, _ in groups))
    tasks = [t for t in REGRESSION_TASKS if any(t == task for _, task in groups)]
    tasks += [t for t in dict.fromkeys(task for _, task in groups) if t not in tasks]
    rows = []
    for label in labels:
        for task in tasks:
            group = groups.get((label, task))
            if group:
                rmse, mae = (_mean_std([getattr(r, m) for r in group]) for m in ("rmse", "mae"))
                cover, width = (_mean_std([getattr(r, m) for r in group])[0]
                                for m in ("interval_coverage", "interval_width"))
                n_intervals = sum(r.interval_coverage is not None
                                  and math.isfinite(r.interval_coverage) for r in group)
                rows.append(RegressionRow(label, task, len(group), *rmse, *mae, cover, width,
                                          n_intervals))
    return rows


def _metric_cell(row: RegressionRow, metric: str) -> str:
    mean, std = getattr(row, f"{metric}_mean"), getattr(row, f"{metric}_std")
    if not math.isfinite(mean):
        return _MISSING
    return f"{mean:.3f} (n=1)" if row.n_seeds == 1 or not math.isfinite(std) else (
        f"{mean:.3f} ± {std:.3f}")


def _interval_cell(row: RegressionRow) -> str:
    if row.n_interval_seeds == 0 or not math.isfinite(row.coverage_mean):
        return _MISSING
    return f"{row.coverage_mean:.3f} / {row.width_mean:.3f} (n={row.n_interval_seeds})"


def _table(rows: Sequence[RegressionRow], cell: Callable[..., str], *args: str) -> list[str]:
    """One line per method, one column per task; ``cell(row, *args)`` fills a present one."""
    tasks = list(dict.fromkeys(r.task for r in rows))
    header = ["Method", *[TITLES.get(t, t) for t in tasks]]
    lines = ["| " + " | ".join(header) + " |", "|---|" + "---:|" * len(tasks)]
    for label in dict.fromkeys(r.label for r in rows):
        by_task = {r.task: r for r in rows if r.label == label}
        cells = [cell(by_task[t], *args) if t in by_task else _MISSING for t in tasks]
        lines.append("| " + " | ".join([label.replace("|", "\\|"), *cells]) + " |")
    return lines


def regression_markdown(records: Sequence[CellRecord]) -> list[str]:
    """Markdown lines: the RMSE table (headline), the MAE table and the conformal
    interval table; [] without cells."""
    rows = regression_rows(records)
    if not rows:
        return []
    note = ("Test-set error in the labels' units, **lower is better**; mean ± sample std "
            "(ddof=1) over seeds, \"(n=1)\" a single seed, \"–\" not run.")
    return ["## Regression: test RMSE (lower is better)", "", note, "",
            *_table(rows, _metric_cell, "rmse"), "",
            "## Regression: test MAE (lower is better)", "", *_table(rows, _metric_cell, "mae"), "",
            "## Regression: interval coverage / width (90 % split-conformal)", "",
            "Per task, q = the ceil((n+1)·0.9)-th smallest absolute residual of the n "
            "labelled validation rows; test coverage = fraction of test labels inside "
            "prediction ± q (target 0.9), width = 2q in the labels' units; mean over seeds "
            "carrying them (n), \"–\" where the method returned no validation predictions.",
            "", *_table(rows, _interval_cell), ""]


def plot_regression(records: Sequence[CellRecord], path: str | os.PathLike[str],
                    subtitle: str = "") -> Path:
    """Grouped bars of test RMSE per task (one panel per task: units differ), error bars
    = std over seeds; written atomically as PNG."""
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    rows = regression_rows(records)
    if not rows:
        raise ValueError("no regression cells to plot")
    tasks = list(dict.fromkeys(r.task for r in rows))
    labels = list(dict.fromkeys(r.label for r in rows))
    fig = Figure(figsize=(max(9.0, 3.2 * len(tasks)), 5.2))
    FigureCanvasAgg(fig)
    for i, task in enumerate(tasks):
        ax = fig.add_subplot(1, len(tasks), i + 1)
        by_label = {r.label: r for r in rows if r.task == task}
        for j, label in enumerate(labels):
            row = by_label.get(label)
            height = row.rmse_mean if row is not None else math.nan
            err = row.rmse_std if row is not None and math.isfinite(row.rmse_std) else 0.0
            ax.bar([j], [height], 0.8, yerr=[err], capsize=3, color=f"C{j % 10}",
                   label=label if i == 0 else None)
        ax.set_xticks([])
        ax.set_title(TITLES.get(task, task), fontsize=10)
        ax.set_ylabel("test RMSE (lower is better)" if i == 0 else "")
        ax.grid(axis="y", alpha=0.3)
    fig.legend(fontsize=8, loc="lower center", ncol=min(3, len(labels)), frameon=False)
    fig.suptitle("MoleculeNet regression: test RMSE, mean ± std over seeds (lower is better)",
                 fontsize=12)
    if subtitle:
        fig.text(0.5, 0.9, subtitle, ha="center", fontsize=8)
    fig.subplots_adjust(bottom=0.1 + 0.05 * math.ceil(len(labels) / 3), top=0.84)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    return Path(path)
