"""What an endpoint's held-out molecules say: figures per part, on the endpoint's scale.

A member's raw score is a logit (classification) or a value on the scale it was fitted on
(log(y) where the endpoint is logged); :func:`values_of` turns scores into what a user
reads, :func:`part_figures` scores the held-out parts the build wrote.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["PART_NAMES", "part_figures", "values_of"]

#: the held-out parts by the code :mod:`exlm_chem.admet.build` stores
PART_NAMES = {0: "scaffold", 1: "cluster"}


def values_of(task: str, scores: np.ndarray, log_target: bool) -> np.ndarray:
    """Probabilities (classification: sigmoid of the logits) or values on y's scale."""
    from scipy.special import expit

    scores = np.asarray(scores, np.float64)
    if task == "classification":
        return expit(scores)
    return np.exp(scores) if log_target else scores


def _figures(task: str, y: np.ndarray, values: np.ndarray) -> dict[str, float | None]:
    from exlm_chem.benchmark.tdc import tdc_metric

    if task == "classification":
        if len(np.unique(y)) < 2:
            return {"roc_auc": None, "prc_auc": None}
        return {"roc_auc": round(tdc_metric("roc_auc", y, values), 4),
                "prc_auc": round(tdc_metric("prc_auc", y, values), 4)}
    return {"mae": round(tdc_metric("mae", y, values), 4),
            "spearman": round(tdc_metric("spearman", y, values), 4) if len(y) > 2 else None}


def part_figures(task: str, heldout: dict[str, np.ndarray], log_target: bool
                 ) -> dict[str, dict[str, Any]]:
    """Per held-out part: molecules, their median nearest-neighbour Tanimoto similarity to
    the molecules fitted on, and the figures (classification: ROC-AUC, PRC-AUC;
    regression: MAE on y's scale, Spearman)."""
    values = values_of(task, heldout["score"], log_target)
    out: dict[str, dict[str, Any]] = {}
    for code, name in PART_NAMES.items():
        rows = heldout["part"] == code
        if not rows.any():
            continue
        out[name] = {"n": int(rows.sum()),
                     "median_similarity": round(float(np.median(heldout["similarity"][rows])), 3),
                     **_figures(task, heldout["y"][rows], values[rows])}
    return out
