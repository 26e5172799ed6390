"""The benchmark report's chart: grouped bars of test ROC-AUC per task and row.

It draws plain numbers (:class:`ChartData`) and knows nothing of benchmark records;
:func:`exlm_chem.benchmark.report.chart_data` builds them. matplotlib is imported inside
:func:`plot_chart`.
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

import numpy as np

from exlm_chem.files.safe_write import atomic_path

__all__ = ["CHANCE", "ChartData", "ChartRow", "QuotedRow", "plot_chart", "y_floor"]

CHANCE = 50.0  # ROC-AUC x100 of a random ranking: the axis starts here when it can


class ChartRow(NamedTuple):
    """One measured row: a bar per task and a hatched bar for its mean."""

    label: str
    budget: str  # what each cell of this row could spend, e.g. "max epochs 1, ..."
    means: Sequence[float]  # [tasks] ROC-AUC x100 over seeds; NaN = not run
    stds: Sequence[float]  # [tasks] std x100 over seeds; NaN = no error bar (one seed)
    mean: float  # over the tasks that were run
    n_tasks: int  # how many tasks ``mean`` covers


class QuotedRow(NamedTuple):
    """Numbers copied from a paper, drawn as hollow markers, never as bars."""

    name: str
    values: Sequence[float]  # [tasks + 1] ROC-AUC x100, the last is the mean; NaN = none


class ChartData(NamedTuple):
    groups: Sequence[str]  # task titles, in bar order (a "Mean" group is added)
    rows: Sequence[ChartRow]
    quoted: Sequence[QuotedRow]
    title: str
    subtitle: str  # provenance: split, seeds, commit, machine


def y_floor(values: Sequence[float]) -> float:
    """Where the y-axis starts: at chance (50) if no value is below it, else at 0.

    A floor anywhere else stretches small gaps; below-chance bars need the whole axis.
    """
    finite = [v for v in values if math.isfinite(v)]
    return CHANCE if all(v >= CHANCE for v in finite) else 0.0


def plot_chart(data: ChartData, path: str | os.PathLike[str]) -> Path:
    """Grouped bar chart saved as PNG (about 120 dpi); written atomically.

    One colour per row, error bars = std over seeds; the last group is each row's mean
    over tasks (hatched), annotated "k/n" when tasks are missing. Each legend entry
    states its row's budget. Quoted rows are hollow markers labelled "(quoted)".
    """
    # An explicit Agg canvas renders headless without switching a caller's pyplot backend
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not data.rows:
        raise ValueError("no benchmark rows to plot")
    n_tasks = len(data.groups)
    x = np.arange(n_tasks + 1, dtype=float)
    width = 0.8 / len(data.rows)
    floor = y_floor([v for row in data.rows for v in (*row.means, row.mean)]
                    + [v for quoted in data.quoted for v in quoted.values])

    fig = Figure(figsize=(max(9.0, 1.3 * (n_tasks + 1) + 0.4 * len(data.rows)), 6.2))
    FigureCanvasAgg(fig)
    ax = fig.add_subplot(1, 1, 1)
    for i, row in enumerate(data.rows):
        colour = f"C{i % 10}"
        offset = x - 0.4 + width * (i + 0.5)
        heights = [v - floor for v in row.means]  # bars rise from the floor
        ax.bar(offset[:-1], heights, width, bottom=floor, yerr=list(row.stds), capsize=2,
               color=colour, label=f"{row.label}\nbudget: {row.budget}",
               error_kw={"elinewidth": 0.8})
        # hatched: the mean group is derived from the bars, not a measured task
        ax.bar(offset[-1:], [row.mean - floor], width, bottom=floor, color=colour,
               hatch="//", edgecolor="white", linewidth=0)
        if 0 < row.n_tasks < n_tasks:
            ax.annotate(f"{row.n_tasks}/{n_tasks}", (offset[-1], row.mean),
                        textcoords="offset points", xytext=(0, 3), ha="center", fontsize=7)
    for quoted, marker in zip(data.quoted, ("o", "s", "^", "D"), strict=False):
        ax.scatter(x, list(quoted.values), marker=marker, s=60, facecolors="none",
                   edgecolors="black", linewidths=1.2, zorder=5,
                   label=f"paper {quoted.name} (quoted)")
    ax.set_xticks(x, [*data.groups, "Mean"])
    ax.set_ylabel("test ROC-AUC (%)" + (", axis from 50 = chance" if floor == CHANCE else ""))
    ax.set_ylim(floor, 100)
    ax.set_xlim(x[0] - 0.5, x[-1] + 0.5)
    ax.grid(axis="y", alpha=0.3)
    ax.legend(fontsize=7.5, loc="upper center", bbox_to_anchor=(0.5, -0.07),
              ncol=min(3, len(data.rows) + len(data.quoted)), frameon=False)
    fig.suptitle(data.title, fontsize=12)
    ax.set_title(data.subtitle, fontsize=8)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120, bbox_inches="tight")
    return Path(path)
