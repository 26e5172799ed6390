"""What a model computes beside its encoder, and its normalisation fitted on training rows.

* :func:`feature_kinds` validates the estimators' ``features=`` option: computed kinds
  (:data:`~exlm_chem.data.descriptors.COMPUTED_KINDS`) and the caller's own columns
  (:data:`USER_KIND`).
* :class:`FeatureScaler` is the normalisation: a robust standardisation
  ``(x - median) / (IQR / 1.349)`` per column (descriptors such as ``Ipc`` or ``BertzCT``
  span many orders of magnitude, so a mean and standard deviation would be dominated by a
  few molecules), then clipped to ``±CLIP``; a missing value (NaN or infinite) becomes 0,
  the training median, after scaling.
* :class:`FeatureSpec` is what a fitted model saves of its features: kinds, column names,
  scaler and the RDKit that computed them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from exlm_chem.data.descriptors import (
    COMPUTED_KINDS,
    feature_names,
    molecule_features,
    rdkit_version,
)

__all__ = [
    "AUTO", "CLIP", "KINDS", "USER_KIND", "FeatureScaler", "FeatureSpec", "feature_kinds",
    "raw_features",
]  # fmt: skip

CLIP = 5.0  # scaled values beyond ±CLIP robust standard deviations are clipped
_IQR_TO_SD = 1.349  # IQR of a standard normal: a robust scale in standard-deviation units
# columns a scaler reads at a time: a float64 copy of 2048 Morgan columns of a million
# molecules is 16 GB, and nanpercentile makes several
_BLOCK = 64


@dataclass(frozen=True, eq=False)
class FeatureScaler:
    """Robust standardisation fitted on training rows; see the module docstring.

    Attributes
    ----------
    center : ndarray float64 [F]
        Per-column median of the finite training values (0 for a column with none).
    scale : ndarray float64 [F]
        IQR / 1.349; the standard deviation where the IQR is 0 (e.g. a rare fingerprint
        bit); 1 where that is 0 too.
    clip : float
    """

    center: np.ndarray
    scale: np.ndarray
    clip: float = CLIP

    @classmethod
    def fit(cls, values: np.ndarray, clip: float = CLIP,
            rows: np.ndarray | None = None) -> FeatureScaler:
        """Fit on raw training features [N, F] (NaN = missing, ignored), or on their rows
        ``rows``. Each column is scaled on its own, so :data:`_BLOCK` columns are read at a
        time: a block's float64 copy, not the whole table's, bounds the memory."""
        values = np.asarray(values)
        if values.ndim != 2:
            raise ValueError(f"features must be 2-D [N, F], got shape {values.shape}")
        center, scale = np.zeros(values.shape[1]), np.ones(values.shape[1])
        for a in range(0, values.shape[1], _BLOCK):
            x = _block(values, rows, a)  # [n, <=_BLOCK] float64
            x = np.where(np.isfinite(x), x, np.nan)
            seen = ~np.isnan(x).all(axis=0)  # columns with at least one finite training value
            if not seen.any():
                continue
            q1, median, q3 = np.nanpercentile(x[:, seen], [25, 50, 75], axis=0)
            robust = (q3 - q1) / _IQR_TO_SD
            std = np.nanstd(x[:, seen], axis=0)
            tiny = np.finfo(np.float32).tiny
            columns = np.flatnonzero(seen) + a
            center[columns] = median
            scale[columns] = np.where(robust > tiny, robust, np.where(std > tiny, std, 1.0))
        return cls(center, scale, float(clip))

    @property
    def n_features(self) -> int:
        return int(self.center.size)

    def transform(self, values: np.ndarray, rows: np.ndarray | None = None,
                  dtype: Any = np.float32) -> np.ndarray:
        """Scaled features [N, F] (or of the rows ``rows``) in ``dtype``: missing -> 0 (the
        median), then clipped; computed :data:`_BLOCK` columns at a time."""
        values = np.asarray(values)
        if values.ndim != 2 or values.shape[1] != self.n_features:
            raise ValueError(f"features must be [N, {self.n_features}], got shape "
                             f"{values.shape}")
        n = values.shape[0] if rows is None else len(rows)
        out = np.empty((n, self.n_features), dtype=dtype)
        for a in range(0, self.n_features, _BLOCK):
            b = slice(a, a + _BLOCK)
            with np.errstate(invalid="ignore", over="ignore"):
                scaled = (_block(values, rows, a) - self.center[b]) / self.scale[b]
            scaled[~np.isfinite(scaled)] = 0.0
            out[:, b] = np.clip(scaled, -self.clip, self.clip)
        return out

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (plain lists)."""
        return {"center": self.center.tolist(), "scale": self.scale.tolist(),
                "clip": self.clip}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FeatureScaler:
        center = np.asarray(data["center"], dtype=np.float64)
        scale = np.asarray(data["scale"], dtype=np.float64)
        if center.ndim != 1 or center.shape != scale.shape:
            raise ValueError(f"center and scale must be two 1-D lists of one length, got "
                             f"{center.shape} and {scale.shape}")
        if not (np.isfinite(center).all() and np.isfinite(scale).all() and (scale > 0).all()):
            raise ValueError("center must be finite and scale finite and positive")
        return cls(center, scale, float(data["clip"]))


def _block(values: np.ndarray, rows: np.ndarray | None, start: int) -> np.ndarray:
    """Columns ``start:start + _BLOCK`` of ``values`` (of its rows ``rows``) as float64."""
    columns = slice(start, start + _BLOCK)
    part = values[:, columns] if rows is None else values[rows, columns]
    return np.asarray(part, dtype=np.float64)


USER_KIND = "columns"  # the caller's own per-row features (not computed here)
KINDS = (*COMPUTED_KINDS, USER_KIND)
AUTO = "auto"  # features=AUTO: the estimator's own measured default kinds


def feature_kinds(features: Any, auto: tuple[str, ...] = ()) -> tuple[str, ...]:
    """The ``features=`` option as a tuple of kinds: None -> (), ``"rdkit2d"`` ->
    ``("rdkit2d",)``, :data:`AUTO` -> ``auto`` (the caller's default), a list keeps its
    order; unknown or repeated kinds raise."""
    if features is None:
        return ()
    if isinstance(features, str) and features == AUTO:
        return tuple(auto)
    kinds = (features,) if isinstance(features, str) else features
    try:
        kinds = tuple(kinds)
    except TypeError:
        raise ValueError(f"features must be None, {AUTO!r}, one of {KINDS} or a list of "
                         f"them, got {features!r}") from None
    unknown = [k for k in kinds if k not in KINDS]
    if unknown or len(set(kinds)) != len(kinds):
        what = f"unknown {unknown}" if unknown else "repeated kinds"
        raise ValueError(f"features must be None, {AUTO!r}, one of {KINDS} or a list of "
                         f"distinct ones; got {features!r} ({what})")
    return kinds


def raw_features(kinds: Sequence[str], smiles: Sequence[str], columns: np.ndarray | None,
                 n_jobs: int | None = None,
                 molecules: Sequence[Any] | None = None) -> np.ndarray:
    """Unscaled features [n, F] float32 of valid canonical SMILES, ``kinds`` side by side;
    ``columns`` [n, F_user]: the caller's own (:data:`USER_KIND`), None without them;
    ``molecules`` (the SMILES's RDKit molecules, parsed already): as in
    :func:`molecule_features`."""
    computed = [k for k in kinds if k != USER_KIND]
    values = molecule_features(computed, smiles, n_jobs, molecules)
    blocks, start = [], 0
    for kind in kinds:
        if kind == USER_KIND:
            blocks.append(np.asarray(columns).astype(np.float32))
        else:
            width = len(feature_names(kind))
            blocks.append(values[:, start : start + width])
            start += width
    return np.concatenate(blocks, axis=1)


@dataclass(frozen=True, eq=False)
class FeatureSpec:
    """What a fitted model computes beside its encoder, and how it scales it.

    Attributes
    ----------
    kinds : tuple of str
        In column order (:data:`KINDS`).
    names : dict of str to list of str
        Column names per kind; for :data:`USER_KIND` the caller's column names.
    scaler : FeatureScaler
        Fitted on the training rows of all kinds together.
    rdkit_version : str
        The RDKit that computed the training features.
    """

    kinds: tuple[str, ...]
    names: dict[str, list[str]]
    scaler: FeatureScaler
    rdkit_version: str

    @classmethod
    def fit(cls, kinds: tuple[str, ...], raw: np.ndarray, train_rows: np.ndarray,
            column_names: list[str] | None = None) -> FeatureSpec:
        """The spec of unscaled features ``raw`` [n, F] of ``kinds``, scaled on the rows
        ``train_rows`` alone (the other rows, held out, stay unseen); ``column_names`` name
        the caller's columns (:data:`USER_KIND`), the other kinds' names are computed."""
        names = {k: column_names if k == USER_KIND else feature_names(k) for k in kinds}
        return cls(kinds, names, FeatureScaler.fit(raw[train_rows]), rdkit_version())

    @property
    def n_features(self) -> int:
        return self.scaler.n_features

    @property
    def computed(self) -> bool:
        """Whether some of the features are computed from the molecules (not only the
        caller's columns): then a caller holding the molecules passes them."""
        return any(kind != USER_KIND for kind in self.kinds)

    def values(self, smiles: Sequence[str], columns: np.ndarray | None = None,
               n_jobs: int | None = None, molecules: Sequence[Any] | None = None
               ) -> np.ndarray:
        """Scaled features [n, F] float32 of valid canonical SMILES (and the caller's
        ``columns`` [n, F_user] when the kinds include :data:`USER_KIND`); ``molecules``:
        the SMILES's RDKit molecules, parsed already (:func:`molecule_features`)."""
        return self.scaler.transform(raw_features(self.kinds, smiles, columns, n_jobs,
                                                  molecules=molecules))

    def installed_differences(self) -> list[str]:
        """How the installed RDKit's feature sets differ from the saved ones ([] = none)."""
        problems = []
        for kind in self.kinds:
            if kind == USER_KIND:
                continue
            saved, installed = self.names[kind], feature_names(kind)
            if saved == installed:
                continue
            gone = [n for n in saved if n not in installed]
            new = [n for n in installed if n not in saved]
            detail = (f"missing {gone[:10]}" if gone else "") + \
                      ("; " if gone and new else "") + (f"new {new[:10]}" if new else "")
            problems.append(f"{kind}: the model was fitted with {len(saved)} features from "
                            f"RDKit {self.rdkit_version}, the installed RDKit "
                            f"{rdkit_version()} computes {len(installed)} "
                            f"({detail or 'same names in another order'})")
        return problems

    def to_dict(self) -> dict[str, Any]:
        return {"kinds": list(self.kinds), "names": {k: list(v) for k, v in self.names.items()},
                "scaler": self.scaler.to_dict(), "rdkit_version": self.rdkit_version}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FeatureSpec:
        kinds = feature_kinds(data["kinds"])
        names = {str(k): [str(n) for n in v] for k, v in data["names"].items()}
        scaler = FeatureScaler.from_dict(data["scaler"])
        if set(names) != set(kinds):
            raise ValueError(f"names are given for {sorted(names)}, kinds are {list(kinds)}")
        width = sum(len(names[k]) for k in kinds)
        if width != scaler.n_features:
            raise ValueError(f"{width} feature names but a scaler for {scaler.n_features}")
        return cls(kinds, names, scaler, str(data["rdkit_version"]))
