"""Descriptor features of a benchmark task, computed once per task and scaled per cell.

Every descriptor row of the benchmark (the random forest on RDKit 2D descriptors, an
encoder with descriptors beside it) reads its features here: the raw values come from
:func:`exlm_chem.data.descriptors.molecule_features` (all cores), are kept in memory for
the task the runner is on (its methods and seeds share them), and each cell scales them
with a :class:`~exlm_chem.data.descriptors.FeatureScaler` fitted on its training rows,
the estimators' policy (missing -> training median, clipped).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

import numpy as np

from exlm_chem.benchmark.tasks import TaskData

__all__ = ["FEATURE_SETS", "feature_settings", "scaled_task_features", "task_features"]

FEATURE_SETS = ("rdkit2d",)  # what a benchmark row may add beside its own input

_cache: dict[tuple[str, str], np.ndarray] = {}  # the current task's raw features, by kind


def task_features(data: TaskData, kind: str, n_jobs: int | None = None) -> np.ndarray:
    """Raw features [N, F] float32 of ``data.smiles`` (NaN where RDKit cannot compute
    one), row-aligned; computed once while the runner stays on this task."""
    from exlm_chem.data.descriptors import molecule_features

    if kind not in FEATURE_SETS:
        raise ValueError(f"unknown benchmark feature set {kind!r}; choose from {FEATURE_SETS}")
    if data.smiles and not isinstance(data.smiles[0], str):
        raise ValueError(f"{data.name}: descriptor rows need SMILES (RDKit), not prepared "
                         "token ids; run them on a machine with RDKit")
    digest = hashlib.sha256("\n".join(data.smiles).encode()).hexdigest()
    key = (kind, digest)
    if key not in _cache:
        _cache.clear()  # one task at a time: MUV's descriptors alone are 80 MB
        _cache[key] = molecule_features([kind], data.smiles, n_jobs)
    return _cache[key]


def scaled_task_features(data: TaskData, kinds: Sequence[str]) -> np.ndarray:
    """Features [N, F] of ``kinds`` side by side, scaled on ``data.train`` rows only."""
    from exlm_chem.data.descriptors import FeatureScaler

    raw = np.concatenate([task_features(data, k) for k in kinds], axis=1)
    return FeatureScaler.fit(raw[data.train]).transform(raw)


def feature_settings(kinds: Sequence[str]) -> dict:
    """What a cell's key records about its features (a new RDKit reruns the cell)."""
    from exlm_chem.data.descriptors import CLIP, feature_names, rdkit_version

    if not kinds:
        return {}
    names = "\n".join(n for k in kinds for n in feature_names(k))
    return {"features": list(kinds), "rdkit_version": rdkit_version(),
            "feature_names_sha256": hashlib.sha256(names.encode()).hexdigest()[:16],
            "feature_scaling": f"robust (median, IQR/1.349) on train rows, missing -> 0, "
                               f"clip ±{CLIP:g}"}
