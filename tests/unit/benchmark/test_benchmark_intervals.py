"""Regression cells' 90 % split-conformal intervals: coverage and width by hand, the
methods' validation predictions, records without the fields, and the report table."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from exlm_chem.benchmark.records import Budget, CellRecord, MethodOutput, ResultsFile
from exlm_chem.benchmark.report import markdown_report
from exlm_chem.benchmark.rf import RandomForestSettings, rf_method
from exlm_chem.benchmark.scoring import score_intervals
from exlm_chem.benchmark.tasks import TaskData
from exlm_chem.train.probe import ridge_predictions

N_VALID, N_TEST = 19, 5


def _interval_case() -> tuple[TaskData, MethodOutput]:
    """4 tasks on 19 validation + 5 test rows (no training rows needed to score).

    Task 0: validation residuals 1..19, so q = the ceil(20 * 0.9) = 18th = 18; test
    residuals 0, 10, 18, 19, 30: 3 of 5 inside (18 counts), width 36. Task 1: residuals
    doubled, q = 36, every test residual inside, width 72. Task 2: not fitted (NaN).
    Task 3: 5 labelled validation rows, too few for alpha = 0.1 (q infinite): left out.
    """
    valid, test = np.arange(N_VALID), np.arange(N_VALID, N_VALID + N_TEST)
    labels = np.zeros((N_VALID + N_TEST, 4))
    residual = np.arange(1.0, 20.0)
    labels[valid, 0], labels[valid, 1] = residual, -2 * residual  # predictions are 0
    labels[test, 0] = [0.0, -10.0, 18.0, 19.0, -30.0]
    labels[test, 1] = [0.0, 10.0, -20.0, 36.0, -30.0]
    labels[valid[5:], 3] = np.nan
    data = TaskData("esol", ["C"] * len(labels), labels, np.arange(0), valid, test, "sha",
                    "regression")
    test_pred, valid_pred = np.zeros((N_TEST, 4)), np.zeros((N_VALID, 4))
    test_pred[:, 2] = valid_pred[:, 2] = np.nan
    return data, MethodOutput(test_pred, valid_scores=valid_pred)


def test_coverage_and_width_match_the_hand_computation() -> None:
    data, output = _interval_case()
    scores = score_intervals(data, output)
    assert scores.n_tasks == 2
    assert scores.coverage == pytest.approx((3 / 5 + 1.0) / 2)
    assert scores.width == pytest.approx((36.0 + 72.0) / 2)
    assert score_intervals(data, output._replace(valid_scores=None)) is None
    with pytest.raises(ValueError, match=r"validation predictions \(3, 4\), expected"):
        score_intervals(data, output._replace(valid_scores=np.zeros((3, 4))))
    nothing = output._replace(test_scores=np.full((N_TEST, 4), np.nan))
    assert math.isnan(score_intervals(data, nothing).coverage)


def test_rf_and_ridge_return_validation_predictions() -> None:
    smiles = ["CCO", "CCN", "CCC", "CCCl", "c1ccccc1", "c1ccccc1O", "CC(=O)O", "CCCCO",
              "CCOC", "CN", "c1ccncc1", "OCCO"]
    labels = np.array([[len(s)] for s in smiles], dtype=np.float64)
    data = TaskData("esol", smiles, labels, np.arange(8), np.arange(8, 10), np.arange(10, 12),
                    "sha", "regression")
    out = rf_method(data, 0, Budget(), settings=RandomForestSettings(n_estimators=5))
    assert out.valid_scores.shape == (2, 1) and np.isfinite(out.valid_scores).all()
    classes = data._replace(labels=(labels > 4).astype(float), task_type="classification")
    assert rf_method(classes, 0, Budget(), settings=RandomForestSettings(5)).valid_scores is None

    x = np.random.default_rng(0).normal(size=(30, 4))
    y = (x @ np.array([1.0, 0.5, 0.0, -1.0]))[:, None]
    train, valid, test = np.arange(20), np.arange(20, 25), np.arange(25, 30)
    pred, _, valid_pred = ridge_predictions(x, y, train, valid, test)
    both, _, _ = ridge_predictions(x, y, train, valid, np.concatenate([test, valid]))
    np.testing.assert_allclose(valid_pred, both[5:])  # the chosen ridges on the valid rows
    np.testing.assert_allclose(pred, both[:5])  # test predictions unchanged


def _record(**extra) -> CellRecord:
    return CellRecord(
        method="rf_ecfp4", label="RF", model=None, mode="supervised", task="esol", seed=0,
        split="scaffold", roc_auc=float("nan"), prc_auc=float("nan"), n_tasks_scored=1,
        per_task_roc_auc=[None], n_train=8, n_valid=2, n_test=2, epochs=None,
        best_epoch=None, stopped_early=False, budget=Budget()._asdict(), settings={},
        wall_s=1.0, commit="abc1234", machine="test box", finished_at="2026-11-23T00:00:00+00:00",
        protocol={"version": 2}, task_type="regression", rmse=1.0, mae=0.5,
        per_task_rmse=[1.0], **extra)


def test_old_records_load_and_the_report_shows_the_interval_table(tmp_path) -> None:
    results = ResultsFile(tmp_path / "results.jsonl")
    old = {k: v for k, v in _record()._asdict().items()
           if k not in ("interval_coverage", "interval_width")}  # a line written before
    old["roc_auc"] = old["prc_auc"] = None
    results.path.write_text(json.dumps(old) + "\n")
    results.append(_record(interval_coverage=0.8, interval_width=54.0)._replace(
        label="RF new", seed=1))
    first, second = results.records()
    assert first.interval_coverage is None and first.interval_width is None
    assert (second.interval_coverage, second.interval_width) == (0.8, 54.0)
    text = markdown_report([first, second])
    assert "## Regression: interval coverage / width (90 % split-conformal)" in text
    assert "| RF | – |" in text
    assert "| RF new | 0.800 / 54.000 (n=1) |" in text
