"""Turn finished benchmark cells into a markdown report, CSV tables and a bar chart.

Input is the list of :class:`~.records.CellRecord` rows from ``results.jsonl``
(``ResultsFile(path).records()``). One report row is one ``label``; its cells are the
(label, task) groups, averaged over seeds. The ExLM paper's Table 1 is shown beside our
rows as quoted numbers (:func:`~exlm_chem.benchmark.report_summary.paper_table`), never
mixed with ours. The per-(label, task) table is
:func:`~exlm_chem.benchmark.report_summary.summarize`.

pandas and matplotlib are imported inside the functions that need them, so importing this
module costs only numpy.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from exlm_chem.benchmark.records import CellRecord
from exlm_chem.benchmark.report_summary import TASKS, joined, paper_table, summarize
from exlm_chem.files.safe_write import atomic_path, write_text_atomic

__all__ = [
    "PAPER_PLOT_ROWS",
    "TASK_TITLES",
    "chart_data",
    "markdown_report",
    "plot_report",
    "write_cells_csv",
    "write_csv",
    "write_report",
]

TASK_TITLES: dict[str, str] = {
    "bace": "BACE", "bbbp": "BBBP", "tox21": "Tox21", "sider": "SIDER", "muv": "MUV",
    "clintox": "ClinTox", "toxcast": "ToxCast",
}
# Quoted rows drawn on the chart: the method itself and its same-data MLM twin
PAPER_PLOT_ROWS: tuple[str, ...] = ("EXLM", "SMILES-BERT*")
_MISSING = "–"

_SEEDS_SCAFFOLD = (
    "The scaffold split is deterministic, so a seed changes only model initialisation and "
    "data order (and the random forest's bootstrap), not which molecules are tested; "
    "probe mode (frozen encoder, deterministic classifier) is expected to show std 0. "
)
_SEEDS_OTHER = (
    "On a non-scaffold split the seed may also change which molecules are tested, so the "
    "std includes split variance. "
)
_FOOTNOTE = (
    "Notes. Cells are test-set ROC-AUC x100, mean ± sample standard deviation (ddof=1) "
    "over seeds; \"(n=1)\" marks a single seed, \"–\" a cell not run. {seeds}"
    "Mean = mean over the 7 tasks of the row's per-task means; \"(k/7)\" marks a mean "
    "over only the k tasks that were run, which is not comparable with a full mean. "
    "Mean w/o ClinTox = the same over the 6 other tasks (ClinTox's file gives approved "
    "drugs away by their written charges). "
    "MUV PRC-AUC is the area under the precision-recall curve by the trapezoid rule, "
    "averaged over the MUV sub-tasks scored (17 in all). Rows marked \"paper: ... "
    "(quoted, Table 1)\" are copied from the ExLM paper (authors' split, 3 seeds, mean "
    "only); they were not measured here."
)


def _footnote(splits: Sequence[str]) -> str:
    scaffold_only = all("scaffold" in split for split in splits)
    return _FOOTNOTE.format(seeds=_SEEDS_SCAFFOLD if scaffold_only else _SEEDS_OTHER)


def _cell(mean: float, std: float, n_seeds: int) -> str:
    if not math.isfinite(mean):
        return _MISSING
    if n_seeds == 1 or not math.isfinite(std):
        return f"{100 * mean:.1f} (n=1)"
    return f"{100 * mean:.1f} ± {100 * std:.1f}"


#: ClinTox is scored apart too: its file gives the approved drugs away by their written
#: charges (benchmarks/results/clintox_charge_artifact.md), which SMILES models exploit
TASKS_WITHOUT_CLINTOX = tuple(t for t in TASKS if t != "clintox")


def _row_mean(task_means: dict[str, float],
              tasks: Sequence[str] = TASKS) -> tuple[float, int]:
    """Mean over ``tasks`` present with a finite mean, and how many there were."""
    present = [task_means[t] for t in tasks if math.isfinite(task_means.get(t, math.nan))]
    return (float(np.mean(present)) if present else math.nan), len(present)


def _mean_cell(task_means: dict[str, float], tasks: Sequence[str] = TASKS,
               scale: float = 100.0) -> str:
    mean, count = _row_mean(task_means, tasks)
    if count == 0:
        return _MISSING
    text = f"{scale * mean:.1f}"
    return text if count == len(tasks) else f"{text} ({count}/{len(tasks)})"


def _quoted(value: float | None) -> str:
    return _MISSING if value is None else f"{value:.1f}"


def _md_table(header: Sequence[str], rows: Sequence[Sequence[str]],
              text_columns: Sequence[int] = (0,)) -> list[str]:
    align = ["---" if i in text_columns else "---:" for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(align) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return lines


def _fmt_number(value: float, digits: int = 1) -> str:
    return _MISSING if not math.isfinite(value) else f"{value:.{digits}f}"


def markdown_report(records: Sequence[CellRecord], title: str = "MoleculeNet benchmark",
                    include_paper: bool = True, command: str | None = None) -> str:
    """The benchmark as markdown: provenance header, ROC-AUC table, wall times, notes.

    Parameters
    ----------
    records
        Finished cells.
    title
        First-level heading.
    include_paper
        Append the paper's Table 1 rows, marked as quoted.
    command
        The command line that produced ``records``, shown in the header.

    Returns
    -------
    str
        Markdown text ending in a newline.
    """
    summary = summarize(records)
    if summary.empty:
        raise ValueError("no benchmark cells to report")
    labels = list(dict.fromkeys(summary["label"]))
    splits = list(dict.fromkeys(summary["split"]))
    seeds = sorted({int(r.seed) for r in records})

    lines = [f"# {title}", ""]
    split_text = ", ".join(splits)
    if len(splits) > 1:
        split_text += " (MIXED: rows on different splits are not comparable)"
    lines += [f"- split: {split_text}",
              f"- seeds: {' '.join(str(s) for s in seeds)}",
              f"- machine(s): {joined(list(summary['machine']))}",
              f"- commit(s): {joined(list(summary['commit']))}"]
    if command:
        lines.append(f"- command: `{command}`")
    lines.append("- budget per row:")
    for label in labels:
        part = summary[summary["label"] == label]
        lines.append(f"  - {label}: {joined(list(part['budget']))}")
    lines.append("")

    from exlm_chem.benchmark.report_regression import regression_markdown, regression_records

    regression = regression_records(records)
    classified = {r.label for r in records if r.task_type != "regression"}
    header = ["Method", *[TASK_TITLES[t] for t in TASKS], "Mean", "Mean w/o ClinTox",
              "MUV PRC-AUC"]
    table = []
    for label in (label for label in labels if label in classified):
        part = summary[summary["label"] == label].set_index("task")
        cells, means = [], {}
        for task in TASKS:
            if task in part.index:
                row = part.loc[task]
                means[task] = float(row["roc_auc_mean"])
                cells.append(_cell(row["roc_auc_mean"], row["roc_auc_std"], int(row["n_seeds"])))
            else:
                cells.append(_MISSING)
        prc = (_cell(part.loc["muv", "prc_auc_mean"], part.loc["muv", "prc_auc_std"],
                     int(part.loc["muv", "n_seeds"])) if "muv" in part.index else _MISSING)
        table.append([label, *cells, _mean_cell(means),
                      _mean_cell(means, TASKS_WITHOUT_CLINTOX), prc])
    if include_paper:
        for name, values in paper_table()["rows"].items():
            quoted = {t: math.nan if values.get(t) is None else float(values[t])
                      for t in TASKS}  # already x100
            table.append([f"paper: {name} (quoted, Table 1)",
                          *[_quoted(values.get(t)) for t in TASKS],
                          _quoted(values.get("mean")),
                          _mean_cell(quoted, TASKS_WITHOUT_CLINTOX, scale=1.0), _MISSING])
    if classified:
        lines += ["## Test ROC-AUC (%)", "", *_md_table(header, table), ""]
    lines += _valid_markdown(summary)
    lines += regression_markdown(regression)
    regression_tasks = {r.task for r in regression}
    others = [t for t in dict.fromkeys(summary["task"])
              if t not in TASKS and t not in regression_tasks]
    if others:
        lines += [f"Tasks outside Table 1 (in summary.csv only): {', '.join(others)}", ""]

    from exlm_chem.benchmark.report_calibration import calibration_markdown

    lines += calibration_markdown(records)
    wall_header = ["Method", "Task", "Seeds", "Wall s (mean)", "Wall s (max)",
                   "Epochs (mean)", "Stopped early", "Budget"]
    wall_rows = [[row.label, row.task, row.seeds, _fmt_number(row.wall_s_mean),
                  _fmt_number(row.wall_s_max), _fmt_number(row.epochs_mean),
                  f"{row.n_stopped_early}/{row.n_seeds}", row.budget]
                 for row in summary.itertuples(index=False)]
    lines += ["## Wall time per cell", "", *_md_table(wall_header, wall_rows, (0, 1, 2, 7)), ""]
    if classified:
        lines += [_footnote(splits), ""]
    return "\n".join(lines)


def _valid_markdown(summary: Any) -> list[str]:
    """The held-out valid parts' figures (``--fit-on train``): what chooses defaults."""
    held = summary[summary["valid_mean"].notna()]
    if held.empty:
        return []
    tasks = list(dict.fromkeys(held["task"]))
    rows = []
    for label in dict.fromkeys(held["label"]):
        part = held[held["label"] == label].set_index("task")
        rows.append([label, *[_cell(part.loc[t, "valid_mean"], part.loc[t, "valid_std"],
                                    int(part.loc[t, "n_seeds"])) if t in part.index
                              else _MISSING for t in tasks]])
    return ["## Held-out valid parts (ROC-AUC %; regression RMSE x100)",
            "", "Fitted on the train parts alone, scored on the valid parts: the figures "
            "a default is chosen on, before a test part is read.", "",
            *_md_table(["Method", *[TASK_TITLES.get(t, t) for t in tasks]], rows), ""]


def write_csv(records: Sequence[CellRecord], path: str | os.PathLike[str]) -> Path:
    """Write :func:`summarize` as CSV (atomically); returns the path."""
    frame = summarize(records)
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)
    return Path(path)


def write_cells_csv(records: Sequence[CellRecord], path: str | os.PathLike[str]) -> Path:
    """Write every cell as one CSV row (atomically); list/dict fields are JSON text."""
    import pandas as pd

    rows = []
    for record in records:
        row = record._asdict()
        for name in ("per_task_roc_auc", "per_task_rmse", "budget", "settings"):
            row[name] = json.dumps(row[name], sort_keys=True, default=str)
        rows.append(row)
    frame = pd.DataFrame(rows, columns=list(CellRecord._fields))
    with atomic_path(path) as tmp:
        frame.to_csv(tmp, index=False)
    return Path(path)


def chart_data(records: Sequence[CellRecord], include_paper: bool = True) -> Any:
    """The numbers of the report's chart (ROC-AUC x100 per row and task, budgets,
    provenance), as :class:`~exlm_chem.benchmark.report_plot.ChartData`."""
    from exlm_chem.benchmark.report_plot import ChartData, ChartRow, QuotedRow

    summary = summarize([r for r in records if r.task_type != "regression"])
    if summary.empty:
        raise ValueError("no benchmark cells to plot")
    rows = []
    for label in dict.fromkeys(summary["label"]):
        part = summary[summary["label"] == label].set_index("task")
        means = {t: float(part.loc[t, "roc_auc_mean"]) for t in TASKS if t in part.index}
        mean, count = _row_mean(means)
        rows.append(ChartRow(
            label=label, budget=_budget_label(list(part["budget"])),
            means=[100 * means.get(t, math.nan) for t in TASKS],
            stds=[100 * float(part.loc[t, "roc_auc_std"]) if t in part.index else math.nan
                  for t in TASKS],
            mean=100 * mean, n_tasks=count))
    quoted = []
    if include_paper:
        paper = paper_table()["rows"]
        for name in PAPER_PLOT_ROWS:
            values = [paper[name].get(g) for g in (*TASKS, "mean")]
            quoted.append(QuotedRow(name, [math.nan if v is None else float(v)
                                           for v in values]))
    seeds = " ".join(str(s) for s in sorted({int(r.seed) for r in records}))
    subtitle = (f"split {', '.join(dict.fromkeys(summary['split']))} · seeds {seeds} · "
                f"commit {joined(list(summary['commit']))} · "
                f"{joined(list(summary['machine']))}")
    return ChartData([TASK_TITLES[t] for t in TASKS], rows, quoted,
                     "MoleculeNet test ROC-AUC, mean ± std over seeds", subtitle)


def _budget_label(budgets: Sequence[str]) -> str:
    text = joined(budgets)
    return "no limit" if text in ("", "none") else text


def plot_report(records: Sequence[CellRecord], path: str | os.PathLike[str],
                include_paper: bool = True) -> Path:
    """The report's chart as PNG (see :func:`~.report_plot.plot_chart`); returns the path."""
    from exlm_chem.benchmark.report_plot import plot_chart

    return plot_chart(chart_data(records, include_paper), path)


def write_report(records: Sequence[CellRecord], out_dir: str | os.PathLike[str],
                 command: str | None = None) -> dict[str, Path]:
    """Write report.md, summary.csv, cells.csv and report.png into ``out_dir``, and
    report_regression.png when there are regression cells (report.png then only when
    there are classification cells too).

    Each file is written to a temporary name and renamed, so a reader never sees a half
    file. Returns ``{"markdown", "summary_csv", "cells_csv", "plot", "regression_plot"}``
    -> path, for the files written.
    """
    from exlm_chem.benchmark.report_regression import plot_regression, regression_records

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    paths = {
        "markdown": write_text_atomic(out / "report.md", markdown_report(records, command=command)),
        "summary_csv": write_csv(records, out / "summary.csv"),
        "cells_csv": write_cells_csv(records, out / "cells.csv"),
    }
    regression = regression_records(records)
    if len(regression) < len(records):
        paths["plot"] = plot_report(records, out / "report.png")
    if regression:
        seeds = " ".join(str(s) for s in sorted({int(r.seed) for r in regression}))
        subtitle = (f"split {joined([r.split for r in regression])} · seeds {seeds} · "
                    f"commit {joined([r.commit for r in regression])} · "
                    f"{joined([r.machine for r in regression])}")
        paths["regression_plot"] = plot_regression(regression,
                                                   out / "report_regression.png", subtitle)
    return paths
