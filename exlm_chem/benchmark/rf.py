"""Random forest on ECFP4 bits: the classical baseline (one forest per task); the same
forest on RDKit 2D descriptors (``features="rdkit2d"``, scaled on the training rows by
:mod:`exlm_chem.benchmark.features`) shows what descriptors alone score.

ECFP4 = Morgan fingerprint of radius 2 folded to 2048 bits (RDKit). Each task's forest
sees only the training molecules labelled for it; a task whose labelled training rows
hold a single class cannot be fitted and gets NaN scores (the runner skips it).
Regression tasks get a :class:`~sklearn.ensemble.RandomForestRegressor` (squared error,
no class weights) with the same trees, features and seeds, and, like the classifier,
sqrt(2048) = 45 candidate bits per split: scikit-learn's regressor default (all 2048)
costs about 45x more and took over 15 CPU-minutes per Lipophilicity forest here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from exlm_chem.benchmark.records import Budget, MethodOutput
from exlm_chem.benchmark.tasks import TaskData


@dataclass(frozen=True)
class RandomForestSettings:
    # MoleculeNet's RF used 500 trees; 100 keeps ToxCast's 617 forests near 6 CPU-minutes
    # per seed, and the extra trees move ROC-AUC far less than the seed-to-seed spread
    n_estimators: int = 100
    radius: int = 2  # Morgan radius 2 = ECFP4
    n_bits: int = 2048  # folded fingerprint length
    min_samples_leaf: int = 1
    class_weight: str | None = "balanced"  # most tasks are heavily imbalanced
    n_jobs: int = 1  # trees fitted in parallel (joblib)


REGRESSOR_MAX_FEATURES = "sqrt"  # the classifier's default, see the module docstring


def ecfp4_bits(smiles: Sequence[str], radius: int = 2, n_bits: int = 2048) -> np.ndarray:
    """Morgan count-free bit vectors, [N, n_bits] uint8; an unparsable SMILES names its row."""
    from rdkit import Chem, DataStructs
    from rdkit.Chem import rdFingerprintGenerator
    from rdkit.rdBase import BlockLogs

    generator = rdFingerprintGenerator.GetMorganGenerator(radius=radius, fpSize=n_bits)
    bits = np.zeros((len(smiles), n_bits), dtype=np.uint8)
    for row, text in enumerate(smiles):
        with BlockLogs():  # the loader already reported what RDKit had to say
            mol = Chem.MolFromSmiles(text)
        if mol is None:
            raise ValueError(f"row {row}: RDKit cannot parse SMILES {text!r}")
        DataStructs.ConvertToNumpyArray(generator.GetFingerprint(mol), bits[row])
    return bits


def rf_method(data: TaskData, seed: int, budget: Budget, progress: bool = False,
              settings: RandomForestSettings | None = None,
              features: str = "ecfp4",
              feature_cache: str | os.PathLike[str] | None = None) -> MethodOutput:
    """Fit one forest per task on ``data.train``; score ``data.test``.

    ``budget`` does not apply (a forest has no epochs); nothing is selected on the
    validation rows, but regression forests predict them too (``valid_scores``: they
    calibrate the runner's conformal intervals). ``features``: ``"ecfp4"`` (the
    settings' fingerprint) or ``"rdkit2d"``, whose raw values are kept under
    ``feature_cache`` between runs (:func:`~exlm_chem.benchmark.features.task_features`).
    """
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor

    settings = settings or RandomForestSettings()
    if features == "ecfp4":
        x_all = ecfp4_bits(data.smiles, settings.radius, settings.n_bits)
    else:
        from exlm_chem.benchmark.features import scaled_task_features

        x_all = scaled_task_features(data, [features], feature_cache)

    def forest(regression: bool, seed: int) -> object:
        common = {"n_estimators": settings.n_estimators, "n_jobs": settings.n_jobs,
                  "min_samples_leaf": settings.min_samples_leaf, "random_state": seed}
        if regression:
            return RandomForestRegressor(max_features=REGRESSOR_MAX_FEATURES, **common)
        return RandomForestClassifier(class_weight=settings.class_weight, **common)

    scores, valid_scores = _per_task(data, x_all, forest, seed, progress and "rf")
    return MethodOutput(scores, settings=rf_settings(settings, data.task_type, features),
                        valid_scores=valid_scores)


GBT_FEATURES = ("morgan", "rdkit2d")  # Morgan radius-2 counts and RDKit 2D descriptors
#: MapLight's feature set (the leading fingerprint entry of the TDC ADMET leaderboard):
#: Morgan counts, Avalon counts, ErG and RDKit 2D descriptors
MAPLIGHT_FEATURES = ("morgan", "avalon", "erg", "rdkit2d")


def gbt_method(data: TaskData, seed: int, budget: Budget, progress: bool = False,
               feature_cache: str | os.PathLike[str] | None = None,
               features: tuple[str, ...] = GBT_FEATURES) -> MethodOutput:
    """scikit-learn's histogram gradient boosting at its defaults, one model per task, on
    ``features`` (:data:`GBT_FEATURES`: the tabular baseline practitioners reach for;
    :data:`MAPLIGHT_FEATURES`). ``budget`` does not apply; otherwise as :func:`rf_method`."""
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor

    from exlm_chem.benchmark.features import scaled_task_features

    x_all = scaled_task_features(data, features, feature_cache)

    def boosting(regression: bool, seed: int) -> object:
        if regression:
            return HistGradientBoostingRegressor(random_state=seed)
        return HistGradientBoostingClassifier(random_state=seed)

    scores, valid_scores = _per_task(data, x_all, boosting, seed, progress and "gbt")
    return MethodOutput(scores, settings=gbt_settings(data.task_type, features),
                        valid_scores=valid_scores)


def gbt_settings(task_type: str, features: tuple[str, ...] = GBT_FEATURES) -> dict:
    """What a gradient-boosting cell records: the estimator (at its defaults), its
    scikit-learn version and the features."""
    import sklearn

    from exlm_chem.benchmark.features import feature_settings

    kind = "Regressor" if task_type == "regression" else "Classifier"
    return {"estimator": f"HistGradientBoosting{kind}", "parameters": "scikit-learn defaults",
            "sklearn_version": sklearn.__version__, **feature_settings(features)}


def _per_task(data: TaskData, x_all: np.ndarray, make: Callable[[bool, int], Any], seed: int,
              progress: str | bool) -> tuple[np.ndarray, np.ndarray | None]:
    """(test scores, valid scores of a regression task or a held-out valid part) of one
    model per task, each fitted on the training rows labelled for it; a classification
    task whose labelled training rows hold one class gets NaN (the runner skips it)."""
    regression = data.task_type == "regression"
    x_train, x_valid, x_test = x_all[data.train], x_all[data.valid], x_all[data.test]
    n_tasks = data.labels.shape[1]
    scores = np.full((len(data.test), n_tasks), np.nan)
    with_valid = regression or data.held_out_valid
    valid_scores = np.full((len(data.valid), n_tasks), np.nan) if with_valid else None
    tasks = range(n_tasks)
    if progress:
        from tqdm.auto import tqdm

        tasks = tqdm(tasks, desc=f"{progress} {data.name}", leave=False)
    for t in tasks:
        y = data.labels[data.train, t]
        labelled = ~np.isnan(y)
        model = make(regression, seed + 1000 * t)  # distinct, reproducible streams per task
        if regression:
            if not labelled.any():
                continue
            model.fit(x_train[labelled], y[labelled])
            scores[:, t] = model.predict(x_test)
            if len(data.valid):
                valid_scores[:, t] = model.predict(x_valid)
            continue
        if np.unique(y[labelled]).size < 2:
            continue
        model.fit(x_train[labelled], y[labelled].astype(int))
        scores[:, t] = model.predict_proba(x_test)[:, 1]
        if with_valid and len(data.valid):
            valid_scores[:, t] = model.predict_proba(x_valid)[:, 1]
    return scores, valid_scores


def rf_settings(settings: RandomForestSettings, task_type: str,
                features: str = "ecfp4") -> dict:
    """What a cell records: the settings, minus class weights for a regressor; a forest on
    descriptors drops the fingerprint's radius and length and records its features."""
    values = asdict(settings)
    if task_type == "regression":
        values.pop("class_weight")
        values["estimator"] = "RandomForestRegressor"
        values["max_features"] = REGRESSOR_MAX_FEATURES
    if features != "ecfp4":
        from exlm_chem.benchmark.features import feature_settings

        values.pop("radius")
        values.pop("n_bits")
        values.update(feature_settings([features]))
    return values
