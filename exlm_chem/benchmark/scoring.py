"""Scoring one benchmark cell on its test rows: ROC-AUC/PRC-AUC or RMSE/MAE, and for
regression the test coverage and width of split-conformal intervals calibrated on the
validation rows (:mod:`exlm_chem.uncertainty.conformal`)."""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from exlm_chem.benchmark.records import MethodOutput
from exlm_chem.benchmark.tasks import TaskData
from exlm_chem.metrics import mean_mae, mean_prc_auc, mean_rmse, mean_roc_auc
from exlm_chem.uncertainty.conformal import conformal_quantile, conformity_scores
from exlm_chem.uncertainty.scores import interval_coverage

INTERVAL_ALPHA = 0.1  # 90 % intervals


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


class IntervalScores(NamedTuple):
    coverage: float  # mean over tasks of the fraction of test labels inside pred ± q
    width: float  # mean over tasks of 2q, in the labels' units
    n_tasks: int  # tasks in both means (fitted, with validation and test labels, finite q)


def score_intervals(data: TaskData, output: MethodOutput,
                    alpha: float = INTERVAL_ALPHA) -> IntervalScores | None:
    """Split-conformal ``1 - alpha`` intervals: per task, ``q`` from the absolute residuals
    on the labelled validation rows, then on the labelled test rows the fraction inside
    ``prediction ± q`` and the width ``2q``, averaged over tasks.

    None when the method returned no validation predictions. A task is left out when it
    was not fitted, has no labelled test row, or too few validation rows for ``alpha``
    (``q`` infinite); with no task left both figures are NaN.
    """
    if output.valid_scores is None:
        return None
    truth, predictions, fitted = _test_outputs(data, output, "predictions")
    valid_truth = data.labels[data.valid]  # [n_valid, T]
    valid_pred = np.asarray(output.valid_scores, dtype=np.float64)
    if valid_pred.shape != valid_truth.shape:
        raise ValueError(f"{data.name}: method returned validation predictions "
                         f"{valid_pred.shape}, expected {valid_truth.shape}")
    coverage, width = [], []
    for t, residuals in enumerate(conformity_scores(valid_truth, valid_pred)):
        labelled = ~np.isnan(truth[:, t])
        if not fitted[t] or not labelled.any():
            continue
        q = conformal_quantile(residuals, alpha)
        if not np.isfinite(q):
            continue
        predicted = predictions[labelled, t]
        coverage.append(interval_coverage(truth[labelled, t], predicted - q, predicted + q).mean)
        width.append(2.0 * q)
    if not coverage:
        return IntervalScores(float("nan"), float("nan"), 0)
    return IntervalScores(float(np.mean(coverage)), float(np.mean(width)), len(coverage))
