"""The out-of-distribution report of the TDC ADMET group: rows side by side on the cluster
parts (``exlm-chem benchmark --suite tdc-admet --split cluster``), with how far each part is.

Per task: each row's figure on the held-out clusters (mean ± population sd over seeds, TDC's
metric), beside its figure on TDC's own scaffold test part where records of the same row
fitted on train_val are merged in (``--merge``), and each part's median nearest-neighbour
Tanimoto similarity to the molecules fitted on. Then, per row, on how many tasks it is the
best on the cluster parts. Published leaderboard entries are not placed here: they were
measured on TDC's test parts only.
"""

from __future__ import annotations

import os
from collections import defaultdict
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np

from exlm_chem.benchmark.records import CellRecord

__all__ = ["REPORT_FILE", "markdown_report", "part_similarity", "write_report"]

REPORT_FILE = "report_ood.md"


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


def _cells(records: Sequence[CellRecord], split: str) -> dict[tuple[str, str], list[float]]:
    cells: dict[tuple[str, str], list[float]] = defaultdict(list)
    for r in records:
        if r.split == split and r.score is not None:
            cells[r.task, r.label].append(float(r.score))
    return cells


def markdown_report(records: Sequence[CellRecord], command: str | None = None,
                    distances: bool = True) -> str:
    """The report (module docstring) of ``records``; ``distances=False`` leaves out the
    parts' similarities (they recompute the splits)."""
    from exlm_chem.benchmark.tdc import TDC_CLUSTER_SPLIT, TDC_FIT_SPLIT
    from exlm_chem.data.tdc_admet import TDC_ADMET_TASKS

    cluster = _cells(records, TDC_CLUSTER_SPLIT)
    fitted = _cells(records, TDC_FIT_SPLIT)
    labels = list(dict.fromkeys(label for _, label in cluster))
    tasks = [t for t in TDC_ADMET_TASKS if any((t, label) in cluster for label in labels)]
    lines = ["# TDC ADMET out of distribution: whole similarity clusters held out", ""]
    if command:
        lines += [f"Command: `{command}`", ""]
    best: dict[str, int] = dict.fromkeys(labels, 0)
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
        lines += ["| row | cluster part | seeds | TDC test part (train_val fit) |",
                  "|---|---:|---:|---:|"]
        means = {label: float(np.mean(cluster[task, label])) for label in labels
                 if (task, label) in cluster}
        top = (max if higher else min)(means, key=means.__getitem__)
        best[top] += 1
        for label, mean in means.items():
            scores = cluster[task, label]
            other = fitted.get((task, label))
            test = f"{np.mean(other):.3f} ± {np.std(other):.3f}" if other else "–"
            name = f"**{label}**" if label == top else label
            lines.append(f"| {name} | {mean:.3f} ± {np.std(scores):.3f} | {len(scores)} | "
                         f"{test} |")
        lines.append("")
    lines += ["## Best on the cluster parts", "", "| row | tasks best |", "|---|---:|",
              *[f"| {label} | {n} of {len(tasks)} |" for label, n in best.items()], ""]
    return "\n".join(lines)


def write_report(records: Sequence[CellRecord], out_dir: str | os.PathLike[str],
                 command: str | None = None) -> dict[str, Path]:
    """Write :data:`REPORT_FILE` into ``out_dir``; returns ``{"report": path}``."""
    from exlm_chem.files.safe_write import write_text_atomic

    path = Path(out_dir) / REPORT_FILE
    write_text_atomic(path, markdown_report(records, command))
    return {"report": path}
