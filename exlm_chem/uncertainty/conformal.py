"""Split-conformal prediction intervals for regression.

Absolute residuals ``|y - f(x)|`` on held-out rows the model did not train on (the
estimators' validation fraction) are the conformity scores. For a new molecule the
interval ``f(x) ± q`` with ``q`` the ``ceil((n + 1)(1 - alpha)) / n`` empirical quantile
of the n scores covers the true value with probability at least ``1 - alpha``, when the
held-out rows and the new molecule are exchangeable (Lei et al. 2018). With too few
scores for the asked ``alpha`` the interval is unbounded (``q = inf``).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

__all__ = ["Interval", "conformal_quantile", "conformity_scores"]


class Interval(NamedTuple):
    """Prediction interval bounds, each shaped like ``predict``'s output."""

    lower: np.ndarray
    upper: np.ndarray


def conformity_scores(y_true: np.ndarray, predictions: np.ndarray) -> list[np.ndarray]:
    """Sorted absolute residuals of each task's labelled rows; ``y_true``, ``predictions``
    [N, T] (NaN = missing label)."""
    y_true = np.asarray(y_true, dtype=np.float64)
    predictions = np.asarray(predictions, dtype=np.float64)
    if y_true.shape != predictions.shape or y_true.ndim != 2:
        raise ValueError(f"y_true {y_true.shape} and predictions {predictions.shape} must "
                         "both be [N, T]")
    residuals = np.abs(y_true - predictions)
    return [np.sort(col[~np.isnan(col)]) for col in residuals.T]


def conformal_quantile(scores: np.ndarray, alpha: float) -> float:
    """The finite-sample corrected ``1 - alpha`` quantile of sorted ``scores``.

    >>> conformal_quantile(np.arange(1.0, 10.0), 0.2)  # n = 9: the ceil(10 * 0.8) = 8th
    8.0
    """
    if not 0 < alpha < 1:
        raise ValueError(f"alpha must be in (0, 1), got {alpha!r}")
    n = len(scores)
    rank = math.ceil((n + 1) * (1 - alpha))
    return float("inf") if rank > n else float(scores[rank - 1])
