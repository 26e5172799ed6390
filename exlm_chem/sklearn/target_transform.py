"""The regressor's target transform: fit on log(y) where y is positive and skewed.

ADME endpoints such as half-life, volume of distribution and clearance are positive and
span orders of magnitude; a model fitted on y itself spends its capacity on a few extreme
molecules. The regressor fits every member and tree on the transformed targets and
returns predictions on y's own scale.
"""

from __future__ import annotations

import logging

import numpy as np

logger = logging.getLogger(__name__)

#: The values ``target_transform`` takes.
TARGET_TRANSFORMS = (None, "log", "auto")
#: ``"auto"`` logs a task whose values are all positive and whose skewness exceeds this,
#: when the log brings the skewness closer to 0.
AUTO_SKEWNESS = 1.0


def check_target_transform(value: object, task: str) -> str | None:
    """``value`` if it is one of :data:`TARGET_TRANSFORMS` and ``task`` takes it, else a
    ``ValueError`` (a classifier's classes have no scale: None and "auto" leave them
    alone, "log" is refused)."""
    if value not in TARGET_TRANSFORMS:
        raise ValueError(f"target_transform must be one of {TARGET_TRANSFORMS}, got {value!r}")
    if value == "log" and task != "regression":
        raise ValueError(f"target_transform={value!r} is the regressor's; a classifier's "
                         "labels are classes")
    return value  # type: ignore[return-value]


def _skewness(values: np.ndarray) -> float:
    centred = values - values.mean()
    sd = centred.std()
    return float(np.mean(centred ** 3) / sd ** 3) if sd > 0 else 0.0


def choose_log(labels: np.ndarray, mode: str | None,
               task_names: list[str] | None = None) -> np.ndarray:
    """Which tasks of ``labels`` [N, T] (NaN = missing) are fitted on their log: [T] bool.

    ``"log"``: every task, and a non-positive value is a ``ValueError`` naming the task;
    ``"auto"``: the tasks that are positive and skewed (:data:`AUTO_SKEWNESS`), each
    choice logged at INFO; None: none.
    """
    n_tasks = labels.shape[1]
    chosen = np.zeros(n_tasks, dtype=bool)
    if mode is None:
        return chosen
    for t in range(n_tasks):
        values = labels[~np.isnan(labels[:, t]), t]
        name = task_names[t] if task_names else ("y" if n_tasks == 1 else f"task {t}")
        positive = values.size > 0 and bool((values > 0).all())
        if mode == "log":
            if not positive:
                raise ValueError(f"target_transform='log' needs positive targets; {name} has "
                                 f"{int((values <= 0).sum())} value(s) <= 0 (min "
                                 f"{values.min():g}); use None or 'auto'")
            chosen[t] = True
            continue
        if not positive or values.size < 3:
            continue
        raw, logged = _skewness(values), _skewness(np.log(values))
        chosen[t] = raw > AUTO_SKEWNESS and abs(logged) < abs(raw)
        if chosen[t]:
            logger.info("target_transform='auto': %s is positive and skewed (skewness %.2f, "
                        "%.2f after log): fitted on log(y), predicted on y's scale",
                        name, raw, logged)
    return chosen


def forward(labels: np.ndarray, log_tasks: np.ndarray) -> np.ndarray:
    """``labels`` [N, T] with the ``log_tasks`` columns replaced by their natural log."""
    out = np.array(labels, dtype=np.float64, copy=True)
    out[:, log_tasks] = np.log(out[:, log_tasks])
    return out


def inverse(values: np.ndarray, log_tasks: np.ndarray | None) -> np.ndarray:
    """``values`` [..., T] back on y's scale (exp of the ``log_tasks`` columns)."""
    if log_tasks is None or not np.any(log_tasks):
        return values
    out = np.array(values, dtype=np.float64, copy=True)
    out[..., log_tasks] = np.exp(out[..., log_tasks])
    return out
