"""The TDC ADMET report: our rows placed among the published leaderboard entries.

The published entries are facts copied into ``exlm_chem/data/tdc_admet_leaderboard.json`` with their
source, and are labelled *published*; the rows built from ``results.jsonl`` are *measured
here*. A row's figure per task is TDC's: the metric's mean and population sd over seeds,
each rounded to 3 decimals. Its rank is the place that figure takes among the published
entries (one plus the entries strictly better: a tie shares the place).

pandas and matplotlib are imported inside the functions that need them.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from exlm_chem.benchmark.records import CellRecord
from exlm_chem.files.safe_write import atomic_path, write_text_atomic

__all__ = ["ANCHORS", "RowScore", "leaderboard", "markdown_report", "placed", "published_rank",
           "row_labels", "row_scores", "shipped_row", "write_report"]

#: Published entries every summary shows beside our rows.
ANCHORS = ("Chemprop-RDKit", "MiniMol", "MapLight", "MapLight + GNN")
_MISSING = "–"


@cache
def leaderboard() -> dict[str, Any]:
    """The published leaderboard: ``{"sources", "tasks": {task: {"metric",
    "higher_is_better", "entries": [{"model", "mean", "sd", "source"}], ...}}}``, each
    task's entries best first."""
    text = resources.files("exlm_chem.data").joinpath(
        "tdc_admet_leaderboard.json").read_text(encoding="utf-8")
    return json.loads(text)


class RowScore(NamedTuple):
    """One measured row on one task, over its seeds."""

    label: str
    task: str
    metric: str
    mean: float  # TDC's figure: mean over seeds of the test metric, rounded to 3 decimals
    sd: float  # population sd (np.std), rounded to 3 decimals
    valid_mean: float | None  # mean of the held-out valid parts' metric (None: not scored)
    seeds: tuple[int, ...]
    wall_s: float  # the cells' wall time summed (one thread per cell: about CPU time, at load)
    cpu_s: float = 0.0  # the CPU time of the cells that record it, summed
    cpu_cells: int = 0  # how many of the cells record their CPU time
    cells: int = 0  # how many cells


#: A default row's classification cells measured at an older version stand in the newer
#: version's default row too when the newer version kept the classifier's defaults: 0.4.0
#: changed the regressor's (``target_transform="auto"``) and 0.5.3 the regressor's trees
#: (MAE and RMSE averaged), nothing of the classifier, whose predictions are the older
#: version's bit for bit (benchmarks/results/tdc_admet/README.md).
SAME_CLASSIFIER = {"(estimator 0.3.0 defaults)": "(estimator 0.4.0 defaults)",
                   "(estimator 0.5.1 defaults)": "(estimator 0.5.3 defaults)"}
#: The same for regression cells: 0.5.4 changed how the classifier mixes its network and
#: its trees (log-odds), 0.5.5 the classifier's weight (``tree_weight="auto"``), nothing of
#: the regressor.
SAME_REGRESSOR = {"(estimator 0.5.3 defaults)": "(estimator 0.5.4 defaults)",
                  "(estimator 0.5.4 defaults)": "(estimator 0.5.5 defaults)"}
#: The same for classification cells whose fit held out too few molecules for 0.5.5's
#: ``tree_weight="auto"`` to choose (:func:`holds_out_too_few`): there 0.5.5 fits what
#: 0.5.4 fitted.
SAME_SMALL_CLASSIFIER = {"(estimator 0.5.4 defaults)": "(estimator 0.5.5 defaults)"}


def holds_out_too_few(record: CellRecord) -> bool:
    """Whether the cell's fit (``n_train`` molecules) held out fewer molecules than
    ``tree_weight="auto"`` chooses on, whatever its scaffolds."""
    from exlm_chem.data.splits import most_held_out
    from exlm_chem.sklearn.ensemble import AUTO_MIN_HELD_OUT

    share = record.settings.get("validation_fraction", 0.1)
    return most_held_out(record.n_train, share) < AUTO_MIN_HELD_OUT


#: what the rows of cells fitted on all of train_val (``--fit-on train_val``) add to their
#: label: the same method fitted on the train part alone is another row
FIT_ON_TRAIN_VAL = " [fit on train_val]"


def row_labels(record: CellRecord) -> list[str]:
    """The rows a record counts in: its own, and the newer default row that kept its
    classifier (a classification cell, :data:`SAME_CLASSIFIER`) or its regressor
    (:data:`SAME_REGRESSOR`); a cell fitted on all of train_val counts in its label's
    :data:`FIT_ON_TRAIN_VAL` row."""
    from exlm_chem.benchmark.tdc import TDC_FIT_SPLIT

    same = dict(SAME_REGRESSOR)
    if record.task_type == "classification":
        same = dict(SAME_CLASSIFIER, **(SAME_SMALL_CLASSIFIER if holds_out_too_few(record)
                                        else {}))
    labels = [record.label]
    while (older := next((o for o in same if labels[-1].endswith(o)), None)) is not None:
        labels.append(labels[-1].replace(older, same.pop(older)))  # 0.5.3 -> 0.5.4 -> 0.5.5
    if record.split == TDC_FIT_SPLIT:
        labels = [label + FIT_ON_TRAIN_VAL for label in labels]
    return labels


def row_scores(records: Sequence[CellRecord]) -> list[RowScore]:
    """One :class:`RowScore` per (label, task) of the records that carry a TDC metric, in
    the order rows and tasks first appear (a record may count in two rows:
    :data:`SAME_CLASSIFIER`, :data:`SAME_REGRESSOR`)."""
    groups: dict[tuple[str, str], list[CellRecord]] = {}
    for record in records:
        if record.metric and record.score is not None:
            for label in row_labels(record):
                groups.setdefault((label, record.task), []).append(record)
    rows = []
    for (label, task), cells in groups.items():
        scores = np.array([c.score for c in cells], dtype=np.float64)
        valid = [c.valid_score for c in cells if c.valid_score is not None]
        rows.append(RowScore(label, task, cells[0].metric, round(float(scores.mean()), 3),
                             round(float(scores.std()), 3),
                             round(float(np.mean(valid)), 4) if valid else None,
                             tuple(sorted(int(c.seed) for c in cells)),
                             round(sum(c.wall_s for c in cells), 1),
                             round(sum(c.cpu_s for c in cells if c.cpu_s is not None), 1),
                             sum(c.cpu_s is not None for c in cells), len(cells)))
    return rows


def _better(a: float, b: float, higher_is_better: bool) -> bool:
    return a > b if higher_is_better else a < b


def published_rank(task: str, value: float) -> tuple[int, int]:
    """(rank of ``value`` among the published entries of ``task``, entries + 1)."""
    board = leaderboard()["tasks"][task]
    ahead = sum(_better(e["mean"], value, board["higher_is_better"]) for e in board["entries"])
    return ahead + 1, len(board["entries"]) + 1


def _anchor(task: str, model: str) -> dict[str, Any] | None:
    entries = leaderboard()["tasks"][task]["entries"]
    return next((e for e in entries if e["model"] == model), None)


def _anchor_rank(task: str, model: str) -> int | None:
    """The anchor's own place on the published board (1 + entries strictly better)."""
    entry = _anchor(task, model)
    if entry is None:
        return None
    board = leaderboard()["tasks"][task]
    return 1 + sum(_better(e["mean"], entry["mean"], board["higher_is_better"])
                   for e in board["entries"] if e is not entry)


def placed(task: str, rows: Sequence[RowScore]) -> list[tuple[str, str, float, float, str]]:
    """The published entries of ``task`` with ``rows`` inserted where they rank:
    ``(place, model, mean, sd, "published" | "measured here")``, best first."""
    board = leaderboard()["tasks"][task]
    higher = board["higher_is_better"]
    items = [(e["model"], e["mean"], e["sd"], "published") for e in board["entries"]]
    items += [(r.label, r.mean, r.sd, "measured here") for r in rows if r.task == task]
    # a measured row goes before published entries it ties with: its rank shares the place
    items.sort(key=lambda i: ((-i[1] if higher else i[1]), i[3] == "published"))
    out, place = [], 0
    for k, (model, mean, sd, kind) in enumerate(items):
        if k == 0 or _better(items[k - 1][1], mean, higher):
            place = k + 1
        out.append((str(place), model, mean, sd, kind))
    return out


def _fmt(value: float | None, sd: float | None = None) -> str:
    if value is None:
        return _MISSING
    return f"{value:.3f}" if sd is None else f"{value:.3f} ± {sd:.3f}"


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i == 0 else "---:" for i in range(len(header))) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return lines


class RowSummary(NamedTuple):
    """A measured row across the tasks it has."""

    label: str
    tasks: int
    mean_rank: float
    ahead_of: dict[str, tuple[int, int]]  # anchor -> (tasks ahead, tasks the anchor has)
    top3: int
    anchor_mean_rank: dict[str, tuple[float, int]]  # anchor -> (its mean rank, tasks) there
    min_seeds: int
    wall_s: float
    cpu_s: float  # summed over the cells that record it
    cpu_cells: int
    cells: int


def summarise_row(label: str, rows: Sequence[RowScore]) -> RowSummary:
    """Mean rank of one row over its tasks, how often it is ahead of each anchor's
    published figure, its top-3 count, and each anchor's own mean rank on those tasks."""
    mine = [r for r in rows if r.label == label]
    ranks = [published_rank(r.task, r.mean)[0] for r in mine]
    ahead, anchor_ranks = {}, {}
    for anchor in ANCHORS:
        has = [(r, _anchor(r.task, anchor)) for r in mine]
        has = [(r, e) for r, e in has if e is not None]
        higher = {r.task: leaderboard()["tasks"][r.task]["higher_is_better"] for r, _ in has}
        ahead[anchor] = (sum(_better(r.mean, e["mean"], higher[r.task]) for r, e in has),
                         len(has))
        places = [_anchor_rank(r.task, anchor) for r, _ in has]
        anchor_ranks[anchor] = (float(np.mean(places)) if places else float("nan"),
                                len(places))
    return RowSummary(label, len(mine), float(np.mean(ranks)) if ranks else float("nan"),
                      ahead, sum(r <= 3 for r in ranks), anchor_ranks,
                      min((len(r.seeds) for r in mine), default=0),
                      sum(r.wall_s for r in mine), sum(r.cpu_s for r in mine),
                      sum(r.cpu_cells for r in mine), sum(r.cells for r in mine))


def _labels(rows: Sequence[RowScore]) -> list[str]:
    return list(dict.fromkeys(r.label for r in rows))


def markdown_report(records: Sequence[CellRecord], command: str | None = None) -> str:
    """The report: the summary across tasks, the per-task summary, then each task's
    leaderboard with our rows inserted."""
    rows = row_scores(records)
    tasks = [t for t in leaderboard()["tasks"] if any(r.task == t for r in rows)]
    commits = sorted({r.commit for r in records if r.metric})
    machines = sorted({r.machine for r in records if r.metric})
    lines = ["# TDC ADMET benchmark group: measured rows among the published entries", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    lines += [f"Measured here: commit(s) {', '.join(commits)}; machine(s) "
              f"{'; '.join(machines)}. Each figure is TDC's: the test metric's mean ± "
              "population sd over seeds, rounded to 3 decimals; a rank is the place it "
              "takes among the *published* entries (ties share a place). Published "
              "figures: " + "; ".join(leaderboard()["sources"]) + ".", ""]
    lines += ["## Across tasks", ""]
    header = ["row", "tasks", "seeds (min)", "mean rank",
              *[f"ahead of {a}" for a in ANCHORS[:2]], "top 3",
              *[f"{a}'s mean rank there" for a in ANCHORS], "cell-hours (wall)",
              "CPU-hours (cells that record it)"]
    table = []
    for label in _labels(rows):
        s = summarise_row(label, rows)
        table.append([label, str(s.tasks), str(s.min_seeds), f"{s.mean_rank:.2f}",
                      *[f"{s.ahead_of[a][0]} / {s.ahead_of[a][1]}" for a in ANCHORS[:2]],
                      str(s.top3),
                      *[f"{s.anchor_mean_rank[a][0]:.2f} ({s.anchor_mean_rank[a][1]})"
                        for a in ANCHORS], f"{s.wall_s / 3600:.2f}",
                      f"{s.cpu_s / 3600:.2f} ({s.cpu_cells} of {s.cells})"])
    lines += [*_table(header, table), ""]
    lines += ["## Per task", ""]
    header = ["task", "metric", *[f"{label}" for label in _labels(rows)],
              *[f"{a} (published)" for a in ANCHORS[:2]], "best (published)"]
    table = []
    for task in tasks:
        board = leaderboard()["tasks"][task]
        arrow = "↑" if board["higher_is_better"] else "↓"
        cells = []
        for label in _labels(rows):
            mine = next((r for r in rows if r.label == label and r.task == task), None)
            if mine is None:
                cells.append(_MISSING)
                continue
            rank, n = published_rank(task, mine.mean)
            cells.append(f"{_fmt(mine.mean, mine.sd)} (#{rank}/{n}, n={len(mine.seeds)})")
        anchors = [_anchor(task, a) for a in ANCHORS[:2]]
        best = board["entries"][0]
        table.append([task, f"{board['metric']} {arrow}",
                      *cells, *[_fmt(e["mean"]) if e else _MISSING for e in anchors],
                      f"{_fmt(best['mean'])} ({best['model']})"])
    lines += [*_table(header, table), ""]
    lines += ["## Validation parts (what defaults are chosen on)", "",
              "Mean over seeds of the task's metric on the held-out valid part of "
              "train_val (never fitted on; the test part is not read to choose).", ""]
    header = ["task", *_labels(rows)]
    table = [[task, *[_fmt(next((r.valid_mean for r in rows
                                 if r.label == label and r.task == task), None))
                      for label in _labels(rows)]] for task in tasks]
    lines += [*_table(header, table), ""]
    for task in tasks:
        board = leaderboard()["tasks"][task]
        lines += [f"## {task} ({board['metric']}, "
                  f"{'higher' if board['higher_is_better'] else 'lower'} is better)", ""]
        if board.get("note"):
            lines += [f"Note: {board['note']}.", ""]
        table = [[place, (f"**{model}**" if kind == "measured here" else model),
                  _fmt(mean, sd), kind] for place, model, mean, sd, kind in placed(task, rows)]
        lines += [*_table(["place", "model", "mean ± sd", "figure"], table), ""]
    return "\n".join(lines)


#: a default row's label: the estimators as shipped, no parameter set beside the defaults
_DEFAULT_ROW = re.compile(r"\(estimator (\d+(?:\.\d+)*) defaults\)$")


def shipped_row(rows: Sequence[RowScore]) -> str | None:
    """The label of the estimators' default row the plot puts forward: of the rows
    measured at their defaults, the one on the most tasks (a tie: the newer version)."""
    def order(label: str) -> tuple[int, tuple[int, ...]]:
        match = _DEFAULT_ROW.search(label)
        version = tuple(int(part) for part in match.group(1).split(".")) if match else ()
        return sum(r.label == label for r in rows), version

    defaults = [label for label in _labels(rows) if _DEFAULT_ROW.search(label)]
    return max(defaults, key=order, default=None)


def plot_ranks(records: Sequence[CellRecord], path: str | os.PathLike[str]) -> Path:
    """Rank per task: the shipped default row against the anchors' published places,
    tasks in the order of that row's rank; the other measured rows as faint points."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = row_scores(records)
    ours = shipped_row(rows)

    def rank_of(label: str | None, task: str) -> float:
        mine = next((r for r in rows if r.label == label and r.task == task), None)
        return np.nan if mine is None else float(published_rank(task, mine.mean)[0])

    tasks = [t for t in leaderboard()["tasks"] if any(r.task == t for r in rows)]
    tasks.sort(key=lambda t: (np.isnan(rank_of(ours, t)), rank_of(ours, t)))
    x = np.arange(len(tasks))
    fig, ax = plt.subplots(figsize=(max(8, 0.55 * len(tasks) + 3) + 4, 5.5))
    others = [label for label in _labels(rows) if label != ours]
    for k, label in enumerate(others):
        ax.plot(x, [rank_of(label, t) for t in tasks], linestyle="none", marker=".",
                markersize=6, color="0.7", label=("other rows measured here (report.md)"
                                                  if k == 0 else None))
    markers = iter("^sDv")
    for anchor in ANCHORS:
        ranks = [_anchor_rank(t, anchor) for t in tasks]
        ax.plot(x, [np.nan if r is None else r for r in ranks], linestyle="none",
                marker=next(markers), markersize=7, alpha=0.7,
                label=f"{anchor} (published)")
    if ours is not None:
        ranks = [rank_of(ours, t) for t in tasks]
        ax.plot(x, ranks, color="black", linewidth=2, marker="o", markersize=9,
                label=f"{ours} (measured here)")
        for xi, rank in zip(x, ranks, strict=True):
            if not np.isnan(rank):
                ax.annotate(f"{rank:.0f}", (xi, rank), textcoords="offset points",
                            xytext=(0, -14), ha="center", fontsize=7)
    ax.set_xticks(x, tasks, rotation=60, ha="right", fontsize=8)
    ax.invert_yaxis()
    ax.set_ylabel("rank among the published entries (1 = best)")
    ax.axhline(3.5, color="grey", linewidth=0.8, linestyle=":")
    ax.set_title("TDC ADMET benchmark group: where the shipped estimators would place, "
                 "tasks by that rank")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))  # beside: no point hidden
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=120)
    plt.close(fig)
    return Path(path)


def write_summary_csv(records: Sequence[CellRecord], path: str | os.PathLike[str]) -> Path:
    """One line per (row, task): metric, mean, sd, seeds, valid mean, rank, entries."""
    import pandas as pd

    table = [{**r._asdict(), "seeds": " ".join(map(str, r.seeds)),
              "rank": published_rank(r.task, r.mean)[0],
              "entries_plus_one": published_rank(r.task, r.mean)[1]}
             for r in row_scores(records)]
    with atomic_path(path) as tmp:
        pd.DataFrame(table).to_csv(tmp, index=False)
    return Path(path)


def write_report(records: Sequence[CellRecord], out_dir: str | os.PathLike[str],
                 command: str | None = None) -> dict[str, Path]:
    """Write report.md, summary.csv and ranks.png into ``out_dir`` (each atomically)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    return {"markdown": write_text_atomic(out / "report.md",
                                          markdown_report(records, command=command)),
            "summary_csv": write_summary_csv(records, out / "summary.csv"),
            "plot": plot_ranks(records, out / "ranks.png")}
