"""Scoring one benchmark cell on its test rows: ROC-AUC/PRC-AUC or RMSE/MAE."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from exlm_chem.benchmark.records import MethodOutput, TaskData
from exlm_chem.metrics import mean_mae, mean_prc_auc, mean_rmse, mean_roc_auc


def _test_outputs(data: TaskData, output: MethodOutput,
                  what: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(test labels [n_test, T], outputs [n_test, T], fitted tasks [T]); a shape mismatch
    is an error naming the data set."""
    truth = data.labels[data.test]  # [n_test, T]
    values = np.asarray(output.test_scores, dtype=np.float64)
    if values.shape != truth.shape:
        raise ValueError(f"{data.name}: method returned {what} {values.shape}, "
                         f"expected {truth.shape}")
    return truth, values, ~np.isnan(values).all(axis=0)  # NaN column: task not fitted


def score_cell(data: TaskData, output: MethodOutput) -> tuple[float, float, np.ndarray]:
    """(mean ROC-AUC, mean PRC-AUC, per-task ROC-AUC [T]) on the test rows.

    Tasks the method could not fit (NaN score column) and tasks whose test labels hold a
    single class are left out of both means.
    """
    truth, scores, fitted = _test_outputs(data, output, "scores")
    per_task = np.full(truth.shape[1], np.nan)
    if not fitted.any():
        return float("nan"), float("nan"), per_task
    roc = mean_roc_auc(truth[:, fitted], scores[:, fitted])
    prc = mean_prc_auc(truth[:, fitted], scores[:, fitted])
    per_task[fitted] = roc.per_task
    return roc.mean, prc.mean, per_task


class RegressionScores(NamedTuple):
    rmse: float  # mean over fitted tasks of the test RMSE
    mae: float  # same, mean absolute error
    per_task_rmse: np.ndarray  # [T], NaN where a task was not fitted or has no test label


def score_regression(data: TaskData, output: MethodOutput) -> RegressionScores:
    """Test-set RMSE and MAE of a regression cell; tasks the method could not fit (NaN
    prediction column) are left out of both means."""
    truth, predictions, fitted = _test_outputs(data, output, "predictions")
    per_task = np.full(truth.shape[1], np.nan)
    if not fitted.any():
        return RegressionScores(float("nan"), float("nan"), per_task)
    rmse = mean_rmse(truth[:, fitted], predictions[:, fitted])
    mae = mean_mae(truth[:, fitted], predictions[:, fitted])
    per_task[fitted] = rmse.per_task
    return RegressionScores(rmse.mean, mae.mean, per_task)
