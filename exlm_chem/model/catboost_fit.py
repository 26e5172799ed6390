"""CatBoost fitted at MapLight's recipe, its trees kept as :class:`ObliviousTrees`.

:func:`fit_catboost` is the one place the package calls CatBoost's own fit; the models'
trees leave as arrays (:meth:`ObliviousTrees.from_catboost`) and CatBoost is not needed to
predict. Several losses give several models, averaged into one set of trees
(:meth:`ObliviousTrees.mean_of`); :func:`checked_losses` is the one check of a
``loss_function`` option, for the estimators' ``tree_params`` too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from exlm_chem.model.oblivious_trees import ObliviousTrees

__all__ = ["CATBOOST_SETTINGS", "DEFAULT_LOSSES", "checked_losses", "fit_catboost"]

#: MapLight's published CatBoost recipe: CatBoost's defaults (1000 iterations of depth 6)
#: but ``random_strength=2``; silent, writing no files
CATBOOST_SETTINGS = {
    "iterations": 1000,
    "depth": 6,
    "random_strength": 2,
    "verbose": 0,
    "allow_writing_files": False,
}
#: the losses :func:`fit_catboost` accepts per task
_LOSSES = {"classification": ("Logloss",), "regression": ("MAE", "RMSE")}
#: the loss(es) :func:`fit_catboost` fits without a ``loss_function``: several are fitted
#: apart and averaged. The regressor's mean of an ``MAE`` and an ``RMSE`` model is ahead of
#: MapLight's ``MAE`` alone on TDC's valid parts (benchmarks/results/tdc_admet/levers-051).
DEFAULT_LOSSES = {"classification": ("Logloss",), "regression": ("MAE", "RMSE")}


def fit_catboost(x: np.ndarray, y: np.ndarray, task: str, seed: int, thread_count: int = 1,
                 **overrides: Any) -> ObliviousTrees:
    """Fit one CatBoost model at :data:`CATBOOST_SETTINGS` and keep its trees.

    Parameters
    ----------
    x : ndarray [N, F]
        Raw feature rows (CatBoost bins them itself); NaN sorts below every border.
    y : ndarray [N]
        ``classification``: labels 0/1, both present; ``regression``: finite values,
        not all equal (MapLight standardises its regression targets; the caller does,
        this function fits ``y`` as given).
    task : {"classification", "regression"}
        ``CatBoostClassifier(loss_function="Logloss")`` (raw score: the logit of class 1)
        or ``CatBoostRegressor`` (raw score: the value).
    seed : int
        CatBoost's ``random_seed`` (every loss's model gets the same).
    thread_count : int
        CatBoost's threads.
    **overrides
        Further CatBoost parameters, replacing the settings. ``loss_function``: one loss
        or a sequence of them (:func:`checked_losses`), each fitted apart and their raw
        scores averaged (:meth:`ObliviousTrees.mean_of`); default
        :data:`DEFAULT_LOSSES` (the regressor: ``("MAE", "RMSE")``).

    Returns
    -------
    ObliviousTrees
        Whose :meth:`~ObliviousTrees.decision` reproduces the model's ``RawFormulaVal``
        (the mean of the models' with several losses).

    Raises
    ------
    ValueError
        For an unknown task or loss, rows and labels of mismatched shapes, non-finite
        labels, classification labels other than 0/1 or of a single class, or regression
        labels all equal.
    """
    losses = checked_losses(overrides.pop("loss_function", None), task)
    x = np.asarray(x)
    y = np.asarray(y, np.float64)
    if x.ndim != 2 or y.ndim != 1 or x.shape[0] != y.shape[0] or x.shape[1] < 1:
        raise ValueError(f"fit_catboost needs rows [N, F] and labels [N], got {x.shape} and "
                         f"{y.shape}")
    if not np.all(np.isfinite(y)):
        raise ValueError("fit_catboost labels must be finite (drop unknown labels first)")
    classes = np.unique(y)
    if task == "classification":
        if not np.all(np.isin(classes, (0.0, 1.0))):
            raise ValueError(f"fit_catboost classification labels must be 0/1, got "
                             f"{classes[:10].tolist()}")
        if classes.size < 2:
            raise ValueError(f"fit_catboost classification labels hold a single class "
                             f"({classes.tolist()}); score such a task as a constant")
    elif classes.size < 2:
        raise ValueError("fit_catboost regression labels are all equal (a constant "
                         "target); score such a task as a constant")
    import catboost

    models = []
    for loss in losses:
        params = {**CATBOOST_SETTINGS, "loss_function": loss, "random_seed": int(seed),
                  "thread_count": int(thread_count), **overrides}
        if task == "classification":
            model = catboost.CatBoostClassifier(**params)
            model.fit(x, y.astype(np.int64))
        else:
            model = catboost.CatBoostRegressor(**params)
            model.fit(x, y)
        models.append(ObliviousTrees.from_catboost(model, x.shape[1]))
    return models[0] if len(models) == 1 else ObliviousTrees.mean_of(models)


def checked_losses(loss: str | Sequence[str] | None, task: str) -> tuple[str, ...]:
    """The CatBoost losses :func:`fit_catboost` fits for ``task``.

    Parameters
    ----------
    loss : str, list or tuple of str, or None
        One loss, several distinct ones (their models are averaged), or None for
        :data:`DEFAULT_LOSSES`. Classification: ``"Logloss"``; regression: ``"MAE"``,
        ``"RMSE"``.
    task : {"classification", "regression"}

    Returns
    -------
    tuple of str

    Raises
    ------
    ValueError
        For an unknown task, anything but a string, list or tuple, an empty or repeating
        sequence, or a loss of another task.
    """
    if task not in _LOSSES:
        raise ValueError(f"fit_catboost task must be one of {tuple(_LOSSES)}, got {task!r}")
    if loss is None:
        return DEFAULT_LOSSES[task]
    losses = (loss,) if isinstance(loss, str) else tuple(loss) if isinstance(
        loss, list | tuple) else ()
    if (not losses or len(set(losses)) != len(losses)
            or not all(isinstance(each, str) and each in _LOSSES[task] for each in losses)):
        raise ValueError(f"CatBoost's {task} loss_function must be one of {_LOSSES[task]} or "
                         f"a sequence of distinct ones, got {loss!r}")
    return losses
