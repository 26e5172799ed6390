"""Descriptor features of a benchmark task, computed once per task and scaled per cell.

Every descriptor row of the benchmark (the random forest on RDKit 2D descriptors, an
encoder with descriptors beside it) reads its features here: the raw values come from
:func:`exlm_chem.data.descriptors.molecule_features` (all cores), are kept in memory for
the task the runner is on (its methods and seeds share them), and each cell scales them
with a :class:`~exlm_chem.data.feature_spec.FeatureScaler` fitted on its training rows,
the estimators' policy (missing -> training median, clipped).

Given a ``cache_dir`` (``exlm-chem benchmark`` passes ``OUT/features``), the raw values
are also kept on disk between runs, as the probe's embeddings are under
``OUT/embeddings``: one compressed ``.npz`` per task and feature set, written atomically
(:func:`~exlm_chem.files.safe_write.atomic_path`, as :mod:`exlm_chem.benchmark.prepared`
writes its splits) and read without pickle. Its name hashes what the values depend on:
the molecules (their SMILES in row order), the data file's checksum, the feature names
and the RDKit version; another input or another RDKit computes them again (MUV's
descriptors cost about 20 CPU-minutes). chemprop's own descriptor featurizer, which the
chemprop + RDKit 2D rows read unscaled, is kept by the same cache
(:func:`cached_task_values`) under a key naming chemprop's featurizer and version.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import zipfile
from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from exlm_chem.benchmark.tasks import TaskData

__all__ = ["FEATURE_SETS", "cached_task_values", "feature_cache_path", "feature_settings",
           "scaled_task_features", "task_features", "task_key"]

# what a row may add
FEATURE_SETS = ("rdkit2d", "morgan", "morgan1024", "avalon", "erg", "maccs", "atompair",
                "mordred")
_CACHE_FORMAT = "exlm_chem-task-features-1"
logger = logging.getLogger(__name__)

_cache: dict[tuple[str, str], np.ndarray] = {}  # the current task's raw features, by kind


def task_key(data: TaskData, kind: str, **versions: str) -> dict[str, str]:
    """The cache key of values computed from ``data.smiles`` in row order: the task, the
    molecules, the data file's checksum, plus the ``versions`` of what computes them."""
    return {"format": _CACHE_FORMAT, "task": data.name, "kind": kind,
            "smiles_sha256": hashlib.sha256("\n".join(data.smiles).encode()).hexdigest(),
            "data_sha256": data.data_sha256, **versions}


def _cache_key(data: TaskData, kind: str) -> dict[str, str]:
    """Everything a task's raw features depend on (the on-disk cache's key)."""
    from exlm_chem.data.descriptors import rdkit_version

    return task_key(data, kind, rdkit_version=rdkit_version(),
                    names_sha256=_names_sha256([kind]))


def _names_sha256(kinds: Sequence[str]) -> str:
    """Checksum of the feature names of ``kinds``, in column order."""
    from exlm_chem.data.descriptors import feature_names

    names = "\n".join(n for k in kinds for n in feature_names(k))
    return hashlib.sha256(names.encode()).hexdigest()


def _cache_task(memory_key: tuple[str, str]) -> str:
    return json.loads(memory_key[1])["task"]


def feature_cache_path(cache_dir: str | os.PathLike[str], key: dict[str, str]) -> Path:
    """Where the raw features of ``key`` (:func:`_cache_key`) live under ``cache_dir``."""
    digest = hashlib.sha256(json.dumps(key, sort_keys=True).encode()).hexdigest()[:16]
    return Path(cache_dir) / f"{key['task']}_{key['kind']}_{digest}.npz"


def _load_cached(path: Path, key_text: str, n_rows: int) -> np.ndarray | None:
    """The stored values, or None when the file is absent or holds another key."""
    if not path.is_file():
        return None
    try:
        with np.load(path, allow_pickle=False) as stored:
            if str(stored["key"]) != key_text:
                return None  # a hash prefix shared by another key: recompute, overwrite
            values = stored["values"]
    except (OSError, ValueError, KeyError, zipfile.BadZipFile) as error:
        logger.warning("recomputing %s: the cached copy is unreadable (%s)", path, error)
        return None  # a cache never stops a run
    return values if values.ndim == 2 and len(values) == n_rows else None


def task_features(data: TaskData, kind: str, n_jobs: int | None = None,
                  cache_dir: str | os.PathLike[str] | None = None) -> np.ndarray:
    """Raw features [N, F] float32 of ``data.smiles`` (NaN where RDKit cannot compute
    one), row-aligned; computed once while the runner stays on this task and, with a
    ``cache_dir``, once for every run that shares it (see the module docstring)."""
    from exlm_chem.data.descriptors import molecule_features

    if kind not in FEATURE_SETS:
        raise ValueError(f"unknown benchmark feature set {kind!r}; choose from {FEATURE_SETS}")
    if data.smiles and not isinstance(data.smiles[0], str):
        raise ValueError(f"{data.name}: descriptor rows need SMILES (RDKit), not prepared "
                         "token ids; run them on a machine with RDKit")
    return cached_task_values(data, _cache_key(data, kind),
                              lambda: molecule_features([kind], data.smiles, n_jobs),
                              cache_dir)


def cached_task_values(data: TaskData, key: dict[str, str],
                       compute: Callable[[], np.ndarray],
                       cache_dir: str | os.PathLike[str] | None = None) -> np.ndarray:
    """``compute()``'s [N, F] values for ``data``, kept in memory while the runner stays on
    this task and, with a ``cache_dir``, on disk under ``key`` (:func:`task_key`) for every
    later run; the one cache of every per-molecule feature the benchmark computes."""
    from exlm_chem.files.safe_write import atomic_path

    key_text = json.dumps(key, sort_keys=True)
    memory_key = (key["kind"], key_text)
    if memory_key in _cache:
        return _cache[memory_key]
    for stale in [k for k in _cache if _cache_task(k) != data.name]:
        del _cache[stale]  # one task at a time: MUV's descriptors alone are 80 MB
    path = None if cache_dir is None else feature_cache_path(cache_dir, key)
    values = None if path is None else _load_cached(path, key_text, len(data.smiles))
    if values is None:
        values = compute()
        if path is not None:
            with atomic_path(path) as tmp, open(tmp, "wb") as handle:
                np.savez_compressed(handle, values=values, key=np.array(key_text))
    _cache[memory_key] = values
    return values


def scaled_task_features(data: TaskData, kinds: Sequence[str],
                         cache_dir: str | os.PathLike[str] | None = None,
                         n_jobs: int | None = None) -> np.ndarray:
    """Features [N, F] of ``kinds`` side by side, scaled on ``data.train`` rows only;
    ``cache_dir`` and ``n_jobs``: as in :func:`task_features`."""
    from exlm_chem.data.feature_spec import FeatureScaler

    raw = np.concatenate([task_features(data, k, cache_dir=cache_dir, n_jobs=n_jobs)
                          for k in kinds], axis=1)
    return FeatureScaler.fit(raw[data.train]).transform(raw)


def feature_settings(kinds: Sequence[str]) -> dict:
    """What a cell's key records about its features (a new RDKit reruns the cell)."""
    from exlm_chem.data.descriptors import rdkit_version
    from exlm_chem.data.feature_spec import CLIP

    if not kinds:
        return {}
    return {"features": list(kinds), "rdkit_version": rdkit_version(),
            "feature_names_sha256": _names_sha256(kinds)[:16],
            "feature_scaling": f"robust (median, IQR/1.349) on train rows, missing -> 0, "
                               f"clip ±{CLIP:g}"}
