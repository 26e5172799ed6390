"""Regression cells: RMSE/MAE against scikit-learn, scoring, the RF and ridge-probe rows,
and the report's regression tables and chart."""

from __future__ import annotations

import math

import numpy as np
import pytest

from exlm_chem.benchmark.records import Budget, CellRecord, MethodOutput, ResultsFile
from exlm_chem.benchmark.report import markdown_report, write_report
from exlm_chem.benchmark.report_regression import regression_rows
from exlm_chem.benchmark.rf import rf_method
from exlm_chem.benchmark.scoring import score_regression
from exlm_chem.benchmark.tasks import TaskData
from exlm_chem.metrics import mean_mae, mean_rmse
from exlm_chem.train.probe import ridge_predictions

SMILES = ["CCO", "CCN", "CCC", "CCCl", "c1ccccc1", "c1ccccc1O", "CC(=O)O", "CCCCO",
          "CCOC", "CN", "c1ccncc1", "OCCO"]


def test_rmse_and_mae_match_sklearn_on_labelled_rows() -> None:
    from sklearn.metrics import mean_absolute_error, mean_squared_error

    rng = np.random.default_rng(0)
    truth = rng.normal(size=(30, 3))
    truth[rng.random((30, 3)) < 0.3] = np.nan  # missing labels are left out per task
    pred = truth + rng.normal(scale=0.5, size=(30, 3))
    pred[np.isnan(pred)] = 0.0
    rmse, mae = mean_rmse(truth, pred), mean_mae(truth, pred)
    for t in range(3):
        keep = ~np.isnan(truth[:, t])
        assert rmse.per_task[t] == pytest.approx(
            math.sqrt(mean_squared_error(truth[keep, t], pred[keep, t])), rel=1e-12)
        assert mae.per_task[t] == pytest.approx(
            mean_absolute_error(truth[keep, t], pred[keep, t]), rel=1e-12)
    assert rmse.mean == pytest.approx(rmse.per_task.mean()) and mae.mean == pytest.approx(
        mae.per_task.mean())
    assert mean_rmse([1.0, 2.0], [1.0, 4.0]).mean == pytest.approx(math.sqrt(2.0))
    assert mean_mae([1.0, 2.0], [1.0, 4.0]).mean == 1.0


def _data(labels: np.ndarray) -> TaskData:
    return TaskData("esol", SMILES, labels, np.arange(8), np.arange(8, 10), np.arange(10, 12),
                    "sha", "regression")


def test_score_regression_skips_unfitted_tasks_and_checks_shape() -> None:
    labels = np.column_stack([np.arange(12.0), np.arange(12.0)])
    output = MethodOutput(np.array([[10.0, np.nan], [12.0, np.nan]]))  # task 1 not fitted
    scores = score_regression(_data(labels), output)
    assert scores.rmse == pytest.approx(math.sqrt(0.5)) and scores.mae == pytest.approx(0.5)
    assert scores.per_task_rmse[0] == pytest.approx(math.sqrt(0.5))
    assert np.isnan(scores.per_task_rmse[1])
    with pytest.raises(ValueError, match=r"predictions \(1, 2\), expected \(2, 2\)"):
        score_regression(_data(labels), MethodOutput(np.zeros((1, 2))))


def test_rf_regressor_predicts_values_and_records_its_estimator() -> None:
    labels = np.array([[len(s)] for s in SMILES], dtype=np.float64)
    out = rf_method(_data(labels), seed=0, budget=Budget())
    assert out.test_scores.shape == (2, 1) and np.isfinite(out.test_scores).all()
    assert out.test_scores.min() >= labels[:8].min() and out.test_scores.max() <= labels[:8].max()
    assert out.settings["estimator"] == "RandomForestRegressor"
    assert out.settings["max_features"] == "sqrt"
    assert "class_weight" not in out.settings
    again = rf_method(_data(labels), seed=0, budget=Budget())
    np.testing.assert_array_equal(out.test_scores, again.test_scores)


def test_ridge_probe_picks_alpha_on_validation() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(60, 5))
    y = (x @ np.array([1.0, -2.0, 0.5, 0.0, 0.0]))[:, None]  # noiseless: weakest alpha wins
    train, valid, test = np.arange(40), np.arange(40, 50), np.arange(50, 60)
    pred, alphas, _ = ridge_predictions(x, y, train, valid, test)
    assert alphas == [0.1] and pred.shape == (10, 1)
    assert mean_rmse(y[test], pred).mean < 0.05
    empty = np.full((60, 1), np.nan)
    pred, alphas, _ = ridge_predictions(x, empty, train, valid, test)
    assert alphas == [None] and np.isnan(pred).all()


def _record(label: str, task: str, seed: int, rmse: float, mae: float) -> CellRecord:
    return CellRecord(
        method="rf_ecfp4", label=label, model=None, mode="supervised", task=task, seed=seed,
        split="scaffold", roc_auc=float("nan"), prc_auc=float("nan"), n_tasks_scored=1,
        per_task_roc_auc=[None], n_train=8, n_valid=2, n_test=2, epochs=None,
        best_epoch=None, stopped_early=False, budget=Budget()._asdict(), settings={},
        wall_s=1.0, commit="abc1234", machine="test box", finished_at="2026-11-23T00:00:00+00:00",
        protocol={"version": 2}, task_type="regression", rmse=rmse, mae=mae,
        per_task_rmse=[rmse])


def test_report_has_regression_tables_and_chart(tmp_path) -> None:
    records = [_record("RF on ECFP4", "esol", s, 1.0 + 0.1 * s, 0.5) for s in range(3)]
    records += [_record("chemprop 2.2.4", "freesolv", 0, 2.0, 1.5)]
    results = ResultsFile(tmp_path / "results.jsonl")
    for record in records:
        results.append(record)
    loaded = results.records()  # NaN ROC-AUC goes through JSON as null and back
    assert loaded[0].task_type == "regression" and loaded[0].rmse == 1.0
    assert math.isnan(loaded[0].roc_auc)
    text = markdown_report(loaded)
    assert "## Test ROC-AUC" not in text  # no classification cell, no ROC table
    assert "## Regression: test RMSE (lower is better)" in text
    assert "| RF on ECFP4 | 1.100 ± 0.100 | – |" in text
    assert "| chemprop 2.2.4 | – | 2.000 (n=1) |" in text
    assert "| RF on ECFP4 | 0.500 ± 0.000 | – |" in text  # the MAE table
    rows = regression_rows(loaded)
    assert [(r.label, r.task, r.n_seeds) for r in rows] == [
        ("RF on ECFP4", "esol", 3), ("chemprop 2.2.4", "freesolv", 1)]
    paths = write_report(loaded, tmp_path / "report")
    assert set(paths) == {"markdown", "summary_csv", "cells_csv", "regression_plot"}
    assert paths["regression_plot"].read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    summary = (tmp_path / "report" / "summary.csv").read_text()
    assert "rmse_mean" in summary.splitlines()[0]
