"""RDKit 2D descriptors of molecules: one computation for every consumer.

Pre-training's physico-chemical targets (``exlm-chem corpus prepare --descriptors``) are
computed here. Values RDKit cannot compute for a molecule (an exception, NaN or an
infinity) are NaN, so a caller decides what a missing value means; the row order is
always the input order.

:class:`DescriptorScaler` is the normalisation that travels with a checkpoint: clip each
descriptor to its training quantiles (a few descriptors, such as ``Ipc``, span dozens of
orders of magnitude), then standardise. It is plain arrays, stored as JSON.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from typing import Any, NamedTuple

import numpy as np

#: the descriptor sets offered; "rdkit2d" is RDKit's ``Descriptors._descList``
DESCRIPTOR_SETS = ("rdkit2d",)
LIMIT = 6.0  # standardised values are clipped to [-LIMIT, LIMIT]
_CHUNK = 2_000  # molecules per worker task: large enough to amortise pickling


def descriptor_names(kind: str = "rdkit2d") -> list[str]:
    """Names of the descriptors of ``kind``, in the column order of :func:`compute_descriptors`."""
    if kind not in DESCRIPTOR_SETS:
        raise ValueError(f"unknown descriptor set {kind!r}; choose from {DESCRIPTOR_SETS}")
    from rdkit.Chem import Descriptors

    return [name for name, _ in Descriptors._descList]


def _rows(smiles: Sequence[str]) -> np.ndarray:
    from rdkit import Chem, RDLogger
    from rdkit.Chem import Descriptors

    RDLogger.DisableLog("rdApp.*")  # this runs in worker processes, never the user's
    functions = [fn for _, fn in Descriptors._descList]
    out = np.full((len(smiles), len(functions)), np.nan, dtype=np.float64)
    for i, s in enumerate(smiles):
        mol = Chem.MolFromSmiles(s)
        if mol is None:
            continue
        for j, fn in enumerate(functions):
            try:
                out[i, j] = fn(mol)
            except Exception:
                pass
    with np.errstate(over="ignore", invalid="ignore"):
        values = out.astype(np.float32)  # beyond float32's range becomes inf ...
    values[~np.isfinite(values)] = np.nan  # ... and every non-finite value is missing
    return values


def compute_descriptors(smiles: Sequence[str], kind: str = "rdkit2d",
                        n_jobs: int = 1) -> np.ndarray:
    """Descriptors ``[len(smiles), D]`` float32, NaN where RDKit cannot compute one.

    Parameters
    ----------
    smiles : sequence of str
        Molecules; an unparsable SMILES gives a row of NaN (its row is kept).
    kind : str
        Descriptor set (see :data:`DESCRIPTOR_SETS`).
    n_jobs : int
        Worker processes (about 13 ms per molecule on one core for "rdkit2d").
    """
    names = descriptor_names(kind)
    smiles = list(smiles)
    if not smiles:
        return np.zeros((0, len(names)), np.float32)
    if n_jobs <= 1 or len(smiles) <= _CHUNK:
        return _rows(smiles)
    chunks = [smiles[i : i + _CHUNK] for i in range(0, len(smiles), _CHUNK)]
    with ProcessPoolExecutor(n_jobs) as pool:
        return np.concatenate(list(pool.map(_rows, chunks)))


class DescriptorScaler(NamedTuple):
    """Clip to training quantiles, then standardise: ``(clip(x, low, high) - mean) / std``."""

    names: list[str]  # descriptor names, column order
    low: np.ndarray  # [D] lower clip (a low quantile of the training values)
    high: np.ndarray  # [D] upper clip
    mean: np.ndarray  # [D] mean of the clipped training values
    std: np.ndarray  # [D] their standard deviation (1 where a descriptor is constant)

    @classmethod
    def fit(cls, values: np.ndarray, names: Sequence[str],
            quantile: float = 0.001) -> DescriptorScaler:
        """Statistics of ``values`` [N, D] (NaN ignored; an all-NaN column gets 0 / 1)."""
        values = np.asarray(values, dtype=np.float64)  # float32 sums of 1e30s overflow
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # all-NaN columns
            low = np.nanquantile(values, quantile, axis=0)
            high = np.nanquantile(values, 1.0 - quantile, axis=0)
            clipped = np.clip(values, low, high)
            mean = np.nanmean(clipped, axis=0)
            std = np.nanstd(clipped, axis=0)
        mean = np.nan_to_num(mean, nan=0.0)
        std = np.where(np.isfinite(std) & (std > 1e-8), std, 1.0)
        as32 = [np.nan_to_num(a, nan=0.0).astype(np.float32) for a in (low, high, mean, std)]
        return cls(list(names), *as32)

    def transform(self, values: np.ndarray) -> np.ndarray:
        """Standardised values [N, D] float32 within +-``LIMIT``; NaN stays NaN (missing).

        Skewed descriptors (counts that are almost always 0) still reach tens of standard
        deviations after the quantile clip; the final clip keeps one molecule from
        dominating a squared-error loss."""
        clipped = np.clip(values, self.low, self.high)
        return np.clip((clipped - self.mean) / self.std, -LIMIT, LIMIT).astype(np.float32)

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (checkpoint metadata, corpus manifest)."""
        return {"names": list(self.names),
                **{k: getattr(self, k).tolist() for k in ("low", "high", "mean", "std")}}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> DescriptorScaler:
        arrays = [np.asarray(data[k], dtype=np.float32) for k in ("low", "high", "mean", "std")]
        if any(a.shape != (len(data["names"]),) for a in arrays):
            raise ValueError("descriptor scaler: every statistic needs one value per name")
        return cls(list(data["names"]), *arrays)


__all__ = ["DESCRIPTOR_SETS", "DescriptorScaler", "compute_descriptors", "descriptor_names"]
