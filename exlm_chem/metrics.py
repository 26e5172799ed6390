"""Per-task metrics over label matrices with missing entries (NaN).

MoleculeNet convention: each task is scored on its labelled rows only; a classification
task whose labelled rows hold a single class has no ROC-AUC and is skipped; the summary
is the unweighted mean over the tasks that could be scored. Every function returns a
:class:`TaskScores` ``(mean, per_task)``, with NaN in ``per_task`` for skipped tasks and a
NaN mean when no task could be scored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import numpy as np

__all__ = ["TaskScores", "mean_mae", "mean_prc_auc", "mean_r2", "mean_rmse", "mean_roc_auc"]


class TaskScores(NamedTuple):
    mean: float  # unweighted mean over scored tasks; NaN if none could be scored
    per_task: np.ndarray  # [T] float64, NaN for skipped tasks


def _as_matrix(values: np.ndarray, name: str) -> np.ndarray:
    values = np.asarray(values, dtype=np.float64)
    if values.ndim == 1:
        values = values[:, None]  # one task
    if values.ndim != 2:
        raise ValueError(f"{name} must be [N] or [N, T], got shape {values.shape}")
    return values


def _per_task(
    y_true: np.ndarray,
    y_score: np.ndarray,
    score_fn: Callable[[np.ndarray, np.ndarray], float],
    needs_two_classes: bool,
) -> TaskScores:
    y_true = _as_matrix(y_true, "y_true")
    y_score = _as_matrix(y_score, "scores")
    if y_true.shape != y_score.shape:
        raise ValueError(f"y_true {y_true.shape} and scores {y_score.shape} differ in shape")
    per_task = np.full(y_true.shape[1], np.nan)
    for t in range(y_true.shape[1]):
        labelled = ~np.isnan(y_true[:, t])
        truth, score = y_true[labelled, t], y_score[labelled, t]
        if not np.isfinite(score).all():
            bad = np.flatnonzero(labelled)[~np.isfinite(score)]
            raise ValueError(f"task {t}: non-finite score at labelled row(s) {bad[:10].tolist()}")
        if truth.size == 0 or (needs_two_classes and np.unique(truth).size < 2):
            continue
        per_task[t] = score_fn(truth, score)
    scored = per_task[~np.isnan(per_task)]
    return TaskScores(float(scored.mean()) if scored.size else float("nan"), per_task)


def _check_binary(y_true: np.ndarray) -> None:
    values = np.asarray(y_true, dtype=np.float64)
    bad = ~np.isnan(values) & (values != 0) & (values != 1)
    if bad.any():
        raise ValueError(f"binary labels must be 0, 1 or NaN; found {values[bad][:5].tolist()}")


def mean_roc_auc(y_true: np.ndarray, scores: np.ndarray) -> TaskScores:
    """ROC-AUC per task on labelled rows (single-class tasks skipped), and their mean.

    Parameters
    ----------
    y_true : array [N] or [N, T]
        0/1 labels, NaN where missing.
    scores : array of the same shape
        Any monotone score (probabilities or logits); must be finite on labelled rows.

    Examples
    --------
    >>> y = np.array([[0, 1], [1, 1], [0, np.nan], [1, 1]])
    >>> s = np.array([[0.1, 0.3], [0.8, 0.2], [0.3, 0.9], [0.7, 0.5]])
    >>> mean_roc_auc(y, s).mean  # task 1 holds only positives: skipped
    1.0
    """
    from sklearn.metrics import roc_auc_score

    _check_binary(y_true)
    return _per_task(y_true, scores, roc_auc_score, needs_two_classes=True)


def _prc_auc(truth: np.ndarray, score: np.ndarray) -> float:
    from sklearn.metrics import auc, precision_recall_curve

    precision, recall, _ = precision_recall_curve(truth, score)
    return float(auc(recall, precision))


def mean_prc_auc(y_true: np.ndarray, scores: np.ndarray) -> TaskScores:
    """Area under the precision-recall curve per task, like :func:`mean_roc_auc`.

    The area is the trapezoidal integral of precision over recall (MoleculeNet and
    DeepChem's ``prc_auc_score``), not scikit-learn's step-wise average precision.
    """
    _check_binary(y_true)
    return _per_task(y_true, scores, _prc_auc, needs_two_classes=True)


def mean_rmse(y_true: np.ndarray, predictions: np.ndarray) -> TaskScores:
    """Root mean squared error per task on labelled rows, and their mean."""
    return _per_task(y_true, predictions,
                     lambda t, p: float(np.sqrt(np.mean((t - p) ** 2))), needs_two_classes=False)


def mean_mae(y_true: np.ndarray, predictions: np.ndarray) -> TaskScores:
    """Mean absolute error per task on labelled rows, and their mean."""
    return _per_task(y_true, predictions,
                     lambda t, p: float(np.mean(np.abs(t - p))), needs_two_classes=False)


def mean_r2(y_true: np.ndarray, predictions: np.ndarray) -> TaskScores:
    """Coefficient of determination per task on labelled rows, and their mean.

    A task with fewer than two labelled rows is skipped (R^2 is undefined there).
    """
    from sklearn.metrics import r2_score

    def r2(t: np.ndarray, p: np.ndarray) -> float:
        return float(r2_score(t, p)) if t.size >= 2 else float("nan")

    return _per_task(y_true, predictions, r2, needs_two_classes=False)
