"""The out-of-distribution report of the TDC ADMET group: rows side by side on the cluster
parts (``exlm-chem benchmark --suite tdc-admet --split cluster``), with how far each part is.

Per task: each row's figure on the held-out clusters (mean ± population sd over seeds, TDC's
metric), beside its figure on TDC's own scaffold test part where records of the same row
fitted on train_val are merged in (``--merge``), and each part's median nearest-neighbour
Tanimoto similarity to the molecules fitted on. Then, per row, on how many tasks it is the
best on the cluster parts, and each pair of rows head to head. Published leaderboard
entries are not placed here: they were measured on TDC's test parts only.

The estimators' members are rows of their own: an ``exlm_defaults`` cell keeps its
network's and its trees' outputs apart (``FOLDER/parts/TASK_seedS.npz``,
:func:`exlm_chem.benchmark.encoders.save_parts`), and :func:`member_records` scores each
member alone from them, without fitting again.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np

from exlm_chem.benchmark.records import CellRecord

__all__ = ["MEMBERS", "REPORT_FILE", "markdown_report", "member_records", "part_similarity",
           "write_report"]

REPORT_FILE = "report_ood.md"
#: the members an estimator's parts file keeps apart -> what their row adds to its label
MEMBERS = {"network": ": network alone", "trees": ": trees alone"}


@cache
def part_similarity(task: str, split: str) -> tuple[int, float]:
    """The test part of ``task`` under ``split`` (the cluster split, or TDC's own test part
    for the train_val fit): its size and its median nearest-neighbour Tanimoto similarity
    to the rows fitted on."""
    from exlm_chem.benchmark.tdc import TDC_CLUSTER_SPLIT, load_tdc_task
    from exlm_chem.data.similarity import morgan_bits, nearest_similarity

    data = load_tdc_task(task, 1, fit_train_val=True, cluster=split == TDC_CLUSTER_SPLIT)
    fingerprints = morgan_bits(data.smiles)
    train = np.concatenate([data.train, data.valid])
    similarity = nearest_similarity(fingerprints.take(data.test), fingerprints.take(train))
    return len(data.test), float(np.median(similarity))


def member_records(folders: Sequence[str | os.PathLike[str]]) -> list[CellRecord]:
    """Each member of every estimator cell in ``folders`` that kept its parts (module
    docstring) as a record of its own: the cell's record, its label followed by
    :data:`MEMBERS`' words, its scores the member's alone (the suite's metric, and ROC-AUC
    and PRC-AUC or RMSE and MAE as the runner scores a cell; calibration left empty). A
    parts file whose test part is not the record's (another split written to the same
    folder) is left out."""
    from exlm_chem.benchmark.records import RESULTS_FILE, ResultsFile

    out = []
    for folder in map(Path, folders):
        for record in ResultsFile(folder / RESULTS_FILE).latest():
            path = folder / "parts" / f"{record.task}_seed{record.seed}.npz"
            if not record.metric or not path.exists():
                continue
            with np.load(path) as arrays:
                labels = arrays["test_labels"]  # [n, 1]
                if len(labels) != record.n_test:
                    continue
                for member, words in MEMBERS.items():
                    predicted = arrays[f"test_{member}"]  # [n, 1]
                    if not np.isnan(predicted).all():  # an estimator without it: NaN
                        out.append(_scored(record, record.label + words, labels, predicted))
    return out


def _scored(record: CellRecord, label: str, labels: np.ndarray,
            predicted: np.ndarray) -> CellRecord:
    """``record`` relabelled and scored anew on ``predicted`` [n, 1] against ``labels``."""
    from exlm_chem.benchmark.tdc import tdc_metric
    from exlm_chem.metrics import mean_prc_auc, mean_roc_auc

    known = ~np.isnan(labels[:, 0])
    truth, values = labels[known], predicted[known]  # [k, 1]
    scores: dict = {"brier": None, "ece": None, "interval_coverage": None,
                    "interval_width": None, "valid_score": None}
    if record.task_type == "classification":
        roc = mean_roc_auc(truth, values)
        scores.update(roc_auc=roc.mean, prc_auc=mean_prc_auc(truth, values).mean,
                      per_task_roc_auc=[float(v) for v in roc.per_task])
    else:
        error = truth[:, 0] - values[:, 0]
        rmse = float(np.sqrt(np.mean(error ** 2)))
        scores.update(rmse=rmse, mae=float(np.mean(np.abs(error))), per_task_rmse=[rmse])
    return record._replace(label=label, score=tdc_metric(record.metric, truth[:, 0],
                                                         values[:, 0]), **scores)


def _row_labels(record: CellRecord) -> list[str]:
    """The rows a record counts in: a cell fitted on train_val in its own row and in the
    newer default rows that kept its estimator (:func:`~exlm_chem.benchmark.report_tdc.
    row_labels`), a member's record in the same rows' member rows."""
    from exlm_chem.benchmark.report_tdc import FIT_ON_TRAIN_VAL, row_labels

    words = next((w for w in MEMBERS.values() if record.label.endswith(w)), "")
    base = record._replace(label=record.label.removesuffix(words) if words else record.label)
    return [label.removesuffix(FIT_ON_TRAIN_VAL) + words for label in row_labels(base)]


def _cells(records: Sequence[CellRecord], split: str,
           rows: bool = True) -> dict[tuple[str, str], list[float]]:
    """(task, row) -> the scores of ``split``'s records; ``rows``: each record in every row
    it counts in (:func:`_row_labels`), else in its own label's alone."""
    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in records:
        if r.split == split and r.score is not None:
            for label in _row_labels(r) if rows else [r.label]:
                cells[r.task, label].append(float(r.score))
    return cells


def markdown_report(records: Sequence[CellRecord], command: str | None = None,
                    distances: bool = True) -> str:
    """The report (module docstring) of ``records``; ``distances=False`` leaves out the
    parts' similarities (they recompute the splits). A row's TDC test figure is from cells
    fitted on all of train_val, else (marked *train part*) from cells fitted on TDC's
    scaffold train part alone, the leaderboard's protocol."""
    from exlm_chem.benchmark.tdc import TDC_CLUSTER_SPLIT, TDC_FIT_SPLIT, TDC_SPLIT
    from exlm_chem.data.tdc_admet import TDC_ADMET_TASKS

    cluster = _cells(records, TDC_CLUSTER_SPLIT, rows=False)
    fitted = _cells(records, TDC_FIT_SPLIT)
    trained = _cells(records, TDC_SPLIT)
    labels = list(dict.fromkeys(label for _, label in cluster))
    tasks = [t for t in TDC_ADMET_TASKS if any((t, label) in cluster for label in labels)]
    lines = ["# TDC ADMET out of distribution: whole similarity clusters held out", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    best: dict[str, int] = dict.fromkeys(labels, 0)
    means: dict[str, dict[str, float]] = {}  # task -> row -> mean on the cluster part
    for task in tasks:
        spec = TDC_ADMET_TASKS[task]
        higher = spec.higher_is_better
        head = f"## {task} ({spec.metric}, {'higher' if higher else 'lower'} is better)"
        lines += [head, ""]
        if distances:
            n_c, s_c = part_similarity(task, TDC_CLUSTER_SPLIT)
            n_t, s_t = part_similarity(task, TDC_FIT_SPLIT)
            lines += [f"Cluster part: {n_c} molecules, median nearest-neighbour similarity "
                      f"{s_c:.3f}; TDC's test part: {n_t} molecules, {s_t:.3f}.", ""]
        lines += ["| row | cluster part | seeds | TDC test part |", "|---|---:|---:|---:|"]
        means[task] = {label: float(np.mean(cluster[task, label])) for label in labels
                       if (task, label) in cluster}
        top = (max if higher else min)(means[task], key=means[task].__getitem__)
        best[top] += 1
        for label, mean in means[task].items():
            scores = cluster[task, label]
            other, where = fitted.get((task, label)), ""
            if not other and (task, label) in trained:
                other, where = trained[task, label], " (train part)"
            test = f"{np.mean(other):.3f} ± {np.std(other):.3f}{where}" if other else "–"
            name = f"**{label}**" if label == top else label
            lines.append(f"| {name} | {mean:.3f} ± {np.std(scores):.3f} | {len(scores)} | "
                         f"{test} |")
        lines.append("")
    lines += ["## Best on the cluster parts", "", "| row | tasks best |", "|---|---:|",
              *[f"| {label} | {n} of {len(tasks)} |" for label, n in best.items()], ""]
    lines += _head_to_head(labels, means, tasks)
    return "\n".join(lines)


def _head_to_head(labels: list[str], means: dict[str, dict[str, float]],
                  tasks: list[str]) -> list[str]:
    """Markdown: for each row against each other, on how many of the tasks both ran it is
    ahead on the cluster parts (mean over seeds; a tie counts for neither)."""
    from exlm_chem.data.tdc_admet import TDC_ADMET_TASKS

    names = [f"({i})" for i in range(1, len(labels) + 1)]
    lines = ["## Head to head on the cluster parts", "",
             "Tasks ahead / tasks both rows ran, the row against the column.", "",
             "| row | " + " | ".join(names) + " |", "|---|" + "---:|" * len(labels)]
    for i, row in enumerate(labels):
        cells = []
        for j, column in enumerate(labels):
            both = [t for t in tasks if row in means[t] and column in means[t]]
            if i == j or not both:
                cells.append("–")
                continue
            sign = [1.0 if TDC_ADMET_TASKS[t].higher_is_better else -1.0 for t in both]
            ahead = sum(s * (means[t][row] - means[t][column]) > 0
                        for s, t in zip(sign, both, strict=True))
            cells.append(f"{ahead} / {len(both)}")
        lines.append(f"| {names[i]} {row} | " + " | ".join(cells) + " |")
    return [*lines, ""]


def write_report(records: Sequence[CellRecord], out_dir: str | os.PathLike[str],
                 command: str | None = None) -> dict[str, Path]:
    """Write :data:`REPORT_FILE` into ``out_dir``; returns ``{"report": path}``."""
    from exlm_chem.files.safe_write import write_text_atomic

    path = Path(out_dir) / REPORT_FILE
    write_text_atomic(path, markdown_report(records, command))
    return {"report": path}
