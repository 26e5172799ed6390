"""The report of the cross-source pairs (``exlm-chem benchmark --suite cross-source``):
rows side by side per pair, with each pair's sizes and how far its test molecules are.

Per pair: each row's figure by the pair's metric (Spearman's rho for regression, ROC-AUC
for classification; mean ± sample sd over seeds), the train and test sizes, the test
part's positives and its median nearest-neighbour Tanimoto similarity to the train part
(:func:`~exlm_chem.benchmark.cross_source.pair_summary`); then PRC-AUC of the
classification pairs beside their test part's share of positives (the figure of a model
that ranks at random).
"""

from __future__ import annotations

import math
import os
from collections.abc import Sequence
from functools import cache
from pathlib import Path

import numpy as np

from exlm_chem.benchmark.records import CellRecord

__all__ = ["REPORT_FILE", "markdown_report", "write_report"]

REPORT_FILE = "report_cross_source.md"
_MISSING = "–"


@cache
def _summary(name: str, data: str | os.PathLike[str] | None):
    """:func:`~exlm_chem.benchmark.cross_source.pair_summary`, once per process (the CLI
    writes and prints the report)."""
    from exlm_chem.benchmark.cross_source import pair_summary

    return pair_summary(name, data)


def _mean_sd(values: Sequence[float]) -> str:
    finite = np.asarray([v for v in values if v is not None and math.isfinite(v)], float)
    if finite.size == 0:
        return _MISSING
    if finite.size == 1:
        return f"{finite[0]:.3f} (n=1)"
    return f"{finite.mean():.3f} ± {finite.std(ddof=1):.3f}"


def markdown_report(records: Sequence[CellRecord], command: str | None = None,
                    data: str | os.PathLike[str] | None = None,
                    distances: bool = True) -> str:
    """The pairs as markdown.

    Parameters
    ----------
    records
        Finished cross-source cells (other records are left out).
    command
        The command line that produced them, shown in the header.
    data
        As ``--data``, for the pairs' positives and similarities.
    distances
        Load each pair to count its test positives and measure its similarity (seconds
        per pair); False leaves those columns empty.

    Returns
    -------
    str
        Markdown text ending in a newline.
    """
    from exlm_chem.benchmark.cross_source import CROSS_SOURCE_SPLIT
    from exlm_chem.benchmark.tdc import METRIC_TITLES
    from exlm_chem.data.cross_source import CROSS_SOURCE_PAIRS

    records = [r for r in records if r.split == CROSS_SOURCE_SPLIT]
    if not records:
        raise ValueError("no cross-source cells to report")
    labels = list(dict.fromkeys(r.label for r in records))
    pairs = [p for p in CROSS_SOURCE_PAIRS if any(r.task == p for r in records)]
    cells: dict[tuple[str, str], list[CellRecord]] = {}
    for record in records:
        cells.setdefault((record.task, record.label), []).append(record)

    def joined(values: Sequence[object]) -> str:
        return ", ".join(str(v) for v in dict.fromkeys(values))

    lines = ["# Cross-source pairs", "",
             "Fitted on every labelled molecule of the source, scored on the target's "
             "molecules that the source lacks (another lab's assay of the same target).", "",
             f"- seeds: {' '.join(str(s) for s in sorted({r.seed for r in records}))}",
             f"- machine(s): {joined(r.machine for r in records)}",
             f"- commit(s): {joined(r.commit for r in records)}"]
    if command:
        lines.append(f"- command: `{command}`")
    lines.append("")
    header = ["Pair", "Source → target", "Metric", "Train", "Test", "Test positives",
              "NN similarity", *labels]
    rows, prc_rows = [], []
    for name in pairs:
        pair = CROSS_SOURCE_PAIRS[name]
        some = next(r for r in records if r.task == name)
        positives = similarity = _MISSING
        share = math.nan
        if distances:
            summary = _summary(name, data)
            similarity = f"{summary.median_similarity:.2f}"
            if summary.test_positives is not None:
                positives = str(summary.test_positives)
                share = summary.test_positives / max(summary.n_test, 1)
        rows.append([name, f"{pair.source.title} → {pair.target.title}",
                     METRIC_TITLES[pair.metric], str(some.n_train), str(some.n_test),
                     positives, similarity,
                     *[_mean_sd([r.score for r in cells.get((name, label), [])])
                       for label in labels]])
        if pair.task_type == "classification":
            prc_rows.append([name, _MISSING if math.isnan(share) else f"{share:.3f}",
                             *[_mean_sd([r.prc_auc for r in cells.get((name, label), [])])
                               for label in labels]])
    lines += ["## Test figures (higher is better)", "", *_table(header, rows, left=3), ""]
    if prc_rows:
        lines += ["## PRC-AUC of the classification pairs", "",
                  "Beside each pair's share of test positives: the PRC-AUC of a random "
                  "ranking.", "",
                  *_table(["Pair", "Positive share", *labels], prc_rows, left=1), ""]
    lines += ["Mean ± sample sd over seeds; \"(n=1)\" marks a single seed, \"–\" a cell not "
              "run. NN similarity: the test part's median nearest-neighbour Tanimoto "
              "similarity (Morgan radius 2, 2048 bits) to the train part.", ""]
    return "\n".join(lines)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]], left: int) -> list[str]:
    """A markdown table, its first ``left`` columns (names) left-aligned, the rest right."""
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("---" if i < left else "---:" for i in range(len(header))) + "|"]
    return lines + ["| " + " | ".join(row) + " |" for row in rows]


def write_report(records: Sequence[CellRecord], out_dir: str | os.PathLike[str],
                 command: str | None = None, data: str | os.PathLike[str] | None = None
                 ) -> dict[str, Path]:
    """Write :data:`REPORT_FILE` and cells.csv into ``out_dir`` (atomically); returns
    ``{"markdown", "cells_csv"}`` -> path."""
    from exlm_chem.benchmark.report import write_cells_csv
    from exlm_chem.files.safe_write import write_text_atomic

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    text = markdown_report(records, command=command, data=data)
    return {"markdown": write_text_atomic(out / REPORT_FILE, text),
            "cells_csv": write_cells_csv(records, out / "cells.csv")}
