"""The benchmark report's chart: grouped bars of test ROC-AUC per task and row.

matplotlib is imported inside :func:`plot_report`; the numbers come from
:func:`exlm_chem.benchmark.report.summarize`, the quoted rows from the paper's Table 1.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from exlm_chem.benchmark.records import CellRecord
from exlm_chem.benchmark.report import (
    PAPER_PLOT_ROWS,
    TASK_TITLES,
    TASKS,
    _atomic_write,
    _joined,
    _row_mean,
    paper_table,
    summarize,
)

__all__ = ["plot_report"]


def plot_report(records: Sequence[CellRecord], path: str | os.PathLike[str],
                include_paper: bool = True) -> Path:
    """Grouped bar chart of test ROC-AUC x100 per task, saved as PNG (about 120 dpi).

    One colour per label, error bars = std over seeds (none for a single seed); the last
    group is each row's mean over tasks, annotated "k/7" when tasks are missing. With
    ``include_paper``, the paper's EXLM and SMILES-BERT* values are hollow markers
    labelled "(quoted)". Written atomically; returns the path.
    """
    # An explicit Agg canvas renders headless without switching a caller's pyplot backend
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    summary = summarize(records)
    if summary.empty:
        raise ValueError("no benchmark cells to plot")
    labels = list(dict.fromkeys(summary["label"]))
    groups = [*TASKS, "mean"]
    x = np.arange(len(groups), dtype=float)
    width = 0.8 / len(labels)

    fig = Figure(figsize=(max(9.0, 1.3 * len(groups) + 0.4 * len(labels)), 5.6))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    colours = [f"C{i % 10}" for i in range(len(labels))]
    lowest = 100.0
    for i, label in enumerate(labels):
        part = summary[summary["label"] == label].set_index("task")
        means = {t: float(part.loc[t, "roc_auc_mean"]) for t in TASKS if t in part.index}
        heights = [100 * means.get(task, math.nan) for task in TASKS]
        # NaN error = no error bar (a single seed has no spread to show)
        errors = [100 * float(part.loc[task, "roc_auc_std"]) if task in part.index
                  else math.nan for task in TASKS]
        offset = x - 0.4 + width * (i + 0.5)
        ax.bar(offset[:-1], heights, width, yerr=errors, capsize=2, color=colours[i],
               label=label, error_kw={"elinewidth": 0.8})
        row_mean, count = _row_mean(means)
        # hatched: the mean group is derived from the bars, not a measured task
        ax.bar(offset[-1:], [100 * row_mean], width, color=colours[i], hatch="//",
               edgecolor="white", linewidth=0)
        if 0 < count < len(TASKS):
            ax.annotate(f"{count}/{len(TASKS)}", (offset[-1], 100 * row_mean),
                        textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)
        finite = [h for h in [*heights, 100 * row_mean] if math.isfinite(h)]
        lowest = min([lowest, *finite])
    if include_paper:
        rows = paper_table()["rows"]
        for name, marker in zip(PAPER_PLOT_ROWS, ("o", "s"), strict=True):
            quoted = [rows[name].get(g) for g in groups]
            values = [math.nan if v is None else float(v) for v in quoted]
            ax.scatter(x, values, marker=marker, s=60, facecolors="none", edgecolors="black",
                       linewidths=1.2, zorder=5, label=f"paper {name} (quoted)")
            lowest = min([lowest, *[v for v in values if math.isfinite(v)]])
    ax.set_xticks(x, [TASK_TITLES[t] for t in TASKS] + ["Mean"])
    ax.set_ylabel("test ROC-AUC (%)")
    ax.set_ylim(max(0.0, 10 * math.floor((lowest - 5) / 10)), 100)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=8, loc="upper center", bbox_to_anchor=(0.5, -0.08),
              ncol=min(3, len(labels) + 2), frameon=False)
    seeds = " ".join(str(s) for s in sorted({int(r.seed) for r in records}))
    fig.suptitle("MoleculeNet test ROC-AUC, mean ± std over seeds", fontsize=12)
    ax.set_title(f"split {', '.join(dict.fromkeys(summary['split']))} · seeds {seeds} · "
                 f"commit {_joined(list(summary['commit']))} · "
                 f"{_joined(list(summary['machine']))}\n"
                 f"budget: {_joined(list(summary['budget']))}", fontsize=8)
    return _atomic_write(path, lambda tmp: fig.savefig(tmp, format="png", dpi=120,
                                                       bbox_inches="tight"))
