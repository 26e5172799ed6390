"""MapLight's TDC ADMET recipe as a benchmark row (``catboost_maplight``): the peer the
estimators' trees are measured against.

MapLight (Notwell & Wood, 2023) fits one CatBoost model per task at CatBoost's defaults
(1,000 oblivious trees of depth 6) with ``random_strength=2`` and ``random_seed`` = the
TDC seed, on four feature sets side by side: Morgan counts (radius 2, 1024 entries),
Avalon counts (1024), ErG (315) and RDKit's 2D descriptors, raw (CatBoost bins them
itself; a descriptor RDKit cannot compute is NaN, which CatBoost sends below every
border). Classification tasks use ``Logloss`` and score ``predict_proba``; regression
tasks use ``MAE`` on a target made non-negative, log10(y + 1)-transformed for the four
clearance / half-life / VDss tasks, and standardised (:class:`TargetScaler`), predictions
mapped back. MapLight fits on all of ``train_val``; here the cell fits on what the
runner's ``--fit-on`` gives it (:attr:`TaskData.held_out_valid`), so that the same row can
also be scored on held-out valid parts.
"""

from __future__ import annotations

import os
from typing import NamedTuple

import numpy as np

from exlm_chem.benchmark.records import Budget, MethodOutput
from exlm_chem.benchmark.tasks import TaskData
from exlm_chem.model.catboost_fit import CATBOOST_SETTINGS

__all__ = ["MAPLIGHT_KINDS", "MAPLIGHT_LOG_TASKS", "MAPLIGHT_SETTINGS", "TargetScaler",
           "catboost_maplight_method", "maplight_settings"]

#: MapLight's feature sets, in its column order
MAPLIGHT_KINDS = ("morgan1024", "avalon", "erg", "rdkit2d")
#: the tasks MapLight fits on log10(y + 1)
MAPLIGHT_LOG_TASKS = frozenset({"vdss_lombardo", "half_life_obach", "clearance_hepatocyte_az",
                                "clearance_microsome_az"})
#: what MapLight sets beside CatBoost's defaults (the estimators' trees share it)
MAPLIGHT_SETTINGS = {"random_strength": CATBOOST_SETTINGS["random_strength"]}


class TargetScaler(NamedTuple):
    """MapLight's regression target: ``y - offset`` (offset = min(min y, 0)), then
    log10(. + 1) when ``log``, then standardised with the training rows' mean and sd."""

    offset: float
    log: bool
    mean: float
    scale: float

    @classmethod
    def fit(cls, y: np.ndarray, log: bool) -> TargetScaler:
        """Fitted on training targets ``y`` [n]."""
        offset = min(float(np.min(y)), 0.0)
        shifted = cls(offset, log, 0.0, 1.0)._shifted(y)
        scale = float(np.std(shifted))
        return cls(offset, log, float(np.mean(shifted)), scale if scale > 0 else 1.0)

    def _shifted(self, y: np.ndarray) -> np.ndarray:
        y = np.asarray(y, np.float64) - self.offset
        return np.log10(y + 1.0) if self.log else y

    def transform(self, y: np.ndarray) -> np.ndarray:
        return (self._shifted(y) - self.mean) / self.scale

    def inverse(self, z: np.ndarray) -> np.ndarray:
        y = np.asarray(z, np.float64) * self.scale + self.mean
        return (10.0 ** y - 1.0 if self.log else y) + self.offset


def maplight_settings(task: str) -> dict:
    """What a ``catboost_maplight`` cell records (part of its key)."""
    import catboost

    from exlm_chem.benchmark.features import _names_sha256
    from exlm_chem.benchmark.tasks import task_type
    from exlm_chem.data.descriptors import rdkit_version

    regression = task_type(task) == "regression"
    return {"estimator": "CatBoostRegressor" if regression else "CatBoostClassifier",
            "catboost_version": catboost.__version__, **MAPLIGHT_SETTINGS,
            "loss_function": "MAE" if regression else "Logloss",
            "target": (("log10(y - offset + 1), " if task in MAPLIGHT_LOG_TASKS else "")
                       + "standardised") if regression else "0/1",
            "features": list(MAPLIGHT_KINDS), "rdkit_version": rdkit_version(),
            "feature_names_sha256": _names_sha256(MAPLIGHT_KINDS)[:16],
            "feature_scaling": "none (raw; NaN below every border)"}


def catboost_maplight_method(data: TaskData, seed: int, budget: Budget,
                             progress: bool = False,
                             feature_cache: str | os.PathLike[str] | None = None
                             ) -> MethodOutput:
    """One CatBoost model per task at MapLight's settings, seeded ``seed``, fitted on
    ``data.train`` (plus ``data.valid`` unless it is held out); the test part scored,
    and a held-out valid part too. ``budget`` does not apply."""
    import catboost

    from exlm_chem.benchmark.features import task_features
    from exlm_chem.threads import resolve_threads

    x = np.concatenate([task_features(data, kind, cache_dir=feature_cache)
                        for kind in MAPLIGHT_KINDS], axis=1)  # [N, 2580] raw
    rows = data.train if data.held_out_valid else np.concatenate([data.train, data.valid])
    regression = data.task_type == "regression"
    n_tasks = data.labels.shape[1]
    test = np.full((len(data.test), n_tasks), np.nan)
    valid = np.full((len(data.valid), n_tasks), np.nan) if data.held_out_valid else None
    for t in range(n_tasks):
        y = data.labels[rows, t]
        known = rows[~np.isnan(y)]
        y = data.labels[known, t]
        params = {**CATBOOST_SETTINGS, "random_seed": seed + 1000 * t,
                  "thread_count": resolve_threads()}
        if regression:
            if not len(known):
                continue
            scaler = TargetScaler.fit(y, data.name in MAPLIGHT_LOG_TASKS)
            model = catboost.CatBoostRegressor(loss_function="MAE", **params)
            model.fit(x[known], scaler.transform(y))

            def predict(part: np.ndarray, model=model, scaler=scaler) -> np.ndarray:
                return scaler.inverse(model.predict(x[part]))
        else:
            if np.unique(y).size < 2:
                continue  # one class: nothing to fit (the runner skips the task)
            model = catboost.CatBoostClassifier(loss_function="Logloss", **params)
            model.fit(x[known], y.astype(np.int64))

            def predict(part: np.ndarray, model=model) -> np.ndarray:
                return model.predict_proba(x[part])[:, 1]
        test[:, t] = predict(data.test)
        if valid is not None and len(data.valid):
            valid[:, t] = predict(data.valid)
    return MethodOutput(test, settings=maplight_settings(data.name), valid_scores=valid)
