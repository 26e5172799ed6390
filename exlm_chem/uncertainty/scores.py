"""How good probabilities and intervals are: Brier score, ECE, coverage and width.

Same conventions as :mod:`exlm_chem.metrics`: per task on labelled rows (NaN = missing),
then the unweighted mean over tasks, returned as a
:class:`~exlm_chem.metrics.TaskScores`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from exlm_chem.metrics import TaskScores, _as_matrix, _check_binary, _per_task, mean_roc_auc

__all__ = ["ECE_BINS", "CalibrationScores", "ProbabilityScores", "brier_score",
           "calibration_scores", "ece_bins",
           "expected_calibration_error", "interval_coverage", "interval_width",
           "probability_scores", "reliability_bins"]

ECE_BINS = 10  # equal-width probability bins


def brier_score(y_true: np.ndarray, proba: np.ndarray) -> TaskScores:
    """Mean squared difference between the positive-class probability and the 0/1 label.

    >>> brier_score(np.array([0, 1]), np.array([0.2, 0.6])).mean  # (0.04 + 0.16) / 2
    0.1
    """
    _check_binary(y_true)
    return _per_task(y_true, proba, lambda t, p: float(np.mean((p - t) ** 2)),
                     needs_two_classes=False)


def reliability_bins(truth: np.ndarray, proba: np.ndarray,
                     n_bins: int = ECE_BINS) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per equal-width bin of one task: (count, mean probability, positive rate) [n_bins].

    Bins are ``[0, 1/n), [1/n, 2/n), ..., [(n-1)/n, 1]``; empty bins hold NaN means.
    """
    which = np.minimum((np.asarray(proba) * n_bins).astype(np.int64), n_bins - 1)  # [N]
    count = np.bincount(which, minlength=n_bins).astype(np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean_p = np.bincount(which, weights=proba, minlength=n_bins) / count
        rate = np.bincount(which, weights=truth, minlength=n_bins) / count
    return count, mean_p, rate


def ece_bins(truth: np.ndarray, proba: np.ndarray, n_bins: int = ECE_BINS) -> float:
    """Expected calibration error of one task: sum over bins of
    (share of rows) x |positive rate - mean probability|."""
    count, mean_p, rate = reliability_bins(truth, proba, n_bins)
    used = count > 0
    return float(np.sum(count[used] / count.sum() * np.abs(rate[used] - mean_p[used])))


def expected_calibration_error(y_true: np.ndarray, proba: np.ndarray,
                               n_bins: int = ECE_BINS) -> TaskScores:
    """ECE with ``n_bins`` equal-width bins per task (positive-class probabilities).

    >>> expected_calibration_error(np.array([0, 1, 1, 1]), np.full(4, 0.75)).mean
    0.0
    """
    _check_binary(y_true)
    return _per_task(y_true, proba, lambda t, p: ece_bins(t, p, n_bins),
                     needs_two_classes=False)


class ProbabilityScores(NamedTuple):
    roc_auc: float  # means over tasks (see the functions above)
    brier: float
    ece: float


def probability_scores(y_true: np.ndarray, proba: np.ndarray) -> ProbabilityScores:
    """Mean ROC-AUC, Brier score and ECE of positive-class probabilities [N, T]."""
    return ProbabilityScores(mean_roc_auc(y_true, proba).mean, brier_score(y_true, proba).mean,
                             expected_calibration_error(y_true, proba).mean)


class CalibrationScores(NamedTuple):
    brier: float | None  # None: the scores are not probabilities
    ece: float | None


def calibration_scores(y_true: np.ndarray, scores: np.ndarray) -> CalibrationScores:
    """Mean Brier score and ECE over the fitted tasks (not all-NaN columns) of ``scores``
    [N, T], when they are probabilities (finite values in [0, 1] on labelled rows), else
    ``(None, None)``: a margin or a logit has no calibration to measure."""
    y_true = _as_matrix(y_true, "y_true")
    scores = _as_matrix(scores, "scores")
    fitted = ~np.isnan(scores).all(axis=0)
    labelled = ~np.isnan(y_true[:, fitted])
    values = scores[:, fitted][labelled]
    if not fitted.any() or not (np.isfinite(values) & (values >= 0) & (values <= 1)).all():
        return CalibrationScores(None, None)
    brier = brier_score(y_true[:, fitted], scores[:, fitted]).mean
    ece = expected_calibration_error(y_true[:, fitted], scores[:, fitted]).mean
    return CalibrationScores(brier, ece)


def _bounds(lower: np.ndarray, upper: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    lower, upper = _as_matrix(lower, "lower"), _as_matrix(upper, "upper")
    if lower.shape != upper.shape:
        raise ValueError(f"lower {lower.shape} and upper {upper.shape} differ in shape")
    return lower, upper


def interval_coverage(y_true: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> TaskScores:
    """Share of labelled values inside ``[lower, upper]``, per task."""
    lower, upper = _bounds(lower, upper)
    y = _as_matrix(y_true, "y_true")
    inside = np.where(np.isnan(y), np.nan, ((y >= lower) & (y <= upper)).astype(np.float64))
    return _per_task(y, inside, lambda t, p: float(p.mean()), needs_two_classes=False)


def interval_width(y_true: np.ndarray, lower: np.ndarray, upper: np.ndarray) -> TaskScores:
    """Mean width ``upper - lower`` over labelled rows, per task (inf for unbounded ones)."""
    lower, upper = _bounds(lower, upper)
    y = _as_matrix(y_true, "y_true")
    with np.errstate(invalid="ignore"):
        width = upper - lower
    per_task = np.array([width[~np.isnan(y[:, t]), t].mean() if (~np.isnan(y[:, t])).any()
                         else np.nan for t in range(y.shape[1])])
    scored = per_task[~np.isnan(per_task)]
    return TaskScores(float(scored.mean()) if scored.size else float("nan"), per_task)
