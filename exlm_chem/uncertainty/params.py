"""Checks of the estimators' uncertainty parameters (done in ``fit``, not ``__init__``)."""

from __future__ import annotations

from typing import Any

import numpy as np

from exlm_chem.uncertainty.calibration import METHODS

__all__ = ["is_count", "uncertainty_problems"]


def is_count(value: Any, low: int) -> bool:
    """Whether ``value`` is an integer (not a bool) of at least ``low``."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool) and value >= low


def uncertainty_problems(est: Any, task: str) -> list[str]:
    """What is wrong with ``augment``, ``tta``, ``n_models``, ``bootstrap``, ``calibrate``."""
    problems = [f"{name} must be an integer >= {low}, got {getattr(est, name)!r}"
                for name, low in (("augment", 0), ("tta", 0), ("n_models", 1))
                if not is_count(getattr(est, name), low)]
    if not isinstance(est.bootstrap, bool | np.bool_):
        problems.append(f"bootstrap must be True or False, got {est.bootstrap!r}")
    if est.calibrate is not None:
        if task != "classification":
            problems.append("calibrate applies to classifiers only; the regressor gives "
                            "conformal intervals (predict_interval) instead")
        elif est.calibrate not in METHODS:
            problems.append(f"calibrate must be None or one of {METHODS}, got "
                            f"{est.calibrate!r}")
        if not est.validation_fraction:
            problems.append("calibrate needs held-out molecules: validation_fraction > 0")
    return problems
