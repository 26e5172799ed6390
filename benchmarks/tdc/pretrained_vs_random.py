"""What the pre-trained encoder buys, per task, on both suites: the default estimators
against the same estimators from random weights (``pretrained=None``), on the seeds both
rows have.

- TDC ADMET (``benchmarks/results/tdc_admet/records/*/results.jsonl``): each row's mean
  test metric and mean held-out valid metric over the shared seeds, and the margin of the
  pre-trained row (positive: the pre-trained encoder is better, whatever the metric's
  direction). The report's rows average all of each row's seeds (5 against 3). Two pairs:
  the reported defaults (:data:`tdc_where.DEFAULT`, fitted on all of train_val, so test
  parts only) against :data:`DEFAULT_RANDOM`, and the last defaults measured on the
  held-out valid parts too (:data:`tdc_where.PRETRAINED` against ``RANDOM``).
- MoleculeNet (``benchmarks/results/moleculenet_scaffold/results.jsonl``, the paper's
  scaffold split): test ROC-AUC x100. The estimators fit on train + valid there and hold
  out their own share, so there is no held-out valid figure.

MoleculeNet's pre-trained row is :data:`tdc_where.PRETRAINED` (with the classification
cells of the older version that kept the classifier:
:func:`exlm_chem.benchmark.report_tdc.row_labels`).

Usage::

    python benchmarks/tdc/pretrained_vs_random.py > benchmarks/results/pretrained_vs_random.md
"""

from __future__ import annotations

import sys
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import numpy as np
from tdc_where import DEFAULT, PRETRAINED, RANDOM, RESULTS, Cells, margin, measured_cells

MOLECULENET = RESULTS.parent / "moleculenet_scaffold" / "results.jsonl"
#: the reported defaults from random weights, fitted as they are (lane 11)
DEFAULT_RANDOM = "ExLM exlm-small (estimator 0.5.1 defaults, pretrained=None) [fit on train_val]"
#: metrics on one scale (0-1, higher is better): their margins may be averaged across tasks
SAME_SCALE = ("AUROC", "AUPRC", "Spearman")


def _mean(values: dict[int, float], seeds: list[int]) -> float:
    """Mean over the seeds that have a value (a cell may lack its valid figure)."""
    return float(np.mean([values[s] for s in seeds if s in values]))


def tdc_table(cells: dict[tuple[str, str], Cells], pretrained: str = PRETRAINED,
              random: str = RANDOM) -> list[str]:
    """Markdown lines: one row per TDC task both rows have, then a summary line (the valid
    parts' only where the rows have them)."""
    from exlm_chem.benchmark.report_tdc import leaderboard

    board = leaderboard()["tasks"]
    lines = ["| task | metric | seeds | test: pre-trained | test: random | margin | "
             "valid: pre-trained | valid: random | margin |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|"]
    test_margins, valid_margins = [], []
    for task in board:
        rows = cells.get((pretrained, task)), cells.get((random, task))
        if not rows[0] or not rows[1]:
            continue
        seeds = sorted(set(rows[0]) & set(rows[1]))
        if not seeds:
            continue
        sign = 1.0 if board[task]["higher_is_better"] else -1.0
        test = {k: {s: row[s][0] for s in seeds} for k, row in zip("pr", rows, strict=True)}
        valid = {k: {s: row[s][1] for s in seeds if row[s][1] is not None}
                 for k, row in zip("pr", rows, strict=True)}
        on_test, on_valid = margin(test["p"], test["r"], sign), margin(valid["p"], valid["r"],
                                                                       sign)
        metric = board[task]["metric"]
        test_margins.append((metric, on_test[0]))
        if on_valid is not None:
            valid_margins.append((metric, on_valid[0]))
        valid_text = ["–", "–", "–"] if on_valid is None else [
            f"{_mean(valid['p'], seeds):.3f}", f"{_mean(valid['r'], seeds):.3f}",
            f"{on_valid[0]:+.3f}"]
        lines.append(f"| {task} | {metric} | {' '.join(map(str, seeds))} | "
                     f"{_mean(test['p'], seeds):.3f} | {_mean(test['r'], seeds):.3f} | "
                     f"{on_test[0]:+.3f} | " + " | ".join(valid_text) + " |")
    parts = ([_summary(valid_margins, "valid")] if valid_margins else []) + [
        _summary(test_margins, "test")]
    lines += ["", f"TDC ADMET, {len(test_margins)} tasks: " + "; ".join(parts) + "."]
    return lines


def _summary(margins: list[tuple[str, float]], part: str) -> str:
    """"pre-trained ahead on the valid parts of 7 of 9, mean margin +0.018 over the 8 in
    AUROC, AUPRC, Spearman"."""
    ahead = sum(m > 0 for _, m in margins)
    same = [m for metric, m in margins if metric in SAME_SCALE]
    mean = (f", mean margin {np.mean(same):+.3f} over the {len(same)} in "
            f"{', '.join(SAME_SCALE)}" if same else "")
    return f"pre-trained ahead on the {part} parts of {ahead} of {len(margins)}{mean}"


def moleculenet_cells(path: Path = MOLECULENET) -> dict[tuple[str, str], dict[int, float]]:
    """(row label, task) -> {seed: test ROC-AUC} of the MoleculeNet records."""
    from exlm_chem.benchmark.records import ResultsFile
    from exlm_chem.benchmark.report_tdc import row_labels

    cells: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    if path.is_file():
        for record in ResultsFile(path).latest():
            if record.task_type == "classification" and record.roc_auc is not None:
                for label in row_labels(record):
                    cells[label, record.task][record.seed] = record.roc_auc
    return cells


def moleculenet_table(cells: dict[tuple[str, str], dict[int, float]]) -> list[str]:
    """Markdown lines: one row per MoleculeNet task both rows have, then their mean."""
    lines = ["| task | seeds | test ROC-AUC x100: pre-trained | random | margin |",
             "|---|---|---:|---:|---:|"]
    pairs = []
    for task in sorted({task for label, task in cells if label == RANDOM}):
        shipped, random = cells.get((PRETRAINED, task), {}), cells[RANDOM, task]
        seeds = sorted(set(shipped) & set(random))
        if not seeds:
            continue
        p, r = 100 * _mean(shipped, seeds), 100 * _mean(random, seeds)
        pairs.append((p, r))
        lines.append(f"| {task} | {' '.join(map(str, seeds))} | {p:.1f} | {r:.1f} | "
                     f"{p - r:+.1f} |")
    if pairs:
        p, r = np.mean(pairs, axis=0)
        lines += ["", f"MoleculeNet, {len(pairs)} tasks: pre-trained {p:.1f}, random "
                  f"weights {r:.1f} ({p - r:+.1f}); pre-trained ahead on "
                  f"{sum(a > b for a, b in pairs)} of {len(pairs)}."]
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    cells = measured_cells()
    print("\n".join(["## TDC ADMET: the reported defaults, fitted on all of train_val", "",
                     *tdc_table(cells, DEFAULT, DEFAULT_RANDOM), "",
                     "## TDC ADMET: the 0.4.0 defaults, fitted on the train part", "",
                     *tdc_table(cells), "",
                     "## MoleculeNet (scaffold split)", "",
                     *moleculenet_table(moleculenet_cells())]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
