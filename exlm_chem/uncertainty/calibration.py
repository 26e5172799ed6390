"""Post-hoc calibration of positive-class probabilities, one map per task.

``isotonic``: a monotone step-free map (scikit-learn's isotonic regression, then linear
interpolation between its thresholds, clipped at the ends). ``platt``: a logistic
regression on the logit of the probability. Both are fitted on held-out rows (the
estimators' validation fraction) and stored as plain numbers, so a saved estimator keeps
them in its JSON metadata.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import numpy as np

__all__ = ["METHODS", "Calibrator", "fit_calibrator", "logit"]

METHODS = ("isotonic", "platt")
_EPS = 1e-7  # probabilities are clipped to [_EPS, 1 - _EPS] before a logit


def logit(p: np.ndarray) -> np.ndarray:
    """log(p / (1 - p)) of probabilities clipped away from 0 and 1 (NaN stays NaN)."""
    p = np.clip(np.asarray(p, dtype=np.float64), _EPS, 1 - _EPS)
    return np.log(p) - np.log1p(-p)


class Calibrator(NamedTuple):
    """Per-task maps; ``params[t]`` is ``{"x": [...], "y": [...]}`` (isotonic), ``{"a", "b"}``
    (Platt: ``expit(a * logit(p) + b)``) or None (task left as it was: too few labels)."""

    method: str
    params: list[dict[str, Any] | None]

    def apply(self, proba: np.ndarray) -> np.ndarray:
        """Calibrated probabilities [N, T] of raw ones [N, T]; NaN rows stay NaN."""
        from scipy.special import expit

        proba = np.asarray(proba, dtype=np.float64)
        if proba.ndim != 2 or proba.shape[1] != len(self.params):
            raise ValueError(f"expected probabilities [N, {len(self.params)}], got "
                             f"{proba.shape}")
        out = proba.copy()
        for t, p in enumerate(self.params):
            if p is None:
                continue
            col = proba[:, t]
            if self.method == "isotonic":
                out[:, t] = np.interp(col, p["x"], p["y"])  # clips at both ends
            else:
                out[:, t] = expit(p["a"] * logit(col) + p["b"])
            out[np.isnan(col), t] = np.nan
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"method": self.method, "params": self.params}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Calibrator:
        method, params = data["method"], data["params"]
        if method not in METHODS or not isinstance(params, list):
            raise ValueError(f"not a calibrator: method {method!r}")
        for p in params:
            if p is not None and set(p) != ({"x", "y"} if method == "isotonic" else {"a", "b"}):
                raise ValueError(f"malformed {method} calibration entry {sorted(p)}")
        return cls(method, params)


def _isotonic(truth: np.ndarray, proba: np.ndarray) -> dict[str, Any]:
    from sklearn.isotonic import IsotonicRegression

    iso = IsotonicRegression(y_min=0.0, y_max=1.0, out_of_bounds="clip").fit(proba, truth)
    return {"x": iso.X_thresholds_.tolist(), "y": iso.y_thresholds_.tolist()}


def _platt(truth: np.ndarray, proba: np.ndarray) -> dict[str, Any]:
    from sklearn.linear_model import LogisticRegression

    # nearly unpenalised: two parameters, and the data are the held-out rows themselves
    model = LogisticRegression(C=1e4).fit(logit(proba)[:, None], truth.astype(np.int64))
    return {"a": float(model.coef_[0, 0]), "b": float(model.intercept_[0])}


def fit_calibrator(method: str, y_true: np.ndarray, proba: np.ndarray) -> Calibrator:
    """Fit one map per task on labelled rows of held-out ``y_true`` / ``proba`` [N, T].

    A task whose held-out rows hold a single class (or none) is left uncalibrated: no map
    can be learned from them.
    """
    if method not in METHODS:
        raise ValueError(f"calibrate must be None or one of {METHODS}, got {method!r}")
    y_true = np.asarray(y_true, dtype=np.float64)
    proba = np.asarray(proba, dtype=np.float64)
    if y_true.shape != proba.shape or y_true.ndim != 2:
        raise ValueError(f"y_true {y_true.shape} and proba {proba.shape} must both be [N, T]")
    fit = _isotonic if method == "isotonic" else _platt
    params: list[dict[str, Any] | None] = []
    for t in range(y_true.shape[1]):
        rows = ~np.isnan(y_true[:, t]) & ~np.isnan(proba[:, t])
        truth = y_true[rows, t]
        params.append(fit(truth, proba[rows, t]) if np.unique(truth).size == 2 else None)
    return Calibrator(method, params)
