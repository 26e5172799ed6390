"""The calibration table of the benchmark report: Brier score and ECE per row and task.

Cells whose test scores were probabilities carry ``brier`` and ``ece`` (see
:func:`exlm_chem.uncertainty.scores.calibration_scores`); the others, and records written
before these metrics existed, show "–".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence

import numpy as np

from exlm_chem.benchmark.records import CellRecord

__all__ = ["calibration_markdown"]

_MISSING = "–"


def _mean(values: list[float | None]) -> str:
    finite = [v for v in values if v is not None and np.isfinite(v)]
    if not finite:
        return _MISSING
    spread = f" ± {np.std(finite, ddof=1):.3f}" if len(finite) > 1 else ""
    return f"{np.mean(finite):.3f}{spread}"


def calibration_markdown(records: Sequence[CellRecord]) -> list[str]:
    """Markdown lines: one row per (label, task) with mean ± std over seeds of the test
    Brier score and ECE; no lines when no record has them."""
    groups: dict[tuple[str, str], list[CellRecord]] = defaultdict(list)
    for record in records:
        groups[(record.label, record.task)].append(record)
    rows = [f"| {label} | {task} | {len(group)} | {_mean([r.brier for r in group])} | "
            f"{_mean([r.ece for r in group])} |"
            for (label, task), group in groups.items()
            if any(r.brier is not None for r in group)]
    if not rows:
        return []
    return ["## Calibration of test probabilities (lower is better)", "",
            "Brier score and expected calibration error (10 equal-width bins), mean over "
            "tasks, then mean ± std over seeds.", "",
            "| Method | Task | Seeds | Brier | ECE |", "|---|---|---:|---:|---:|", *rows, ""]
