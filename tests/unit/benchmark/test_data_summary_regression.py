"""``exlm-chem data summary`` covers the regression sets: label mean/sd, no positives."""

from __future__ import annotations

import math

import pytest

from exlm_chem.benchmark.data_summary import format_summary, summarize_datasets


def test_regression_rows(moleculenet_dir) -> None:
    rows = summarize_datasets(["ESOL", "freesolv"])
    esol = rows[0]
    assert rows[1].dataset == "freesolv" and rows[1].task_type == "regression"
    assert (esol.dataset, esol.rows, esol.valid, esol.invalid, esol.tasks) == ("esol", 1128, 1128,
                                                                               0, 1)
    assert esol.task_type == "regression" and math.isnan(esol.positive_rate)
    assert esol.label_mean == pytest.approx(-3.0501, abs=1e-4)
    assert esol.split == "902/113/113" and esol.paper_split == "–"
    text = format_summary(rows)
    assert "| esol | s3 | 1128 | 1128 | 0 | 1 | 100.0% | -3.05 ± 2.10 | 902/113/113 | – |" in text
    assert "| freesolv | s3 | 642 | 642 | 0 | 1 | 100.0% | -3.80 ± 3.84 | 513/64/65 | – |" in text

